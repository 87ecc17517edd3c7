"""`mine --engine dask`: per-tool partitions merge into the local engine's exact bytes.

The partition-independence property is checked in-process on random worlds (plan, mine every part,
merge: no Dask needed, so it is cheap). The Dask engine itself runs on the sample corpus with
`--folds 5` against the local contract set's bytes: through a subprocess of the real CLI (a local
cluster of worker processes), and through CliRunner and the library against a running scheduler
(thread workers, which start in milliseconds).
"""

from __future__ import annotations

import builtins
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.mine_params import MineParams
from output_contracts.errors import MiningError
from output_contracts.jsonutil import pretty_json
from output_contracts.mining import mine
from output_contracts.mining.distributed import DASK_MISSING, merge, mine_dask, mine_part, plan
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.tool_registry import load_registry
from tests.conftest import REPO
from tests.helpers import call, tasks
from tests.worlds import world

runner = CliRunner()


def _partitioned(corpus: Corpus, params: MineParams, **kw: Any) -> ContractSet:
    """The Dask engine's plan -> parts -> merge, run in this process."""
    p = plan(corpus, params, **kw)
    assert p is not None
    parts = [
        mine_part(p.corpus_path, p.corpus_sha256, part, p.mine_params, p.verify, p.registry)
        for part in p.parts
    ]
    return merge(p, parts)


def _bytes(cs: ContractSet) -> bytes:
    return pretty_json(cs.to_json())


def _three_tool_world(seed: int) -> list[dict[str, Any]]:
    """The random two-tool world plus a third tool `c` (so that partitions differ in size)."""
    recs = world(seed, 260, 14, 0.03)
    for i, t in enumerate(tasks(9) * 5):
        recs.append(call(t, "c", {"v": i % 7, "w": i % 7 + 1, "tag": ["x", "y"][i % 2]}, {"q": i}))
    return recs


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), k=st.sampled_from([1, 3, 5]))
def test_partitions_merge_to_the_local_bytes(
    tmp_path_factory: pytest.TempPathFactory, seed: int, k: int
) -> None:
    c = corpus_from_records(_three_tool_world(seed), tmp_path_factory.mktemp("w") / "c")
    local = mine(c, folds=k, seed=seed)
    assert len(local.tools) == 3 and local.all_rules()
    assert _bytes(_partitioned(c, MineParams.of(folds=k, seed=seed))) == _bytes(local)


def test_registry_only_tools_and_tool_filter(tmp_path: Path) -> None:
    """A registry tool without clean calls gets its schema rules; `tools` restricts like `mine`."""
    c = corpus_from_records(_three_tool_world(7), tmp_path / "c")
    reg_file = tmp_path / "tools.json"
    reg_file.write_bytes(
        orjson.dumps(
            {
                "tools": [
                    {"name": "a", "substitutes": ["b"]},
                    {
                        "name": "never_called",
                        "output": {
                            "type": "object",
                            "required": ["id"],
                            "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
                        },
                    },
                ]
            }
        )
    )
    reg = load_registry(reg_file)
    local = mine(c, folds=3, registry=reg)
    assert local.tools["never_called"].rules and local.tools["a"].substitutes == ("b",)
    p = plan(c, MineParams.of(folds=3), registry=reg)
    assert p is not None and p.parts[-1][-1] == "never_called"  # rides with the smallest partition
    assert _bytes(_partitioned(c, MineParams.of(folds=3), registry=reg)) == _bytes(local)
    only = mine(c, folds=3, registry=reg, tools=["c", "never_called"])
    assert sorted(only.tools) == ["c", "never_called"]
    got = _partitioned(c, MineParams.of(folds=3, tools=["c", "never_called"]), registry=reg)
    assert _bytes(got) == _bytes(only)


def test_nothing_to_mine(tmp_path: Path) -> None:
    c = corpus_from_records([call("t", "a", {"x": 1}, status="error", error="boom")], tmp_path / "c")
    assert plan(c, MineParams.of()) is None
    pytest.importorskip("dask.distributed")
    with pytest.raises(MiningError, match="no clean calls"):  # the local engine's error, no cluster
        mine_dask(c)


