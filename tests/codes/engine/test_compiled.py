"""The compiled per-call checker (`output_contracts.codes.engine.compiled`) finds exactly what the generic
engine (`output_contracts.codes.engine.evaluate.call_violations`) finds, rendered the same way.

Held three ways: hypothesis differential tests over random results and random mutations of real ones,
for every rule class (inline, per-rule fallback, whole-call fallback and CONSISTENT); the receipts of
`contracts check -` byte for byte on the sample world's faulty traces (against the committed golden of
today's checker, and against a run through the generic engine) and on τ-bench's real tool output; and
the cache (per contract-set sha256, checker and codes).
"""

from __future__ import annotations

import copy
import gzip
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.checks import checker as checker_mod
from output_contracts.checks.checker import check_call, load_contracts
from output_contracts.cli.app import app
from output_contracts.codes import dates
from output_contracts.codes.consistent import Seen
from output_contracts.codes.consistent import memory as consistent
from output_contracts.codes.contract_set import ContractSet, Rule, Support, ToolContracts, rule_id
from output_contracts.codes.date_order import check as date_order_check
from output_contracts.codes.echo.check import echo_equal
from output_contracts.codes.engine import compiled
from output_contracts.codes.engine.compiled import compiled_violations, program
from output_contracts.codes.engine.evaluate import call_violations, episode_memory
from output_contracts.codes.format.check import format_breaks
from output_contracts.codes.format.shapes import LONG, parts, shape
from output_contracts.codes.nodes import resolve
from tests.loaders import bench_module

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "tests" / "golden" / "sample-contracts.json"
FAULTY = REPO / "sample_traces" / "faulty" / "part-1.jsonl.gz"
CLEAN = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"
T = "t"


def rule(code: str, paths: list[str], params: dict[str, Any] | None = None) -> Rule:
    params = params or {}
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(40, 7))


#: Every rule class, on places of every kind the walk knows: the root, literal keys (escaped ones too),
#: array wildcards, fixed indexes, a map (`/m`), argument paths, and places under all of these.
RULES = (
    rule("REQUIRED", ["/a"]),
    rule("REQUIRED", ["/a~1b"]),
    rule("REQUIRED", ["/items/*/p"]),
    rule("REQUIRED", ["/items/*/s"]),
    rule("REQUIRED", ["/m/~*/p"]),
    rule("REQUIRED", ["$args/q"]),
    rule("REQUIRED", ["/x/~0"]),
    rule("TYPE", [""], {"kind": "object"}),
    rule("TYPE", ["/a"], {"kind": "number"}),
    rule("TYPE", ["/items/*/p"], {"kind": "int"}),
    rule("TYPE", ["/items"], {"kind": "array"}),
    rule("TYPE", ["/s"], {"kind": "string"}),
    rule("TYPE", ["/x"], {"kind": "null"}),
    rule("TYPE", ["/m/~*/s"], {"kind": "bool"}),
    rule("TYPE", ["$args/q"], {"kind": "string"}),
    rule("POSITIVE", ["/items/*/p"]),
    rule("POSITIVE", ["/items/*0/p"]),
    rule("NONNEG", ["/a"]),
    rule("NONNEG", ["/m/~*/p"]),
    rule("DOMAIN", ["/s"], {"values": ["a", "x", "y"]}),
    rule("DOMAIN", ["/m/~*/s"], {"values": ["a"]}),
    rule("RANGE", ["/a"], {"of": "number", "min": 1, "max": 100}),
    rule("RANGE", ["/items/*/p"], {"of": "magnitude", "min": None, "max": 10}),
    rule("RANGE", ["/d"], {"of": "year", "min": 2000, "max": 2030}),
    rule("LENGTH", ["/items"], {"min": 2}),
    rule("FORMAT", ["/s"], {"level": "exact", "shapes": ["a", "Aa9", "9-9"]}),
    rule("FORMAT", ["/id"], {"level": "loose", "shapes": ["A-9", "a.a", "a", LONG]}),
    rule("FORMAT", ["/items/*/s"], {"level": "charset", "shapes": ["0:", "1:a", "2:9", "2:A", "3:-"]}),
    rule("ECHO", ["/s", "$args/q"]),
    rule("ECHO", ["/items/*0/s", "$args/q"]),
    rule("ECHO", ["/items/*/s", "$args/q"]),
    rule("DATE_ORDER", ["/d", "/e"], {"tz": "date"}),
    rule("DATE_ORDER", ["/items/*/d", "/items/*/e"], {"tz": "date"}),
    rule("RELATION", ["/a", "/items/*/p"], {"form": "sum_over", "tol": "cent"}),
    rule("RELATION", ["/a", "/items"], {"form": "count_of", "tol": "exact"}),
    rule("RELATION", ["/items/*/p", "/items/*/q", "/items/*/r"], {"form": "product", "tol": "exact"}),
    rule("RELATION", ["/a", "/b", "/c"], {"form": "linear", "coef": [1, 1], "tol": "cent"}),
    rule("RELATION", ["/m/~*/p", "/m/~*/q"], {"form": "linear", "coef": [1], "tol": "exact"}),
    rule("RELATION", ["/items/*/q", "/items/*/r/*0"], {"form": "linear", "coef": [-1], "tol": "cent"}),
    rule("RELATION", ["/items/*/r", "/items/*/x"], {"form": "count_of", "tol": "exact"}),
    rule("UNIQUE", ["/items/*/s"]),
    rule("CONDITIONAL", ["/d", "/s"], {"then": "absent", "when": {"in": ["x"]}}),
    rule("CONDITIONAL", ["/e", "/s"], {"then": "present", "when": {"in": ["y"]}}),
    rule("CONDITIONAL", ["/items", "/a"], {"then": "nonempty", "when": {"sign": ["positive"]}}),
    rule("CONDITIONAL", ["/c", "/s"], {"then": {"equals": 3}, "when": {"in": ["a", None]}}),
    rule("CONDITIONAL", ["/items", "/b"], {"then": "empty", "when": {"sign": ["zero", "negative"]}}),
    rule("CONDITIONAL", ["/a", "/s", "/items/*/p"], {"then": {"sum": "cent"}, "when": {"in": ["x"]}}),
    rule("CONSISTENT", ["/s", "/id"]),
)
SYNTH = ContractSet(
    params={"k": 1, "seed": 13}, corpus={}, tools={T: ToolContracts(rules=RULES, maps=("/m",))}
)

