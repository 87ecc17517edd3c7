"""Shared fixtures: paths to the repository, the sample world and ../shared/data."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.once import made_once, run_folder

if TYPE_CHECKING:
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.traces.corpus import Corpus

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_traces"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_inherited_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist workers inherit `COLUMNS`/`LINES` (80x24) that a plain `pytest` run does not have;
    the CLI wraps sentences where `COLUMNS` says how wide the reader is, so every test starts as a pipe
    without them, and a test that wants a width passes it in its own environment."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


#: The files whose tests take longest, with their seconds in one `make test` (pytest --durations=0,
#: 2 workers on a machine shared with other jobs, summed per file; only the proportions matter). They run first, spread over the pytest-xdist workers, so that no long test starts
#: last and `--dist worksteal` evens out the end with the many short tests. A file missing here is only
#: scheduled later, never skipped. The files that tests/ mirroring the packages split (tests/codes/<name>/)
#: were timed in a run of the new layout and put on this table's scale (about 7 times that run's seconds).
SLOW_FILES: dict[str, float] = {
    "tests/cli/test_examples.py": 913,  # one test per example block; a block waits for the blocks it reads
    "tests/cli/test_damaged_every_command.py": 278,
    "tests/mining/test_view.py": 228,
    "tests/codes/engine/test_compiled.py": 207,
    "tests/bench/test_run_all.py": 165,  # the bench smoke run, made once per run (tests/once.py)
    "tests/mining/test_distributed.py": 134,
    "tests/checks/test_ci_outputs.py": 132,
    "tests/test_golden.py": 129,  # with the injected-fault audit it shares (tests/conftest.py)
    "tests/checks/test_cli.py": 112,
    "tests/mining/test_parts.py": 110,
    "tests/audit/test_pipeline.py": 104,
    "tests/codes/test_contract_set_schema.py": 98,
    "tests/cli/test_terminal_width.py": 94,
    "tests/mining/test_parts_layout.py": 84,
    "tests/mining/test_tau_precision.py": 79,
    "tests/cli/test_full_disk.py": 77,
    "tests/sample_traces/test_faults.py": 75,
    "tests/cli/test_damaged_inputs.py": 66,
    "tests/audit/test_reuse.py": 65,
    "tests/cli/test_ledger_default.py": 65,
    "tests/codes/range/test_check.py": 62,
    "tests/mining/test_verify_by_construction.py": 60,  # random worlds: 16 to 47 CPU-s with the seed
    "tests/repair/test_cli.py": 57,
    "tests/codes/conditional/test_mine.py": 56,
    "tests/codes/range/test_mine.py": 53,
    "tests/codes/engine/test_corpus_pass.py": 52,
    "tests/mining/test_folds.py": 51,
    "tests/checks/test_maps.py": 49,
    "tests/codes/format/test_mine.py": 48,
    "tests/codes/unique/test_mine.py": 48,
    "tests/checks/test_stream.py": 46,
    "tests/sample_traces/test_files.py": 46,
    "tests/checks/test_proxy.py": 45,
    "tests/checks/test_sample_world.py": 44,
    "tests/mining/test_cli.py": 43,
    "tests/audit/test_html.py": 42,
    "tests/codes/format/test_check.py": 40,
    "tests/test_architecture.py": 40,
    "tests/traces/test_formats_sessions.py": 40,
    "tests/checks/test_checker.py": 38,
    "tests/cli/test_plain.py": 38,
    "tests/mining/test_maps.py": 37,
    "tests/cli/test_action.py": 36,
    "tests/cli/test_option_vocabulary.py": 36,
}


def slow_first(files: list[str], workers: int) -> list[list[str]]:
    """The slow files among `files`, dealt longest first to the least loaded of `workers` lists."""
    lists: list[list[str]] = [[] for _ in range(max(workers, 1))]
    loads = [0.0] * len(lists)
    for f in sorted((f for f in files if f in SLOW_FILES), key=lambda f: (-SLOW_FILES[f], f)):
        k = loads.index(min(loads))
        lists[k].append(f)
        loads[k] += SLOW_FILES[f]
    return lists


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order for `-n N --dist worksteal`, which gives worker k the k-th of N equal slices of the list:
    each slice starts with its share of the slow files (`slow_first`), then the other tests in their
    usual order. Without xdist the order only changes which file runs first."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    by_file: dict[str, list[pytest.Item]] = {}
    for it in items:
        by_file.setdefault(it.nodeid.split("::")[0], []).append(it)
    lists = slow_first(list(by_file), workers)
    slow = {f for lst in lists for f in lst}
    rest = [it for it in items if it.nodeid.split("::")[0] not in slow]
    size = len(items) // len(lists)
    out: list[pytest.Item] = []
    for k, lst in enumerate(lists):
        head = [it for f in lst for it in by_file[f]]
        fill = max(0, (k + 1) * size - len(out) - len(head)) if k < len(lists) - 1 else len(rest)
        out += head + rest[:fill]
        rest = rest[fill:]
    out += rest
    assert sorted(map(id, out)) == sorted(map(id, items))
    items[:] = out


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* and tests/codes/*/golden.json from the current outputs instead of "
        "comparing (tests/test_golden.py, tests/codes/test_snapshots.py).",
    )
    parser.addoption(
        "--update-examples",
        action="store_true",
        default=False,
        help="Rewrite the output of README and docs examples that differ (tests/cli/test_examples.py).",
    )


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session", autouse=True)
def _mine_verifies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every `mine()` / `mine_dask()` in the tests runs the full checker pass unless it says
    `verify=False`: the library's default is the cheap path (each rule class holds on its mining data by
    construction, docs/design.md "Verification"), and the whole suite re-proves that on every corpus it
    mines, beside the property tests of tests/mining/test_verify_by_construction.py."""
    from output_contracts.mining import verify
    from output_contracts.mining.distributed import mine_dask
    from output_contracts.mining.miner import mine

    saved = [(f, dict(f.__kwdefaults__ or {})) for f in (mine, mine_dask)]
    for f, kw in saved:
        f.__kwdefaults__ = {**kw, "verify": True}
    real = verify.assert_holds
    verify.assert_holds = _once(real, run_folder(tmp_path_factory) / "verified")
    yield
    verify.assert_holds = real
    for f, kw in saved:
        f.__kwdefaults__ = kw


