"""The corpus checker pass `audit` runs (and `contracts check DIR`), held to the plain per-call semantics
where its speed work changed how a code is evaluated.

FORMAT judges each distinct (rule, string) once and joins only the breaking pairs back to the leaves; a
corpus that repeats its strings across calls, rules and levels (exact, loose, charset) at one place must
give exactly the violations `call_violations` gives call by call, witnesses byte for byte.

The leaves meet the rule operands on one dense pattern id: gathered from the mining view's `lpat` of
the same rows (`view_keys`), or, for a corpus without a view, from the leaves' own columns
(`_pattern_ids`: map keys generalized and fixed-index aliases added per distinct pattern, not per leaf);
old corpora join on the three columns (`generalize_patterns`, `with_fixed`). All three give the same
violations on real tool output with maps and fixed-index rules (τ-bench retail, faults planted).

UNIQUE ranks the items of a list only for the values that repeat within a call and rule (a cheap
equality test first); values that compare equal as JSON (`1` and `1.0`, `0` and `-0.0`) but not as text,
strings beside numbers, unjudged values (null, booleans, 2^53), nested lists: the same violations as the
per-call checker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import output_contracts.codes.engine.evaluate as evaluate
from output_contracts.audit.inject import inject_records
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.format.shapes import LONG
from output_contracts.mining import mine
from output_contracts.mining.verify import flat_rules
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records, ingest
from tests.equivalence import assert_paths_agree
from tests.loaders import bench_module

T = "lookup"


def rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return Rule(rule_id(T, code, paths, params), T, code, tuple(paths), params, Support(100, 9))


FORMATS = (
    rule("FORMAT", ["/id"], {"level": "exact", "shapes": ["AA-9999", "a-a"]}),
    rule("FORMAT", ["/id"], {"level": "loose", "shapes": ["A-9", "a"]}),
    rule("FORMAT", ["/id"], {"level": "charset", "shapes": ["7:-", "7:9", "7:A", "0:"]}),
    rule("FORMAT", ["/xs/*/b"], {"level": "charset", "shapes": ["6:9", "6:A", LONG]}),
    rule("FORMAT", ["/xs/*/b"], {"level": "loose", "shapes": ["A9", "a"]}),
    rule("FORMAT", ["$args/q"], {"level": "exact", "shapes": ["aaa"]}),
)
FORMAT_SET = ContractSet(
    params={"k": 1, "seed": 13},
    corpus={},
    tools={T: ToolContracts(rules=FORMATS)},
    folds=(FoldChecker(0, tuple(r.id for r in FORMATS)),),
)

# A small pool, so that strings repeat across calls, rules and places (the pass dedupes them), beside
# random text; numbers and nulls are TYPE's business and must not break a FORMAT rule.
POOL = ["AB-1234", "ab-cd", "xyz", "4WQ150", "VAAOXJ", "4wq150", "", "Ab-12", "x" * 65, "A1", "ĀB-1234"]
strings = st.one_of(st.sampled_from(POOL), st.text(max_size=8), st.text(alphabet="Aa9-", max_size=8))
values = st.one_of(strings, strings, st.integers(-2, 2), st.none())


@st.composite
def calls(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    result = {"id": draw(values), "xs": draw(st.lists(st.fixed_dictionaries({"b": values}), max_size=3))}
    return {"q": draw(values)}, result


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(calls(), min_size=1, max_size=10))
def test_format_pass_equals_plain_semantics(batch: list[Any], tmp_path_factory: Any) -> None:
    recs = [
        {"trace_id": f"t{i % 3}", "task_id": f"k{i % 3}", "tool": T, "arguments": a, "result": r}
        for i, (a, r) in enumerate(batch)
    ]
    corpus = corpus_from_records(recs, tmp_path_factory.mktemp("f") / "c")
    assert_paths_agree(FORMAT_SET, corpus)


def test_format_pass_finds_the_repeated_breaks(tmp_path: Path) -> None:
    """The same breaking string in several calls and places is reported at each of them."""
    recs = [
        {
            "trace_id": f"t{i}",
            "task_id": f"k{i}",
            "tool": T,
            "arguments": {"q": "abc" if i else "ab1"},
            "result": {"id": "ab-1", "xs": [{"b": "4WQ150"}, {"b": "4wq150"}]},
        }
        for i in range(3)
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    df = assert_paths_agree(FORMAT_SET, corpus)
    got = sorted(df.select("trace_id", "path", "observed").iter_rows())
    want = [(t, "/id", '"ab-1"') for t in ("t0", "t1", "t2") for _ in range(3)]  # at every level
    want += [(t, "/xs/0/b", '"4WQ150"') for t in ("t0", "t1", "t2")]  # loose: 9A9
    want += [(t, "/xs/1/b", '"4wq150"') for t in ("t0", "t1", "t2") for _ in range(2)]  # charset, loose
    want += [("t0", "$args/q", '"ab1"')]
    assert got == sorted(want)


def _found(cs: ContractSet, corpus: Corpus, **kw: Any) -> list[tuple[Any, ...]]:
    found, _entries, _calls = evaluate.find_violations(cs, corpus, **kw)
    return sorted(found.iter_rows())


def test_pattern_id_join_equals_the_column_join(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tt = bench_module("tau_tools")
    records, _ = inject_records(
        list(tt.generate("retail", tasks=40, trials=2, seed=3, data=shared_data)), rate=0.05, seed=7
    )
    src = tmp_path / "in.jsonl.gz"
    tt.write(iter(records), src)
    ingest([src], tmp_path / "corpus", registry=shared_data / "tau_bench" / "retail" / "tools.json")
    corpus = Corpus.open(tmp_path / "corpus")
    cs = mine(corpus, folds=5, seed=13, verify=False)
    flat = flat_rules(cs)
    rules = cs.all_rules()
    assert any("~*" in p for r in rules for p in r.paths)  # map keys generalized
    assert any("/*0/" in p for r in rules for p in r.paths)  # fixed-index operands
    runs = [dict(fold=None, tools=sorted(cs.tools)), dict(fold="cross"), dict(fold=2, batch_calls=150)]
    assert evaluate.view_keys(corpus, evaluate.map_table(cs)) is not None
    view = [_found(flat if kw.get("tools") else cs, corpus, **kw) for kw in runs]
    assert len(view[0]) > 0 and len(view[1]) > 0
    monkeypatch.setattr(evaluate, "view_keys", lambda *a: None)  # a corpus without a view
    pid = [_found(flat if kw.get("tools") else cs, corpus, **kw) for kw in runs]
    assert pid == view
    monkeypatch.setattr(evaluate, "_pattern_ids", lambda *a: None)  # the old corpora's column join
    cols = [_found(flat if kw.get("tools") else cs, corpus, **kw) for kw in runs]
    assert pid == cols


UNIQUES = (
    rule("UNIQUE", ["/xs/*"], {}),
    rule("UNIQUE", ["/rows/*/id"], {}),
    rule("UNIQUE", ["/rows/*/sub/*"], {}),
)
UNIQUE_SET = ContractSet(
    params={"k": 1, "seed": 13},
    corpus={},
    tools={T: ToolContracts(rules=UNIQUES)},
    folds=(FoldChecker(0, tuple(r.id for r in UNIQUES)),),
)
scalars = st.sampled_from([0, -0.0, 0.0, 1, 1.0, "1", "a", "", None, True, 2**53, 2.0**53, -3.5, "x"])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.lists(
        st.fixed_dictionaries(
            {
                "xs": st.lists(scalars, max_size=4),
                "rows": st.lists(
                    st.fixed_dictionaries({"id": scalars, "sub": st.lists(scalars, max_size=3)}), max_size=3
                ),
            }
        ),
        min_size=1,
        max_size=6,
    )
)
def test_unique_pass_equals_plain_semantics(batch: list[Any], tmp_path_factory: Any) -> None:
    recs = [
        {"trace_id": f"t{i}", "task_id": f"k{i}", "tool": T, "arguments": {}, "result": r}
        for i, r in enumerate(batch)
    ]
    assert_paths_agree(UNIQUE_SET, corpus_from_records(recs, tmp_path_factory.mktemp("u") / "c"))


# Instance keys cut from the path (`rules.keys.with_instance_key`) against `with_key`'s split tokens:
# the same hits of a rule share a key under both. Operands draw their wildcards (array index, map key)
# and fixed indexes at random places, so rules with and without a common head are mixed.
TOKENS = st.sampled_from(["a", "b", "lines", "x~1y", "é", "*", "~*", "*0", "*12"])


def _concrete(pattern: str, draw: Any) -> str:
    out = []
    for t in pattern.split("/"):
        if t == "*":
            t = draw(st.sampled_from(["0", "1", "10", "2"]))
        elif t == "~*":
            t = draw(st.sampled_from(["k", "kk", "", "~0", "1"]))
        elif t.startswith("*"):
            t = t[1:]
        out.append(t)
    return "/".join(out)


@st.composite
def keyed_hits(draw: Any) -> tuple[list[Any], pl.DataFrame]:
    from output_contracts.codes.hits import RuleEntry
    from output_contracts.codes.nodes import Operand

    entries, rows = [], []
    for ridx in range(draw(st.integers(1, 4))):
        head = draw(st.lists(TOKENS, min_size=1, max_size=3))
        pats = []
        for _ in range(draw(st.integers(1, 3))):
            tail = draw(st.lists(TOKENS, max_size=2)) if draw(st.booleans()) else []
            own = head if draw(st.integers(0, 4)) else draw(st.lists(TOKENS, min_size=1, max_size=3))
            pats.append("/" + "/".join(own + tail))
        r = rule("RELATION", pats, {"form": "linear", "coef": [1] * (len(pats) - 1), "tol": "exact"})
        ops = tuple(Operand.of(p) for p in pats)
        entries.append(RuleEntry(ridx, 0, None, r, ops))
        for i, op in enumerate(ops):
            for _ in range(draw(st.integers(0, 6))):
                rows.append((ridx, i, _concrete(op.pattern, draw)))
    frame = pl.DataFrame(rows, schema={"ridx": pl.UInt32, "op": pl.UInt8, "path": pl.String}, orient="row")
    return entries, frame.with_row_index("row")


def _partition(frame: pl.DataFrame) -> set[frozenset[int]]:
    return {frozenset(g) for g in frame.group_by("ridx", "key").agg("row").get_column("row").to_list()}


@settings(max_examples=60, deadline=None)
@given(case=keyed_hits())
def test_instance_keys_pair_the_hits_with_key_pairs(case: tuple[list[Any], pl.DataFrame]) -> None:
    from output_contracts.codes.hits import with_key
    from output_contracts.codes.keys import with_instance_key

    entries, frame = case
    width = max(len(e.ops) for e in entries)
    for i in range(width):
        hits = frame.filter(pl.col("op") == i).lazy()
        old = with_key(hits, entries, i).collect()
        new = with_instance_key(hits, entries, i).collect()
        assert sorted(old.get_column("row").to_list()) == sorted(new.get_column("row").to_list())
        # pairing across operands: the keys of two operands of one rule meet where with_key's do
        for j in range(i + 1):
            other_old = with_key(frame.filter(pl.col("op") == j).lazy(), entries, j).collect()
            other_new = with_instance_key(frame.filter(pl.col("op") == j).lazy(), entries, j).collect()
            pairs = [
                sorted(a.join(b, on=["ridx", "key"]).select("row", "row_right").iter_rows())
                for a, b in ((old, other_old), (new, other_new))
            ]
            assert pairs[0] == pairs[1]
        assert _partition(old) == _partition(new)


def test_batches_of_leaf_rows_and_of_call_ids_find_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches are row ranges of leaves.parquet cut between calls (`leaf_slices`); a corpus whose calls'
    leaves are not contiguous is batched by call-id range instead. Either way: what one batch finds."""
    import itertools

    from tests.audit.test_pipeline import world

    recs, _ = inject_records(world(30), rate=0.2, seed=5)
    corpus = corpus_from_records(recs, tmp_path / "c")
    cs = mine(corpus, folds=5, seed=13, verify=False)
    flat = flat_rules(cs)
    runs = [dict(fold=None, tools=sorted(cs.tools)), dict(fold="cross"), dict(fold=1, clean_only=True)]
    whole = [_found(flat if kw.get("tools") else cs, corpus, **kw) for kw in runs]
    assert len(whole[0]) > 0 and len(whole[1]) > 0
    cid = corpus.scan_leaves().select("cid").collect().get_column("cid")
    slices = evaluate.leaf_slices(corpus, 7)
    assert slices is not None and len(slices) == 7
    assert slices[0][0] == 0 and slices[-1][1] == cid.len()
    assert all(hi == lo2 for (_, hi), (lo2, _) in itertools.pairwise(slices))
    assert all(cid[lo] != cid[lo - 1] for lo, _ in slices[1:])  # cut between calls
    vk = evaluate.view_keys(corpus, evaluate.map_table(cs))
    assert vk is not None and evaluate.leaf_slices(corpus, 7, vk.view) == slices  # the view's call ranks
    assert [_found(flat if kw.get("tools") else cs, corpus, batch_calls=40, **kw) for kw in runs] == whole
    # the same leaves, shuffled: a call's leaves are no longer together (a mining view's rows follow its
    # leaves, so the shuffled corpus has none)
    shuffled = tmp_path / "shuffled.parquet"
    corpus.scan_leaves().collect().sample(fraction=1.0, shuffle=True, seed=3).write_parquet(shuffled)
    monkeypatch.setattr(Corpus, "scan_leaves", lambda self: pl.scan_parquet(shuffled))
    monkeypatch.setattr(Corpus, "view", lambda self: None)
    assert evaluate.leaf_slices(corpus, 7) is None
    assert [_found(flat if kw.get("tools") else cs, corpus, batch_calls=40, **kw) for kw in runs] == whole