KEYS = ("a", "b", "c", "s", "d", "e", "id", "items", "m", "p", "q", "r", "x", "~", "a/b", "*", "*0", "0")
TEXT = st.text(alphabet="aAz9-.@ é~/", max_size=6) | st.sampled_from(
    ["2024-01-02", "1970-01-01", "2024-01-01T10:00:00Z", "9999-12-31", "x", "y", "a" * 70]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(st.sampled_from(KEYS), ch, max_size=5),
    max_leaves=24,
)
RESULTS = st.dictionaries(st.sampled_from(KEYS), JSON, max_size=7) | JSON


def both(cs: ContractSet, tool: str, args: Any, result: Any, **kw: Any) -> tuple[list[Any], list[Any]]:
    return call_violations(cs, tool, args, result, **kw), compiled_violations(cs, tool, args, result, **kw)


# ----------------------------------------------------------------------------------------------------
# 1. differential: random results and random mutations of real ones


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(st.sampled_from(KEYS), JSON, max_size=3), result=RESULTS)
def test_random_results_every_class(args: dict[str, Any], result: Any) -> None:
    generic, fast = both(SYNTH, T, args, result)
    assert fast == generic


#: A wide object of optional fields (`/o`: TYPE leaves looked up in a table, keys with other rules
#: walked in blocks, REQUIRED keys walked or not), also under an array and on the argument side, and a
#: narrow one (`/r`: REQUIRED folded into the walk's lookups).
WIDE_KEYS = [f"k{i}" for i in range(20)] + ["a/b", "c~d"]
_KINDS = ("string", "number", "int", "bool", "null", "array", "object")
WIDE_RULES = (
    *(
        rule("TYPE", [f"{at}/{k.replace('~', '~0').replace('/', '~1')}"], {"kind": _KINDS[i % 7]})
        for at in ("/o", "/l/*/o", "$args/o")
        for i, k in enumerate(WIDE_KEYS)
    ),
    rule("TYPE", ["/o"], {"kind": "object"}),
    rule("FORMAT", ["/o/k0"], {"level": "exact", "shapes": ["a", "9"]}),
    rule("DOMAIN", ["/o/k7"], {"values": ["a", "x"]}),
    rule("TYPE", ["/o/k1/x"], {"kind": "int"}),
    rule("REQUIRED", ["/o/k0"]),
    rule("REQUIRED", ["/o/k3"]),
    rule("REQUIRED", ["/o/zz"]),
    rule("REQUIRED", ["/r/a"]),
    rule("REQUIRED", ["/r/b"]),
    rule("REQUIRED", ["/r/c~1d"]),
    rule("REQUIRED", ["/r/0"]),
    rule("TYPE", ["/r/a"], {"kind": "string"}),
    rule("TYPE", ["/r/c~1d"], {"kind": "int"}),
    rule("NONNEG", ["/r/b"]),
)
WIDE = ContractSet(params={"k": 1, "seed": 13}, corpus={}, tools={T: ToolContracts(rules=WIDE_RULES)})
WIDE_OBJ = st.dictionaries(st.sampled_from([*WIDE_KEYS, "zz", "*", "0", "k1"]), JSON, max_size=6)
NARROW = st.dictionaries(st.sampled_from(["a", "b", "c/d", "0", "x"]), SCALARS, max_size=4)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    o=WIDE_OBJ,
    args=st.dictionaries(st.just("o"), WIDE_OBJ),
    lst=st.lists(st.dictionaries(st.just("o"), WIDE_OBJ | JSON), max_size=3),
    r=NARROW | JSON,
)
def test_wide_objects_and_required_keys(o: dict[str, Any], args: Any, lst: Any, r: Any) -> None:
    for result in ({"o": o, "l": lst, "r": r}, {"o": o}, {"r": r}, o):
        generic, fast = both(WIDE, T, args, result)
        assert fast == generic


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(st.tuples(st.dictionaries(st.sampled_from(KEYS), JSON, max_size=3), RESULTS), max_size=5)
)
def test_random_episodes_with_memory(calls: list[tuple[dict[str, Any], Any]]) -> None:
    """CONSISTENT (judged against the episode) and the memory's record of every call agree too."""
    m1, m2 = episode_memory(SYNTH), episode_memory(SYNTH)
    for i, (args, result) in enumerate(calls):
        a = call_violations(SYNTH, T, args, result, memory=m1, call_id=f"c{i}")
        b = compiled_violations(SYNTH, T, args, result, memory=m2, call_id=f"c{i}")
        assert a == b


