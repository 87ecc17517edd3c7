"""Every subcommand against damaged inputs: one `error[...]` line naming the file, exit 2, no
traceback, nothing half-written; and empty input is an error, never a vacuous "ok".

`tests/cli/test_damaged_inputs.py` covers the trace readers (truncated and fake gzip, damaged corpora and
ledgers) in depth; this module runs the same damage table (garbage bytes, JSON of the wrong shape, an
empty file, a folder where a file belongs, a missing path) through every other command's input, and a
last test checks that no subcommand is left out of the two modules.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "sample_traces" / "clean" / "part-1.jsonl.gz"
REGISTRY = REPO / "sample_traces" / "tools.json"
PLAN = REPO / "docs" / "examples" / "plan-world" / "pass-basic.json"
GOLDEN = REPO / "tests" / "golden" / "sample-contracts.json"
ROOT = "a" * 64


def _garbage(d: Path) -> Path:
    p = d / "garbage.jsonl"
    p.write_bytes(b'\x00\xff not json at all\n{"a":\n')
    return p


def _wrong_shape(d: Path) -> Path:
    p = d / "wrong.json"
    p.write_bytes(b"[1, 2, 3]\n")
    return p


def _empty(d: Path) -> Path:
    p = d / "empty.jsonl"
    p.write_bytes(b"")
    return p


def _blank(d: Path) -> Path:
    p = d / "blank.jsonl"
    p.write_bytes(b"\n  \n\n")
    return p


def _folder(d: Path) -> Path:
    p = d / "folder"
    p.mkdir()
    return p


def _missing(d: Path) -> Path:
    return d / "missing.jsonl"


def _not_a_ledger(d: Path) -> Path:
    p = d / "notledger"
    p.mkdir()
    (p / "ledger.json").write_text("garbage")
    return p


DAMAGE: dict[str, Callable[[Path], Path]] = {
    "garbage": _garbage,
    "wrong-shape": _wrong_shape,
    "empty": _empty,
    "folder": _folder,
    "missing": _missing,
}
LEDGER_DAMAGE: dict[str, Callable[[Path], Path]] = {
    "empty-folder": _folder,
    "garbage-header": _not_a_ledger,
    "a-file": _garbage,
    "missing": _missing,
}

Argv = Callable[[Path, Path], list[str]]


def _targets(d: Path) -> list[str]:
    return ["--targets", str(d / "out-targets.jsonl")]


#: command id -> (the damage kinds it is fed, the command line around the damaged input x, in folder d)
COMMANDS: dict[str, tuple[dict[str, Callable[[Path], Path]], Argv]] = {
    "repair-cases": (
        DAMAGE,
        lambda d, x: ["repair-cases", str(x), "--answers", str(x), "-o", str(d / "out.jsonl"), *_targets(d)],
    ),
    "repair-cases-corpus": (
        DAMAGE,
        lambda d, x: ["repair-cases", str(x), "-o", str(d / "out.jsonl"), *_targets(d)],
    ),
    "repair-replay": (DAMAGE, lambda d, x: ["repair-replay", str(x), "--ledger", str(d / "out")]),
    "repair-score": (LEDGER_DAMAGE, lambda d, x: ["repair-score", str(x), "--targets", str(x)]),
    "split-audit": (DAMAGE, lambda d, x: ["split-audit", str(x), str(x)]),
    "plan-check": (DAMAGE, lambda d, x: ["plan-check", str(x), "--registry", str(REGISTRY)]),
    "plan-check-registry": (DAMAGE, lambda d, x: ["plan-check", str(PLAN), "--registry", str(x)]),
    "audit-score": (LEDGER_DAMAGE, lambda d, x: ["audit-score", str(x), "--corpus", str(x)]),
    "registry-infer": (DAMAGE, lambda d, x: ["registry", "infer", str(x), "-o", str(d / "out.json")]),
    "registry-check": (DAMAGE, lambda d, x: ["registry", "check", str(x), str(x)]),
    "tools-export": (
        DAMAGE,
        lambda d, x: ["tools", "export", "-t", "openai", "-r", str(x), "-o", str(d / "out.json")],
    ),
    "ledger-verify-proof": (DAMAGE, lambda d, x: ["ledger", "verify-proof", str(x), "--root", ROOT]),
    "ledger-repair": (LEDGER_DAMAGE, lambda d, x: ["ledger", "repair", str(x)]),
    "ledger-verify": (LEDGER_DAMAGE, lambda d, x: ["ledger", "verify", str(x)]),
    "ledger-head": (LEDGER_DAMAGE, lambda d, x: ["ledger", "head", str(x)]),
    "ledger-show": (LEDGER_DAMAGE, lambda d, x: ["ledger", "show", str(x)]),
    "ledger-prove": (LEDGER_DAMAGE, lambda d, x: ["ledger", "prove", str(x), "0"]),
    "report": (DAMAGE, lambda d, x: ["report", str(x), "-o", str(d / "out.html")]),
    "report-second-input": (
        DAMAGE,
        lambda d, x: [
            "report",
            str(REPO / "tests" / "golden" / "repair-score.json"),
            str(x),
            "-o",
            str(d / "out.html"),
        ],
    ),
    "compare": (DAMAGE, lambda d, x: ["compare", str(x), str(CLEAN), "--markdown", str(d / "out.md")]),
    "compare-monitor": (
        DAMAGE,
        lambda d, x: ["compare", str(CLEAN), str(x), "--markdown", str(d / "out.md")],
    ),
    "corpus-info": (DAMAGE, lambda d, x: ["corpus", "info", str(x)]),
    "corpus-verify": (DAMAGE, lambda d, x: ["corpus", "verify", str(x)]),
    # the contract set and the registry are read before the server starts: no server is run
    "proxy": (DAMAGE, lambda d, x: ["proxy", "--contracts", str(x), "--", sys.executable, "-c", "pass"]),
    "proxy-registry": (
        DAMAGE,
        lambda d, x: ["proxy", "-c", str(GOLDEN), "--registry", str(x), "--", sys.executable, "-c", "pass"],
    ),
    # an empty contracts.toml is a valid one (every setting at its default)
    "config": (
        {k: v for k, v in DAMAGE.items() if k != "empty"},
        lambda d, x: ["--config", str(x), "config"],
    ),
}
CASES = [(c, k) for c, (kinds, _) in COMMANDS.items() for k in kinds]
#: Commands for which a ledger that exists but does not verify is a finding (exit 1, a report listing
#: every problem), not an input error.
FINDINGS = ("ledger-verify", "ledger-head", "ledger-show", "ledger-prove", "repair-score", "audit-score")


def _one_error_line(r: Any, name: str) -> str:
    """The single `error[...]` line of a refused input, naming the file; exit 2, no traceback."""
    assert "Traceback" not in r.output and "Aborted" not in r.output, r.output
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error[") and name in lines[0], r.stderr
    return lines[0]


@pytest.mark.parametrize(("command", "damage"), CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_every_command_refuses_damaged_input(command: str, damage: str, tmp_path: Path) -> None:
    kinds, argv = COMMANDS[command]
    bad = kinds[damage](tmp_path)
    r = CliRunner().invoke(app, argv(tmp_path, bad))
    if command in FINDINGS and r.exit_code == 1:
        assert "Traceback" not in r.output, r.output
        first = next(ln for ln in r.stderr.splitlines() if ln.strip())
        assert first.startswith(("FAIL", "refused: ledger does not verify")), r.stderr
    else:
        _one_error_line(r, bad.name)
    # nothing half-written
    assert not list(tmp_path.glob("out*")), sorted(p.name for p in tmp_path.iterdir())


def test_proxy_refuses_a_missing_or_unstartable_server(tmp_path: Path) -> None:
    """`contracts proxy` beyond its files: no server command, or one that does not exist, is one line."""
    for argv, name in (
        (["proxy", "--contracts", str(GOLDEN)], "SERVER_CMD"),
        (["proxy", "--contracts", str(GOLDEN), "--", str(tmp_path / "no-such-server")], "no-such-server"),
    ):
        r = CliRunner().invoke(app, argv)
        _one_error_line(r, name)


EMPTY_INPUT: dict[str, Argv] = {
    "ingest": lambda d, x: ["ingest", str(x), "-o", str(d / "out")],
    "mine": lambda d, x: ["mine", str(x), "-o", str(d / "out.json")],
    "check": lambda d, x: ["check", "--contracts", str(_contracts(d)), str(x), "-o", str(d / "out.jsonl")],
    "audit": lambda d, x: ["audit", str(x), "--ledger", str(d / "out")],
    "inject": lambda d, x: ["inject", str(x), "-o", str(d / "out.jsonl")],
    "repair-replay": lambda d, x: ["repair-replay", str(x), "--ledger", str(d / "out")],
    "split-audit": lambda d, x: ["split-audit", str(x), str(x)],
    "compare": lambda d, x: ["compare", str(x), str(CLEAN), "--markdown", str(d / "out.md")],
}


def _contracts(d: Path) -> Path:
    out = d / "contracts.json"
    r = CliRunner().invoke(app, ["mine", str(CLEAN), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize("make", [_empty, _blank], ids=["empty", "blank-lines"])
@pytest.mark.parametrize("command", list(EMPTY_INPUT))
def test_empty_input_is_an_error(command: str, make: Callable[[Path], Path], tmp_path: Path) -> None:
    """Nothing to work on is exit 2 naming the file, never "ok, 0 calls" or "no overlap between 0 and 0"."""
    x = make(tmp_path)
    r = CliRunner().invoke(app, EMPTY_INPUT[command](tmp_path, x))
    assert r.exit_code == 2, r.output
    line = _one_error_line(r, x.name)
    assert "no tool call found" in line or "no call record" in line or "holds no case" in line, line
    assert not list(tmp_path.glob("out*"))


def test_allow_empty_accepts_an_empty_source(tmp_path: Path) -> None:
    x = _empty(tmp_path)
    r = CliRunner().invoke(app, ["ingest", str(x), "-o", str(tmp_path / "c"), "--allow-empty"])
    assert r.exit_code == 0, r.output
    assert "0 calls" in r.stderr
    r = CliRunner().invoke(app, ["check", "--contracts", str(_contracts(tmp_path)), str(x), "--allow-empty"])
    assert r.exit_code == 0, r.output
    # a file whose lines are all bad yields no tool call either: exit 2 with its reject count, and with
    # --allow-empty its lines are rejects, reported, exit 0
    bad = _garbage(tmp_path)
    r = CliRunner().invoke(app, ["ingest", str(bad), "-o", str(tmp_path / "c2")])
    assert "no tool call found (2 rejects)" in _one_error_line(r, bad.name)
    assert not (tmp_path / "c2").exists()
    r = CliRunner().invoke(app, ["ingest", str(bad), "-o", str(tmp_path / "c2"), "--allow-empty"])
    assert r.exit_code == 0, r.output
    assert "2 rejects" in r.stderr or "rejects: 2" in r.stderr or " 2 reject" in r.stderr, r.stderr


def _leaf_commands(group: Any, prefix: str = "") -> list[str]:
    out = []
    for name, cmd in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        if hasattr(cmd, "commands"):
            out += _leaf_commands(cmd, full + "-")
        else:
            out.append(full)
    return out


def test_no_subcommand_is_left_out() -> None:
    """Every subcommand that reads an input is in this module's table or in test_damaged_inputs.py."""
    here = Path(__file__).read_text() + (Path(__file__).parent / "test_damaged_inputs.py").read_text()
    group = typer.main.get_command(app)
    assert hasattr(group, "commands")
    no_input = {"codes"}  # prints the code table: reads nothing
    missing = [c for c in _leaf_commands(group) if c not in no_input and f'"{c}' not in here]
    assert missing == []


