"""`contracts check` and `contracts codes` end to end: exit codes, receipts, summary, sources, filters."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.tool_registry import load_registry

T = "lookup_inventory"
REPO = Path(__file__).resolve().parents[2]
REGISTRY = {
    "tools": [
        {
            "name": T,
            "description": "stock of one SKU",
            "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
            "substitutes": ["query_warehouse", "get_stock_by_sku"],
        },
        {"name": "query_warehouse", "parameters": {"type": "object"}},
        {"name": "get_stock_by_sku", "parameters": {"type": "object"}},
    ]
}


def clean_records(n: int = 60) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": f"ep-{i}",
            "task_id": f"retail-{i % 8}",
            "tool": T,
            "arguments": {"sku": f"SKU-{1000 + i}"},
            "result": {"sku": f"SKU-{1000 + i}", "available": i % 7, "warehouse": ["east", "west"][i % 2]},
        }
        for i in range(n)
    ]


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Contracts mined (by the real miner, 5 folds) from 60 clean calls, and a few trace files."""
    d = tmp_path_factory.mktemp("world")
    (d / "tools.json").write_bytes(orjson.dumps(REGISTRY))
    corpus = corpus_from_records(clean_records(), d / "clean")
    cs = mine(corpus, folds=5, seed=13, registry=load_registry(d / "tools.json"))
    cs.save(d / "contracts.json")
    write_jsonl(
        d / "faulty.jsonl",
        [
            {
                "trace_id": "f1",
                "tool": T,
                "arguments": {"sku": "SKU-1042"},
                "result": {"sku": "SKU-1042", "available": -3, "warehouse": "east"},
            },
            {
                "trace_id": "f1",
                "tool": T,
                "arguments": {"sku": "SKU-7"},
                "result": {"sku": "SKU-7", "available": 2, "warehouse": "west"},
            },
            {"trace_id": "f2", "tool": "mystery_tool", "arguments": {}, "result": {"available": -9}},
            {"trace_id": "f3", "tool": T, "arguments": {"sku": "SKU-8"}, "result": ["not", "an", "object"]},
        ],
    )
    write_jsonl(d / "clean.jsonl", clean_records(10))
    return {
        "dir": d,
        "contracts": d / "contracts.json",
        "faulty": d / "faulty.jsonl",
        "clean": d / "clean.jsonl",
        "corpus": d / "clean",
    }


def run(*args: str, input: bytes | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=input)


def receipts(stdout: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stdout.splitlines() if line.strip()]


def test_seed_example_end_to_end(world: dict[str, Path]) -> None:
    res = run("check", "--contracts", str(world["contracts"]), str(world["faulty"]))
    assert res.exit_code == 1, res.output
    out = receipts(res.stdout)
    first = next(r for r in out if r["line"] == 1)
    (v,) = first["outcome_contract"]["violations"]
    assert (v["code"], v["path"], v["expected"], v["observed"], v["present"]) == (
        "NONNEG",
        "/available",
        ">= 0",
        -3,
        True,
    )
    assert "every one of 60 clean results had available >= 0" in v["detail"]
    assert first["outcome_contract"]["recovery_tools"] == [T, "query_warehouse", "get_stock_by_sku"]
    assert first["tool_result"] == {"sku": "SKU-1042", "available": -3, "warehouse": "east"}
    for r in out:
        assert schema_errors(r, "receipt-v2") == []
    # the non-object result: TYPE at "" (object) fires; REQUIRED rules need an object parent, so they do not
    arr = next(r for r in out if r["line"] == 4)
    assert [(v["code"], v["path"]) for v in arr["outcome_contract"]["violations"]] == [("TYPE", "")]
    # unknown tool: no receipt, counted on its own line of the summary
    assert sorted(r["line"] for r in out) == [1, 4]
    assert "unknown tool" in res.stderr and "1 call not checked (mystery_tool)" in res.stderr
    assert "calls checked" in res.stderr and "per 1,000 calls" in res.stderr


def test_clean_input_exits_0_and_all_gives_every_call(world: dict[str, Path]) -> None:
    res = run("check", "--contracts", str(world["contracts"]), str(world["clean"]))
    assert res.exit_code == 0, res.output
    assert res.stdout == ""
    res = run(
        "check", "--contracts", str(world["contracts"]), str(world["clean"]), "--all", "--encoder", "v1", "-q"
    )
    assert res.exit_code == 0 and res.stderr == ""
    out = receipts(res.stdout)
    assert len(out) == 10 and all(r["outcome_contract"]["violations"] == [] for r in out)
    assert all(schema_errors(r, "receipt-v1") == [] for r in out)


