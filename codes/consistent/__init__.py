"""The CONSISTENT property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import resolve
from output_contracts.codes.spec import Code, Paths
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, name
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.pointers import WILD_TOKENS

#: A call's id, or a function giving it (called only when a violation cites the call).
CallId = str | Callable[[], str]

#: A result field without wildcards: what P and K are.
_PLACE = {"type": "string", "pattern": "^/", "not": {"pattern": "(^|/)(\\*|~\\*)(/|$)"}}


class Seen(NamedTuple):
    """What an earlier call of the episode returned at P for one entity (an immutable record; a named
    tuple, made in half the time of a frozen dataclass, as every observed call makes one per place)."""

    value: Any
    call_id: CallId  # or a function giving it, called by `Consistent.episode_witness` (`Seen.id`)
    tool: str

    def id(self) -> str:
        """The earlier call's id (computed now when it was kept as a function)."""
        return self.call_id if isinstance(self.call_id, str) else self.call_id()


def place_error(paths: Sequence[str]) -> str | None:
    """Why (P, K) cannot be a CONSISTENT place, or None."""
    if len(paths) != 2:
        return "needs exactly two paths [P, K]"
    p, k = paths
    for x in (p, k):
        if x.startswith("$args") or not x.startswith("/"):
            return f"{x or '(result)'} is not a result field"
        if any(t in WILD_TOKENS for t in x.split("/")):
            return f"{x} has a wildcard"
    if p == k:
        return "P and K are the same field"
    if p.rsplit("/", 1)[0] != k.rsplit("/", 1)[0]:
        return "P and K are not fields of the same object"
    return None


@register
class Consistent(Code):
    """An entity's field differs from what an earlier call of the same episode returned for it.

    *Rule*: `paths = [P, K]`, two result fields of one object (no wildcards): K the entity's key
    (`/reservation_id`), P a field of it (`/created_at`); `params` = `{}`. Within one episode, for every
    status-ok call in input order (source, line, index within the line), the latest value each entity (K's
    value: a string, or an integer below 2^53) had at P in an earlier call of *any* tool is remembered; a call
    of the rule's tool whose P differs from it breaks the rule (equality as ECHO's: numbers by value). A call
    with no earlier sighting of its entity is not judged, nor is a call checked alone: `check_call` judges it
    only given the episode's `EpisodeMemory` (`output_contracts.codes.engine.evaluate.episode_memory`), which `check -`
    keeps per trace, a `Session` of the public API (`checker.session()`, docs/api.md) keeps per episode and
    `contracts proxy` keeps per run. *Witness*: path = P; `expected` = the earlier value, `observed` = this call's; the detail
    names the earlier call (tool and call id), and fire events and the violations frame carry its call id as
    `refers`. This is the one code that sees a value that is plausible on its own (a time shifted by a zone,
    a field from another entity's cached record); `audit` does not count a receipt on an unlabelled call as a
    false alarm when every violation in it names an earlier call that carries a fault label
    (`fire_rate.cross_call_explained`).
    """

    name = "CONSISTENT"
    short = "CONS"
    summary = "an entity's field differs from what an earlier call of the same episode returned for it"
    order = 130
    shape = Paths(2, 2, {"items": _PLACE})
    min_support = 30
    min_tasks = 200
    per_episode = True

    def validate(self, rule: Rule) -> None:
        why = place_error(rule.paths)
        if why is not None:
            raise self.bad(rule, why)

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0]} same per {rule.paths[1]} in an episode"

    def witness(self, rule: Rule, at: At) -> Violation:
        raise NotImplementedError("CONSISTENT is rendered by episode_witness, with the earlier call")

    def episode_witness(self, rule: Rule, result: Any, seen: Seen) -> Violation:
        """The violation of `rule` by `result`, against the earlier sighting `seen`."""
        p, k = rule.paths
        _, pv = resolve(result, p)
        _, kv = resolve(result, k)
        call_id = seen.id()
        earlier = f"{seen.tool} (call {call_id})" if call_id else seen.tool
        return Violation(
            self.name,
            rule.id,
            p,
            seen.value,
            pv,
            True,
            f"{rule.tool} returned {name(p)}={canonical_str(pv)} for {name(k)}={canonical_str(kv)}, but "
            f"{earlier} returned {name(p)}={canonical_str(seen.value)} for the same {name(k)} earlier in this "
            f"episode; in every one of {rule.support.calls} clean repeats the value never changed",
            call_id or None,
        )