def test_unchecked_calls_leaves_judged_and_their_violations_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass with one checker key keeps the leaves of the calls it does not check (a faulty call under
    `clean_only`, a failed one) through its joins and drops their violations at the end: what it finds
    is what the same pass finds over only the checked calls' leaves. The faulty calls do break rules
    here, so dropping them matters."""
    from tests.audit.test_pipeline import world

    recs, _ = inject_records(world(30), rate=0.2, seed=5)
    corpus = corpus_from_records(recs, tmp_path / "c")
    cs = mine(corpus, folds=5, seed=13, verify=False)
    flat = flat_rules(cs)
    runs = [
        (flat, dict(fold=None, tools=sorted(cs.tools))),
        (flat, dict(fold=None, tools=sorted(cs.tools), clean_only=True)),
        (cs, dict(fold=1, clean_only=True, batch_calls=40)),
    ]
    got = [_found(c, corpus, **kw) for c, kw in runs]
    clean = set(evaluate.checked_calls(flat, corpus, None, None, True).collect().get_column("cid"))
    assert got[1] and {r[0] for r in got[0]} - clean  # faulty calls break rules: dropped under clean_only
    assert got[1] == [r for r in got[0] if r[0] in clean]
    leaves = corpus.scan_leaves().collect()
    for i, (c, kw) in enumerate(runs):
        checked = evaluate.checked_calls(c, corpus, None, kw.get("tools"), bool(kw.get("clean_only")))
        only = leaves.join(checked.select("cid").collect(), on="cid", how="semi")
        with monkeypatch.context() as m:  # the checked calls' leaves alone
            m.setattr(Corpus, "scan_leaves", lambda self, only=only: only.lazy())
            assert _found(c, corpus, **kw) == got[i]


def test_the_view_paths_equal_the_leaves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a corpus with a mining view the pass takes its pattern ids from the view and CONSISTENT's
    episode pass reads its sightings from it (call ranks, pattern ids, string codes instead of hashed
    texts); without one, from the leaves. The same violations, flat and cross-fitted, on the sample
    world with its faulty traces (which break CONSISTENT rules, and DATE_ORDER ones)."""
    from collections import Counter

    sample = Path(__file__).resolve().parents[2] / "sample_traces"
    ingest([sample / "clean", sample / "faulty"], tmp_path / "c", registry=sample / "tools.json")
    corpus = Corpus.open(tmp_path / "c")
    cs = mine(corpus, folds=2, seed=13, verify=False)
    flat = flat_rules(cs)
    runs = [(flat, dict(fold=None, tools=sorted(cs.tools))), (cs, dict(fold="cross"))]
    assert corpus.view() is not None
    view = [_found(c, corpus, **kw) for c, kw in runs]
    codes = {r.id: r.code for r in flat.all_rules()}
    entries = evaluate.rule_entries(flat, None, sorted(cs.tools), None)
    seen = Counter(codes[entries[ridx].rule.id] for _cid, ridx, _p, _pr in view[0])
    assert seen["CONSISTENT"] > 0 and seen["DATE_ORDER"] > 0
    monkeypatch.setattr(Corpus, "view", lambda self: None)
    assert [_found(c, corpus, **kw) for c, kw in runs] == view


