"""CONSISTENT in the compiled per-call checker (`output_contracts.codes.engine.compiled`): an episode's
memory with its `observe` written out for the checker's places, and a test that skips a tool's rules when
the result's entity was never seen.

`ConsistentProgram.step` is `EpisodeMemory.breaks` for each of the tool's rules, then `record`, as the
generic engine does (`output_contracts.codes.engine.evaluate.call_violations`), with two shortcuts that give
the same answers: an empty memory breaks nothing, and a tool whose entity at K was not seen at any of its
rules' places is not looked at further (`_seen_test`); `observe` runs as generated source for a memory
that shares the program's places (one a caller made itself takes the general path).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.codes.consistent import CallId, Consistent
from output_contracts.codes.consistent.memory import (
    ABSENT,
    JUDGED_TYPES,
    EpisodeMemory,
    entity_value,
    judged,
    walk_steps,
)
from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import Writer
from output_contracts.codes.violation import Violation
from output_contracts.traces.pointers import unescape_token

Observe = Callable[[list[dict[Any, Any]], set[Any], Any, CallId, str], None]
SeenTest = Callable[[list[dict[Any, Any]], Any], bool]


def _observer(template: EpisodeMemory) -> Observe | None:
    """`EpisodeMemory.observe` written out for the template's places (`observe(seen, known, result,
    call_id, tool)` on a memory's `_seen` and `_known`): the same lookups, tests and stores in the same
    order, with each key a constant and no loop over the plan (a memory's plan is its places': one
    sharing the template's places has the template's plan). None when there are no places."""
    if not template.pairs:
        return None
    w = Writer()
    lines = [
        "def observe(seen, known, R, cid, tool):",
        "    if type(R) is not dict and not isinstance(R, dict):",
        "        return",
        "    get = R.get",
    ]
    for k, ks, ktop, places in template.plan:
        kv, key, hit = w.name("kv"), w.name("key"), w.name("hit")
        read = (
            f"get({w.const(ktop)}, _ABSENT)" if ktop is not None else f"_walk(R, {w.const(ks)}, {w.const(k)})"
        )
        lines += [
            f"    {kv} = {read}",
            f"    if {kv} is not _ABSENT:",
            f"        {key} = {kv} if type({kv}) is str else _ekey({kv})",
            f"        if {key} is not None:",
            f"            {hit} = False",
        ]
        for i, p, ps, ptop in places:
            pv = w.name("pv")
            pread = (
                f"get({w.const(ptop)}, _ABSENT)"
                if ptop is not None
                else f"_walk(R, {w.const(ps)}, {w.const(p)})"
            )
            lines += [
                f"            {pv} = {pread}",
                f"            if {pv} is not _ABSENT and (type({pv}) in _JT or _judged({pv})):",
                f"                seen[{int(i)}][{key}] = ({pv}, cid, tool)",
                f"                {hit} = True",
            ]
        lines += [f"            if {hit}:", f"                known.add({key})"]
    ns: dict[str, Any] = {
        "_ABSENT": ABSENT,
        "_ekey": entity_value,
        "_walk": walk_steps,
        "_JT": JUDGED_TYPES,
        "_judged": judged,
        **w.consts,
    }
    try:
        exec(compile("\n".join(lines) + "\n", "<contracts compiled episode memory>", "exec"), ns)
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - absurdly many places
        return None
    fn: Observe = ns["observe"]
    return fn


def _seen_test(template: EpisodeMemory, rules: Sequence[Rule]) -> SeenTest | None:
    """For one tool's CONSISTENT rules: `test(seen, result)`, False only when no rule can break, that is
    when `EpisodeMemory.breaks` would give None for each without looking further (the result's entity at
    K not seen at the rule's place), on a memory with the template's places. K one key below the result
    is read by `get`; a deeper K, or a result that is not a dict, answers True (`breaks` decides)."""
    w = Writer()
    lines = ["def test(seen, R):", "    if type(R) is not dict:", "        return True"]
    by_k: dict[str, list[int]] = {}
    for r in rules:
        p, k = r.paths
        i = template.index.get((p, k))
        if i is None:
            continue  # `breaks` gives None at once
        by_k.setdefault(k, []).append(i)
    for k, idx in by_k.items():
        toks = k.split("/")
        if k == "" or len(toks) != 2 or toks[1].isdigit():
            return None  # deeper, the root, or an index: `breaks` walks it
        kv, key = w.name("kv"), w.name("key")
        lines += [
            f"    {kv} = R.get({w.const(unescape_token(toks[1]))}, _ABSENT)",
            f"    if {kv} is not _ABSENT:",
            f"        {key} = {kv} if type({kv}) is str else _ekey({kv})",
            f"        if {key} is not None and ({' or '.join(f'{key} in seen[{i}]' for i in idx)}):",
            "            return True",
        ]
    lines.append("    return False")
    ns: dict[str, Any] = {"_ABSENT": ABSENT, "_ekey": entity_value, **w.consts}
    try:
        exec(compile("\n".join(lines) + "\n", "<contracts compiled episode test>", "exec"), ns)
    except (SyntaxError, RecursionError, MemoryError):  # pragma: no cover - absurdly many places
        return None
    fn: SeenTest = ns["test"]
    return fn


@dataclass(frozen=True)
class ConsistentProgram:
    """One checker's CONSISTENT rules compiled: per tool its rules, an empty memory of their places (the
    template `memory` copies), its `observe` written out, and per tool the test of whether a rule can
    break (`_seen_test`)."""

    check: Consistent
    rules: dict[str, list[Rule]]
    template: EpisodeMemory
    observe: Observe | None = None
    seen_tests: dict[str, SeenTest] = field(default_factory=dict)

    @classmethod
    def of(cls, check: Consistent, rules: Sequence[Rule]) -> ConsistentProgram:
        by_tool: dict[str, list[Rule]] = {}
        for r in rules:
            by_tool.setdefault(r.tool, []).append(r)
        template = EpisodeMemory((r.paths[0], r.paths[1]) for rs in by_tool.values() for r in rs)
        tests = {t: f for t, rs in by_tool.items() if (f := _seen_test(template, rs)) is not None}
        return cls(check, by_tool, template, _observer(template), tests)

    def memory(self) -> EpisodeMemory:
        return self.template.blank()

    def step(
        self, memory: Any, tool: str, arguments: Any, result: Any, call_id: Any, judge: bool
    ) -> list[Violation]:
        out: list[Violation] = []
        ours = memory.pairs is self.template.pairs
        rules = self.rules.get(tool) if memory.known else None  # an empty memory breaks nothing
        if (
            rules
            and judge
            and (not ours or (st := self.seen_tests.get(tool)) is None or st(memory.seen, result))
        ):
            for rule in rules:
                seen = memory.breaks(rule, result)
                if seen is not None:
                    out.append(self.check.episode_witness(rule, result, seen))
        if self.observe is not None and ours:
            # `memory.record`, with its `observe` written out for these places
            if memory.known:
                memory.touch(arguments)
            self.observe(memory.seen, memory.known, result, call_id, tool)
        else:
            memory.record(tool, arguments, result, call_id)
        return out
