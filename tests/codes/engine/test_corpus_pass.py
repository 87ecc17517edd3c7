"""The corpus checker pass `audit` runs (and `contracts check DIR`), held to the plain per-call semantics
where its speed work changed how rules are evaluated (each code's own pass: the tests/codes/<name>/
folders, test_corpus_pass.py).

The leaves meet the rule operands on one dense pattern id: gathered from the mining view's `lpat` of
the same rows (`view_keys`), or, for a corpus without a view, from the leaves' own columns
(`_pattern_ids`: map keys generalized and fixed-index aliases added per distinct pattern, not per leaf);
old corpora join on the three columns (`generalize_patterns`, `with_fixed`). All three give the same
violations on real tool output with maps and fixed-index rules (τ-bench retail, faults planted). Batches
of leaf rows or of call ids, calls left unchecked and the mining view's paths find what one plain pass
finds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import output_contracts.codes.engine.evaluate as evaluate
from output_contracts.audit.inject import inject_records
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.mining import mine
from output_contracts.mining.verify import flat_rules
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records, ingest
from tests.conftest import SAMPLE
from tests.equivalence import hand_rule
from tests.loaders import bench_module

T = "lookup"


def rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return hand_rule(T, code, paths, params)


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

    sample = SAMPLE
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
