"""`contracts ledger verify|show|head`: output on the right stream, exit codes 0/1/2, also as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.ledger import read_entries
from output_contracts.ledger.verify import REPORT_SCHEMA

from .conftest import build

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_verify_ok_and_json(template: Path) -> None:
    res = runner.invoke(app, ["ledger", "verify", str(template), "--require-frozen"])
    assert res.exit_code == 0 and res.stdout == ""
    assert res.stderr.startswith("ok: 8 entries, frozen, head ")
    js = runner.invoke(app, ["ledger", "verify", str(template), "--json"])
    report = json.loads(js.stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    header = json.loads((template / "ledger.json").read_text())
    assert report == {
        "ok": True,
        "entries": 8,
        "head": header["head"],
        "root": header["root"],
        "frozen": True,
        "problems": [],
    }
    anchored = runner.invoke(
        app, ["ledger", "verify", str(template), "--head", header["head"], "--root", header["root"]]
    )
    assert anchored.exit_code == 0


def test_verify_findings_exit_1(tmp_path: Path, template: Path) -> None:
    head = json.loads((template / "ledger.json").read_text())["head"]
    bad = runner.invoke(app, ["ledger", "verify", str(template), "--head", "a" * 64])
    assert bad.exit_code == 1 and "HEAD_MISMATCH" in bad.stdout
    bad = runner.invoke(app, ["ledger", "verify", str(template), "--root", head])
    assert bad.exit_code == 1 and "ROOT_MISMATCH" in bad.stdout
    d = tmp_path / "U"
    build(d, 2, frozen=False)
    assert runner.invoke(app, ["ledger", "verify", str(d)]).exit_code == 0
    unfrozen = runner.invoke(app, ["ledger", "verify", str(d), "--require-frozen", "--json"])
    assert unfrozen.exit_code == 1
    report = json.loads(unfrozen.stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert [p["code"] for p in report["problems"]] == ["UNFROZEN"]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    for args in (
        ["ledger", "verify", str(tmp_path / "nope")],
        ["ledger", "verify", str(tmp_path)],  # an empty folder is not a ledger
        ["ledger", "show", str(tmp_path)],
        ["ledger", "head", str(tmp_path)],
        ["ledger", "repair", str(tmp_path)],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr.startswith("error[E_LEDGER]: ") and len(res.stderr.strip().splitlines()) == 1


def test_show_filters_and_prints_exact_lines(template: Path) -> None:
    res = runner.invoke(app, ["ledger", "show", str(template), "--kind", "audit.fire"])
    assert res.exit_code == 0
    rows = res.stdout.splitlines()
    assert len(rows) == 4 and all("  audit.fire  " in r for r in rows)
    assert rows[0].split()[0] == "1" and "2 entries" not in res.stderr and "4 entries shown" in res.stderr
    js = runner.invoke(app, ["ledger", "show", str(template), "--json"])
    assert js.stdout.encode() == (template / "ledger.jsonl").read_bytes()
    cut = runner.invoke(app, ["ledger", "show", str(template), "--width", "40"])
    assert all(len(r.split("  ")[-1]) == 40 and r.endswith("…") for r in cut.stdout.splitlines())
    full = runner.invoke(app, ["ledger", "show", str(template), "--width", "0"])
    assert all(not r.endswith("…") for r in full.stdout.splitlines())
    both = runner.invoke(
        app, ["ledger", "show", str(template), "-k", "audit.fire", "-k", "audit.check", "--json"]
    )
    assert len(both.stdout.splitlines()) == 8


def test_show_and_head_refuse_a_broken_ledger(copy_of: object) -> None:
    d = copy_of()  # type: ignore[operator]
    (d / "ledger.jsonl").write_bytes((d / "ledger.jsonl").read_bytes()[:-5])
    for cmd in ("show", "head"):
        res = runner.invoke(app, ["ledger", cmd, str(d)])
        # a ledger that does not verify is a finding (exit 1), like `ledger verify` on it
        assert res.exit_code == 1 and "TRUNCATED_TAIL" in res.stderr and res.stdout == ""


def test_head(template: Path) -> None:
    header = json.loads((template / "ledger.json").read_text())
    res = runner.invoke(app, ["ledger", "head", str(template)])
    assert res.exit_code == 0 and res.stdout == header["head"] + "\n"
    js = json.loads(runner.invoke(app, ["ledger", "head", str(template), "--json"]).stdout)
    assert js == {"entries": 8, "head": header["head"], "root": header["root"]}
    assert read_entries(template)[-1].hash == header["head"]


def test_subprocess_exit_codes(copy_of: object) -> None:
    d = copy_of()  # type: ignore[operator]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "output_contracts.cli.app", "ledger", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = run("verify", str(d), "--require-frozen")
    assert ok.returncode == 0 and ok.stderr.startswith("ok: 8 entries"), ok.stderr
    (d / "ledger.jsonl").write_bytes((d / "ledger.jsonl").read_bytes().replace(b'"n":5', b'"n":6'))
    bad = run("verify", str(d))
    assert bad.returncode == 1 and bad.stdout.startswith("ledger.jsonl: entry 5: EDITED")


def test_quiet_and_progress(template: Path, copy_of: object) -> None:
    quiet = runner.invoke(app, ["ledger", "verify", str(template), "--quiet"])
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
    d = copy_of()  # type: ignore[operator]
    (d / "ledger.jsonl").write_bytes((d / "ledger.jsonl").read_bytes()[:-3])
    bad = runner.invoke(app, ["ledger", "verify", str(d), "-q"])
    assert bad.exit_code == 1 and bad.stderr == "" and "TRUNCATED_TAIL" in bad.stdout


def test_progress_reports_every_byte(template: Path) -> None:
    from output_contracts.ledger import verify

    class Count:
        def __init__(self) -> None:
            self.total: int | None = None
            self.done = 0
            self.finished = False

        def start(self, task: str, total: int | None) -> None:
            self.total = total

        def advance(self, n: int = 1) -> None:
            self.done += n

        def finish(self) -> None:
            self.finished = True

    c = Count()
    assert verify(template, progress=c).ok
    assert c.finished and c.total == c.done == (template / "ledger.jsonl").stat().st_size