class _PlainMemory:
    """The episode memory as it was before its per-place tables (one table keyed by (P, K, entity_key),
    `resolve`'s walk): the reference the memory is held to."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs = sorted(set(pairs))
        self.seen: dict[Any, Seen] = {}

    def record(self, tool: str, arguments: Any, result: Any, call_id: str, ok: bool) -> None:
        stack = [arguments]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            elif (key := consistent.entity_key(v)) is not None:
                for pk in [x for x in self.seen if x[2] == key]:
                    del self.seen[pk]
        if not ok or not isinstance(result, dict):
            return
        for p, k in self.pairs:
            hk, kv = resolve(result, k)
            hp, pv = resolve(result, p)
            key = consistent.entity_key(kv) if hk else None
            if key is not None and hp and consistent.judged(pv):
                self.seen[(p, k, key)] = Seen(pv, call_id, tool)

    def breaks(self, p: str, k: str, result: Any) -> Seen | None:
        hk, kv = resolve(result, k)
        hp, pv = resolve(result, p)
        key = consistent.entity_key(kv) if hk else None
        if key is None or not hp or not consistent.judged(pv):
            return None
        seen = self.seen.get((p, k, key))
        return None if seen is None or echo_equal(pv, seen.value) else seen


PLACES = [("/a", "/id"), ("/b", "/id"), ("/x/a", "/x/id"), ("/a", "/b"), ("/l/0", "/l/1")]
#: Few entities and values, so that sightings repeat, agree and disagree; ids at the edges of 2^53.
IDS = st.sampled_from(["1", 1, 1.0, True, None, 2**53, 2**53 - 1, -(2**53), -(2**53) + 1])
EP_VALUES = st.sampled_from([1, 1.0, 2, "1", True, None, float("nan"), [1]])
EP_OBJ = st.fixed_dictionaries({"id": IDS, "a": EP_VALUES}, optional={"b": IDS | EP_VALUES})
EP_RESULT = (
    st.fixed_dictionaries(
        {"id": IDS, "a": EP_VALUES},
        optional={"b": IDS | EP_VALUES, "x": EP_OBJ, "l": st.lists(IDS | EP_VALUES, max_size=3)},
    )
    | st.lists(EP_OBJ, max_size=2)
    | IDS
)


@example(  # a touched entity is forgotten while another one is still remembered
    places=[("/a", "/id")],
    calls=[
        ("t", {}, {"id": "1", "a": 1}, True),
        ("t", {}, {"id": 1, "a": 1}, True),
        ("u", {"q": ["1"]}, {"id": 2**53, "a": 1}, False),
        ("t", {}, {"id": "1", "a": 2}, True),
    ],
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    places=st.lists(st.sampled_from(PLACES), min_size=1, max_size=4),
    calls=st.lists(
        st.tuples(
            st.sampled_from(["t", "u"]),
            st.dictionaries(st.sampled_from(["id", "q"]), IDS | st.lists(IDS, max_size=2), max_size=1),
            EP_RESULT,
            st.booleans() | st.just(True),
        ),
        min_size=4,
        max_size=10,
    ),
)
def test_episode_memory_is_the_plain_memory(
    places: list[tuple[str, str]], calls: list[tuple[str, Any, Any, bool]]
) -> None:
    """`EpisodeMemory` (tables per place, keys read once per K, plain tuples) judges and remembers as
    the plain one: the same earlier sighting for every place, every call, any tool, status or shape."""
    memory, plain = consistent.EpisodeMemory(places), _PlainMemory(places)
    for i, (tool, args, result, ok) in enumerate(calls):
        for p, k in places:
            r = Rule("r", tool, "CONSISTENT", (p, k), {}, Support(40, 7))
            assert memory.breaks(r, result) == plain.breaks(p, k, result)
        memory.record(tool, args, result, f"c{i}", ok=ok)
        plain.record(tool, args, result, f"c{i}", ok)
    memory = memory.blank()
    assert all(
        memory.breaks(Rule("r", "t", "CONSISTENT", pk, {}, Support(40, 7)), {}) is None for pk in places
    )


#: The forms the generated code judges inline with its own arithmetic, memos and tables: relations of
#: every form and tolerance (flat, per element, sum_over with a fixed-index A), conditions on signs and
#: values, RANGE bounds past 2^53 (the `float()` spelling) and years, FORMAT with and without the long
#: shape or any matchable shape, dates in every mode, single-path UNIQUE on both sides.
U = "u"
INLINE_RULES = tuple(
    Rule(rule_id(U, c, list(ps), prm), U, c, ps, prm, Support(40, 7))
    for c, ps, prm in (
        ("RELATION", ("/a", "/b", "/c"), {"form": "linear", "coef": [-1, 1], "tol": "rel"}),
        ("RELATION", ("/c", "/a", "/b"), {"form": "product", "tol": "cent"}),
        ("RELATION", ("/b", "/l"), {"form": "count_of", "tol": "exact"}),
        ("RELATION", ("/items/*/p", "/items/*/q", "/items/*/r"), {"form": "product", "tol": "rel"}),
        ("RELATION", ("/items/*/o/p", "/items/*/q"), {"form": "linear", "coef": [1], "tol": "exact"}),
        ("RELATION", ("/b", "/items/*/q"), {"form": "sum_over", "tol": "exact"}),
        ("RELATION", ("/items/*0/p", "/l/*"), {"form": "sum_over", "tol": "rel"}),
        ("CONDITIONAL", ("/s", "/a"), {"then": {"equals": "x"}, "when": {"sign": ["negative", "zero"]}}),
        ("CONDITIONAL", ("/c", "/s"), {"then": {"equals": 2.5}, "when": {"in": [True, None, "y"]}}),
        ("CONDITIONAL", ("/items", "/s"), {"then": "nonempty", "when": {"in": ["a", False]}}),
        ("CONDITIONAL", ("/l", "/b"), {"then": "empty", "when": {"sign": ["positive"]}}),
        ("CONDITIONAL", ("/d", "/c"), {"then": "absent", "when": {"sign": ["zero"]}}),
        ("RANGE", ("/a",), {"of": "number", "min": 0.5, "max": 1e20}),
        ("RANGE", ("/b",), {"of": "magnitude", "min": None, "max": 2.0**60}),
        ("RANGE", ("/c",), {"of": "number", "min": None, "max": 100}),
        ("RANGE", ("/items/*/p",), {"of": "magnitude", "min": None, "max": 10}),
        ("RANGE", ("/d",), {"of": "year", "min": None, "max": 2030}),
        ("RANGE", ("/e",), {"of": "year", "min": 1999, "max": 2001}),
        ("FORMAT", ("/id",), {"level": "exact", "shapes": ["9999-99-99", "A9", LONG]}),
        ("FORMAT", ("/s",), {"level": "loose", "shapes": ["xyz"]}),
        ("FORMAT", ("/t",), {"level": "loose", "shapes": [LONG, "xyz"]}),
        ("FORMAT", ("/d",), {"level": "loose", "shapes": ["9-9-9", "9-9-9A9:9:9A", "9-9-9 9:9"]}),
        ("FORMAT", ("/l/*",), {"level": "charset", "shapes": ["1:9", "2:9", "2:a", "4:-"]}),
        ("DATE_ORDER", ("/d", "/e"), {"tz": "aware"}),
        ("DATE_ORDER", ("/e", "/d"), {"tz": "naive"}),
        ("DATE_ORDER", ("/d", "/t"), {"tz": "date"}),
        ("UNIQUE", ("/l/*",), {}),
        ("UNIQUE", ("$args/l/*",), {}),
        ("UNIQUE", ("/items/*/q",), {}),
    )
)
INLINE = ContractSet(params={"k": 1, "seed": 13}, corpus={}, tools={U: ToolContracts(rules=INLINE_RULES)})
ODD_NUMBERS = st.sampled_from(
    [
        0,
        -0.0,
        0.0,
        1,
        -1,
        2.5,
        0.005,
        1e-9,
        1e20,
        1e21,
        2**53,
        2**53 + 1,
        -(2**53) - 1,
        2**60,
        2**60 + 1,
        2**64,
    ]
) | st.integers(-(2**65), 2**65)
ODD_DATES = st.sampled_from(
    [
        "2024-01-02T10:00:00+05:30",
        "2024-01-02T10:00:00.123456789Z",
        "2024-01-02T10:00:00.1234567891Z",
        "2024-01-02 10:00",
        "2024-01-02T10:00:00+0530",
        "2024-01-02T10:00:00z",
        "2024-01-02T10:00:00+05",
        "2024-01-02T24:00:00Z",
        "2024-01-02t10:00:00Z",
        "2024-02-30",
        "2024-02-29",
        "2023-02-29T00:00:00Z",
        "20240102",
        "\uff11\uff19\uff19\uff19-01-01",
        "2000-01-01xyz",
        "1999-12-31T23:59:59-23:59",
        "0000-01-01",
        "9999-99-99",
        "2001-01-01T00:00",
        "2001-01-01",
    ]
)
ODD = st.recursive(
    ODD_NUMBERS | ODD_DATES | TEXT | st.none() | st.booleans(),
    lambda ch: (
        st.lists(ch, max_size=4) | st.dictionaries(st.sampled_from((*KEYS, "l", "o", "t")), ch, max_size=5)
    ),
    max_leaves=24,
)
ODD_RESULTS = st.dictionaries(st.sampled_from((*KEYS, "l", "t")), ODD, max_size=9)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(st.sampled_from(("l", "q")), ODD, max_size=2), result=ODD_RESULTS)
def test_inline_forms_odd_values(args: dict[str, Any], result: Any) -> None:
    """Relations, conditions, bounds, years, shapes, dates and repeats judged inline agree with the
    engine on numbers past 2^53, signed zeros, dates in odd forms (offsets, fractions, lowercase, bad
    calendar days, non-ASCII digits) and repeated strings (the FORMAT memo answers a repeat)."""
    for _ in range(2):  # the second time, the memos answer
        generic, fast = both(INLINE, U, args, result)
        assert fast == generic


DATEISH = st.text(alphabet="0123456789-T :Zz+.,t\uff11", min_size=8, max_size=26)


@settings(max_examples=600, deadline=None)
@given(v=DATEISH | ODD_DATES | st.builds(lambda d, t: d + t, ODD_DATES, DATEISH))
def test_plain_date_spellings_read_alike(v: str) -> None:
    """The sliced reading of the commonest spellings gives what the full pattern gives, in every mode."""
    for tz in ("date", "naive", "aware"):
        assert dates._parse_str_instant.__wrapped__(v, tz) == dates._read_instant(v, tz), (v, tz)


def test_plain_date_spellings_are_read_by_slicing() -> None:
    """The sliced reading does take the common spellings (and its answers, bad calendar days too)."""
    for v, tz, want in (
        ("2024-01-02T10:00:00Z", "aware", 1704189600 * 10**9),
        ("1970-01-01 00:00:01", "naive", 10**9),
        ("2024-02-29", "date", 1709164800 * 10**9),
        ("2023-02-29", "date", None),
        ("2024-01-02T24:00:00Z", "aware", None),
    ):
        assert dates._PLAIN[tz].fullmatch(v) is not None
        assert dates._plain_instant(v, tz) == want == dates._read_instant(v, tz)


@settings(max_examples=400, deadline=None)
@given(
    doc=JSON,
    toks=st.lists(
        st.sampled_from((*KEYS, "0", "1", "01", "3", "~0", "~1", "a~1b", "\u00b2", "")), max_size=4
    ),
)
def test_episode_memory_walk_is_resolve(doc: Any, toks: list[str]) -> None:
    """The episode memory's walk down a (P, K) place (steps kept per path) finds what `resolve` finds,
    and raises where it raises (an index token of non-ASCII digits)."""
    path = "".join("/" + t for t in toks)
    try:
        ok, v = resolve(doc, path)
    except ValueError:
        with pytest.raises(ValueError):
            consistent.walk(doc, path)
        return
    got = consistent.walk(doc, path)
    assert (got is not consistent.ABSENT) == ok
    assert not ok or got is v


def test_memos_keep_no_long_text() -> None:
    """A page of text at a FORMAT or DATE_ORDER place is judged (the long shape; no date) but never kept
    in a memo; short strings are, and a repeat is answered alike."""
    long = "2024-01-02T10:00:00Z" + "x" * 100
    result = {"id": long, "s": long, "t": long, "d": long, "e": "2024-01-02T10:00:00Z"}
    for _ in range(2):
        generic, fast = both(INLINE, U, {}, result)
        assert fast == generic
        assert {v.code for v in fast} >= {"FORMAT", "DATE_ORDER"}
    run = program(INLINE).tools[U].run
    assert run is not None
    memos = [
        m for m in run.__globals__.values() if type(m) in (dict, set) and m and all(type(k) is str for k in m)
    ]
    memos += list(date_order_check._INSTANTS.values())
    kept = {k for m in memos for k in m}
    assert "2024-01-02T10:00:00Z" in kept
    assert long not in kept


def test_inline_forms_break_alike() -> None:
    """Hand-made results that break each inline form, in both engines."""
    cases = [
        (
            {"l": [1, 1]},
            {"a": 3, "b": 1, "c": 9, "s": "x", "d": "2024-01-02T10:00:00+05:30", "e": "2000-06-01"},
        ),
        ({}, {"a": -2, "b": 2**60 + 1, "c": 2.5, "s": "q", "l": [1, 2, 1], "t": "a" * 70}),
        (
            {},
            {"a": 0, "b": 3, "c": 0, "d": "2040-01-01", "items": [{"p": 12, "q": 3, "r": 4, "o": {"p": 5}}]},
        ),
        ({}, {"b": 1e21, "items": [{"p": 2, "q": 1}, {"p": 1, "q": 1}], "l": [5], "id": "AB"}),
        ({}, {"s": "y", "c": 2.0, "d": "2024-01-02 10:00", "e": "2024-01-01 10:00", "t": "2024-01-01"}),
    ]
    codes = set()
    for args, result in cases:
        generic, fast = both(INLINE, U, args, result)
        assert fast == generic
        codes.update((v.code, v.rule) for v in fast)
    assert {c for c, _ in codes} == {r.code for r in INLINE_RULES}
    assert len(codes) >= len(INLINE_RULES) - 6


def _real_calls() -> list[dict[str, Any]]:
    out = []
    for path in (FAULTY, CLEAN):
        with gzip.open(path) as fh:
            out.extend(r for r in map(orjson.loads, fh) if r.get("status", "ok") == "ok")
    return out


REAL = _real_calls()
SAMPLE_CS = ContractSet.load(SAMPLE)


def _containers(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(doc, dict | list):
        out.append(at)
        items = doc.items() if isinstance(doc, dict) else enumerate(doc)
        for k, v in items:
            out.extend(_containers(v, (*at, k)))
    return out


def _get(doc: Any, at: tuple[Any, ...]) -> Any:
    for k in at:
        doc = doc[k]
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, dict[str, Any], Any]:
    """A real sample-world call with up to four random edits: a value replaced, a key deleted, a key
    added (odd keys too: `*`, `*0`, `a/b`), an array emptied."""
    call = draw(st.sampled_from(REAL))
    result = copy.deepcopy(call["result"])
    args = copy.deepcopy(call["arguments"])
    for _ in range(draw(st.integers(0, 4))):
        spots = _containers(result)
        if not spots:
            result = draw(JSON)
            continue
        node = _get(result, draw(st.sampled_from(spots)))
        op = draw(st.sampled_from(["replace", "delete", "add", "clear"]))
        if op == "clear":
            node.clear()
        elif isinstance(node, dict):
            keys = sorted(node)
            if op == "add" or not keys:
                node[draw(st.sampled_from([*KEYS, *keys]) if keys else st.sampled_from(KEYS))] = draw(JSON)
            elif op == "delete":
                del node[draw(st.sampled_from(keys))]
            else:
                node[draw(st.sampled_from(keys))] = draw(JSON)
        elif node:
            i = draw(st.integers(0, len(node) - 1))
            if op == "delete":
                del node[i]
            elif op == "add":
                node.append(draw(JSON))
            else:
                node[i] = draw(JSON)
    if draw(st.booleans()) and args:
        args[draw(st.sampled_from(sorted(args)))] = draw(JSON)
    return call["tool"], args, result


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=mutated())
def test_mutated_real_results(call: tuple[str, dict[str, Any], Any]) -> None:
    tool, args, result = call
    generic, fast = both(SAMPLE_CS, tool, args, result)
    assert fast == generic


def test_real_calls_every_class_found() -> None:
    """On the sample world's own calls: the same violations, and among them every code that breaks."""
    codes = set()
    for c in REAL[::2]:
        generic, fast = both(SAMPLE_CS, c["tool"], c["arguments"], c["result"])
        assert fast == generic
        codes.update(v.code for v in fast)
    assert {"REQUIRED", "TYPE", "DOMAIN", "NONNEG", "POSITIVE", "ECHO", "RELATION", "DATE_ORDER"} <= codes


