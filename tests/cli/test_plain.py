"""`--plain`: tab-separated values a `cut` or `awk` reads, the same values as `--json` where there is one.

Each command's `--plain` output must be one header line and rows of the same number of fields, with
no colour, no box or rule characters and no shortened (`…`) value, at a width (COLUMNS=40) that would
wrap and shorten every table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from tests.conftest import SAMPLE

runner = CliRunner()
ENV = {"COLUMNS": "40", "NO_COLOR": "1", "TERM": "dumb"}


def run(*args: object, code: int = 0) -> tuple[str, str]:
    r = runner.invoke(app, [str(a) for a in args], env=ENV)
    assert r.exit_code == code, (args, r.output)
    return r.stdout, r.stderr


def tsv(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of a TSV text, checked: same field count everywhere, nothing decorated."""
    lines = text.rstrip("\n").split("\n")
    assert lines and lines[0], "no header line"
    for bad in ("\x1b[", "…", "─", "━", "│", "┃"):
        assert bad not in text, f"{bad!r} in --plain output"
    header = lines[0].split("\t")
    rows = [x.split("\t") for x in lines[1:]]
    assert all(len(r) == len(header) for r in rows), [r for r in rows if len(r) != len(header)][:2]
    return header, rows


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = tmp_path_factory.mktemp("plain-world")
    (w / "contracts.toml").write_text("", encoding="utf-8")
    run(
        "ingest",
        SAMPLE / "clean" / "part-2.jsonl.gz",
        "-o",
        w / "C",
        "--registry",
        SAMPLE / "tools.json",
        "-q",
    )
    tools = ("--tool", "get_order", "--tool", "lookup_inventory", "--tool", "list_shipments")
    run("mine", w / "C", "-o", w / "contracts.json", "--folds", "2", *tools, "-q")
    run("mine", w / "C", "-o", w / "strict.json", "--min-support", "DOMAIN=1500", *tools, "-q")
    return w


def test_rules_plain_is_the_json(world: Path) -> None:
    out, _ = run("rules", world / "contracts.json", "--plain")
    header, rows = tsv(out)
    assert header == ["tool", "code", "path", "params", "support", "source"]
    data = json.loads(run("rules", world / "contracts.json", "--json")[0])
    assert len(rows) == len(data) > 50
    for row, rule in zip(rows, data, strict=True):
        assert row[0] == rule["tool"] and row[1] == rule["code"]
        assert row[2] == (rule["paths"][0] or '""')
        assert row[4] == f"{rule['support']['calls']}/{rule['support']['tasks']}"
    assert any(len(r[0]) > 14 for r in rows)  # lookup_inventory: whole at 40 columns


def test_rules_folds_plain(world: Path) -> None:
    out, _ = run("rules", world / "contracts.json", "--by-fold", "--corpus", world / "C", "--plain")
    header, rows = tsv(out)
    assert header[-3:] == ["folds", "tasks", "held-out"] and rows


def test_corpus_info_plain_is_the_json_tools(world: Path) -> None:
    header, rows = tsv(run("corpus", "info", world / "C", "--plain")[0])
    info = json.loads(run("corpus", "info", world / "C", "--json")[0])
    assert header == ["tool", "calls", "errors", "episodes"]
    assert rows == [[t["tool"], str(t["calls"]), str(t["errors"]), str(t["episodes"])] for t in info["tools"]]


def test_codes_plain_is_the_json() -> None:
    header, rows = tsv(run("codes", "--plain")[0])
    data = json.loads(run("codes", "--json")[0])
    assert header == ["code", "family", "meaning", "docs"]
    assert rows == [[d["code"], d["family"], d["summary"], d["docs"]] for d in data]


def test_diff_plain_is_the_json(world: Path) -> None:
    header, rows = tsv(run("diff", world / "contracts.json", world / "strict.json", "--plain")[0])
    d = json.loads(run("diff", world / "contracts.json", world / "strict.json", "--json")[0])
    assert header == ["change", "tool", "code", "rule"]
    assert [r[0] for r in rows].count("removed") == len(d["removed"]) > 0
    assert {(r[1], r[2]) for r in rows if r[0] == "removed"} == {(x["tool"], x["code"]) for x in d["removed"]}


def test_mine_plain_counts_rules_per_tool(world: Path, tmp_path: Path) -> None:
    out, _ = run("mine", world / "C", "-o", tmp_path / "c.json", "--tool", "get_order", "--plain", "-q")
    header, rows = tsv(out)
    assert header[0] == "tool" and header[-1] == "total"
    cs = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert [r[0] for r in rows] == ["get_order"]
    assert int(rows[0][-1]) == len(cs["tools"]["get_order"]["rules"])
    assert sum(map(int, rows[0][1:-1])) == int(rows[0][-1])


def test_check_plain_summary(world: Path, tmp_path: Path) -> None:
    args = ("check", "--contracts", world / "contracts.json", SAMPLE / "faulty", "-o", tmp_path / "r.jsonl")
    header, rows = tsv(run(*args, "--plain", code=1)[0])
    found = dict(rows)
    receipts = (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()
    assert header == ["what", "value"]
    assert int(found["calls with violations"]) == len(receipts)
    assert found["unknown tool"].endswith("search_products)")  # every unknown tool, none shortened


def test_config_plain_is_the_json(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world)
    header, rows = tsv(run("config", "--plain")[0])
    data = json.loads(run("config", "--json")[0])["settings"]
    assert header == ["setting", "value", "origin"]
    assert [r[0] for r in rows] == list(data)
