"""Mining's per-corpus tables kept small (the target: peak RSS at 10M calls under 2 GiB).

CONSISTENT's input order of the calls (`call_order`) is built on integers instead of sorting the
string columns; the mining view's string dictionary stays on disk (`View.codes`, `View.texts`). Each
is held here to the plain definition it replaces, on the sample world and on real τ-bench output."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from output_contracts.codes.consistent import mine as consistent
from output_contracts.codes.contract_set import ContractSet
from output_contracts.mining.clean import clean_calls
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest
from output_contracts.traces.mining_view import VIEW_STRINGS_FILE
from output_contracts.traces.mining_view_reader import View, call_indexes


def _reference_order(corpus: Corpus, clean: pl.DataFrame) -> pl.DataFrame:
    """The definition `call_order` replaces: every call of the episodes holding a clean call, sorted by
    (source, line, index) and numbered, episodes numbered by a dense rank of their ids."""
    calls = corpus.scan_calls().select("cid", "trace_id", "source", "line", "index")
    traces = calls.join(clean.lazy(), on="cid", how="semi").select("trace_id").unique()
    return (
        calls.join(traces, on="trace_id", how="semi")
        .sort("source", "line", "index")
        .with_row_index("ord")
        .with_columns(pl.col("trace_id").rank("dense").cast(pl.UInt32).alias("trace"))
        .select("cid", "trace", "ord")
        .collect()
        .sort("cid")
    )


def _clean(corpus: Corpus) -> pl.DataFrame:
    calls, _ = clean_calls(corpus, "ok", None, ids=False, strings=False)
    return calls.select("cid")


@pytest.fixture(scope="module")
def tau_airline(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    tau = shared_data / "tau_bench"
    out = tmp_path_factory.mktemp("air") / "c"
    ingest(
        [tau / "trajectories" / "gpt-4o-airline.json"],
        out,
        format="tau-bench",
        registry=tau / "airline" / "tools.json",
    )
    return Corpus.open(out)


@pytest.mark.parametrize("bits", [64, 0])  # 0: the key never fits, the columns are ranked instead
def test_call_order_is_the_sorted_numbering(
    sample_corpus: Corpus, tau_airline: Corpus, bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consistent, "ORDER_KEY_BITS", bits)
    for corpus in (sample_corpus, tau_airline):
        clean = _clean(corpus)
        got = consistent.call_order(corpus, clean).sort("cid")
        assert_frame_equal(got, _reference_order(corpus, clean))
        assert got.height > clean.height  # error calls of clean episodes are numbered too
        assert got.schema == {"cid": pl.UInt64, "trace": pl.UInt32, "ord": pl.UInt32}


def test_call_order_across_sources(tmp_path: Path, repo: Path) -> None:
    """Several source files: input order is source first (by name), then line, then index."""
    files = sorted((repo / "sample_traces" / "clean").glob("*"))[:3]
    assert len(files) >= 2
    ingest(files, tmp_path / "c")
    corpus = Corpus.open(tmp_path / "c")
    assert corpus.scan_calls().select(pl.col("source").n_unique()).collect().item() == len(files)
    clean = _clean(corpus)
    assert_frame_equal(consistent.call_order(corpus, clean).sort("cid"), _reference_order(corpus, clean))


def test_view_strings_stay_on_disk(sample_corpus: Corpus) -> None:
    view = View.open(sample_corpus)
    assert view is not None
    strings = pl.read_parquet(sample_corpus.path / VIEW_STRINGS_FILE)["str"]
    picks = pl.Series([strings[len(strings) - 1], strings[0], strings[len(strings) // 2]])
    codes = view.codes(picks)
    assert codes.to_list() == [len(strings) - 1, 0, len(strings) // 2]
    assert view.texts(pl.Series([2, None, 0, 2], dtype=pl.UInt32)).to_list() == [
        strings[2],
        None,
        strings[0],
        strings[2],
    ]
    with pytest.raises(Exception, match="missing from the mining view"):
        view.codes(pl.Series(["\x00 not a value of the corpus"]))
    cids = sample_corpus.scan_calls().select(pl.col("cid").sort()).collect()["cid"]
    assert call_indexes(sample_corpus, cids.gather([5, 0, 9])).to_list() == [5, 0, 9]


@pytest.mark.parametrize("step", [7, 50, 1_000_000])
def test_first_calls_in_slices(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """Slicing the calls changes nothing: the same rows, in the same order, as one group-by over all."""
    from output_contracts.codes import mining_frames as data

    rng = __import__("random").Random(step)
    n = 400
    calls = pl.DataFrame(
        {
            "cid": sorted(rng.sample(range(1 << 40), n)),
            "task": [rng.randrange(30) for _ in range(n)],
            "tool": pl.Series([rng.choice("abcd") for _ in range(n)]).cast(pl.Categorical),
            "fold": pl.Series([rng.randrange(3) for _ in range(n)], dtype=pl.Int32),
        },
        schema_overrides={"cid": pl.UInt64},
    )
    want = (
        calls.sort("cid").group_by("tool", "fold", maintain_order=True).head(9).select("cid", "tool", "fold")
    )
    monkeypatch.setattr(data, "FIRST_CALLS_SLICE", step)
    for frame in (calls, calls.sample(fraction=1.0, shuffle=True, seed=step)):  # sorted, and not
        assert_frame_equal(data.first_calls(frame, 9), want)


def test_call_order_columns_attach_like_a_join(sample_corpus: Corpus) -> None:
    """`CallOrder` (trace and ord aligned with the sorted clean keys) gives what a join on cid gives."""
    clean = _clean(sample_corpus).sort("cid")
    everything = consistent.call_order(sample_corpus, clean)
    order = consistent.CallOrder.of(clean["cid"], everything)
    joined = everything.join(clean, on="cid", how="semi")
    assert order.holds(everything["cid"]).sum() == joined.height == clean.height
    probe = clean.sample(n=500, seed=3)
    assert_frame_equal(
        order.attach(probe).sort("cid"), probe.join(joined, on="cid").sort("cid"), check_column_order=False
    )
    # a call's rows in runs of 1-4 (as a part's leaves come), and a call seen again after others
    rows = [i for i in range(probe.height) for _ in range(1 + i % 4)] + [0, 7, 0]
    runs = probe[rows]
    assert_frame_equal(
        order.attach(runs),
        runs.join(joined, on="cid", how="left", maintain_order="left"),
        check_column_order=False,
    )
    assert order.attach(runs.head(0)).height == 0


def test_compacted_rows_mine_the_same_bytes(
    sample_corpus: Corpus, sample_contracts: ContractSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class's rows merged every two parts (`compact`) give the contract set mined in one part
    (the session's `sample_contracts`: folds 5, seed 13)."""
    from output_contracts.jsonutil import canonical_str
    from output_contracts.mining import miner
    from output_contracts.mining.clean import leaf_rows

    monkeypatch.setattr(miner, "COMPACT_AFTER", 2)
    got = miner.mine(sample_corpus, folds=5, seed=13, part_rows=leaf_rows(sample_corpus) // 7 + 1)
    assert canonical_str(got.to_json()) == canonical_str(sample_contracts.to_json())
    assert any(r.code == "FORMAT" for tc in got.tools.values() for r in tc.rules)