def test_worker_refuses_another_corpus(tmp_path: Path) -> None:
    c = corpus_from_records(_three_tool_world(3), tmp_path / "c")
    with pytest.raises(MiningError, match="same path") as e:
        mine_part(str(tmp_path / "absent"), c.sha256(), ("a",), MineParams.of(), True, None)
    assert e.value.source == str(tmp_path / "absent")
    with pytest.raises(MiningError, match="differs from the driver's"):
        mine_part(str(c.path), "0" * 64, ("a",), MineParams.of(), True, None)


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A running cluster's address, its workers threads of this process (it starts in milliseconds;
    worker processes, the local default, are exercised by the subprocess test)."""
    dd = pytest.importorskip("dask.distributed")
    with dd.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address="127.0.0.1:0"
    ) as cluster:
        yield cluster.scheduler_address


def test_engine_dask_cli_is_byte_identical(
    sample_corpus: Corpus, sample_contracts_file: Path, tmp_path: Path, scheduler: str
) -> None:
    out = tmp_path / "dask.json"
    args = ["mine", str(sample_corpus.path), "--folds", "5", "--engine", "dask", "--scheduler", scheduler]
    r = runner.invoke(app, [*args, "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["rules"] > 300
    assert out.read_bytes() == sample_contracts_file.read_bytes()
    assert schema_errors(orjson.loads(out.read_bytes()), "contract-set") == []


def test_engine_dask_subprocess_is_byte_identical(
    sample_corpus: Corpus, sample_contracts_file: Path, tmp_path: Path
) -> None:
    pytest.importorskip("dask.distributed")
    out = tmp_path / "dask.json"
    cmd = [sys.executable, "-m", "output_contracts.cli.app", "mine", str(sample_corpus.path)]
    cmd += ["--folds", "5", "--engine", "dask", "--workers", "2", "-o", str(out), "-q"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == sample_contracts_file.read_bytes()


def test_progress_counts_partitions(
    sample_corpus: Corpus, sample_contracts_file: Path, scheduler: str
) -> None:
    seen: list[str] = []

    class Rec:
        def start(self, task: str, total: int | None) -> None:
            seen.append(f"start {total}")

        def advance(self, n: int = 1) -> None:
            seen.append("advance")

        def finish(self) -> None:
            seen.append("finish")

    cs = mine_dask(sample_corpus, folds=5, seed=13, scheduler=scheduler, progress=Rec())
    assert _bytes(cs) == sample_contracts_file.read_bytes()
    parts = plan(sample_corpus, MineParams.of(folds=5, seed=13))
    assert parts is not None
    # The three stock tools return one object shape (their DOMAIN/TYPE/sign rules are pooled): one
    # partition. The order tools return each other's earlier sightings of an order (`/order_id`, `/sku`:
    # CONSISTENT candidates): one more. The other three tools one each.
    assert ("get_stock_by_sku", "lookup_inventory", "query_warehouse") in parts.parts
    assert ("create_invoice", "get_order", "quote_shipping", "refund_order") in parts.parts
    assert len(parts.parts) == 5
    assert seen == ["start 5", *["advance"] * 5, "finish"]


def test_unreachable_scheduler(sample_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask.distributed")
    import output_contracts.mining.distributed as dist

    monkeypatch.setattr(dist, "CONNECT_TIMEOUT", 1)
    with pytest.raises(MiningError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9") as e:
        mine_dask(sample_corpus, scheduler="tcp://127.0.0.1:9")
    assert e.value.field == "--scheduler"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "apply to --engine dask"),
        (["--workers", "2"], "apply to --engine dask"),
        (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "own workers"),
        (["--engine", "spark"], "spark"),
    ],
)
def test_engine_usage_errors(sample_corpus: Corpus, tmp_path: Path, args: list[str], message: str) -> None:
    r = runner.invoke(app, ["mine", str(sample_corpus.path), "-o", str(tmp_path / "x.json"), *args])
    assert r.exit_code == 2
    assert message in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_scheduler_needs_a_shared_corpus_folder(tmp_path: Path) -> None:
    from tests.conftest import SAMPLE

    pytest.importorskip("dask.distributed")
    r = runner.invoke(
        app,
        ["mine", str(SAMPLE / "clean"), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1", "-o", "-"],
    )
    assert r.exit_code == 2 and "contracts ingest" in r.stderr


def test_missing_dask_names_the_extra(
    sample_corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_dask(name: str, *a: Any, **kw: Any) -> Any:
        if name == "dask" or name.startswith("dask."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    out = tmp_path / "x.json"
    r = runner.invoke(app, ["mine", str(sample_corpus.path), "--engine", "dask", "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert "output-contracts[dask]" in r.stderr and r.stderr.startswith("error[E_MINE]")
    assert DASK_MISSING.split(":")[0] in r.stderr
    assert not out.exists()


def test_dask_is_imported_lazily() -> None:
    code = (
        "import sys, output_contracts.cli.app, output_contracts.mining.distributed; "
        "print(sorted(m for m in sys.modules if m == 'dask' or m.startswith('dask.')))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
