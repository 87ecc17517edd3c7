"""FORMAT (string shapes, DOMAIN's closed-set test over them) and LENGTH ("never empty", 300 tasks).

The shape functions first (the Python and polars spellings agree on arbitrary text), then a generated
order world mined with the default parameters, then the chance arguments one at a time on small
hand-made corpora, then the merge properties (task parts, folds).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.folds import fold_of
from output_contracts.codes.format.check import (
    charset_keys,
    exact_shapes,
    key_parts,
    loosen_expr,
    shape_expr,
    with_parts,
)
from output_contracts.codes.format.mine import FORMAT_MAX_SHAPES
from output_contracts.codes.format.shapes import (
    FORMAT_MAX_LEN,
    LONG,
    NON_ASCII,
    loosen,
    merge_parts,
    parts,
    shape,
    shown,
)
from output_contracts.codes.mine_params import default_min_tasks
from output_contracts.codes.table import checks
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import MineParams, mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.helpers import find, mine_records, rules

TOOL = "get_order"

# ---- shapes: Python == polars, on arbitrary text ------------------------------------------------------

#: Characters the shape classes treat specially, plus the two shape markers themselves and mojibake.
SPECIAL = "AZaz09 -_.:/#@+\t\n\x00" + NON_ASCII + LONG + "éÃ©ßøñ日本語\U0001f600\u00a0\u200b"
texts = st.one_of(
    st.text(max_size=80),  # any Unicode scalar value (no surrogates)
    st.text(alphabet=st.sampled_from(SPECIAL), max_size=80),
    st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=FORMAT_MAX_LEN - 2, max_size=70),
    st.from_regex(r"\A[A-Z]{2,4}-[0-9]{3,8}[ ]{0,3}\Z"),
)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=12))
def test_shape_expr_equals_shape(values: list[str]) -> None:
    s = pl.Series("s", values, dtype=pl.String)
    for level in ("exact", "loose"):
        got = s.to_frame().select(shape_expr("s", level).alias("out"))["out"].to_list()
        assert got == [shape(v, level) for v in values], level
        # the expression also works on an expression, not only on a column name
        assert s.to_frame().select(shape_expr(pl.col("s"), level).alias("out"))["out"].to_list() == got


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), texts), max_size=12),
    cut=st.tuples(st.integers(0, 12), st.integers(0, 12)),
    chunks=st.integers(1, 3),
)
def test_exact_shapes_equals_shape(values: list[str | None], cut: tuple[int, int], chunks: int) -> None:
    """The byte-table `exact_shapes` (mining's and the corpus checker's) gives `shape(v, "exact")` for
    every string, null for null, on slices (an Arrow offset) and on a Series of several chunks."""
    s = pl.Series("s", values, dtype=pl.String)
    want = [None if v is None else shape(v, "exact") for v in values]
    got = exact_shapes(s)
    assert got.to_list() == want and got.name == "s" and got.dtype == pl.String
    lo, n = min(cut[0], len(values)), cut[1]
    assert exact_shapes(s.slice(lo, n)).to_list() == want[lo : lo + n]
    pieces = [s.slice(i * len(values) // chunks, len(values) // chunks + 1) for i in range(chunks)]
    many = pl.concat(pieces, rechunk=False)
    assert exact_shapes(many).to_list() == [None if v is None else shape(v, "exact") for v in many.to_list()]


@settings(max_examples=150, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=12))
def test_charset_parts_in_polars_equal_parts(values: list[str]) -> None:
    """`with_parts` (the miner's and the corpus checker's) gives each string exactly `parts(v)` (the
    per-call checker's), duplicates and the empty string included; the merged shape lists the same."""
    df = pl.DataFrame({"i": list(range(len(values))), "s": values}, schema={"i": pl.Int64, "s": pl.String})
    got = with_parts(df, "s", "p").group_by("i").agg(pl.col("p"))
    by_i = {i: set(ps) for i, ps in got.iter_rows()}
    assert by_i == {i: set(parts(v)) for i, v in enumerate(values)}
    # the miner's spelling: keys of the distinct exact shapes, then only the distinct keys exploded
    distinct = pl.DataFrame({"str": sorted(set(values))}, schema={"str": pl.String}).with_columns(
        shape_expr("str", "exact").alias("exact")
    )
    keys = charset_keys(distinct, "exact")
    keyed = distinct.join(keys, on="exact").join(key_parts(keys), on="key")
    by_str = {v: set(ps) for v, ps in keyed.group_by("str").agg(pl.col("part")).iter_rows()}
    assert by_str == {v: set(parts(v)) for v in set(values)}
    for v in values:
        merged = shape(v, "charset")
        assert merge_parts(sorted(parts(v))) == [merged]
        if len(v) <= FORMAT_MAX_LEN:
            assert merged.startswith(f"{len(v)}:")
            assert set(merged.split(":", 1)[1]) == set(shape(v, "exact"))


@settings(max_examples=150, deadline=None)
@given(v=texts)
def test_loose_is_exact_with_runs_collapsed(v: str) -> None:
    exact, loose = shape(v, "exact"), shape(v, "loose")
    assert loosen(exact) == loose  # what the miner's run-length test relies on, long strings included
    assert pl.Series([exact]).to_frame().select(loosen_expr(pl.col(""))).item() == loose
    if len(v) > FORMAT_MAX_LEN:
        assert exact == loose == LONG
        return
    assert len(exact) == len(v)
    assert shape(exact, "loose") == loose
    assert shape(exact, "exact") == exact  # a shape is its own exact shape (it is made of class letters)
    assert set(loose) <= set(exact)
    for c in ("A", "a", "9", NON_ASCII):
        assert c + c not in loose


def test_loose_of_the_long_shape_is_long() -> None:
    """A shape is loosened with `loosen`, not re-shaped: `…` (itself a non-ASCII character) stays `…`."""
    v = "x" * (FORMAT_MAX_LEN + 1)
    assert loosen(shape(v, "exact")) == shape(v, "loose") == LONG
    assert shape(LONG, "loose") == NON_ASCII  # a user's string "…" is one non-ASCII character


def test_shapes_by_example() -> None:
    cases = {
        "#W0174651": ("#A9999999", "#A9"),
        "Yusuf Rossi": ("Aaaaa Aaaaa", "Aa Aa"),
        "yusuf.rossi7301@example.com": ("aaaaa.aaaaa9999@aaaaaaa.aaa", "a.a9@a.a"),
        "ORD-123456  ": ("AAA-999999  ", "A-9  "),
        "JosÃ© Rossi": ("Aaa" + NON_ASCII * 2 + " Aaaaa", "Aa" + NON_ASCII + " Aa"),
        "日本": (NON_ASCII * 2, NON_ASCII),
        "": ("", ""),
        "x" * FORMAT_MAX_LEN: ("a" * FORMAT_MAX_LEN, "a"),
        "x" * (FORMAT_MAX_LEN + 1): (LONG, LONG),
    }
    for v, (exact, loose) in cases.items():
        assert (shape(v, "exact"), shape(v, "loose")) == (exact, loose), v
    assert sorted(parts("4WQ150")) == ["6:9", "6:A"]
    assert sorted(parts("Q-3FA9C01B2E")) == ["12:-", "12:9", "12:A"]
    assert parts("") == {"0:"} and parts("x" * (FORMAT_MAX_LEN + 1)) == {LONG}
    assert merge_parts(["6:9", "6:A", "7:A"]) == ["6:9A", "7:A"]
    assert shown("6:9A", "charset") == "[9A]{6}"
    assert shown("AAA-999999", "exact") == "A{3}-9{6}"
    assert shown("Aa9", "exact") == "Aa9"
    assert shown("Aa Aa", "loose") == "A+a+ A+a+"


# ---- a generated order world ---------------------------------------------------------------------------

FIRST = ["Ana", "Yusuf", "Li", "Mohammed", "Eve", "Olga", "Bartholomew", "Kim", "Ian", "Francesca"]
LAST = ["Rossi", "Ng", "Schmidt", "Okafor", "Li", "Fernandez", "Kowalski"]
WORDS = ["late", "box", "gift", "call", "ok", "please", "door", "fragile", "left", "at"]
STATUSES = ["pending", "shipped", "delivered"]
TAGS = ["gift", "vip", "new"]


def order(r: random.Random, i: int, *, tags_empty: bool = False) -> dict[str, Any]:
    n_words = r.randint(1, 14)
    return {
        "order_id": f"ORD-{r.randrange(10**6):06d}",
        "customer": f"{r.choice(FIRST)} {r.choice(LAST)}",
        "status": STATUSES[i % 3],
        "note": " ".join(r.choice(WORDS) for _ in range(n_words)) + r.choice([".", "!", "?", ""]),
        "items": [
            {"sku": f"SKU-{r.randrange(10**4):04d}", "lines": [r.randint(1, 9)] * r.randint(1, 3)}
            for _ in range(r.randint(1, 3))
        ],
        "tags": [] if tags_empty else r.sample(TAGS, r.randint(1, 2)),
    }


def order_world(n_tasks: int, seed: int = 7, calls_per_task: int = 1) -> list[dict[str, Any]]:
    """Flat call records: one `get_order` call per (task, step); `/tags` is empty in every 7th task,
    `/items` and `/items/*/lines` are never empty."""
    r = random.Random(seed)
    out = []
    for t in range(n_tasks):
        for step in range(calls_per_task):
            res = order(r, t, tags_empty=t % 7 == 3)
            out.append(
                {
                    "trace_id": f"ep-{t:04d}-{step}",
                    "task_id": f"task-{t:04d}",
                    "step": step,
                    "tool": TOOL,
                    "arguments": {"order_id": res["order_id"]},
                    "result": res,
                    "status": "ok",
                }
            )
    return out


@pytest.fixture(scope="module")
def world_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(order_world(320), tmp_path_factory.mktemp("orders") / "c")


@pytest.fixture(scope="module")
def world_cs(world_corpus: Corpus) -> ContractSet:
    return mine(world_corpus)


def test_world_format_rules(world_cs: ContractSet) -> None:
    got = {r.paths: r.params for r in rules(world_cs, "FORMAT")}
    assert got == {
        ("/order_id",): {"level": "exact", "shapes": ["AAA-999999"]},
        ("/customer",): {"level": "loose", "shapes": ["Aa Aa"]},
        ("/items/*/sku",): {"level": "exact", "shapes": ["AAA-9999"]},
    }
    r = find(world_cs, "FORMAT", "/order_id")
    assert r is not None and (r.support.calls, r.support.tasks) == (320, 320)
    assert checks()["FORMAT"].describe(r) == "/order_id shaped {A{3}-9{6}} (exact)"
    # a small set of values is DOMAIN's, and FORMAT is subsumed there; free text has no format
    assert find(world_cs, "DOMAIN", "/status") is not None
    assert find(world_cs, "DOMAIN", "/tags/*") is not None
    assert find(world_cs, "FORMAT", "/status") is None
    assert find(world_cs, "FORMAT", "/tags/*") is None
    assert find(world_cs, "FORMAT", "/note") is None
    assert find(world_cs, "DOMAIN", "/note") is None


def test_world_length_rules(world_cs: ContractSet) -> None:
    got = {r.paths: (r.params, r.support.tasks) for r in rules(world_cs, "LENGTH")}
    assert got == {("/items",): ({"min": 1}, 320), ("/items/*/lines",): ({"min": 1}, 320)}
    items = find(world_cs, "LENGTH", "/items")
    assert items is not None and items.support.calls == 320  # one array a call
    lines = find(world_cs, "LENGTH", "/items/*/lines")
    assert lines is not None and lines.support.calls == 320  # the support records calls, not arrays
    assert find(world_cs, "LENGTH", "/tags") is None  # empty in every 7th task


def test_world_contract_set_is_valid(world_cs: ContractSet) -> None:
    data = world_cs.to_json()
    assert schema_errors(data, "contract-set") == []
    assert data["params"]["min_tasks"]["LENGTH"] == default_min_tasks()["LENGTH"] == 300
    assert data["params"]["min_support"]["FORMAT"] == 50
    assert ContractSet.from_json(data).to_json() == data


def test_format_is_dropped_only_where_domain_holds(world_corpus: Corpus) -> None:
    """Without DOMAIN (its support out of reach), `/status` gets the FORMAT rule DOMAIN subsumed: its
    exact shapes (`aaaaaaa`, `aaaaaaaaa`) differ only in run lengths, so it is judged loose."""
    cs = mine(world_corpus, min_support={"DOMAIN": 10**6})
    assert find(cs, "DOMAIN", "/status") is None
    r = find(cs, "FORMAT", "/status")
    assert r is not None and r.params == {"level": "loose", "shapes": ["a"]}
    r = find(cs, "FORMAT", "/tags/*")
    assert r is not None and r.params == {"level": "loose", "shapes": ["a"]}


def test_subsumption_is_per_checker(tmp_path: Path) -> None:
    """One task says `returned` (same shape as the others): the full checker has no DOMAIN, so it keeps
    FORMAT; the fold checker that never saw that task has DOMAIN, so FORMAT is dropped there only."""
    recs = [_rec(f"t{i:03d}", {"status": STATUSES[i % 3]}) for i in range(150)]
    recs.append(_rec("t-odd", {"status": "returned"}))
    cs = mine_records(tmp_path, recs, folds=3)
    assert find(cs, "DOMAIN", "/status") is None
    assert find(cs, "FORMAT", "/status") is not None
    odd = cs.fold_of("t-odd")
    assert find(cs, "DOMAIN", "/status", fold=odd) is not None
    assert find(cs, "FORMAT", "/status", fold=odd) is None
    for f in range(3):
        if f != odd:
            assert find(cs, "DOMAIN", "/status", fold=f) is None
            assert find(cs, "FORMAT", "/status", fold=f) is not None


def test_too_few_tasks_for_length(tmp_path: Path) -> None:
    recs = order_world(299)
    corpus = corpus_from_records(recs, tmp_path / "c")
    cs = mine(corpus)
    assert rules(cs, "LENGTH") == []
    assert find(cs, "FORMAT", "/order_id") is not None  # the rest of the world is mined as before
    # the threshold counts tasks, not calls: 299 tasks of 2 calls each are still too few
    assert rules(mine_records(tmp_path, order_world(299, calls_per_task=2)), "LENGTH") == []
    params = MineParams.of()
    lowered = dataclasses.replace(params, min_tasks={**params.min_tasks, "LENGTH": 299})
    got = {r.paths: r.params for r in rules(mine(corpus, lowered), "LENGTH")}
    assert got == {("/items",): {"min": 1}, ("/items/*/lines",): {"min": 1}}
    # and exactly 300 tasks are enough with the defaults
    at300 = {r.paths for r in rules(mine_records(tmp_path, order_world(300)), "LENGTH")}
    assert at300 == {("/items",), ("/items/*/lines",)}


def _rec(task: str, result: Any, tool: str = "tool") -> dict[str, Any]:
    return {
        "trace_id": f"{task}-{tool}-{canonical_str(result)}",
        "task_id": task,
        "step": 0,
        "tool": tool,
        "arguments": {},
        "result": result,
        "status": "ok",
    }


def _few_tasks(params: MineParams | None = None) -> MineParams:
    params = params or MineParams.of()
    return dataclasses.replace(params, min_tasks={**params.min_tasks, "LENGTH": 1})


def test_length_support_and_emptiness(tmp_path: Path) -> None:
    """With the task threshold lowered: 30 arrays are needed; one empty array anywhere kills the rule;
    a list that always holds two items still gets `min 1`; arrays of other kinds at P do not count."""
    lists = [_rec(f"t{i:03d}", {"xs": [1, 2], "ys": [i]}) for i in range(29)]
    cs = mine_records(tmp_path, lists, params=_few_tasks())
    assert rules(cs, "LENGTH") == []  # 29 arrays < min_support 30
    lists.append(_rec("t029", {"xs": [1, 2], "ys": []}))
    cs = mine_records(tmp_path, lists, params=_few_tasks())
    assert [(r.paths, r.params) for r in rules(cs, "LENGTH")] == [(("/xs",), {"min": 1})]
    mixed = [*lists, _rec("t030", {"xs": "none", "ys": [3]})]  # a string at /xs is TYPE's business
    r = find(mine_records(tmp_path, mixed, params=_few_tasks()), "LENGTH", "/xs")
    assert r is not None and r.support.calls == 30
    # the examples are arrays: 15 calls holding two arrays each at `/xs/*/v` are 30 examples
    nested = [_rec(f"t{i:03d}", {"xs": [{"v": [1]}, {"v": [2, 3]}]}) for i in range(15)]
    r = find(mine_records(tmp_path, nested, params=_few_tasks()), "LENGTH", "/xs/*/v")
    assert r is not None and r.params == {"min": 1} and (r.support.calls, r.support.tasks) == (15, 15)
    assert find(mine_records(tmp_path, nested[:14], params=_few_tasks()), "LENGTH", "/xs/*/v") is None


def test_root_places(tmp_path: Path) -> None:
    """A result that is itself a list or a string: LENGTH and FORMAT at the root pointer `""`."""
    recs = [_rec(f"t{i:03d}", [f"SKU-{i:04d}"] * (1 + i % 3), tool="skus") for i in range(60)]
    recs += [_rec(f"t{i:03d}", f"ID{i:05d}", tool="ident") for i in range(60)]
    cs = mine_records(tmp_path, recs, params=_few_tasks())
    got = {(r.tool, r.code, r.paths): r.params for r in cs.rules_for(None) if r.code in ("FORMAT", "LENGTH")}
    assert got == {
        ("skus", "LENGTH", ("",)): {"min": 1},
        ("skus", "FORMAT", ("/*",)): {"level": "exact", "shapes": ["AAA-9999"]},
        ("ident", "FORMAT", ("",)): {"level": "exact", "shapes": ["AA99999"]},
    }
    assert (
        checks()["FORMAT"].describe(find(cs, "FORMAT", "", tool="ident"))
        == "(result) shaped {AA9{5}} (exact)"
    )  # type: ignore[arg-type]


# ---- the chance arguments of FORMAT ------------------------------------------------------------------


def _ids(n: int, fmt: str = "ORD-{:06d}") -> list[dict[str, Any]]:
    """Call i in task `t{i:03d}` (task names sort by index, so task i is in split i mod 5)."""
    return [_rec(f"t{i:03d}", {"id": fmt.format(i * 7919 % 10**6)}) for i in range(n)]


def _with(base: list[dict[str, Any]], tasks: tuple[int, ...], value: str) -> list[dict[str, Any]]:
    return [*base, *(_rec(f"t{i:03d}", {"id": value}) for i in tasks)]


def test_support_counts_tasks(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _ids(49)), "FORMAT", "/id") is None
    # 49 tasks stay 49 tasks however often they call
    many = [_rec(f"t{i % 49:03d}", {"id": f"ORD-{i:06d}"}) for i in range(49 * 4)]
    assert find(mine_records(tmp_path, many), "FORMAT", "/id") is None
    r = find(mine_records(tmp_path, _ids(50)), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "exact", "shapes": ["AAA-999999"]}
    assert (r.support.calls, r.support.tasks) == (50, 50)


