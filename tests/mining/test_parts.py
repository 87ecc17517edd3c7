"""Bounded memory: mining reads the corpus in task parts, and the contract set must not depend on how
many parts (every statistic is a monoid over parts; see output_contracts.mining.data)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.table import names
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.mining.data import load
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.worlds import world

CODES = names()
LOW = {c: 5 for c in CODES}


def _bytes(corpus: Corpus, **kw: object) -> str:
    return canonical_str(mine(corpus, **kw).to_json())  # type: ignore[arg-type]


def test_sample_world_in_parts_is_byte_identical(
    sample_corpus: Corpus, sample_contracts: ContractSet
) -> None:
    rows = leaf_rows(sample_corpus)
    one = canonical_str(
        sample_contracts.to_json()
    )  # mine(sample_corpus, folds=5, seed=13): mined once a session
    for parts in (2, 7):
        data = load(sample_corpus, clean="ok", k=5, seed=13, tools=None, part_rows=rows // parts + 1)
        # parts are cut at task (and row-group) boundaries: at least as many as asked for
        assert data.nparts >= parts
        assert data.whole is None
        # every clean call lies in exactly one part, and the parts' leaves add up to the whole corpus's
        got = [data.part(b) for b in range(data.nparts)]
        assert sum(p.calls.height for p in got) == data.calls.height
        whole = load(sample_corpus, clean="ok", k=5, seed=13, tools=None)
        assert whole.whole is not None
        assert sum(p.leaves.height for p in got) == whole.whole.leaves.height
        assert _bytes(sample_corpus, folds=5, seed=13, part_rows=rows // parts + 1) == one


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_calls=st.integers(60, 140),
    n_tasks=st.integers(6, 14),
    breakage=st.sampled_from([0.0, 0.05]),
    parts=st.integers(2, 5),
)
def test_random_corpora_in_parts_mine_the_same_bytes(
    seed: int, n_calls: int, n_tasks: int, breakage: float, parts: int
) -> None:
    records = world(seed, n_calls, n_tasks, breakage)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_from_records(records, Path(tmp) / "c")
        part_rows = leaf_rows(corpus) // parts + 1
        for k in (1, 3):
            assert _bytes(corpus, folds=k, min_support=LOW, part_rows=part_rows) == _bytes(
                corpus, folds=k, min_support=LOW
            )


def test_cli_part_rows_gives_the_same_file(sample_corpus: Corpus, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from output_contracts.cli.app import app

    runner = CliRunner()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    rows = str(leaf_rows(sample_corpus) // 3 + 1)
    r1 = runner.invoke(app, ["mine", str(sample_corpus.path), "--folds", "3", "-o", str(a), "-q"])
    r2 = runner.invoke(
        app, ["mine", str(sample_corpus.path), "--folds", "3", "--part-rows", rows, "-o", str(b), "-q"]
    )
    assert r1.exit_code == 0 and r2.exit_code == 0, (r1.output, r2.output)
    assert a.read_bytes() == b.read_bytes()
    bad = runner.invoke(app, ["mine", str(sample_corpus.path), "--part-rows", "0", "-o", str(b), "-q"])
    assert bad.exit_code == 2