# ---- random byte damage of a corpus ------------------------------------------------------------------

CORPUS_FILES = ["calls.parquet", "leaves.parquet", "episodes.parquet", "corpus.json", "rejects.jsonl"]


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A corpus of 400 sample calls (one line of them bad, so rejects.jsonl has bytes) and its contracts."""
    import gzip

    d = tmp_path_factory.mktemp("bytes")
    lines = gzip.decompress(CLEAN.read_bytes()).splitlines()[:400]
    (d / "small.jsonl").write_bytes(b"\n".join([*lines, b"{not json"]) + b"\n")
    r = CliRunner().invoke(app, ["ingest", str(d / "small.jsonl"), "-o", str(d / "c"), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(
        app, ["mine", str(d / "c"), "-o", str(d / "k.json"), "-q", "--min-support", "REQUIRED=3"]
    )
    assert r.exit_code == 0, r.output
    return d / "c", d / "k.json"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(CORPUS_FILES), data=st.data())
def test_random_byte_damage_of_a_corpus(
    small_corpus: tuple[Path, Path], name: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Flip 1-3 bytes of one corpus file: `corpus verify` names it (a digest, schema or JSON problem;
    corpus.json's descriptions of the sources it was made from cannot be checked without them), and
    `check` and `mine` end in an exit code, never an escaped exception (a file that does not decode is
    one error line naming it)."""
    src, contracts = small_corpus
    d = tmp_path_factory.mktemp("damaged") / "c"
    shutil.copytree(src, d)
    f = d / name
    raw = bytearray(f.read_bytes())
    # distinct positions: flipping one byte twice by the same mask would restore it, an undamaged file
    for pos in data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=3, unique=True)):
        raw[pos] ^= data.draw(st.integers(1, 255))
    f.write_bytes(bytes(raw))
    v = CliRunner().invoke(app, ["corpus", "verify", str(d)])
    assert not (v.exception and not isinstance(v.exception, SystemExit)), v.exception
    if name != "corpus.json":
        # exit 1: a digest, row or column mismatch; exit 2: refused at open (a footer, a line count)
        assert v.exit_code in (1, 2) and name in v.output, v.output
    else:
        assert v.exit_code in (0, 1, 2)
    for argv in (
        ["check", "--contracts", str(contracts), str(d)],
        ["mine", str(d), "-o", str(d.parent / "k.json")],
    ):
        r = CliRunner().invoke(app, argv)
        assert not (r.exception and not isinstance(r.exception, SystemExit)), (argv[0], repr(r.exception))
        assert r.exit_code in (0, 1, 2) and "Traceback" not in r.output
        if r.exit_code == 2:
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("error["), r.stderr


