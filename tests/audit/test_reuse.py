"""`audit` mining its own corpus runs one flat checker pass for mine's verification and the in-sample
replay (instead of mine's pass plus a full-checker pass): same report and ledger, and a rule that fires on
its own mining data is still refused, before anything is written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import output_contracts.checks.checker as checker
import output_contracts.mining as mining
from output_contracts.audit.inject import inject_records
from output_contracts.audit.pipeline import _cross_from_flat, _verified_in_sample, audit, canonical_report
from output_contracts.checks.checker import check_corpus, find_violations
from output_contracts.codes.contract_set import ContractSet, FoldChecker, Rule, ToolContracts
from output_contracts.mining import mine
from output_contracts.mining.data import call_ids, load
from output_contracts.mining.verify import flat_rules, misfires, misfires_from
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.audit.test_pipeline import world
from tests.conftest import SAMPLE
from tests.loaders import bench_module

WRONG = "r-000000000000"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    recs, _ = inject_records(
        world(30), rate=0.15, seed=5, kinds=["sign_flip", "drop_field", "stale_echo", "domain_drift"]
    )
    return corpus_from_records(recs, tmp_path_factory.mktemp("reuse") / "corpus")


def _count_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count `find_violations` calls (every checker pass over a corpus goes through it)."""
    calls: list[int] = []
    real = checker.find_violations

    def counted(*a: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(checker, "find_violations", counted)
    return calls


def test_reused_pass_gives_the_same_report_and_ledger(
    corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = _count_passes(monkeypatch)
    reused, cs = audit(corpus, tmp_path / "a", k=5, seed=13, bootstrap=200)
    assert len(passes) == 1  # one flat pass: verification, in-sample and cross-fitted replay
    # the contract set is what `mine` (with its own verification) gives
    assert cs.to_json() == mine(corpus, folds=5, seed=13).to_json()
    passes.clear()
    plain, _ = audit(corpus, tmp_path / "b", k=5, seed=13, bootstrap=200, contracts=cs)
    assert len(passes) == 1  # a given contract set: one flat pass too (in-sample and cross-fitted replay)
    assert reused["ledger"]["head"] == plain["ledger"]["head"]
    reused["ledger"]["path"] = plain["ledger"]["path"] = ""
    assert canonical_report(reused) == canonical_report(plain)
    assert (tmp_path / "a" / "ledger.jsonl").read_bytes() == (tmp_path / "b" / "ledger.jsonl").read_bytes()
    # the in-sample figure is real: injected faults fire under the full checker too
    assert reused["in_sample"]["fired_calls"] > 0


def test_in_sample_ids_equal_the_full_checker_pass(corpus: Corpus) -> None:
    cs = mine(corpus, folds=5, seed=13, verify=False)
    frame = check_corpus(cs, corpus, fold=None)
    full = set(frame.get_column("call_id").to_list())
    assert len(full) > 0
    got, _ = _verified_in_sample(cs, corpus)
    assert sorted(got) == sorted(full)
    # the calls fired by cross-call rules alone carry the earlier calls their violations name
    want: dict[str, tuple[str, ...]] = {}
    for call_id, rows in frame.group_by("call_id"):
        codes, refers = set(rows["code"].to_list()), rows["refers"].to_list()
        cross = codes == {"CONSISTENT"} and None not in refers
        want[str(call_id[0])] = tuple(sorted(set(refers))) if cross else ()
    assert got == want


def test_only_k1_keeps_mines_own_verification(
    corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = mining.mine

    def spy(*a: Any, **kw: Any) -> ContractSet:
        seen.append(bool(kw.get("verify", True)))
        return real(*a, **kw)

    monkeypatch.setattr(mining, "mine", spy)
    r, _ = audit(corpus, tmp_path / "n", k=5, seed=13, bootstrap=0, in_sample=False)
    assert r["in_sample"] is None
    audit(corpus, tmp_path / "k1", k=1, seed=13, bootstrap=0)
    audit(corpus, tmp_path / "r", k=5, seed=13, bootstrap=0)
    assert seen == [False, True, False]  # k = 1 has no flat pass to share: mine verifies


def _wrong_rule(cs: ContractSet) -> Rule:
    """A string TYPE rule of the full checker turned into `int`: it fires on its own data."""
    rule = next(r for r in cs.rules_for(None) if r.code == "TYPE" and r.params == {"kind": "string"})
    return replace(rule, params={"kind": "int"}, id=WRONG)


def _with_rule(cs: ContractSet, rule: Rule, fold: int | None) -> ContractSet:
    """`cs` plus `rule`: in the full checker (fold None), or only in fold checker `fold`."""
    tc = cs.tools[rule.tool]
    tools = {**cs.tools, rule.tool: ToolContracts((*tc.rules, rule), tc.substitutes, tc.immutable)}
    folds = cs.folds
    if fold is not None:
        rule = replace(rule, in_full=False)
        tools[rule.tool] = ToolContracts((*tc.rules, rule), tc.substitutes, tc.immutable)
        folds = tuple(
            FoldChecker(fc.fold, (*fc.rules, WRONG), {**fc.support, WRONG: rule.support})
            if fc.fold == fold
            else fc
            for fc in cs.folds
        )
    return ContractSet(cs.params, cs.corpus, tools, folds)


def _planting(fold: int | None, verify_seen: list[bool]) -> Callable[..., ContractSet]:
    real = mining.mine

    def planted(*a: Any, **kw: Any) -> ContractSet:
        verify_seen.append(bool(kw.get("verify", True)))
        cs = real(*a, **kw)
        return _with_rule(cs, _wrong_rule(cs), fold)

    return planted


@pytest.mark.parametrize(("fold", "checker_name"), [(None, "full"), (2, "fold 2")])
def test_a_planted_wrong_rule_is_caught_in_audits_pass(
    corpus: Corpus,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fold: int | None,
    checker_name: str,
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(mining, "mine", _planting(fold, seen))
    with pytest.raises(AssertionError, match=rf"{WRONG} \({checker_name}\) on call [0-9a-f]{{16}} at '/"):
        audit(corpus, tmp_path / "l", k=5, seed=13, bootstrap=0)
    assert seen == [False]  # mine did not verify: audit's one pass did, and refused
    assert not (tmp_path / "l" / "ledger.jsonl").exists()  # nothing written


def test_misfires_from_a_pass_over_every_call_equal_mines_own(corpus: Corpus) -> None:
    """The split API: a pass over every ok call (audit's) judges the same as mine's clean-only pass."""
    cs = mine(corpus, folds=5, seed=13)
    for fold in (None, 2):
        bad = _with_rule(cs, _wrong_rule(cs), fold)
        data = load(corpus, clean="ok", k=5, seed=13, tools=None)
        own = misfires(bad, data)
        found, entries, _ = find_violations(flat_rules(bad), corpus, fold=None, tools=sorted(bad.tools))
        assert found.height > 0
        again = misfires_from(bad, found, entries, data.calls.select("cid", "fold"), corpus)
        assert own == again and len(own) > 0
        assert {m.rule for m in own} == {WRONG}
        assert {m.checker for m in own} == ({None} if fold is None else {fold})
        assert own == sorted(own, key=lambda m: (m.rule, m.call_id, m.path))
        # a fold-only rule never counts as a misfire on its own held-out fold
        if fold is not None:
            held = call_ids(corpus, data.calls.filter(data.calls["fold"] == fold).get_column("cid"))
            assert not ({m.call_id for m in own} & set(held.get_column("call_id").to_list()))
    assert misfires(cs, load(corpus, clean="ok", k=5, seed=13, tools=None)) == []


def _cross_equal(cs: ContractSet, corpus: Corpus) -> int:
    """The cross-fitted frame derived from the flat pass equals the cross pass's own (same rows, same
    order, same witnesses; the derived one rendered from the texts the flat pass read once, the own one
    read from the corpus); returns how many violations there were."""
    _, flat = _verified_in_sample(cs, corpus, keep=True)
    assert flat is not None
    texts = flat[2]
    assert texts is not None and texts.has_calls(flat[0].get_column("cid").unique())
    derived = _cross_from_flat(cs, corpus, flat)
    own = check_corpus(cs, corpus, fold="cross")
    assert derived.schema == own.schema
    assert derived.equals(own)
    return own.height


def test_cross_replay_from_the_flat_pass_equals_its_own_pass(corpus: Corpus) -> None:
    cs = mine(corpus, folds=5, seed=13, verify=False)
    # the world plants a rule that only the fold checkers hold (`gift_note`): it must fire there
    fold_only = {r.id for r in cs.all_rules() if not r.in_full}
    assert fold_only
    own = check_corpus(cs, corpus, fold="cross")
    assert set(own.get_column("rule").to_list()) & fold_only
    assert _cross_equal(cs, corpus) == own.height > 0


def test_cross_replay_from_the_flat_pass_on_the_sample_world(tmp_path: Path) -> None:
    if not (SAMPLE / "planted.json").is_file():
        pytest.skip("sample_traces/planted.json is absent")
    from output_contracts.traces.ingest import ingest

    ingest(
        [SAMPLE / "clean" / "part-1.jsonl.gz", SAMPLE / "faulty"],
        tmp_path / "corpus",
        registry=SAMPLE / "tools.json",
    )
    corpus = Corpus.open(tmp_path / "corpus")
    cs = mine(corpus, folds=5, seed=13, verify=False)
    assert _cross_equal(cs, corpus) > 0


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_cross_replay_from_the_flat_pass_on_real_tool_output(
    shared_data: Path, tmp_path: Path, domain: str
) -> None:
    """τ-bench's own tools (bench/tau_tools.py), faults planted: real shapes, real error texts."""
    from output_contracts.traces.ingest import ingest

    tt = bench_module("tau_tools")
    records, _ = inject_records(
        list(tt.generate(domain, tasks=120, trials=2, seed=3, data=shared_data)), rate=0.05, seed=7
    )
    src = tmp_path / "in.jsonl.gz"
    tt.write(iter(records), src)
    ingest([src], tmp_path / "corpus", registry=shared_data / "tau_bench" / domain / "tools.json")
    corpus = Corpus.open(tmp_path / "corpus")
    cs = mine(corpus, folds=5, seed=13, verify=False)
    assert _cross_equal(cs, corpus) > 0


def test_call_texts_hold_the_calls_and_whole_episodes(tmp_path: Path) -> None:
    """`CallTexts.read` holds the calls asked for and every call of the episodes asked for, as the corpus
    stores them; CONSISTENT's witnesses replayed from them equal those read from the corpus, and texts
    that lack an episode's call are not used (the corpus is read instead)."""
    from output_contracts.codes.engine.evaluate import episode_witnesses
    from output_contracts.traces.call_texts import CallTexts
    from output_contracts.traces.ingest import ingest

    if not (SAMPLE / "faulty").is_dir():
        pytest.skip("sample_traces/faulty is absent")
    ingest(
        [SAMPLE / "clean", SAMPLE / "faulty"],
        tmp_path / "c",
        registry=SAMPLE / "tools.json",
    )
    corpus = Corpus.open(tmp_path / "c")
    cs = mine(corpus, folds=2, seed=13, verify=False)
    found, entries, _ = find_violations(flat_rules(cs), corpus, fold=None, tools=sorted(cs.tools))
    cons = found.filter(pl.col("ridx").is_in([e.ridx for e in entries if e.rule.code == "CONSISTENT"]))
    assert cons.height > 0
    some = found.get_column("cid").unique().sort().head(5)
    texts = CallTexts.read(corpus, some, cons.get_column("cid").unique())
    calls = corpus.scan_calls().with_columns(pl.col("tool").cast(pl.String))
    traces = calls.filter(pl.col("cid").is_in(cons.get_column("cid").implode())).select("trace_id").unique()
    want = calls.filter(
        pl.col("cid").is_in(some.implode())
        | pl.col("trace_id").is_in(traces.collect().get_column("trace_id").implode())
    ).collect()
    assert texts.frame.sort("cid").equals(want.select(texts.frame.columns).sort("cid"))
    assert sorted(texts.traces.to_list()) == sorted(traces.collect().get_column("trace_id").to_list())
    assert texts.has_calls(some) and not texts.has_calls(calls.select("cid").collect().get_column("cid"))
    read = episode_witnesses(entries, corpus, found)
    assert read and episode_witnesses(entries, corpus, found, texts) == read
    # an episode whose calls are not all held (its hit calls are): its calls are read from the corpus,
    # with the same witnesses
    first = texts.traces[0]
    kept = texts.frame.filter(
        (pl.col("trace_id") != first) | pl.col("cid").is_in(found.get_column("cid").implode())
    )
    assert kept.height < texts.frame.height
    partial = CallTexts(kept, kept.get_column("cid"), texts.traces.filter(texts.traces != first))
    assert partial.has_calls(cons.get_column("cid")) and not partial.has_episodes(texts.traces)
    assert episode_witnesses(entries, corpus, found, partial) == read