def test_rare_shape_blocks_format(tmp_path: Path) -> None:
    """A lower-case id in 1 or 2 tasks is the visible edge of an unseen tail (Good–Turing): no rule at
    either level (its loose shape `a-9` is just as rare). In 3 tasks of 3 splits it is part of the
    format, at the exact level (the two shapes differ in case, not in run lengths)."""
    base = _ids(100)
    for tasks in ((2,), (1, 2)):
        assert find(mine_records(tmp_path, _with(base, tasks, "ord-424242")), "FORMAT", "/id") is None
    r = find(mine_records(tmp_path, _with(base, (0, 1, 2), "ord-424242")), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "exact", "shapes": ["AAA-999999", "aaa-999999"]}


def test_rare_exact_shape_falls_back_to_loose(tmp_path: Path) -> None:
    """A truncated id in 2 tasks: the exact set is not closed, the loose one (`A-9`) is."""
    r = find(mine_records(tmp_path, _with(_ids(100), (3, 4), "ORD-42424")), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "loose", "shapes": ["A-9"]}


def test_shape_confined_to_one_split_blocks_format(tmp_path: Path) -> None:
    """Three tasks hold the odd shape, all in split 0 (tasks 0, 5, 10): a set learned without that
    split misses 3 of 103 (shape, task) pairs (> 1%)."""
    base = _ids(100)
    assert find(mine_records(tmp_path, _with(base, (0, 5, 10), "ord-424242")), "FORMAT", "/id") is None
    assert find(mine_records(tmp_path, _with(base, (0, 6, 12), "ord-424242")), "FORMAT", "/id") is not None


