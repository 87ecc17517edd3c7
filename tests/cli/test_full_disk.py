"""Real write failures through the real entry point: one `error[E_IO]` line naming what
was being written, exit 2, no traceback, nothing half-written.

Two real failures the kernel gives without root: writing to `/dev/full` fails with ENOSPC (stdout), and
a process whose file-size limit (RLIMIT_FSIZE) is below the output's size fails its write with EFBIG
(SIGXFSZ ignored), which reaches every writer the same way a full disk does: the Parquet writes of
`ingest` (and of the temporary corpus `mine` and `check` make of trace files), and the atomic writer
behind every `-o` file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"
CLI = [sys.executable, "-m", "output_contracts.cli.app"]

resource = pytest.importorskip("resource")
signal = pytest.importorskip("signal")
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no file-size limits on this OS")


def _run(
    args: list[str], cwd: Path, limit: int | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    def preexec() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    streams: dict[str, object] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    return subprocess.run([*CLI, *args], cwd=cwd, text=True, preexec_fn=preexec, check=False, **streams)  # type: ignore[call-overload]


def _one_io_error(r: subprocess.CompletedProcess[str], names: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error[E_IO]: ") and names in lines[0], r.stderr
    assert "cannot write it" in lines[0] or "no space left" in lines[0], lines[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fulldisk")
    r = _run(["ingest", str(CLEAN), "-o", "c", "-q"], d)
    assert r.returncode == 0, r.stderr
    r = _run(["mine", "c", "-o", "k.json", "-q"], d)
    assert r.returncode == 0, r.stderr
    return d


@pytest.mark.parametrize(
    ("args", "names", "left"),
    [
        (["ingest", str(CLEAN), "-o", "out"], "out", "out"),  # the corpus's Parquet parts
        (["mine", str(CLEAN), "-o", "out.json"], "corpus", "out.json"),  # the temporary corpus
        (["mine", "c", "-o", "out.json"], "out.json", "out.json"),  # the contract set
        (["check", "--contracts", "k.json", "c", "--all", "-o", "out.jsonl"], "out.jsonl", "out.jsonl"),
        (["inject", str(CLEAN), "-o", "out.jsonl"], "out.jsonl", "out.jsonl"),
    ],
    ids=["ingest", "mine-traces", "mine-output", "check-output", "inject-output"],
)
def test_a_write_that_fails_is_one_line_and_leaves_nothing(
    corpus: Path, args: list[str], names: str, left: str
) -> None:
    r = _run(args, corpus, limit=100_000)  # every output here is larger
    _one_io_error(r, names)
    assert not (corpus / left).exists()
    assert not [p.name for p in corpus.iterdir() if p.name.startswith(f".{left}")]  # no temp file either
    shutil.rmtree(corpus / "out", ignore_errors=True)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_stdout_on_a_full_device(corpus: Path) -> None:
    with open("/dev/full", "w") as full:
        r = _run(
            ["check", "--contracts", "k.json", "c", "--all"], corpus, stdout=full, stderr=subprocess.PIPE
        )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith("error[E_IO]: ") and "no space left on the device" in lines[-1], r.stderr


def test_repair_cases_that_cannot_be_written(corpus: Path) -> None:
    registry = REPO / "sample_traces" / "tools.json"
    args = ["repair-cases", "c", "--registry", str(registry), "-o", "out.jsonl", "--targets", "out-t.jsonl"]
    r = _run(args, corpus, limit=20_000)  # the cases file is ~35 kB
    _one_io_error(r, "out.jsonl")
    assert not [p.name for p in corpus.iterdir() if "out" in p.name]
