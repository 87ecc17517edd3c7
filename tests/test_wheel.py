"""The built wheel, installed into a fresh virtual environment next to PyContracts.

What a user of `pip install output-contracts` gets: the wheel is built from a copy of the source tree,
installed with its declared dependencies into a new venv together with PyContracts, and then

- `import output_contracts` and `import contracts` (PyContracts) both work and are different packages;
- every module of the wheel imports (a dependency the code uses but `pyproject.toml` does not declare fails
  here, as `click` did once typer stopped installing it);
- the venv's own `contracts` command runs the demo pipeline (ingest, mine, check, audit, ledger verify)
  in a temporary folder outside the repository, so nothing can come from the source tree: the schemas
  and everything else must be in the wheel; the contract set it mines is byte-identical to the source
  tree's.

Which PyContracts: the PyPI project `PyContracts` (1.8.12, the last release, 2017) cannot be imported on
Python >= 3.11 at all (`from inspect import ArgSpec`: ImportError, `inspect.ArgSpec` was removed in 3.11),
with or without this package. Its author's Python 3 continuation `PyContracts3` (7.2) is the same
`contracts` import package and imports on 3.11 and 3.12, so that is the PyContracts this test installs.
PyContracts3 declares no dependencies although its code imports pyparsing, future (`past.builtins`),
decorator and six (PyContracts 1.8.12's declared ones), so they are installed with it. The wheel holds no
top-level `contracts` package, so no release of either can clash with it file by file (asserted below).

Needs the network (PyPI) for PyContracts3, and the build backend unless pip's cache has them: skipped
with the reason when pip cannot fetch them. Slow (a few minutes on a loaded machine: one build and one
venv per test run, shared by the xdist workers).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app

pytestmark = [pytest.mark.slow, pytest.mark.wheel]

PYCONTRACTS = ("PyContracts3==7.2", "pyparsing", "future", "decorator", "six")
# what the build reads; everything else in the source tree (tests, bench, docs, sample data, venvs) is not
# copied, and the wheel is checked not to carry it anyway
SKIP_COPY = (
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".demo",
    "demo",
    ".contracts",
)
TIMEOUT = 900
PREBUILT = "CONTRACTS_WHEEL"  # a wheel to test instead of building one (.github/workflows/ci.yml)


def _env() -> dict[str, str]:
    """The environment without anything that points Python at the source tree or the dev venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT
    )


def _skip_if_offline(work: Path, failed: subprocess.CompletedProcess[str]) -> None:
    """Skip (offline) when pip cannot fetch PyContracts3 either; else the failure was a real one."""
    probe = _run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", work / "probe", PYCONTRACTS[0]], work
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        reason = f"offline: pip cannot fetch {PYCONTRACTS[0]} from PyPI ({last})"
        if os.environ.get(PREBUILT):  # a CI job that hands over its wheel must not pass by skipping
            raise AssertionError(reason)
        pytest.skip(reason)
    raise AssertionError(failed.stdout + failed.stderr)


def _once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path]) -> Path:
    """`make(folder)` once per test run, even under pytest-xdist (`make test` runs two workers, each with
    its own session): the workers share the folder above their base temporary folders and take turns
    under a lock; a result, or a skip and its reason, is recorded for the other worker."""
    base = factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "wheel-test"
    shared.mkdir(exist_ok=True)
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done, skipped = shared / f"{name}.done", shared / f"{name}.skipped"
        if done.exists():
            return Path(done.read_text())
        if skipped.exists():
            pytest.skip(skipped.read_text())
        folder = shared / name
        shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
        folder.mkdir()
        try:
            result = make(folder)
        except pytest.skip.Exception as e:
            skipped.write_text(str(e.msg))
            raise
        done.write_text(str(result))
        return result


def _build(work: Path, repo: Path) -> Path:
    src = work / "src"
    shutil.copytree(repo, src, symlinks=True, ignore=shutil.ignore_patterns(*SKIP_COPY))
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", src, "-w", work / "dist"], work)
    if built.returncode != 0:
        _skip_if_offline(work, built)
    (whl,) = (work / "dist").glob("*.whl")
    return whl


def _make_venv(work: Path, wheel: Path) -> Path:
    made = _run([sys.executable, "-m", "venv", work / "v"], work)
    assert made.returncode == 0, made.stderr
    installed = _run([work / "v" / "bin" / "python", "-m", "pip", "install", "-q", wheel, *PYCONTRACTS], work)
    if installed.returncode != 0:
        _skip_if_offline(work, installed)
    return work / "v"