def _once(assert_holds: Callable[[Any, Any], None], shared: Path) -> Callable[[Any, Any], None]:
    """`mining.verify.assert_holds` (what `mine(verify=True)` calls), run once per distinct input in a
    test process. Its outcome is a function of the contract set, the corpus's files and the clean
    mining calls with their folds (`misfires` reads only those; the key also holds the tasks, `k` and
    the tool filter, in case it ever reads more), so a byte-identity test that mines
    the same data twice (parts against whole, Dask against local, CLI against library) proves the
    second, identical set on the same data already held: the check is skipped only then, never for a
    set or data that differs in one byte. Direct calls of `assert_holds` (the tests that plant a wrong
    rule) are never memoised. A check that passed is also marked in `shared` (a folder of the pytest
    run, `run_folder`), so that another xdist worker mining the same set from the same corpus folder
    (the sample world's, made once per run by `sample_corpus` below) does not repeat it."""
    import hashlib

    from output_contracts.jsonutil import canonical_json

    held: set[tuple[bytes, ...]] = set()

    def key(cs: Any, data: Any) -> tuple[bytes, ...]:
        root = Path(data.corpus.path)
        files = sorted(
            (p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*")
            if p.is_file()
        )
        return (
            hashlib.sha256(canonical_json(cs.to_json())).digest(),
            hashlib.sha256(repr((str(root.resolve()), files, data.k, data.tools)).encode()).digest(),
            # without `part`: how the corpus is cut into parts is what a byte-identity test varies
            hashlib.sha256(data.calls.drop("part", strict=False).write_ipc(None).getvalue()).digest(),
            hashlib.sha256(data.tasks.drop("part", strict=False).write_ipc(None).getvalue()).digest(),
        )

    def once(cs: Any, data: Any) -> None:
        k = key(cs, data)
        mark = shared / hashlib.sha256(b"".join(k)).hexdigest()
        if k not in held and not mark.is_file():
            assert_holds(cs, data)
            shared.mkdir(exist_ok=True)
            mark.touch()
        held.add(k)

    return once


# --- the sample world ingested once, and its 5-fold contract set -------------------------------------
#
# Both are made once per pytest run (`tests/once.py`), by whichever pytest-xdist worker asks first, and
# read by the others: the tests that read them are spread over the workers, and each worker ingesting and
# mining the same sample world again was one of the suite's longest set-ups. The tests only read them.


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    if not (SAMPLE / "planted.json").is_file():
        pytest.skip("sample_traces/planted.json is absent")
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.ingest import ingest

    def make(folder: Path) -> None:
        ingest([SAMPLE / "clean"], folder / "corpus", registry=SAMPLE / "tools.json")

    return Corpus.open(made_once(run_folder(tmp_path_factory), "sample-corpus", make) / "corpus")


@pytest.fixture(scope="session")
def sample_contracts_file(sample_corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mine(sample_corpus, folds=5, seed=13)` saved, mined once per run."""
    from output_contracts.mining import mine

    def make(folder: Path) -> None:
        # verify: every checker replayed over its own mining data with the shipped checker (raises on a fire)
        mine(sample_corpus, folds=5, seed=13, verify=True).save(folder / "contracts.json")

    return made_once(run_folder(tmp_path_factory), "sample-contracts", make) / "contracts.json"


@pytest.fixture(scope="session")
def sample_contracts(sample_contracts_file: Path) -> ContractSet:
    from output_contracts.codes.contract_set import ContractSet

    return ContractSet.load(sample_contracts_file)


#: Set to 1 to make a test that needs ../shared/data fail, not skip, when the folder is absent.
REQUIRE_SHARED = "CONTRACTS_REQUIRE_SHARED_DATA"
_SHARED_SKIPS: list[str] = []


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data, or skip: the real public data is read in place, never copied into the repo.

    A skip is never silent: the run ends with a line counting them. With CONTRACTS_REQUIRE_SHARED_DATA=1
    the test fails instead (for a CI that mounts the data). It is not tied to `CI=true`: a fresh clone on
    a machine without ../shared is a legitimate place to run the suite, and those tests cannot run there."""
    if not SHARED_DATA.is_dir():
        msg = f"real data folder ../shared/data beside the repo is absent ({SHARED_DATA})"
        if os.environ.get(REQUIRE_SHARED) == "1":
            pytest.fail(f"{msg}; {REQUIRE_SHARED}=1 requires it")
        _SHARED_SKIPS.append(msg)
        pytest.skip(msg)
    return SHARED_DATA


def pytest_terminal_summary(terminalreporter: Any) -> None:
    skipped = [
        r
        for r in terminalreporter.stats.get("skipped", [])
        if "../shared/data beside the repo is absent" in str(getattr(r, "longrepr", ""))
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} tests skipped because ../shared/data (the real τ-bench, τ²-bench and BFCL "
            f"data) is absent; set {REQUIRE_SHARED}=1 to make them fail instead",
            yellow=True,
        )


# --- the injected-fault audit of the sample world, run once per pytest run --------------------------

#: Rich sizes tables that do not go to a terminal by COLUMNS, else by the terminal the test runner has (if
#: any), else 80: pin 80, what the real CLI prints into a pipe or file (tests/test_golden.py).
CLI_ENV = {"COLUMNS": "80", "LINES": "25"}


def copy_sample_world(work: Path) -> None:
    """`work` laid out as the Makefile's demo runs the CLI: a copy of `sample_traces/{clean,faulty,
    tools.json}`, used with relative paths so that no path of this machine reaches the outputs, and an
    empty contracts.toml: the settings are the defaults, whatever contracts.toml or pyproject.toml lies
    above the temp folder (the config search goes upwards from the working directory)."""
    (work / "contracts.toml").write_text("", encoding="utf-8")
    (work / "sample_traces").mkdir()
    for folder in ("clean", "faulty"):
        shutil.copytree(SAMPLE / folder, work / "sample_traces" / folder)
    shutil.copy2(SAMPLE / "tools.json", work / "sample_traces" / "tools.json")


#: `contracts audit` of the clean sample world with every fault kind planted in 10% of the eligible calls:
#: the golden files audit-clean-inject.* (tests/test_golden.py) and the propagation section's test
#: (tests/audit/test_propagation.py) read the same run.
INJECT_AUDIT = (
    "audit",
    "sample_traces/clean",
    "--folds",
    "5",
    "--seed",
    "13",
    "--registry",
    "sample_traces/tools.json",
    "--ledger",
    "L-inject",
    "-o",
    "audit-inject.json",
    "--markdown",
    "audit-inject.md",
    "--inject",
    "all",
    "--rate",
    "0.1",
)


@dataclass(frozen=True)
class CliRun:
    """One in-process CLI run (`typer.testing.CliRunner`, env `CLI_ENV`) in the folder `work`, which
    holds the files it wrote."""

    work: Path
    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str


def _cli_run(work: Path, args: tuple[str, ...]) -> None:
    """Run `contracts ARGS` in `work` and keep its exit code and outputs beside the files it wrote."""
    from typer.testing import CliRunner

    from output_contracts.cli.app import app

    with contextlib.chdir(work):
        r = CliRunner(env=CLI_ENV).invoke(app, list(args), catch_exceptions=False)
    out = {"exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr}
    (work.parent / f"{work.name}.run.json").write_text(json.dumps(out), encoding="utf-8")


@pytest.fixture(scope="session")
def sample_inject_audit(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """`INJECT_AUDIT` in a copy of the sample world (`copy_sample_world`), run once per pytest run
    whichever xdist worker asks first (an audit of ~20k calls with 34 fault kinds planted is one of
    the suite's longest commands): the tests that read it share one run of identical inputs."""

    def make(work: Path) -> None:
        copy_sample_world(work)
        _cli_run(work, INJECT_AUDIT)

    work = made_once(run_folder(tmp_path_factory), "sample-inject-audit", make)
    got = json.loads((work.parent / f"{work.name}.run.json").read_text(encoding="utf-8"))
    return CliRun(work, INJECT_AUDIT, got["exit_code"], got["stdout"], got["stderr"])