def test_every_code_reads_hit_columns_the_pass_has() -> None:
    """Each code's `hit_cols` (what the corpus pass gathers per hit for it) are columns of HIT_COLS and
    hold what every code's output needs: the call, the rule and the kind. Whether a code reads a column
    left out is what the equivalence tests of each code decide (a missing column fails the plan)."""
    from output_contracts.codes.hits import HIT_COLS
    from output_contracts.codes.table import checks

    for name, c in checks().items():
        assert set(c.hit_cols) <= set(HIT_COLS), name
        assert {"cid", "ridx", "kind"} <= set(c.hit_cols), name
    # the codes whose joins are the largest read fewer columns than all
    assert "str" not in checks()["REQUIRED"].hit_cols and "num" not in checks()["REQUIRED"].hit_cols


def test_call_order_is_the_sorted_corpus(tmp_path: Path) -> None:
    """`episodes._call_order` (the episode pass's numbering: the kept columns gathered in the sort's
    order) gives the rows a sort of the whole frame by (source, line, index) gives, on a corpus of
    several sources, for every episode and for a few."""
    from output_contracts.codes.consistent.episodes import _call_order

    sample = Path(__file__).resolve().parents[2] / "sample_traces"
    ingest([sample / "clean", sample / "faulty"], tmp_path / "c", registry=sample / "tools.json")
    corpus = Corpus.open(tmp_path / "c")
    assert corpus.scan_calls().select(pl.col("source").n_unique()).collect().item() > 1
    every = corpus.scan_calls().select("cid", "trace_id")
    some = every.filter(
        pl.col("trace_id").is_in(
            every.select("trace_id")
            .unique()
            .sort("trace_id")
            .head(7)
            .collect()
            .get_column("trace_id")
            .implode()
        )
    )
    for calls in (every, some):
        for ranks in (False, True):
            ref = corpus.scan_calls().select("cid", "trace_id", "source", "line", "index")
            if ranks:
                ref = ref.with_columns((pl.col("cid").rank("ordinal") - 1).cast(pl.UInt32).alias("call"))
            ref = ref.join(calls.select("trace_id").unique(), on="trace_id", how="semi").sort(
                "source", "line", "index"
            )
            got = _call_order(corpus, calls, view_ranks=ranks).collect()
            want = ref.with_row_index("ord").collect()
            assert got.select("cid", *(["call"] if ranks else []), "ord").equals(
                want.select("cid", *(["call"] if ranks else []), "ord")
            )
            # the trace column numbers the episodes: equal exactly where the trace ids are
            pairs = got.select("trace").with_columns(want.get_column("trace_id")).unique()
            assert (
                pairs.height
                == pairs.get_column("trace").n_unique()
                == pairs.get_column("trace_id").n_unique()
            )
