"""`sarif` — SARIF 2.1.0, shared by `check`, `audit` and `plan-check`.

One result per violation, `ruleId` = property code, the location from `Locator` (a path relative to
`--base` under `uriBaseId: %SRCROOT%`, the file line where the call's line or record starts, or a logical
location `record N` when that line cannot be found), the witness (rule id, path, expected, observed) in
`properties`. Each rule names its docs section with an absolute `helpUri` (built from
`output_contracts.defaults.DOCS_URL`, pyproject's Documentation URL).

Levels come from the rule's confidence (`base.rule_level`): `error` for a rule the tool's declared
output schema states, `warning` for a mined rule with support over >= 30 tasks, `note` below; a rule's
`defaultConfiguration.level` is the most severe level among its results. A run holds at most
`max_results` results (default 25,000, GitHub code scanning's limit per run); the most severe are kept,
and the run says how many were left out in a tool execution notification and in
`properties.omitted_results`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.checks.outputs import CODE_INFO, DOCS_PAGE, SARIF_SCHEMA_URI, Summary
from output_contracts.checks.renderers.locations import Location
from output_contracts.checks.renderers.renderer import (
    LEVELS,
    Document,
    RenderOptions,
    capped,
    message,
    violations,
)
from output_contracts.defaults import docs_url
from output_contracts.jsonutil import canonical_str, pretty_json


@dataclass(frozen=True)
class Result:
    """One SARIF result before it is placed in a run."""

    rule_id: str
    level: str
    message: str
    location: Location
    fingerprint: tuple[str, str]
    properties: Mapping[str, Any] = field(default_factory=dict)
    logical: tuple[Mapping[str, Any], ...] = ()  # more logical locations (a plan's step)

    def location_json(self) -> dict[str, Any]:
        """The result's one SARIF location: the physical place and any logical ones."""
        loc = self.location.sarif()
        if self.logical:
            loc["logicalLocations"] = [*loc.get("logicalLocations", []), *map(dict, self.logical)]
        return loc


def code_rule(code: str) -> dict[str, Any]:
    """The SARIF rule (reportingDescriptor) of a property code, with its absolute docs URL."""
    info = CODE_INFO.get(code)
    page = info.docs if info else DOCS_PAGE
    text = info.summary if info else code
    return {
        "id": code,
        "name": code.title().replace("_", ""),
        "shortDescription": {"text": text},
        "helpUri": docs_url(page),
        "help": {"text": f"{text}. See {docs_url(page)}"},
        "properties": {"docs": page},
    }


def sarif_log(
    results: Sequence[Result],
    *,
    tool: str,
    version: str,
    rules: Sequence[Mapping[str, Any]] | None = None,
    max_results: int,
    properties: Mapping[str, Any] | None = None,
    notifications: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run: `results` capped at `max_results` (most severe kept, order kept),
    `rules` given or one per property code used (`code_rule`), run-level notifications `(level, text)`."""
    keep = capped([r.level for r in results], max_results)
    kept = [r for i, r in enumerate(results) if i in keep]
    omitted = len(results) - len(kept)
    descriptors = [dict(d) for d in rules] if rules is not None else []
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    worst: dict[str, str] = {}
    out = []
    for r in kept:
        if r.rule_id not in index:
            index[r.rule_id] = len(descriptors)
            descriptors.append(code_rule(r.rule_id))
        prev = worst.get(r.rule_id)
        if prev is None or LEVELS.index(r.level) < LEVELS.index(prev):
            worst[r.rule_id] = r.level
        res: dict[str, Any] = {
            "ruleId": r.rule_id,
            "ruleIndex": index[r.rule_id],
            "level": r.level,
            "message": {"text": r.message},
            "locations": [r.location_json()],
            "partialFingerprints": {r.fingerprint[0]: r.fingerprint[1]},
        }
        if r.properties:
            res["properties"] = dict(r.properties)
        out.append(res)
    for d in descriptors:
        d.setdefault("defaultConfiguration", {"level": worst.get(d["id"], "warning")})
    notes = [(lvl, text) for lvl, text in notifications]
    if omitted:
        notes.append(
            (
                "warning",
                f"{omitted:,} of {len(results):,} results left out (at most {max_results:,} per run, the most "
                "severe kept; raise --max-results, or see the JSON output for all)",
            )
        )
    run_props = {**(properties or {}), "total_results": len(results), "omitted_results": omitted}
    run: dict[str, Any] = {
        "tool": {
            "driver": {"name": tool, "version": version, "informationUri": docs_url(""), "rules": descriptors}
        },
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {"level": lvl, "message": {"text": text}} for lvl, text in notes
                ],
            }
        ],
        "columnKind": "unicodeCodePoints",
        "results": out,
        "properties": run_props,
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def receipt_results(receipts: Iterable[Mapping[str, Any]], options: RenderOptions) -> list[Result]:
    """One `Result` per violation of the receipts, in order."""
    results = []
    for r, v in violations(receipts):
        props: dict[str, Any] = {
            "tool": r["outcome_contract"]["tool"],
            "rule": v["rule"],
            "path": v["path"],
            "call_id": r.get("call_id"),
            "recovery_tools": r["outcome_contract"].get("recovery_tools", []),
        }
        if "expected" in v:
            props.update(expected=v["expected"], observed=v["observed"], present=v["present"])
        if "support" in v:
            props["support"] = v["support"]
        results.append(
            Result(
                v["code"],
                options.level(v["rule"]),
                message(v),
                options.locator.locate(r.get("source"), r.get("line")),
                ("contractsViolation/v1", canonical_str([r.get("call_id"), v["rule"], v["path"]])),
                props,
            )
        )
    return results


def sarif(
    receipts: Iterable[Mapping[str, Any]],
    summary: Summary,
    *,
    version: str,
    options: RenderOptions | None = None,
) -> dict[str, Any]:
    """The SARIF log of `contracts check`: one result per violation, the summary in the run's properties."""
    opts = options or RenderOptions()
    return sarif_log(
        receipt_results(receipts, opts),
        tool="contracts",
        version=version,
        max_results=opts.max_results,
        properties={"summary": summary.to_json()},
    )


class Sarif(Document):
    name = "sarif"

    def render_all(
        self,
        receipts: Iterable[Mapping[str, Any]],
        summary: Summary,
        *,
        version: str,
        options: RenderOptions | None = None,
    ) -> bytes:
        return pretty_json(sarif(receipts, summary, version=version, options=options))


FORMAT = Sarif()
