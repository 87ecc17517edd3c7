"""`sarif` — SARIF 2.1.0: one result per violation, `ruleId` = property code, location = the trace file
(as a %-escaped relative URI) and line the call came from, the witness (rule id, path, expected,
observed) in `properties`; each rule names its docs section (`docs/codes.md#code`) in `help` and
`properties.docs` (SARIF's `helpUri` must be absolute, and the docs ship inside the repository)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from contracts.checks.formats.base import Document, message, violations
from contracts.checks.outputs import CODE_INFO, DOCS_PAGE, SARIF_SCHEMA_URI, Summary
from contracts.jsonutil import canonical_str, pretty_json


def _uri(source: Any) -> str:
    """A trace file path as a SARIF `uri` (a relative URI reference: POSIX separators, %-escaped)."""
    return urllib.parse.quote(str(source or "-").replace("\\", "/"), safe="/:@-._~!$&'()*+,;=")


def sarif(receipts: Iterable[Mapping[str, Any]], summary: Summary, *, version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run; results in receipt order."""
    results = []
    used: dict[str, int] = {}
    rules: list[dict[str, Any]] = []
    for r, v in violations(receipts):
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
            "recovery_tools": r["outcome_contract"].get("recovery_tools", []),
        }
        if "expected" in v:
            props.update(expected=v["expected"], observed=v["observed"], present=v["present"])
        results.append(
            {
                "ruleId": code,
                "ruleIndex": used[code],
                "level": "error",
                "message": {"text": message(v)},
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


class Sarif(Document):
    name = "sarif"

    def render_all(self, receipts: Iterable[Mapping[str, Any]], summary: Summary, *, version: str) -> bytes:
        return pretty_json(sarif(receipts, summary, version=version))


FORMAT = Sarif()
