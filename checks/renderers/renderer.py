"""One output format of `contracts check` per module, behind one interface (`OutputFormat`).

Every format takes encoded receipts (`encode(receipt)` dicts) and, unless it streams, the run's
`Summary`, and returns bytes, so the CLI only looks its format up in `FORMATS` and writes. A streaming
format renders each receipt as it arrives (`render_one`); a document format renders them all at once
with the summary (`render_all`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from output_contracts.checks.outputs import Summary
from output_contracts.checks.renderers.locations import Locator
from output_contracts.choices import MAX_ANNOTATIONS as MAX_ANNOTATIONS
from output_contracts.choices import MAX_SARIF_RESULTS as MAX_SARIF_RESULTS
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.jsonutil import canonical_str

#: A mined rule whose clean support spans at least this many tasks is reported as a `warning`, below it
#: as a `note` (30 is the per-group task bar of CONDITIONAL and the default min support of most classes).
WARNING_MIN_TASKS = 30
#: SARIF levels, most severe first (the order results are kept in when a cap applies).
LEVELS = ("error", "warning", "note")


def rule_level(rule: Rule) -> str:
    """A rule's SARIF level from its confidence: `error` when the tool's declared output schema states
    it (source `schema`: the tool broke its own contract), `warning` for a mined rule with support over
    at least `WARNING_MIN_TASKS` tasks, `note` for one with less."""
    if "schema" in rule.source:
        return "error"
    return "warning" if rule.support.tasks >= WARNING_MIN_TASKS else "note"


def rule_levels(contracts: ContractSet) -> dict[str, str]:
    """The level of every rule of a contract set, by rule id."""
    return {r.id: rule_level(r) for tc in contracts.tools.values() for r in tc.rules}


@dataclass(frozen=True)
class RenderOptions:
    """What a document format needs besides receipts: where paths are relative to and which lines
    records start at (`locator`), the caps, and each rule's level (`levels`; a rule not in it is a
    `warning`)."""

    locator: Locator = field(default_factory=Locator)
    max_results: int = MAX_SARIF_RESULTS
    max_annotations: int = MAX_ANNOTATIONS
    levels: Mapping[str, str] = field(default_factory=dict)

    def level(self, rule_id: str) -> str:
        """The SARIF level of a violation of rule `rule_id`."""
        return self.levels.get(rule_id, "warning")


class OutputFormat(Protocol):
    """A format: its `name` (the `--output-format` value) and whether it streams."""

    name: str
    streaming: bool

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        """One receipt (streaming formats)."""
        ...

    def render_all(
        self,
        receipts: Iterable[Mapping[str, Any]],
        summary: Summary,
        *,
        version: str,
        options: RenderOptions | None = None,
    ) -> bytes:
        """Every receipt and the summary (document formats)."""
        ...


class Streaming:
    """Base of the streaming formats: `render_all` is every receipt's `render_one`, in order."""

    streaming = True

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        raise NotImplementedError

    def render_all(
        self,
        receipts: Iterable[Mapping[str, Any]],
        summary: Summary,
        *,
        version: str,
        options: RenderOptions | None = None,
    ) -> bytes:
        return b"".join(self.render_one(r) for r in receipts)


class Document:
    """Base of the document formats (they need every receipt and the summary)."""

    streaming = False

    def render_one(self, receipt: Mapping[str, Any]) -> bytes:
        raise TypeError(f"{type(self).__name__} renders whole documents, not one receipt")


def capped(levels: list[str], limit: int) -> set[int]:
    """The indexes of the `limit` items kept: the most severe first, then in order (deterministic)."""
    order = sorted(range(len(levels)), key=lambda i: (LEVELS.index(levels[i]), i))
    return set(order[: max(0, limit)])


def violations(
    receipts: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    for r in receipts:
        for v in r["outcome_contract"]["violations"]:
            yield r, v


def message(v: Mapping[str, Any]) -> str:
    """The violation's sentence in either encoder (v1 `message`, v2 `detail` + witnesses)."""
    if "message" in v:
        return str(v["message"])
    exp = v["expected"] if isinstance(v["expected"], str) else canonical_str(v["expected"])
    obs = "missing" if not v.get("present", True) else canonical_str(v["observed"])
    return f"{v['code']} at {v['path'] or '(whole result)'}: expected {exp}, observed {obs}. {v['detail']}"
