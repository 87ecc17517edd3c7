"""Comparing two contract sets: a drift report between the contracts of two corpora.

Rules are compared on their full checkers (`rules_for(None)`), keyed by the property they constrain —
(tool, code, paths). A key in both sets with different params is *changed* (a DOMAIN that gained a
value, a TYPE that went from int to number, a relation whose tolerance changed); a key in only the old
set is *removed* (an invariant the new data no longer supports — the drift signal `--fail-on-removed`
gates on); a key only in the new set is *added*. When one key holds several rules on one side (two
RELATION forms over the same fields), params that appear on both sides are unchanged and the rest are
reported as removed and added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.table import names
from output_contracts.jsonutil import canonical_str

Key = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Change:
    """The same property with different params in the old and the new set."""

    old: Rule
    new: Rule


@dataclass(frozen=True)
class SetDiff:
    """Rules added, removed and changed from `old` to `new` (each list sorted by tool, code, paths)."""

    added: tuple[Rule, ...]
    removed: tuple[Rule, ...]
    changed: tuple[Change, ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, Any]:
        def brief(r: Rule) -> dict[str, Any]:
            return {
                "id": r.id,
                "tool": r.tool,
                "code": r.code,
                "paths": list(r.paths),
                "params": dict(r.params),
                "support": {"calls": r.support.calls, "tasks": r.support.tasks},
            }

        return {
            "added": [brief(r) for r in self.added],
            "removed": [brief(r) for r in self.removed],
            "changed": [{"old": brief(c.old), "new": brief(c.new)} for c in self.changed],
            "unchanged": self.unchanged,
        }


def _key(r: Rule) -> Key:
    return (r.tool, r.code, tuple(r.paths))


def _order(k: Key) -> tuple[Any, ...]:
    codes = names()
    return (k[0], codes.index(k[1]) if k[1] in codes else len(codes), list(k[2]))


def diff_sets(old: ContractSet, new: ContractSet) -> SetDiff:
    """The drift from `old` to `new` (full checkers)."""
    a: dict[Key, dict[str, Rule]] = {}
    b: dict[Key, dict[str, Rule]] = {}
    for side, cs in ((a, old), (b, new)):
        for r in cs.rules_for(None):
            side.setdefault(_key(r), {})[canonical_str(dict(r.params))] = r
    added: list[Rule] = []
    removed: list[Rule] = []
    changed: list[Change] = []
    same = 0
    for k in sorted(set(a) | set(b), key=_order):
        old_p, new_p = a.get(k, {}), b.get(k, {})
        common = set(old_p) & set(new_p)
        same += len(common)
        only_old = [old_p[p] for p in sorted(set(old_p) - common)]
        only_new = [new_p[p] for p in sorted(set(new_p) - common)]
        if len(only_old) == 1 and len(only_new) == 1:
            changed.append(Change(only_old[0], only_new[0]))
        else:
            removed += only_old
            added += only_new
    return SetDiff(tuple(added), tuple(removed), tuple(changed), same)