def test_a_parquet_file_that_does_not_decode_is_named(
    small_corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    """polars says what broke, not where: the CLI traces a decode error back to the damaged file."""
    src, contracts = small_corpus
    d = tmp_path / "c"
    shutil.copytree(src, d)
    f = d / "leaves.parquet"
    raw = bytearray(f.read_bytes())
    for i in range(len(raw) // 3, len(raw) // 3 + 64):  # the middle of the data pages, size unchanged
        raw[i] ^= 0x5A
    f.write_bytes(bytes(raw))
    for argv in (
        ["check", "--contracts", str(contracts), str(d)],
        ["mine", str(d), "-o", str(tmp_path / "k.json")],
    ):
        r = CliRunner().invoke(app, argv)
        assert r.exit_code == 2, r.output
        (line,) = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert line.startswith(f"error[E_TRACE]: {f}: damaged corpus: sha256 differs from corpus.json"), line
        assert "`contracts corpus verify` lists every damaged file" in line


def test_open_checks_footers_and_the_reject_count(small_corpus: tuple[Path, Path], tmp_path: Path) -> None:
    """Corpus.open's cheap checks: each Parquet footer reads with the recorded rows and columns, and
    rejects.jsonl has the recorded number of lines; `corpus info` then refuses naming the file."""
    src, _ = small_corpus
    cases = {
        "calls.parquet": lambda raw: raw[:-12] + bytes(b ^ 0xFF for b in raw[-12:-4]) + raw[-4:],
        "rejects.jsonl": lambda raw: raw + raw,
    }
    says = {
        "calls.parquet": "has no readable Parquet footer",
        "rejects.jsonl": "has 2 lines, corpus.json records 1",
    }
    for name, damage in cases.items():
        d = tmp_path / name
        shutil.copytree(src, d)
        (d / name).write_bytes(damage((d / name).read_bytes()))
        r = CliRunner().invoke(app, ["corpus", "info", str(d)])
        line = _one_error_line(r, name)
        assert f"damaged corpus: {name} {says[name]}" in line, line


def test_a_footer_polars_reads_but_pyarrow_does_not_is_named(
    small_corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    """Byte flips in the footer's metadata can leave a footer polars accepts and pyarrow (which reads
    the row-group index) cannot decode: `Corpus.open` must still refuse with the file's name, never let
    pyarrow's error escape unnamed (found by the random-damage test above)."""
    from output_contracts.errors import ContractsError
    from output_contracts.traces.corpus import Corpus

    src, _ = small_corpus
    raw = (src / "leaves.parquet").read_bytes()
    refused = 0
    for back in range(9, 90):  # the footer's last bytes, before its length and the PAR1 magic
        d = tmp_path / f"b{back}"
        shutil.copytree(src, d)
        bad = bytearray(raw)
        bad[len(bad) - back] ^= 0xDC
        (d / "leaves.parquet").write_bytes(bytes(bad))
        try:
            Corpus.open(d)
        except ContractsError as e:
            refused += 1
            assert "leaves.parquet" in str(e), (back, str(e))
        shutil.rmtree(d)
    assert refused > 0