SEPARATORS = "-_.:/#+=~"


def _shapes_world(n_shapes: int, n_tasks: int = 120) -> list[dict[str, Any]]:
    """Ids with `n_shapes` different separators (each its own shape at both levels), dealt round-robin."""
    return [
        _rec(f"t{i:03d}", {"id": f"ORD{SEPARATORS[i % n_shapes]}{i * 7919 % 10**6:06d}"})
        for i in range(n_tasks)
    ]


def test_more_than_max_shapes_gives_no_format(tmp_path: Path) -> None:
    assert FORMAT_MAX_SHAPES == 8
    r = find(mine_records(tmp_path, _shapes_world(8)), "FORMAT", "/id")
    assert r is not None and r.params["level"] == "exact"
    assert r.params["shapes"] == sorted(f"AAA{c}999999" for c in SEPARATORS[:8])
    assert find(mine_records(tmp_path, _shapes_world(9)), "FORMAT", "/id") is None
    # and free text is the limit: as many shapes as values
    words = ["a", "bb", "Cc", "d-d", "E.e", "f f", "g9", "H_h", "i/i", "J:j", "k#k", "l+l"]
    text = [_rec(f"t{i:03d}", {"id": " ".join(words[: 1 + i % 12])}) for i in range(120)]
    assert find(mine_records(tmp_path, text), "FORMAT", "/id") is None