@pytest.fixture(scope="session")
def wheel(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel --no-deps` of a copy of the source tree (the build never writes into the repository), or
    the wheel `CONTRACTS_WHEEL` names (the CI job's wheel job builds and uploads one, then tests that one)."""
    if os.environ.get(PREBUILT):
        given = Path(os.environ[PREBUILT]).resolve()
        assert given.is_file() and given.suffix == ".whl", given
        return given
    return _once(tmp_path_factory, "wheel", lambda work: _build(work, repo))


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel (and its declared dependencies) and PyContracts installed."""
    return _once(tmp_path_factory, "venv", lambda work: _make_venv(work, wheel))


def test_the_wheel_carries_the_package_and_nothing_else(wheel: Path, repo: Path) -> None:
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    names = zipfile.ZipFile(wheel).namelist()
    info = f"output_contracts-{project['version']}.dist-info"
    assert wheel.name == f"output_contracts-{project['version']}-py3-none-any.whl"
    assert {n.split("/")[0] for n in names} == {"output_contracts", info}  # no top-level `contracts`
    assert not [n for n in names if n.split("/")[1] in ("tests", "bench", "docs", "sample_traces")]
    # every module of the package (its own folder and the folders it links to), and every schema, by content
    modules = sorted((repo / "output_contracts").rglob("*.py")) + [
        m for link in (repo / "output_contracts").iterdir() if link.is_symlink() for m in link.rglob("*.py")
    ]
    assert len(modules) > 150
    for f in modules:
        assert f.relative_to(repo).as_posix() in names, f
    schemas = sorted((repo / "output_contracts" / "schemas").glob("*.schema.json"))
    assert len(schemas) >= 20
    with zipfile.ZipFile(wheel) as z:
        for s in schemas:
            assert z.read(f"output_contracts/schemas/{s.name}") == s.read_bytes(), s.name
        assert "output_contracts/py.typed" in names
        meta = z.read(f"{info}/METADATA").decode()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert "Name: output-contracts\n" in meta
    assert "contracts = output_contracts.cli.app:main" in entry_points


def test_both_packages_import_in_one_venv(venv: Path, tmp_path: Path) -> None:
    code = """
import importlib, json, pkgutil
from importlib.metadata import distribution
import contracts, output_contracts
from contracts import ContractNotRespected, contract

@contract(x="int,>0")
def positive(x):
    return x

try:
    positive(-1)
    refused = False
except ContractNotRespected:
    refused = True
broken = []
for m in pkgutil.walk_packages(output_contracts.__path__, "output_contracts."):
    try:
        importlib.import_module(m.name)
    except Exception as e:
        broken.append(f"{m.name}: {e!r}")
print(json.dumps({
    "contracts": contracts.__file__,
    "output_contracts": output_contracts.__file__,
    "pycontracts_files": [str(f) for f in distribution("PyContracts3").files if str(f).startswith("contracts/")][:1],
    "ours": distribution("output-contracts").version,
    "refused": refused,
    "positive": positive(2),
    "broken": broken,
}))
"""
    r = _run([venv / "bin" / "python", "-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert Path(got["contracts"]) == site / "contracts" / "__init__.py"  # PyContracts'
    assert Path(got["output_contracts"]) == site / "output_contracts" / "__init__.py"  # the wheel's
    assert got["pycontracts_files"] == ["contracts/__init__.py"]
    assert got["refused"] is True and got["positive"] == 2  # PyContracts works, not merely imports
    assert got["broken"] == []  # every module of the wheel imports with the declared dependencies
    checked = _run([venv / "bin" / "python", "-m", "pip", "check"], tmp_path)
    assert checked.returncode == 0, checked.stdout


def test_the_demo_pipeline_runs_from_the_wheel(venv: Path, repo: Path, tmp_path: Path) -> None:
    """ingest -> mine -> check -> audit -> ledger verify with the venv's `contracts`, outside the repo."""
    shutil.copy(repo / "sample_traces" / "clean" / "part-1.jsonl.gz", tmp_path / "traces.jsonl.gz")
    shutil.copy(repo / "sample_traces" / "tools.json", tmp_path / "tools.json")
    contracts = venv / "bin" / "contracts"
    assert repo not in tmp_path.parents

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        r = _run([contracts, *args], tmp_path)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    version = cli("--version").stdout
    assert version.split()[-1] == venv_version(venv, tmp_path)
    cli("ingest", "traces.jsonl.gz", "-o", "corpus", "--registry", "tools.json", "-q")
    cli("mine", "corpus", "-o", "contracts.json", "-q")
    cli("check", "--contracts", "contracts.json", "traces.jsonl.gz", "-o", "receipts.jsonl", "-q")
    cli("audit", "corpus", "--ledger", "ledger", "--bootstrap", "0", "-q")
    verified = cli("ledger", "verify", "ledger", "--require-frozen")
    said = verified.stdout + verified.stderr
    assert said.startswith("ok: 4 entries, frozen, head "), said
    # the artifacts validate against the schemas the wheel carries (read by the venv's own package)
    code = (
        "import orjson; from output_contracts.schemas import schema_errors; "
        "print(schema_errors(orjson.loads(open('contracts.json','rb').read()), 'contract-set'))"
    )
    assert _run([venv / "bin" / "python", "-c", code], tmp_path).stdout.strip() == "[]"
    # the same mining from the source tree: the same bytes
    dev = tmp_path / "dev"
    dev.mkdir()
    for args in (
        ["ingest", str(tmp_path / "traces.jsonl.gz"), "-o", str(dev / "corpus"), "--registry", str(tmp_path / "tools.json"), "-q"],
        ["mine", str(dev / "corpus"), "-o", str(dev / "contracts.json"), "-q"],
    ):  # fmt: skip
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
    wheel_bytes = (tmp_path / "contracts.json").read_bytes()
    assert (
        hashlib.sha256(wheel_bytes).hexdigest()
        == hashlib.sha256((dev / "contracts.json").read_bytes()).hexdigest()
    )
    assert list(tmp_path.glob("audit-ledger*")) == []  # the ledger went where it was told, nowhere else


def venv_version(venv: Path, cwd: Path) -> str:
    r = _run(
        [venv / "bin" / "python", "-c", "import output_contracts; print(output_contracts.__version__)"], cwd
    )
    return r.stdout.strip()
