"""`registry infer` and `registry check`: mined contracts -> declarations, declarations vs observed results."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import polars as pl
import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet, Rule, Support, ToolContracts, rule_id
from output_contracts.registry.check import check_registry
from output_contracts.registry.infer import infer_registry
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.tool_registry import load_registry, registry_from_json

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_traces"


def _rule(
    tool: str, code: str, paths: list[str], params: dict[str, Any] | None = None, source: str = "mined"
) -> Rule:
    p = params or {}
    return Rule(rule_id(tool, code, paths, p), tool, code, tuple(paths), p, Support(40, 8), source=(source,))


def _records() -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = []
    for i in range(40):
        recs.append(
            {
                "trace_id": f"t{i}",
                "task_id": f"task-{i % 8}",
                "tool": "lookup_inventory",
                "arguments": {"sku": f"SKU-{i}", "warehouse": "east"},
                "result": {
                    "sku": f"SKU-{i}",
                    "available": i,
                    "warehouse": ["east", "west"][i % 2],
                    "lots": [{"lot": f"L{i}", "qty": 1.0 + i}],
                    "note": None if i % 2 else "recount",
                },
            }
        )
    recs.append(
        {
            "trace_id": "e1",
            "tool": "lookup_inventory",
            "arguments": {},
            "status": "error",
            "error": "boom",
            "result": {"code": 500},
        }
    )
    recs.append({"trace_id": "o1", "tool": "ping", "arguments": {}, "result": {"pong": True}})
    return recs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(_records(), tmp_path_factory.mktemp("c") / "corpus")


def _contracts() -> ContractSet:
    t = "lookup_inventory"
    rules = (
        _rule(t, "TYPE", [""], {"kind": "object"}),
        _rule(t, "REQUIRED", ["/sku"]),
        _rule(t, "TYPE", ["/sku"], {"kind": "string"}),
        _rule(t, "TYPE", ["/available"], {"kind": "int"}),
        _rule(t, "NONNEG", ["/available"]),
        _rule(t, "TYPE", ["/warehouse"], {"kind": "string"}),
        _rule(t, "DOMAIN", ["/warehouse"], {"values": ["east", "west"]}),
        _rule(t, "REQUIRED", ["/lots/*/qty"]),
        _rule(t, "TYPE", ["/lots/*/qty"], {"kind": "number"}),
        _rule(t, "POSITIVE", ["/lots/*/qty"]),
        _rule(t, "DOMAIN", ["/note"], {"values": ["recount"]}),  # no TYPE string: not an enum
        _rule(t, "TYPE", ["$args/sku"], {"kind": "string"}),
        _rule(t, "REQUIRED", ["$args/sku"]),
        _rule(t, "ECHO", ["/sku", "$args/sku"]),  # no JSON Schema form
        _rule(t, "TYPE", ["/ghost"], {"kind": "string"}, source="schema"),  # schema-only: ignored
    )
    return ContractSet(params={"k": 1, "seed": 13}, corpus={}, tools={t: ToolContracts(rules=rules)})


def test_infer_maps_rules_to_declarations(corpus: Corpus) -> None:
    result = infer_registry(_contracts(), corpus)
    reg = result.registry
    assert reg.names() == ["lookup_inventory", "ping"]
    out = reg.tools["lookup_inventory"].output
    assert out == {
        "type": "object",
        "properties": {
            "sku": {"type": "string"},
            "available": {"type": "integer", "minimum": 0},
            "warehouse": {"type": "string", "enum": ["east", "west"]},
            "lots": {
                "items": {
                    "properties": {"lot": {}, "qty": {"type": "number", "exclusiveMinimum": 0}},
                    "required": ["qty"],
                }
            },
            "note": {},
        },
        "required": ["sku"],
    }
    assert reg.tools["lookup_inventory"].parameters == {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "warehouse": {}},
        "required": ["sku"],
    }
    assert reg.tools["ping"].output == {"properties": {"pong": {}}}
    stats = {s.tool: s for s in result.stats}
    assert (stats["lookup_inventory"].required, stats["lookup_inventory"].enums) == (2, 1)
    assert schema_errors(reg.to_json(), "tool-registry") == []
    # The proposal agrees with the corpus it was inferred from.
    assert check_registry(reg, corpus).disagreements == ()


def test_infer_with_base_keeps_what_the_base_declares(corpus: Corpus) -> None:
    base = registry_from_json(
        {
            "tools": [
                {
                    "name": "lookup_inventory",
                    "description": "Stock of one SKU.",
                    "parameters": {
                        "type": "object",
                        "properties": {"sku": {"type": "string", "pattern": "^SKU-"}},
                    },
                    "output": {"type": "object", "properties": {"available": {"type": "number"}}},
                    "substitutes": ["query_warehouse"],
                },
                {"name": "never_called"},
            ]
        }
    )
    reg = infer_registry(_contracts(), corpus, base=base).registry
    assert reg.names() == ["lookup_inventory", "never_called", "ping"]
    li = reg.tools["lookup_inventory"]
    assert li.description == "Stock of one SKU." and li.substitutes == ("query_warehouse",)
    assert li.output is not None
    assert list(li.output["properties"]) == ["available", "sku", "warehouse", "lots", "note"]
    assert li.output["properties"]["available"] == {"type": "number", "minimum": 0}
    assert li.parameters["properties"]["sku"] == {"type": "string", "pattern": "^SKU-"}
    assert li.parameters["required"] == ["sku"]


def _declared() -> dict[str, Any]:
    return {
        "tools": [
            {
                "name": "lookup_inventory",
                "output": {
                    "type": "object",
                    "required": ["sku", "gone"],
                    "properties": {
                        "sku": {"type": "integer"},
                        "available": {"type": "integer", "minimum": 5},
                        "warehouse": {"enum": ["east"]},
                        "lots": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"lot": {}, "qty": {"type": "integer"}},
                            },
                        },
                        "gone": {"type": "object", "properties": {"deeper": {}}},
                    },
                },
            },
            {"name": "unused", "output": {"type": "object"}},
        ]
    }


def test_check_reports_every_kind_topmost_only(corpus: Corpus) -> None:
    report = check_registry(registry_from_json(_declared(), source="tools.json"), corpus)
    got = [(d.tool, d.kind, d.path, d.calls) for d in report.disagreements]
    assert got == [
        ("lookup_inventory", "bound", "/available", 5),
        ("lookup_inventory", "never_seen", "/gone", 0),  # /gone/deeper is not listed again, nor 'missing'
        ("lookup_inventory", "undeclared", "/note", 40),
        ("lookup_inventory", "type", "/sku", 40),
        ("lookup_inventory", "enum", "/warehouse", 20),
        ("ping", "unknown_tool", "", 1),
    ]  # /lots/*/qty holds whole floats (1.0, 2.0, ...): they satisfy "integer", as in JSON Schema


def test_check_details(corpus: Corpus) -> None:
    report = check_registry(registry_from_json(_declared(), source="tools.json"), corpus)
    by = {(d.kind, d.path): d for d in report.disagreements}
    assert set(by) == {
        ("bound", "/available"),
        ("never_seen", "/gone"),
        ("undeclared", "/note"),
        ("type", "/sku"),
        ("enum", "/warehouse"),
        ("unknown_tool", ""),
    }
    assert by[("bound", "/available")].observed == 0 and by[("bound", "/available")].calls == 5
    assert by[("type", "/sku")].observed == {"string": 40}
    assert (
        by[("type", "/sku")].message
        == "lookup_inventory: '/sku' is declared integer but 40 value(s) are string (40)"
    )
    assert by[("enum", "/warehouse")].observed == {"west": 20}
    assert by[("undeclared", "/note")].observed == {"null": 20, "string": 20}
    assert by[("undeclared", "/note")].message.startswith(
        "lookup_inventory: field '/note' is seen in 40 result(s) but not declared (declared: sku, available,"
    )
    assert report.tools_unseen == ("unused",)
    assert report.tools_checked == ("lookup_inventory",)
    # the error call's result {"code": 500} is not an observed output
    assert ("undeclared", "/code") not in by


def test_check_type_and_missing(tmp_path: Path) -> None:
    recs = [
        {
            "trace_id": f"t{i}",
            "tool": "t",
            "arguments": {},
            "result": {"n": [1.0, 2.5, 3][i % 3], "a": {"b": 1} if i else {}},
        }
        for i in range(6)
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    reg = registry_from_json(
        {
            "tools": [
                {
                    "name": "t",
                    "output": {
                        "type": "object",
                        "properties": {
                            "n": {"type": "integer"},
                            "a": {"type": "object", "properties": {"b": {}}, "required": ["b"]},
                        },
                    },
                }
            ]
        }
    )
    report = check_registry(reg, corpus)
    assert [(d.kind, d.path, d.observed, d.calls) for d in report.disagreements] == [
        ("missing", "/a/b", {"present": 5, "objects": 6}, 1),
        ("type", "/n", {"float": 2}, 2),
    ]


@pytest.fixture()
def files(tmp_path: Path, corpus: Corpus) -> Iterator[tuple[Path, Path, Path]]:
    contracts = tmp_path / "contracts.json"
    _contracts().save(contracts)
    declared = tmp_path / "declared.json"
    declared.write_bytes(orjson.dumps(_declared()))
    yield contracts, declared, corpus.path


def _report_schema_errors(doc: Any) -> list[str]:
    """Validate a `registry check --json` report against its schema (shipped, or the draft in docs)."""
    shipped = REPO / "output_contracts" / "schemas" / "registry-check.schema.json"
    path = shipped if shipped.is_file() else REPO / "docs" / "examples" / "registry-check.schema.json"
    schema = orjson.loads(path.read_bytes())
    validator = jsonschema.Draft202012Validator(schema)
    jsonschema.Draft202012Validator.check_schema(schema)
    return sorted(e.message for e in validator.iter_errors(doc))


def test_cli_infer_then_check(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    contracts, declared, corpus = files
    runner = CliRunner()
    out = tmp_path / "tools.json"
    r = runner.invoke(app, ["registry", "infer", str(corpus), "--contracts", str(contracts), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "2 tool(s), 8 output field(s) proposed: 2 required, 4 typed, 1 enum(s), 2 bound(s)" in r.stderr
    assert load_registry(out).tools["lookup_inventory"].output_fields() == [
        "sku",
        "available",
        "warehouse",
        "lots",
        "note",
    ]
    r = runner.invoke(app, ["registry", "check", str(out), str(corpus)])
    assert r.exit_code == 0, r.output
    assert "0 disagreement(s)" in r.stderr
    r = runner.invoke(app, ["registry", "check", str(declared), str(corpus), "--json"])
    assert r.exit_code == 1
    doc = orjson.loads(r.stdout)
    assert _report_schema_errors(doc) == []
    assert doc["summary"] == {
        "disagreements": 6,
        "by_kind": {"bound": 1, "enum": 1, "never_seen": 1, "type": 1, "undeclared": 1, "unknown_tool": 1},
    }
    r = runner.invoke(app, ["registry", "infer", str(corpus), "--contracts", str(contracts)])
    assert r.exit_code == 0
    assert orjson.loads(r.stdout) == orjson.loads(out.read_bytes())


def test_cli_registry_errors(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _contracts, declared, corpus = files
    runner = CliRunner()
    r = runner.invoke(app, ["registry", "check", str(declared), str(tmp_path)])
    assert r.exit_code == 2
    assert "not a corpus folder" in r.stderr
    r = runner.invoke(app, ["registry", "check", "a", "b", "c"])
    assert r.exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"version": 99}')
    r = runner.invoke(app, ["registry", "infer", str(corpus), "--contracts", str(bad)])
    assert r.exit_code == 2
    cfg = tmp_path / "contracts.toml"
    cfg.write_text(
        f'[paths]\nregistry = "{declared.as_posix()}"\ncorpus = "{corpus.as_posix()}"\n', encoding="utf-8"
    )
    r = runner.invoke(app, ["--config", str(cfg), "registry", "check"])
    assert r.exit_code == 1
    assert "6 disagreement(s)" in r.stderr


# -- the sample world (acceptance) --------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, ContractSet]:
    if not (SAMPLE / "clean").is_dir() or not (SAMPLE / "planted.json").is_file():
        pytest.skip("sample_traces/ has not been generated (make sample)")
    from output_contracts.mining import mine
    from output_contracts.traces.ingest import ingest

    out = tmp_path_factory.mktemp("sample") / "corpus"
    ingest(sorted((SAMPLE / "clean").glob("*.jsonl.gz")), out)
    corpus = Corpus.open(out)
    return corpus, mine(corpus)


def _node(schema: Any, pattern: str) -> Any:
    cur = schema
    for tok in pattern.split("/")[1:] if pattern else []:
        cur = (
            cur.get("items")
            if tok == "*"
            else (cur.get("properties") or {}).get(tok.replace("~1", "/").replace("~0", "~"))
        )
        if cur is None:
            return None
    return cur


KIND_TYPE = {
    "int": "integer",
    "number": "number",
    "string": "string",
    "bool": "boolean",
    "object": "object",
    "array": "array",
}


def test_sample_infer_declares_every_planted_required_and_type(sample: tuple[Corpus, ContractSet]) -> None:
    corpus, contracts = sample
    reg = infer_registry(contracts, corpus).registry
    planted = orjson.loads((SAMPLE / "planted.json").read_bytes())["planted"]
    wanted = [r for r in planted if r["code"] in ("REQUIRED", "TYPE")]
    assert len(wanted) > 100
    missing = []
    for r in wanted:
        path = r["paths"][0]
        spec = reg.tools[r["tool"]]
        schema, pattern = (
            (spec.parameters, path[len("$args") :]) if path.startswith("$args") else (spec.output, path)
        )
        if r["code"] == "REQUIRED":
            parent, _, key = pattern.rpartition("/")
            node = _node(schema, parent)
            ok = node is not None and key in (node.get("required") or [])
        else:
            node = _node(schema, pattern)
            ok = node is not None and node.get("type") == KIND_TYPE[r["params"]["kind"]]
        if not ok:
            missing.append(r)
    assert missing == []
    assert check_registry(reg, corpus).disagreements == ()


def test_sample_check_reports_a_planted_undeclared_field(
    sample: tuple[Corpus, ContractSet], tmp_path: Path
) -> None:
    corpus, _ = sample
    data = orjson.loads((SAMPLE / "tools.json").read_bytes())
    clean = check_registry(load_registry(SAMPLE / "tools.json"), corpus)
    edited = copy.deepcopy(data)
    li = next(t for t in edited["tools"] if t["name"] == "lookup_inventory")
    del li["output"]["properties"]["available"]
    if "available" in li["output"].get("required", []):
        li["output"]["required"].remove("available")
    p = tmp_path / "tools.json"
    p.write_bytes(orjson.dumps(edited))
    report = check_registry(load_registry(p), corpus)
    new = [d for d in report.disagreements if d not in clean.disagreements]
    assert [(d.tool, d.kind, d.path) for d in new] == [("lookup_inventory", "undeclared", "/available")]
    ok_calls = (
        corpus.scan_calls()
        .filter((pl.col("tool").cast(pl.String) == "lookup_inventory") & (pl.col("status") == "ok"))
        .select(pl.len())
        .collect()
        .item()
    )
    assert new[0].calls == ok_calls > 1000


def test_cli_infer_mines_when_no_contracts_given_and_is_deterministic(corpus: Corpus, tmp_path: Path) -> None:
    runner = CliRunner()
    outs = []
    for name in ("a.json", "b.json"):
        r = runner.invoke(app, ["registry", "infer", str(corpus.path), "-o", str(tmp_path / name), "-q"])
        assert r.exit_code == 0, r.output
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]
    reg = load_registry(tmp_path / "a.json")
    li = reg.tools["lookup_inventory"]
    assert li.output_fields() == ["sku", "available", "warehouse", "lots", "note"]
    assert li.output is not None and "sku" in li.output.get("required", [])
    assert check_registry(reg, corpus).disagreements == ()


def test_check_every_bound_keyword(tmp_path: Path) -> None:
    recs = [
        {"trace_id": f"t{i}", "tool": "t", "arguments": {}, "result": {"a": i, "b": i / 2}} for i in range(11)
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    reg = registry_from_json(
        {
            "tools": [
                {
                    "name": "t",
                    "output": {
                        "type": "object",
                        "properties": {
                            "a": {"type": "integer", "exclusiveMinimum": 0, "maximum": 8},
                            "b": {"type": "number", "minimum": 0, "exclusiveMaximum": 4.5},
                        },
                    },
                }
            ]
        }
    )
    got = [(d.path, d.declared, d.observed, d.calls) for d in check_registry(reg, corpus).disagreements]
    assert got == [
        ("/a", "<= 8", 10, 2),  # a = 9, 10 (sorted by message: "<" before ">")
        ("/a", "> 0", 0, 1),  # a = 0
        ("/b", "< 4.5", 5, 2),  # b = 4.5, 5.0
    ]


def test_infer_leaves_out_a_tool_name_the_registry_cannot_hold(tmp_path: Path) -> None:
    """A 5,000-character tool name in the corpus. `registry infer` writes a registry
    its own loader accepts (the tool left out, with a warning naming it), and `tools export` reads it."""
    from output_contracts.schemas import load_schema
    from output_contracts.traces.tool_registry import MAX_TOOL_NAME

    assert load_schema("tool-registry")["$defs"]["tool"]["properties"]["name"]["maxLength"] == MAX_TOOL_NAME
    long = "t" * 5000
    recs = [
        {"trace_id": f"e{i}", "task_id": f"k{i}", "tool": tool, "arguments": {"q": i}, "result": {"n": i}}
        for i in range(40)
        for tool in ("short_tool", long)
    ]
    corpus_from_records(recs, tmp_path / "c")
    out = tmp_path / "tools.json"
    r = CliRunner().invoke(app, ["registry", "infer", str(tmp_path / "c"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert f"warning: tool '{'t' * 57}...' left out: name longer than 128 characters" in r.stderr
    assert list(load_registry(out).tools) == ["short_tool"]
    r = CliRunner().invoke(app, ["tools", "export", "-t", "openai", "-r", str(out)])
    assert r.exit_code == 0, r.output
    assert "short_tool" in r.stdout and long not in r.stdout