def test_lengths_that_vary_are_judged_loose(tmp_path: Path) -> None:
    """Names of 3 and 4 letters: two exact shapes (`Aaa`, `Aaaa`), a closed set, but one that lists the
    lengths seen, so the place is judged loose. Too many values for DOMAIN."""
    names = ["Ana", "Eve", "Kim", "Bob", "Tom", "Ian", "Sue", "Max", "Zoe", "Lea"]
    names += ["Olga", "Ivan", "Nina", "Hugo", "Omar", "Lena", "Axel", "Emma", "Finn"]
    recs = [_rec(f"t{i:03d}", {"name": names[i % len(names)]}) for i in range(120)]
    cs = mine_records(tmp_path, recs)
    assert find(cs, "DOMAIN", "/name") is None
    r = find(cs, "FORMAT", "/name")
    assert r is not None and r.params == {"level": "loose", "shapes": ["Aa"]}


def _random_ids(n_tasks: int, length: int | tuple[int, ...] = 6, seed: int = 3) -> list[dict[str, Any]]:
    """Random upper-case alphanumeric ids (τ-bench's reservation ids: `4WQ150`, `VAAOXJ`), one per task:
    as many exact and loose shapes as values."""
    r = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    lengths = (length,) if isinstance(length, int) else length
    return [
        _rec(f"t{i:03d}", {"id": "".join(r.choice(alphabet) for _ in range(lengths[i % len(lengths)]))})
        for i in range(n_tasks)
    ]


