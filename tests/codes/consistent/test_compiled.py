"""The episode memory's `observe` written out per contract set (`rules.compiled._observer`), the one
`check -` and `compiled_violations` use on a memory from `compiled_memory`, keeps what
`EpisodeMemory.record` keeps and finds the same CONSISTENT violations: random episodes of two tools on
places one key below the result, deeper (`/o/id`), escaped (`/a~1b`) and shared keys (several P per K)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.consistent.compiled import ConsistentProgram
from output_contracts.codes.contract_set import ContractSet, Rule, Support, ToolContracts, rule_id
from output_contracts.codes.engine.compiled import compiled_memory, compiled_violations, program
from output_contracts.codes.engine.evaluate import call_violations, episode_memory


def _rule(tool: str, paths: list[str]) -> Rule:
    return Rule(rule_id(tool, "CONSISTENT", paths, {}), tool, "CONSISTENT", tuple(paths), {}, Support(40, 7))


RULES = {
    "t": (
        _rule("t", ["/s", "/id"]),
        _rule("t", ["/v", "/id"]),
        _rule("t", ["/o/v", "/o/id"]),
        _rule("t", ["/a~1b", "/id"]),
    ),
    "u": (_rule("u", ["/v", "/id"]), _rule("u", ["/s", "/k"])),
}
KEYS = ("id", "k", "s", "v", "o", "a/b", "x")
CS = ContractSet(
    params={"k": 1, "seed": 13}, corpus={}, tools={t: ToolContracts(rules=r) for t, r in RULES.items()}
)
SCALARS = st.sampled_from([None, True, 0, 1, 1.0, 2.5, "a", "b", "1", 2**53])
#: results where entities repeat: few keys, few values, objects most of the time
SMALL = st.sampled_from(["a", "b", 1, 1.0, None])
FLAT = st.fixed_dictionaries(
    {"id": SMALL},
    optional={
        "v": SMALL,
        "s": SMALL,
        "k": SMALL,
        "a/b": SMALL,
        "o": st.fixed_dictionaries({"id": SMALL}, optional={"v": SMALL}),
    },
)
JSON = st.recursive(
    SCALARS,
    lambda ch: st.lists(ch, max_size=3) | st.dictionaries(st.sampled_from(KEYS), ch, max_size=4),
    max_leaves=12,
)
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["t", "u", "w"]),
        st.just({}) | st.just({}) | st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=2),
        FLAT | FLAT | st.dictionaries(st.sampled_from(KEYS), JSON, max_size=6) | JSON,
    ),
    max_size=10,
)


def test_compiled_memory_takes_the_written_out_observe() -> None:
    prog = program(CS).episode
    assert isinstance(prog, ConsistentProgram)
    assert prog.observe is not None
    assert compiled_memory(CS).pairs is prog.template.pairs
    # tool u's entities are one key below the result: its rules are skipped unless one was seen; t's
    # `/o/id` is deeper, so `breaks` decides every time
    assert set(prog.seen_tests) == {"u"}


@settings(max_examples=300, deadline=None)
@given(calls=CALLS)
def test_written_out_observe_is_record(calls: list[tuple[str, dict[str, Any], Any]]) -> None:
    plain, fast = episode_memory(CS), compiled_memory(CS)
    assert plain.pairs == fast.pairs and plain.pairs is not fast.pairs  # the plain one takes `record`
    for i, (tool, args, result) in enumerate(calls):
        want = call_violations(CS, tool, args, result, memory=plain, call_id=f"c{i}")
        got = compiled_violations(CS, tool, args, result, memory=fast, call_id=f"c{i}")
        assert got == want
        assert fast.seen == plain.seen and fast.known == plain.known


def test_a_changed_value_breaks_on_both_paths() -> None:
    plain, fast = episode_memory(CS), compiled_memory(CS)
    for i, (tool, result) in enumerate((("t", {"id": "a", "v": 1}), ("u", {"id": "a", "v": 2}))):
        want = call_violations(CS, tool, {}, result, memory=plain, call_id=f"c{i}")
        assert compiled_violations(CS, tool, {}, result, memory=fast, call_id=f"c{i}") == want
    assert [v.code for v in want] == ["CONSISTENT"]
