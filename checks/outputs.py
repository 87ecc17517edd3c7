"""Output formats of `contracts check` and the summary it prints: JSONL, JSON, SARIF 2.1.0, JUnit, GitHub.

Every renderer takes encoded receipts (`encode(receipt)` dicts) and the `Summary`, and returns bytes (or
lines for the streaming formats), so the CLI only chooses one and writes. Property codes and their
one-line descriptions (`CODE_INFO`) live here too: `contracts codes` lists them and SARIF names its rules
from them.

* `jsonl` — one receipt a line (streamed).
* `json` — one document `{"summary": ..., "receipts": [...]}`.
* `sarif` — SARIF 2.1.0: one result per violation, `ruleId` = property code, location = the trace file
  (as a %-escaped relative URI) and line the call came from, the witness (rule id, path, expected,
  observed) in `properties`; each rule names its docs section (`docs/codes.md#code`) in `help` and
  `properties.docs` (SARIF's `helpUri` must be absolute, and the docs ship inside the repository).
* `junit` — JUnit XML: one testsuite, one testcase per tool checked; a tool with violations fails with
  one line per violation; a tool the contracts do not know is `skipped`.
* `github` — GitHub Actions workflow commands, one `::error file=…,line=…,title=…::message` a violation.
"""

from __future__ import annotations

import urllib.parse
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts.jsonutil import canonical_json, canonical_str, pretty_json
from contracts.rules.codes import TABLE

DOCS_PAGE = "docs/codes.md"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class CodeInfo:
    """A stable property code: which family it belongs to, a one-line description, its docs anchor."""

    code: str
    family: str
    summary: str

    @property
    def docs(self) -> str:
        return f"{DOCS_PAGE}#{self.code.lower()}"


CODE_INFO: dict[str, CodeInfo] = {
    c.code: c
    for c in (
        *(CodeInfo(name, "mined", c.summary) for name, c in TABLE.items()),
        CodeInfo(
            "E_SCHEMA", "plan-check", "a plan step references an output field its tool does not declare"
        ),
        CodeInfo("E_ARGS", "plan-check", "a plan step's arguments fail the tool's parameter schema"),
        CodeInfo("E_ORDER", "plan-check", "a plan step references a later or unknown step"),
        CodeInfo("E_TOOL", "plan-check", "a plan step calls a tool the registry does not declare"),
    )
}


# ----------------------------------------------------------------------------------------------------
# Summary


@dataclass(frozen=True)
class Summary:
    """What a check run saw. `receipt_bytes`/`receipt_tokens` add up the receipts with violations."""

    calls_checked: int
    calls_with_violations: int
    violations: int
    by_code: Mapping[str, int]
    by_tool: Mapping[str, int]
    calls_by_tool: Mapping[str, int]
    unknown_tool_calls: int
    unknown_tools: tuple[str, ...]
    receipt_bytes: int
    receipt_tokens: int
    skipped_calls: int = 0
    rejected_lines: int = 0

    def per_1000(self, total: int) -> float:
        """`total` per 1,000 calls checked (0 when nothing was checked)."""
        return round(total * 1000 / self.calls_checked, 1) if self.calls_checked else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "calls_checked": self.calls_checked,
            "calls_with_violations": self.calls_with_violations,
            "violations": self.violations,
            "by_code": dict(sorted(self.by_code.items())),
            "by_tool": dict(sorted(self.by_tool.items())),
            "calls_by_tool": dict(sorted(self.calls_by_tool.items())),
            "unknown_tool_calls": self.unknown_tool_calls,
            "unknown_tools": list(self.unknown_tools),
            "receipt_bytes": self.receipt_bytes,
            "receipt_tokens": self.receipt_tokens,
            "receipt_bytes_per_1000_calls": self.per_1000(self.receipt_bytes),
            "receipt_tokens_per_1000_calls": self.per_1000(self.receipt_tokens),
            "skipped_calls": self.skipped_calls,
            "rejected_lines": self.rejected_lines,
        }