def test_random_ids_are_judged_by_their_character_classes(tmp_path: Path) -> None:
    """Neither the exact nor the loose set of random ids is closed; their parts (`6:9`, `6:A`) are, so
    the place gets a charset rule that admits any mix of capitals and digits at length 6."""
    recs = _random_ids(200)
    assert len({shape(rec["result"]["id"], "exact") for rec in recs}) > FORMAT_MAX_SHAPES
    cs = mine_records(tmp_path, recs)
    r = find(cs, "FORMAT", "/id")
    assert r is not None and r.params == {"level": "charset", "shapes": ["6:9", "6:A"]}
    assert (r.support.calls, r.support.tasks) == (200, 200)
    assert checks()["FORMAT"].describe(r) == "/id shaped {[9A]{6}} (charset)"


def test_charset_needs_one_length_and_no_rare_class(tmp_path: Path) -> None:
    """Ids of lengths 6 and 7: the parts list the lengths seen, not a format, so no rule (as exact shapes
    that differ only in run lengths). A class in 2 tasks only (a hyphen) is a rare part: the set is not
    closed (the same Good–Turing test as every FORMAT level); in every 5th task it is part of the rule."""
    assert find(mine_records(tmp_path, _random_ids(200, (6, 7))), "FORMAT", "/id") is None
    base = _random_ids(200)
    rare = [*base, *(_rec(f"t{i:03d}", {"id": "4W-150"}) for i in (3, 4))]
    assert find(mine_records(tmp_path, rare), "FORMAT", "/id") is None
    common = [*base, *(_rec(f"t{i:03d}", {"id": "4W-150"}) for i in range(0, 200, 3))]
    r = find(mine_records(tmp_path, common), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "charset", "shapes": ["6:-", "6:9", "6:A"]}