BREAKING = [
    (
        {"q": "y"},
        {"a": -3, "b": 1, "c": 9, "s": "Q", "d": "1970-01-02", "e": "1969-01-01", "x": 1, "id": "A-9-9"},
    ),
    ({}, {"a": 250.0, "items": [{"p": -2, "q": 2, "r": 3, "s": "ab", "d": "2024-02-02", "e": "2024-01-01"}]}),
    (
        {"q": "ab"},
        {"a": 0, "items": [{"p": 11, "s": "ab"}, {"p": 1.5, "s": "ab"}], "m": {"k": {"p": -1, "s": "b"}}},
    ),
    ({"q": 1}, {"s": "y", "id": "a" * 70, "x/~": 1, "a/b": None, "items": [{"s": "1x"}]}),
    ([], ["not", "an", "object"]),
]


def test_every_synthetic_class_breaks_alike() -> None:
    """Hand-made results that break every class of the synthetic set, in both engines."""
    codes = set()
    for args, result in BREAKING:
        generic, fast = both(SYNTH, T, args, result)
        assert fast == generic
        codes.update(v.code for v in fast)
    assert codes == {r.code for r in RULES} - {"CONSISTENT"}


def test_codes_filter_and_fold_checkers() -> None:
    """A `codes` filter and a fold's checker (its own rules and support) agree with the engine."""
    folded = SAMPLE_CS.to_json()
    ids = [r.id for r in SAMPLE_CS.all_rules()]
    folded["params"] = {**folded["params"], "k": 2}
    folded["folds"] = [
        {"fold": f, "rules": ids[f::2], "support": {i: {"calls": 9, "tasks": 3} for i in ids[f::2]}}
        for f in (0, 1)
    ]
    cs = ContractSet.from_json(folded)
    for c in REAL[:2000]:
        for codes in (["TYPE", "REQUIRED"], ["RELATION", "ECHO", "FORMAT"]):
            generic, fast = both(SAMPLE_CS, c["tool"], c["arguments"], c["result"], codes=codes)
            assert fast == generic
        for fold in (0, 1):
            generic, fast = both(cs, c["tool"], c["arguments"], c["result"], fold=fold)
            assert fast == generic