def test_corpus_folder_and_stdin_give_the_same_violations(world: dict[str, Path], tmp_path: Path) -> None:
    c = corpus_from_records(
        [orjson.loads(x) for x in world["faulty"].read_bytes().splitlines()], tmp_path / "c"
    )
    a = run("check", "--contracts", str(world["contracts"]), str(c.path), "-q")
    b = run("check", "--contracts", str(world["contracts"]), "-", "-q", input=world["faulty"].read_bytes())
    assert a.exit_code == b.exit_code == 1

    def key(out: str) -> list[Any]:
        return sorted((r["line"], r["outcome_contract"]) for r in receipts(out))

    assert key(a.stdout) == key(b.stdout)


def test_filters_fold_and_output_file(world: dict[str, Path], tmp_path: Path) -> None:
    cfile = str(world["contracts"])
    res = run("check", "--contracts", cfile, str(world["faulty"]), "--code", "DOMAIN", "-q")
    assert res.exit_code == 0 and res.stdout == ""
    res = run("check", "--contracts", cfile, str(world["faulty"]), "--tool", "mystery_tool", "-q")
    assert res.exit_code == 0
    res = run("check", "--contracts", cfile, str(world["faulty"]), "--fold", "cross", "-q")
    assert res.exit_code == 1 and {r["line"] for r in receipts(res.stdout)} == {1, 4}
    out = tmp_path / "r.jsonl"
    res = run("check", "--contracts", cfile, str(world["faulty"]), "--fold", "2", "-o", str(out), "-q")
    assert res.exit_code == 1 and res.stdout == ""
    assert {r["line"] for r in receipts(out.read_text())} == {1, 4}


@pytest.mark.parametrize(
    "args,message",
    [
        (["--code", "NOPE"], "unknown property code 'NOPE'"),
        (["--fold", "x"], "--fold must be a fold number or 'cross'"),
        (["--fold", "9"], "no fold 9"),
    ],
)
def test_usage_errors_exit_2(world: dict[str, Path], args: list[str], message: str) -> None:
    res = run("check", "--contracts", str(world["contracts"]), str(world["faulty"]), *args)
    assert res.exit_code == 2 and message in res.stderr


def test_bad_contract_files_exit_2(world: dict[str, Path], tmp_path: Path) -> None:
    good = orjson.loads(world["contracts"].read_bytes())
    wrong_version = tmp_path / "v9.json"
    wrong_version.write_bytes(orjson.dumps({**good, "version": 9}))
    res = run("check", "--contracts", str(wrong_version), str(world["faulty"]))
    assert (
        res.exit_code == 2 and "unsupported contract set version 9" in res.stderr and "v9.json" in res.stderr
    )
    invalid = tmp_path / "bad.json"
    invalid.write_bytes(orjson.dumps({"version": 1, "tools": {T: {"rules": [{"id": "r-1"}]}}}))
    res = run("check", "--contracts", str(invalid), str(world["faulty"]))
    assert res.exit_code == 2 and "bad.json" in res.stderr
    assert res.stderr.count("\n") == 1  # one line, no traceback
    notjson = tmp_path / "nj.json"
    notjson.write_text("{")
    res = run("check", "--contracts", str(notjson), str(world["faulty"]))
    assert res.exit_code == 2 and "not valid JSON" in res.stderr
    res = run("check", "--contracts", str(world["contracts"]), str(tmp_path / "missing.jsonl"))
    assert res.exit_code == 2 and "missing.jsonl" in res.stderr


def test_codes_lists_every_code(tmp_path: Path) -> None:
    res = run("codes", "--json")
    assert res.exit_code == 0
    data = orjson.loads(res.stdout)
    names = [d["code"] for d in data]
    assert names == [
        "REQUIRED",
        "TYPE",
        "POSITIVE",
        "NONNEG",
        "DOMAIN",
        "ECHO",
        "DATE_ORDER",
        "RELATION",
        "FORMAT",
        "LENGTH",
        "RANGE",
        "UNIQUE",
        "CONSISTENT",
        "CONDITIONAL",
        "E_SCHEMA",
        "E_ARGS",
        "E_ORDER",
        "E_TOOL",
    ]
    docs = (REPO / "docs" / "codes.md").read_text()
    for d in data:
        anchor = d["docs"].split("#")[1]
        assert f"## {d['code']}" in docs and anchor == d["code"].lower()
    res = run("codes")
    assert res.exit_code == 0 and "NONNEG" in res.stdout


def test_subprocess_stdin_stream(world: dict[str, Path]) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "output_contracts.cli.app",
            "check",
            "--contracts",
            str(world["contracts"]),
            "-",
        ],
        input=world["faulty"].read_bytes(),
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr.decode()
    out = receipts(proc.stdout.decode())
    assert [r["line"] for r in out] == [1, 4]
    assert out[0]["source"] == "-"
    assert b"unknown tool" in proc.stderr