def test_long_strings_have_one_shape(tmp_path: Path) -> None:
    """Strings over FORMAT_MAX_LEN characters are all shaped LONG: a field that always holds a page of
    text has the format `…` (and a short sentinel there would break it)."""
    recs = [_rec(f"t{i:03d}", {"page": f"{i:03d} " + "lorem ipsum " * (6 + i % 5)}) for i in range(60)]
    r = find(mine_records(tmp_path, recs), "FORMAT", "/page")
    assert r is not None and r.params == {"level": "exact", "shapes": [LONG]}


def test_long_and_one_non_ascii_character_stay_exact(tmp_path: Path) -> None:
    chars = "éüßøåçñ日本語"
    recs = [
        _rec(f"t{i:03d}", {"s": chars[i % len(chars)] if i % 2 else f"{i:03d}" + "x" * 70})
        for i in range(100)
    ]
    r = find(mine_records(tmp_path, recs), "FORMAT", "/s")
    assert r is not None and r.params == {"level": "exact", "shapes": [NON_ASCII, LONG]}


# ---- merges: task parts and folds ----------------------------------------------------------------------


def _sig(cs: ContractSet, fold: int | None = None, codes: tuple[str, ...] = ()) -> set[tuple[str, int, int]]:
    return {
        (r.id, r.support.calls, r.support.tasks) for r in cs.rules_for(fold) if not codes or r.code in codes
    }


