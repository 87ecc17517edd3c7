"""CONSISTENT's input order of the calls (`call_order`, `CallOrder`), built on integers instead of sorting
the string columns so that mining's per-corpus tables stay small (the target: peak RSS at 10M calls under
2 GiB): held to the plain definition it replaces, on the sample world and on real τ-bench output; and the
episode pass's numbering of the calls (`episodes._call_order`) held to a sort of the whole frame."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from output_contracts.codes.consistent import mine as consistent
from output_contracts.mining.clean import clean_calls
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import ingest
from tests.conftest import SAMPLE


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


def test_call_order_is_the_sorted_corpus(tmp_path: Path) -> None:
    """`episodes._call_order` (the episode pass's numbering: the kept columns gathered in the sort's
    order) gives the rows a sort of the whole frame by (source, line, index) gives, on a corpus of
    several sources, for every episode and for a few."""
    from output_contracts.codes.consistent.episodes import _call_order

    sample = SAMPLE
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