@dataclass
class SummaryBuilder:
    """Accumulates a `Summary` while receipts stream past (memory: one counter per tool and code)."""

    known_tools: frozenset[str]
    calls_by_tool: Counter[str] = field(default_factory=Counter)
    by_code: Counter[str] = field(default_factory=Counter)
    by_tool: Counter[str] = field(default_factory=Counter)
    calls_with_violations: int = 0
    violations: int = 0
    receipt_bytes: int = 0
    receipt_tokens: int = 0
    skipped_calls: int = 0
    rejected_lines: int = 0

    def checked(self, tool: str, n: int = 1) -> None:
        """Count `n` checked calls of `tool` (unknown tools included; they are reported apart)."""
        self.calls_by_tool[tool] += n

    def receipt(self, encoded: Mapping[str, Any]) -> None:
        """Count one encoded receipt (receipts without violations, from `--all`, add no bytes)."""
        vs = encoded["outcome_contract"]["violations"]
        if not vs:
            return
        self.calls_with_violations += 1
        self.violations += len(vs)
        self.receipt_bytes += int(encoded["bytes"])
        self.receipt_tokens += int(encoded["approx_tokens"])
        self.by_tool[encoded["outcome_contract"]["tool"]] += len(vs)
        for v in vs:
            self.by_code[v["code"]] += 1

    def build(self) -> Summary:
        unknown = sorted(t for t in self.calls_by_tool if t not in self.known_tools)
        return Summary(
            calls_checked=sum(self.calls_by_tool.values()),
            calls_with_violations=self.calls_with_violations,
            violations=self.violations,
            by_code=dict(sorted(self.by_code.items())),
            by_tool=dict(sorted(self.by_tool.items())),
            calls_by_tool=dict(sorted(self.calls_by_tool.items())),
            unknown_tool_calls=sum(self.calls_by_tool[t] for t in unknown),
            unknown_tools=tuple(unknown),
            receipt_bytes=self.receipt_bytes,
            receipt_tokens=self.receipt_tokens,
            skipped_calls=self.skipped_calls,
            rejected_lines=self.rejected_lines,
        )


def _calls(n: int) -> str:
    return f"{n:,} call" if n == 1 else f"{n:,} calls"


def summary_lines(s: Summary) -> list[tuple[str, str]]:
    """The summary as (label, value) rows, for the table on stderr."""
    rows = [
        ("calls checked", f"{s.calls_checked:,}"),
        ("calls with violations", f"{s.calls_with_violations:,}"),
        ("violations", f"{s.violations:,}"),
    ]
    rows += [(f"  code {c}", f"{n:,}") for c, n in sorted(s.by_code.items())]
    rows += [(f"  tool {t}", f"{n:,}") for t, n in sorted(s.by_tool.items())]
    if s.unknown_tool_calls:
        names = ", ".join(s.unknown_tools[:5]) + (" …" if len(s.unknown_tools) > 5 else "")
        rows.append(("unknown tool", f"{_calls(s.unknown_tool_calls)} not checked ({names})"))
    if s.skipped_calls:
        rows.append(("skipped", f"{_calls(s.skipped_calls)} with status error (no result to check)"))
    if s.rejected_lines:
        n = s.rejected_lines
        rows.append(
            ("rejected lines", f"{n:,} unreadable input line{'' if n == 1 else 's'} (--strict: exit 2)")
        )
    rows.append(
        (
            "receipt size",
            f"{s.per_1000(s.receipt_bytes):,.0f} bytes / {s.per_1000(s.receipt_tokens):,.0f} tokens per 1,000 calls",
        )
    )
    return rows


# ----------------------------------------------------------------------------------------------------
# Renderers


def render_jsonl(receipt: Mapping[str, Any]) -> bytes:
    """One receipt as a canonical JSON line."""
    return canonical_json(receipt) + b"\n"


def render_json(receipts: Iterable[Mapping[str, Any]], summary: Summary) -> bytes:
    """All receipts and the summary as one pretty, deterministic JSON document."""
    return pretty_json({"summary": summary.to_json(), "receipts": list(receipts)})