def test_key_presence_alone_at_the_root() -> None:
    """A tool whose compiled rules are only keys required at the root (a flat result under a `REQUIRED`
    filter, or a set of such rules alone) is checked: the walk of the root once ran only for a root with
    tests, acts or children of its own, so `contracts check --code REQUIRED -` passed a result lacking a
    field that `contracts check --code REQUIRED FILE` reported."""
    fired = 0
    for c in REAL[:400]:
        if isinstance(c["result"], dict) and c["result"]:
            result = dict(c["result"])
            result.pop(min(result))
            generic, fast = both(SAMPLE_CS, c["tool"], c["arguments"], result, codes=["REQUIRED"])
            assert fast == generic
            fired += len(generic)
    assert fired > 100
    alone = Rule(rule_id(T, "REQUIRED", ["/id"], {}), T, "REQUIRED", ("/id",), {}, Support(9, 3))
    cs = ContractSet(params={"k": 1, "seed": 13}, corpus={}, tools={T: ToolContracts(rules=(alone,))})
    generic, fast = both(cs, T, {}, {"name": "x"})
    assert fast == generic and [v.path for v in fast] == ["/id"]


@settings(max_examples=200, deadline=None)
@given(s=TEXT | st.text(max_size=70), pool=st.lists(TEXT | st.text(max_size=8), min_size=1, max_size=6))
def test_format_breaks_is_shape(s: str, pool: list[str]) -> None:
    """FORMAT's regular expressions accept exactly the strings whose shape (or parts) are allowed, for
    allowed sets made of real shapes and of strings that are no shape at all."""
    for level in ("exact", "loose"):
        shapes = sorted({shape(p, level) for p in pool} | set(pool))
        assert format_breaks(level, shapes)(s) == (shape(s, level) not in shapes), (level, s, shapes)
    cs_parts = sorted({q for p in pool for q in parts(p)} | set(pool))
    assert format_breaks("charset", cs_parts)(s) == (not parts(s) <= frozenset(cs_parts)), (s, cs_parts)


