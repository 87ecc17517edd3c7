"""What `contracts check` says besides receipts: the stable codes (`CODE_INFO`, which `contracts codes`
lists and SARIF names its rules from) and the run's `Summary`. The output formats are one module each
in `output_contracts.checks.renderers`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.codes.table import specs

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
        *(CodeInfo(c.name, "mined", c.summary) for c in specs()),
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

    def receipt(self, encoded: Mapping[str, Any], codes: Sequence[str] | None = None) -> None:
        """Count one encoded receipt (receipts without violations, from `--all`, add no bytes).

        `codes`: the property code of each violation, when the encoding does not carry them (encoder
        `generic`); by default they are read from the encoded violations."""
        if codes is None:
            codes = [v["code"] for v in encoded["outcome_contract"]["violations"]]
        if not codes:
            return
        self.calls_with_violations += 1
        self.violations += len(codes)
        self.receipt_bytes += int(encoded["bytes"])
        self.receipt_tokens += int(encoded["approx_tokens"])
        self.by_tool[encoded["outcome_contract"]["tool"]] += len(codes)
        for c in codes:
            self.by_code[c] += 1

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