def _codes(rs: list[Rule]) -> set[str]:
    return {r.code for r in rs}


def test_parts_give_the_same_bytes(world_corpus: Corpus) -> None:
    rows = leaf_rows(world_corpus)
    for k in (1, 5):
        one = canonical_str(mine(world_corpus, folds=k).to_json())
        for n_parts in (3, 7):
            split = mine(world_corpus, folds=k, part_rows=rows // n_parts + 1)
            assert canonical_str(split.to_json()) == one, (k, n_parts)


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    """The k = 5 full checker is the merge of all folds: the k = 1 rules, support included. Its fold
    checkers see ~256 tasks, too few for LENGTH; each is what mining without its fold gives."""
    k5 = mine(world_corpus, folds=5)
    assert _sig(k5) == _sig(world_cs)
    assert {"FORMAT", "LENGTH"} <= _codes(k5.rules_for(None))
    records = order_world(320)
    for f in range(5):
        assert "LENGTH" not in _codes(k5.rules_for(f))
        rest = [r for r in records if fold_of(r["task_id"], k5.seed, 5) != f]
        alone = mine(corpus_from_records(rest, world_corpus.path.parent / f"without-{f}"))
        got = _sig(k5, f, ("FORMAT", "LENGTH"))
        assert got == _sig(alone, None, ("FORMAT", "LENGTH")) and got, f