def _violations(
    receipts: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    for r in receipts:
        for v in r["outcome_contract"]["violations"]:
            yield r, v


def _message(v: Mapping[str, Any]) -> str:
    """The violation's sentence in either encoder (v1 `message`, v2 `detail` + witnesses)."""
    if "message" in v:
        return str(v["message"])
    exp = v["expected"] if isinstance(v["expected"], str) else canonical_str(v["expected"])
    obs = "missing" if not v.get("present", True) else canonical_str(v["observed"])
    return f"{v['code']} at {v['path'] or '(whole result)'}: expected {exp}, observed {obs}. {v['detail']}"


def _uri(source: Any) -> str:
    """A trace file path as a SARIF `uri` (a relative URI reference: POSIX separators, %-escaped)."""
    return urllib.parse.quote(str(source or "-").replace("\\", "/"), safe="/:@-._~!$&'()*+,;=")


def sarif(receipts: Iterable[Mapping[str, Any]], summary: Summary, *, version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run; results in receipt order."""
    results = []
    used: dict[str, int] = {}
    rules: list[dict[str, Any]] = []
    for r, v in _violations(receipts):
        code = v["code"]
        if code not in used:
            used[code] = len(rules)
            info = CODE_INFO.get(code)
            rules.append(
                {
                    "id": code,
                    "name": code.title().replace("_", ""),
                    "shortDescription": {"text": info.summary if info else code},
                    "help": {"text": f"See {info.docs if info else DOCS_PAGE} in the contracts repository."},
                    "defaultConfiguration": {"level": "error"},
                    "properties": {"docs": info.docs if info else DOCS_PAGE},
                }
            )
        loc: dict[str, Any] = {"artifactLocation": {"uri": _uri(r.get("source"))}}
        if isinstance(r.get("line"), int) and r["line"] >= 1:
            loc["region"] = {"startLine": r["line"]}
        props: dict[str, Any] = {
            "tool": r["outcome_contract"]["tool"],
            "rule": v["rule"],
            "path": v["path"],
            "call_id": r.get("call_id"),
            "recovery_tools": r["outcome_contract"]["recovery_tools"],
        }
        if "expected" in v:
            props.update(expected=v["expected"], observed=v["observed"], present=v["present"])
        results.append(
            {
                "ruleId": code,
                "ruleIndex": used[code],
                "level": "error",
                "message": {"text": _message(v)},
                "locations": [{"physicalLocation": loc}],
                "partialFingerprints": {
                    "contractsViolation/v1": canonical_str([r.get("call_id"), v["rule"], v["path"]])
                },
                "properties": props,
            }
        )
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "contracts",
                        "version": version,
                        "rules": rules,
                    }
                },
                "results": results,
                "properties": {"summary": summary.to_json()},
            }
        ],
    }


def render_sarif(receipts: Iterable[Mapping[str, Any]], summary: Summary, *, version: str) -> bytes:
    return pretty_json(sarif(receipts, summary, version=version))


def render_junit(receipts: Iterable[Mapping[str, Any]], summary: Summary) -> bytes:
    """JUnit XML: one testcase per tool checked (sorted by name), failing with its violations."""
    per_tool: dict[str, list[str]] = {}
    for r, v in _violations(receipts):
        where = f"{r.get('source')}:{r.get('line')}"
        per_tool.setdefault(r["outcome_contract"]["tool"], []).append(f"{where}: {_message(v)}")
    tools = sorted(set(summary.calls_by_tool) | set(per_tool))
    failures = sum(1 for t in tools if per_tool.get(t))
    skipped = sum(1 for t in tools if t in summary.unknown_tools)
    suite = ET.Element(
        "testsuite",
        {
            "name": "contracts check",
            "tests": str(len(tools)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(skipped),
        },
    )
    for t in tools:
        case = ET.SubElement(suite, "testcase", {"classname": "contracts.check", "name": t})
        msgs = per_tool.get(t, [])
        n = summary.calls_by_tool.get(t, 0)
        if msgs:
            fail = ET.SubElement(
                case, "failure", {"message": f"{len(msgs)} violations in {n} calls", "type": "contract"}
            )
            fail.text = "\n".join(msgs)
        elif t in summary.unknown_tools:
            ET.SubElement(case, "skipped", {"message": f"unknown tool: {n} calls not checked"})
        ET.SubElement(case, "system-out").text = f"{n} calls checked"
    root = ET.Element(
        "testsuites", {"name": "contracts", "tests": str(len(tools)), "failures": str(failures)}
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _gh_escape(s: str, *, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def render_github(receipt: Mapping[str, Any]) -> bytes:
    """GitHub Actions `::error` commands for one receipt's violations (empty when it holds)."""
    out = []
    for _r, v in _violations([receipt]):
        props = [f"file={_gh_escape(str(receipt.get('source') or '-'), prop=True)}"]
        if isinstance(receipt.get("line"), int) and receipt["line"] >= 1:
            props.append(f"line={receipt['line']}")
        title = f"{v['code']} {receipt['outcome_contract']['tool']}"
        props.append(f"title={_gh_escape(title, prop=True)}")
        out.append(f"::error {','.join(props)}::{_gh_escape(_message(v))}\n")
    return "".join(out).encode("utf-8")