def test_odd_keys_fall_back_to_the_engine() -> None:
    """An object key `*` / `*0` where the rules read an array wildcard: the generic engine judges the call
    (and finds what it finds there)."""
    args = {"q": "x"}
    result = {"items": {"*": {"p": -1, "s": "x"}, "*0": {"p": 0}}, "a": 3}
    generic, fast = both(SYNTH, T, args, result)
    assert fast == generic
    assert any(v.path == "/items/*/p" for v in fast)
    assert any(v.path == "/items/*0/p" for v in fast)
    with pytest.raises(compiled.Bail):
        run = program(SYNTH).tools[T].run
        assert run is not None
        run(args, result)


# ----------------------------------------------------------------------------------------------------
# 2. receipts byte for byte: the sample world and τ-bench's real tool output


def _check_stdin(data: bytes, contracts: Path, *more: str) -> bytes:
    res = CliRunner().invoke(app, ["check", "-", "-c", str(contracts), "-q", *more], input=data)
    assert res.exit_code in (0, 1), res.output
    return res.stdout_bytes


def _generic(monkeypatch: pytest.MonkeyPatch) -> None:
    """`check -` through the generic engine, as before the compiled checker."""
    monkeypatch.setattr(checker_mod, "compiled_violations", call_violations)
    monkeypatch.setattr(checker_mod, "compiled_memory", episode_memory)