def test_error_calls_are_skipped_and_counted_alike(world: dict[str, Path], tmp_path: Path) -> None:
    recs = [
        {"trace_id": "e", "tool": T, "arguments": {"sku": "S"}, "status": "error", "error": "timeout"},
        {
            "trace_id": "e",
            "tool": T,
            "arguments": {"sku": "S"},
            "result": {"sku": "S", "available": 1, "warehouse": "east"},
        },
    ]
    src = write_jsonl(tmp_path / "e.jsonl", recs)
    for args, data in (([str(src)], None), (["-"], src.read_bytes())):
        res = run("check", "--contracts", str(world["contracts"]), *args, input=data)
        assert res.exit_code == 0, res.output
        assert "1 call with status error" in res.stderr
        assert re.search(r"calls checked\s+1\s", res.stderr), res.stderr


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat", "openai-responses", "otel"])
def test_episode_formats_stream_like_files(world: dict[str, Path], fmt: str) -> None:
    """`check -` parses any ingest format line by line and agrees with the ingested-file path,
    recovery tools (from each episode's visible tool set) included."""
    src = REPO / "sample_traces" / "formats" / f"{fmt}.jsonl"
    if not src.exists():
        pytest.skip(f"{src.name} not generated")
    a = run("check", "--contracts", str(world["contracts"]), str(src), "--all", "-q")
    b = run("check", "--contracts", str(world["contracts"]), "-", "--all", "-q", input=src.read_bytes())
    assert a.exit_code == b.exit_code and a.exit_code in (0, 1)

    def key(out: str) -> list[Any]:
        return sorted(
            (
                r["line"],
                orjson.dumps(r["outcome_contract"], option=orjson.OPT_SORT_KEYS),
                orjson.dumps(r["tool_result"]),
            )
            for r in receipts(out)
        )

    assert len(key(a.stdout)) > 0
    assert key(a.stdout) == key(b.stdout)


def test_paths_default_from_config(world: dict[str, Path], tmp_path: Path) -> None:
    cfg = tmp_path / "contracts.toml"
    corpus = corpus_from_records(
        [orjson.loads(x) for x in world["faulty"].read_bytes().splitlines()], tmp_path / "c"
    )
    cfg.write_text(
        f'[paths]\ncontracts = "{world["contracts"]}"\ncorpus = "{corpus.path.name}"\n\n[check]\nencoder = "v1"\n'
    )
    res = run("--config", str(cfg), "check", "-q")
    assert res.exit_code == 1, res.output
    out = receipts(res.stdout)
    assert [r["line"] for r in out] == [1, 4] and out[0]["outcome_contract"]["encoder"] == "v1"
    res = run("--config", str(cfg), "check", "-q", "--encoder", "v2")
    assert receipts(res.stdout)[0]["outcome_contract"]["encoder"] == "v2"
    empty = tmp_path / "empty.toml"
    empty.write_text('[check]\nencoder = "v2"\n')
    res = run("--config", str(empty), "check")
    assert res.exit_code == 2 and "--contracts" in res.stderr


def test_unreadable_lines_counted_or_strict(world: dict[str, Path], tmp_path: Path) -> None:
    good = world["faulty"].read_bytes().splitlines()[0]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(good + b"\nnot json\n")
    for args, data in (([str(src)], None), (["-"], src.read_bytes())):
        res = run("check", "--contracts", str(world["contracts"]), *args, input=data)
        assert res.exit_code == 1 and "1 unreadable input line " in res.stderr  # the violation still counts
        res = run("check", "--contracts", str(world["contracts"]), *args, "--strict", input=data)
        assert res.exit_code == 2 and ":2:" in res.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "json", "sarif", "junit", "github"])
def test_same_input_same_bytes(world: dict[str, Path], fmt: str) -> None:
    args = (
        "check",
        "--contracts",
        str(world["contracts"]),
        str(world["faulty"]),
        "--output-format",
        fmt,
        "-q",
    )
    a, b = run(*args), run(*args)
    assert a.exit_code == b.exit_code == 1
    assert a.stdout == b.stdout and a.stdout


@pytest.mark.parametrize("encoder", ["v2-no-recovery", "generic"])
def test_ablation_encoders_through_the_cli(world: dict[str, Path], encoder: str) -> None:
    res = run("check", "--contracts", str(world["contracts"]), str(world["faulty"]), "--encoder", encoder)
    assert res.exit_code == 1, res.output
    out = receipts(res.stdout)
    assert sorted(r["line"] for r in out) == [1, 4]  # the same calls as under v2
    for r in out:
        assert schema_errors(r, f"receipt-{encoder}") == []
        assert "recovery_tools" not in r["outcome_contract"]
    # the summary counts the violations although the generic receipt does not carry them
    assert "code NONNEG" in res.stderr and "code TYPE" in res.stderr
    refused = run(
        "check",
        "--contracts",
        str(world["contracts"]),
        str(world["faulty"]),
        "--encoder",
        encoder,
        "--output-format",
        "sarif",
    )
    if encoder == "generic":
        assert refused.exit_code == 2 and "does not carry" in refused.stderr
    else:
        assert refused.exit_code == 1