def test_sample_world_receipts_match_golden_and_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    data = gzip.decompress(FAULTY.read_bytes())
    fast = _check_stdin(data, SAMPLE)
    # today's committed receipts of the same calls (the corpus path: its call ids and source differ)
    golden = (REPO / "tests" / "golden" / "check-faulty-receipts.jsonl").read_bytes().splitlines()
    mine = fast.splitlines()
    assert len(mine) == len(golden) == 1435

    def strip(line: bytes) -> dict[str, Any]:
        # call ids hash the source: the file's digest there, the name `-` here (CONSISTENT cites one)
        d = orjson.loads(re.sub(rb"\(call [0-9a-f]{16}\)", b"(call ?)", line))
        return {k: v for k, v in d.items() if k not in ("call_id", "source")}

    assert [strip(x) for x in mine] == [strip(x) for x in golden]
    assert b'"code":"CONDITIONAL"' in fast and b'"code":"RELATION"' in fast and b'"code":"CONSISTENT"' in fast
    # and through the generic engine, every byte (call ids and all, every call with --all)
    fast_all = _check_stdin(data, SAMPLE, "--all")
    _generic(monkeypatch)
    assert _check_stdin(data, SAMPLE, "--all") == fast_all


def _damage(rng: random.Random, doc: Any) -> Any:
    """One seeded edit of a real result: a number negated or scaled, a string reshaped, a key dropped, a
    value's kind changed, an array emptied (what the incident suite injects, in miniature)."""
    spots = _containers(doc)
    if not spots:
        return doc
    node = _get(doc, rng.choice(spots))
    keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
    if not keys:
        return doc
    k = rng.choice(keys)
    v = node[k]
    op = rng.randrange(5)
    if op == 0 and isinstance(node, dict):
        del node[k]
    elif isinstance(v, int | float) and not isinstance(v, bool):
        node[k] = [-v, v * 100, str(v), 0][op % 4]
    elif isinstance(v, str):
        node[k] = [v.upper(), v + "  ", "N/A", "1970-01-01", 7][op]
    elif isinstance(v, list):
        node[k] = [] if op % 2 else None
    else:
        node[k] = {"x": 1}
    return doc


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_tau_bench_receipts_byte_identical(
    domain: str, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """τ-bench's own tools on its databases: contracts mined from 60 tasks, receipts of 80 tasks whose
    results get one seeded edit in three, byte for byte the same through both engines."""
    from output_contracts.mining import mine
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.ingest import ingest

    tt = bench_module("tau_tools")
    records = list(tt.generate(domain, tasks=80, trials=2, seed=3, data=shared_data))
    head = [r for r in records if int(r["task_id"].rsplit("-", 1)[1]) < 60]
    src = tmp_path / "head.jsonl.gz"
    tt.write(iter(head), src)
    ingest([src], tmp_path / "corpus", registry=shared_data / "tau_bench" / domain / "tools.json")
    cs_path = tmp_path / "contracts.json"
    cs = mine(Corpus.open(tmp_path / "corpus"), folds=1, seed=13)
    cs.save(cs_path)
    rng = random.Random(5)
    for r in records:
        if r.get("status") == "ok" and rng.random() < 1 / 3:
            r["result"] = _damage(rng, copy.deepcopy(r["result"]))
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    fast = _check_stdin(data, cs_path, "--all")
    _generic(monkeypatch)
    assert _check_stdin(data, cs_path, "--all") == fast
    lines = fast.splitlines()
    assert len(lines) > 1000 and len(cs.all_rules()) > 50
    codes = set(re.findall(rb'"code":"([A-Z_]+)"', fast))
    assert {b"REQUIRED", b"TYPE", b"FORMAT"} <= codes, codes  # real receipts, of several classes


# ----------------------------------------------------------------------------------------------------
# 3. the cache


def test_cache_per_sha_fold_and_codes() -> None:
    cs = load_contracts(SAMPLE)
    p = program(cs)
    built = compiled.STATS["built"]
    assert program(cs) is p  # the same object: found by its identity, then its digest
    again = load_contracts(SAMPLE)  # another object, the same contract set: the same program
    assert again is not cs and program(again) is p
    assert compiled.STATS["built"] == built
    assert program(cs, codes=["TYPE"]) is not p  # another codes filter: another program
    assert compiled.STATS["built"] == built + 1
    assert program(cs, codes=["TYPE"]) is program(again, codes=["TYPE"])
    changed = ContractSet.from_json(
        {**cs.to_json(), "params": {**cs.params, "note": "changed"}}  # one byte of the set differs
    )
    assert program(changed) is not p and program(changed).sha != p.sha
    assert p.sha == compiled.contracts_sha(again)
    # the generated source is a plain function of the tool's places
    src = p.tools["get_order"].source
    assert src is not None and src.startswith("def check(A, R):") and "index_nodes" not in src


def test_check_call_uses_the_compiled_program() -> None:
    """`check_call` gives the engine's receipt, through the compiled program (a build, then hits)."""
    cs = load_contracts(SAMPLE)
    c = next(r for r in REAL if call_violations(cs, r["tool"], r["arguments"], r["result"]))
    rec = check_call(cs, c["tool"], c["arguments"], c["result"])
    assert rec is not None
    assert list(rec.violations) == call_violations(cs, c["tool"], c["arguments"], c["result"])
    before = compiled.STATS["built"]
    for _ in range(3):
        check_call(cs, c["tool"], c["arguments"], c["result"])
    assert compiled.STATS["built"] == before
