"""Ingest behaviour: reject accounting, --strict, idempotence, incremental appends, chunking,
determinism, atomic commit, registry, stdin, the manifest schema."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest

import output_contracts.traces.ingest.commit as ingest_commit
import output_contracts.traces.ingest.read as ingest_read
from output_contracts.errors import ContractsError, TraceError
from output_contracts.jsonutil import file_sha256, sha256_hex
from output_contracts.schemas import load_schema, schema_errors
from output_contracts.traces.corpus import CALL_SCHEMA, EPISODE_SCHEMA, Corpus, corpus_info
from output_contracts.traces.ingest import corpus_from_records, expand_sources, ingest
from output_contracts.traces.leaves import LEAF_SCHEMA

DATA = Path(__file__).parent / "data"


def _rec(i: int, trace: int | None = None) -> dict[str, Any]:
    t = trace if trace is not None else i // 3
    return {
        "trace_id": f"ep-{t}",
        "task_id": f"task-{t % 4}",
        "tool": ["lookup", "order"][i % 2],
        "arguments": {"sku": f"S{i}", "n": i},
        "result": {"sku": f"S{i}", "available": i * 2, "items": [{"p": 1.5}, {"p": i}]},
    }


def _write(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def corrupted(tmp_path: Path) -> Path:
    """20 good lines, then: line 5 invalid JSON, line 9 binary, line 13 missing `tool`, last line truncated."""
    lines = [orjson.dumps(_rec(i)) for i in range(20)]
    lines[4] = b'{"trace_id": "ep-1", "tool": "lookup", "arguments": {'
    lines[8] = b"\xff\xfe\x00binary\x9c garbage"
    bad = _rec(12)
    del bad["tool"]
    lines[12] = orjson.dumps(bad)
    lines[19] = lines[19][: len(lines[19]) // 2]
    f = tmp_path / "src" / "calls.jsonl"
    f.parent.mkdir()
    f.write_bytes(b"\n".join(lines))  # no newline after the truncated last line
    return f


def test_reject_accounting_on_a_corrupted_copy(tmp_path: Path) -> None:
    f = corrupted(tmp_path)
    rep = ingest([f], tmp_path / "c")
    s = rep.sources[0]
    assert (s.lines, s.calls, s.rejects, s.blank) == (20, 16, 4, 0)
    assert s.lines == s.calls + s.rejects + s.blank
    rejects = Corpus.open(tmp_path / "c").rejects()
    assert [(r["line"], r["code"]) for r in rejects] == [
        (5, "R_JSON"),
        (9, "R_UTF8"),
        (13, "R_FIELD"),
        (20, "R_JSON"),
    ]
    assert rejects[2]["field"] == "tool" and "'tool' is missing" in rejects[2]["error"]
    assert "truncated" in rejects[3]["error"] and "truncated" not in rejects[0]["error"]
    assert "byte 0xff at offset 0" in rejects[1]["error"]
    assert all(r["source"] == str(f) for r in rejects)
    assert rejects[0]["raw"].startswith('{"trace_id": "ep-1"')
    # rejects lines follow the schema's definition
    reject_schema = load_schema("corpus-manifest")["$defs"]["reject"]
    for r in rejects:
        jsonschema.validate(r, reject_schema)
    man = Corpus.open(tmp_path / "c").manifest()
    assert man["sources"][0]["rejects"] == 4 and man["counts"]["rejects"] == 4
    assert pl.read_parquet(tmp_path / "c" / "calls.parquet")["line"].to_list() == [
        n for n in range(1, 20) if n not in (5, 9, 13)
    ]


def test_strict_stops_at_the_first_bad_line(tmp_path: Path) -> None:
    f = corrupted(tmp_path)
    with pytest.raises(TraceError) as e:
        ingest([f], tmp_path / "c", strict=True)
    assert (e.value.source, e.value.line) == (str(f), 5)
    assert e.value.render().startswith(f"error[E_TRACE]: {f}:5: invalid JSON")
    assert not Corpus.is_corpus(tmp_path / "c")


def test_over_long_line_is_rejected_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_read, "MAX_LINE_BYTES", 200)
    long = orjson.dumps({**_rec(1), "pad": "x" * 1000})
    f = _write(tmp_path / "a.jsonl", [_rec(0)])
    f.write_bytes(f.read_bytes() + long + b"\n" + orjson.dumps(_rec(2)) + b"\n")
    rep = ingest([f], tmp_path / "c")
    s = rep.sources[0]
    assert (s.lines, s.calls, s.rejects) == (3, 2, 1)
    r = Corpus.open(tmp_path / "c").rejects()[0]
    assert (r["line"], r["code"]) == (2, "R_TOO_LONG") and len(r["raw"]) <= 4096


def test_not_an_object_and_bad_arguments(tmp_path: Path) -> None:
    bad_args = {**_rec(1), "arguments": [1, 2]}
    f = tmp_path / "a.jsonl"
    f.write_bytes(orjson.dumps(_rec(0)) + b"\n[1, 2]\n" + orjson.dumps(bad_args) + b"\n   \n")
    rep = ingest([f], tmp_path / "c")
    s = rep.sources[0]
    assert (s.lines, s.calls, s.rejects, s.blank) == (4, 1, 2, 1)
    rej = Corpus.open(tmp_path / "c").rejects()
    assert [(r["line"], r["code"], r.get("field")) for r in rej] == [
        (2, "R_NOT_OBJECT", None),
        (3, "R_FIELD", "arguments"),
    ]


def test_idempotent_and_incremental(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _write(src / "a.jsonl", [_rec(i) for i in range(30)])
    (src / "sub").mkdir()
    _write(src / "sub" / "b.jsonl", [_rec(i, trace=100) for i in range(5)])
    out = tmp_path / "c"
    r1 = ingest([src], out)
    assert (r1.calls, r1.episodes) == (35, 11)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r2 = ingest([src], out)
    assert not r2.changed and all(s.skipped for s in r2.sources) and r2.calls == 35
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing rewritten
    # a new source appends; an episode continued in it is merged, not duplicated
    _write(src / "c.jsonl", [_rec(i, trace=100) for i in range(5, 8)])
    r3 = ingest([src], out)
    assert [Path(s.source).name for s in r3.sources if not s.skipped] == ["c.jsonl"]
    assert (r3.calls, r3.episodes, r3.new_calls) == (38, 11, 3)
    eps = pl.read_parquet(out / "episodes.parquet")
    assert eps.filter(pl.col("trace_id") == "ep-100")["n_calls"].item() == 8
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls.height == 38 and calls["call_id"].n_unique() == 38
    leaves = pl.read_parquet(out / "leaves.parquet")
    assert leaves["cid"].n_unique() == 38 and set(leaves["cid"]) == set(calls["cid"])
    man = Corpus.open(out).manifest()
    assert [s["source"] for s in man["sources"]] == [
        str(src / "a.jsonl"),
        str(src / "sub" / "b.jsonl"),
        str(src / "c.jsonl"),
    ]
    assert schema_errors(man, "corpus-manifest") == []


def test_folder_walk_is_sorted_and_skips_hidden_and_output(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "b").mkdir(parents=True)
    (src / ".hidden").mkdir()
    for name in ("z.jsonl", "b/a.json", "a.jsonl.gz", ".hidden/x.jsonl", "notes.txt"):
        (src / name).write_bytes(b"")
    got = [Path(s.name).relative_to(src).as_posix() for s in expand_sources([src], exclude=src / "out")]
    assert got == ["a.jsonl.gz", "b/a.json", "z.jsonl"]
    with pytest.raises(TraceError) as e:
        expand_sources([tmp_path / "missing.jsonl"])
    assert e.value.code == "E_USAGE"


def test_chunking_does_not_change_the_corpus(tmp_path: Path) -> None:
    f = _write(tmp_path / "a.jsonl", [_rec(i) for i in range(50)])
    ingest([f], tmp_path / "big", chunk_rows=1000)
    ingest([f], tmp_path / "small", chunk_rows=7)
    for name in ("calls.parquet", "leaves.parquet", "episodes.parquet"):
        a = pl.read_parquet(tmp_path / "big" / name)
        b = pl.read_parquet(tmp_path / "small" / name)
        assert a.equals(b), name
    assert (tmp_path / "big" / "corpus.json").read_bytes() == (
        tmp_path / "small" / "corpus.json"
    ).read_bytes()


def test_deterministic_bytes(tmp_path: Path) -> None:
    f = _write(tmp_path / "a.jsonl", [_rec(i) for i in range(40)])
    ingest([f], tmp_path / "one")
    ingest([f], tmp_path / "two")
    for name in ("calls.parquet", "leaves.parquet", "episodes.parquet", "corpus.json", "rejects.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_schemas_and_categoricals(tmp_path: Path) -> None:
    c = corpus_from_records([_rec(i) for i in range(9)], tmp_path / "c")
    assert dict(c.scan_calls().collect_schema()) == CALL_SCHEMA
    assert dict(c.scan_leaves().collect_schema()) == LEAF_SCHEMA
    assert dict(c.scan_episodes().collect_schema()) == EPISODE_SCHEMA
    for col in ("tool", "task_id"):
        assert c.scan_calls().collect_schema()[col] == pl.Categorical()
    assert c.scan_leaves().collect_schema()["pattern"] == pl.Categorical()
    leaves = c.scan_leaves().filter(pl.col("cid") == c.scan_calls().collect()["cid"][0]).collect()
    assert leaves.select("side", "path", "pattern", "kind").rows() == [
        ("arg", "", "", "object"),
        ("arg", "/sku", "/sku", "string"),
        ("arg", "/n", "/n", "int"),
        ("result", "", "", "object"),
        ("result", "/sku", "/sku", "string"),
        ("result", "/available", "/available", "int"),
        ("result", "/items", "/items", "array"),
        ("result", "/items/0", "/items/*", "object"),
        ("result", "/items/0/p", "/items/*/p", "float"),
        ("result", "/items/1", "/items/*", "object"),
        ("result", "/items/1/p", "/items/*/p", "int"),
    ]
    man = c.manifest()
    assert schema_errors(man, "corpus-manifest") == []
    assert [col["name"] for col in man["files"]["calls.parquet"]["columns"]] == list(CALL_SCHEMA)
    # plain Parquet: another reader (pyarrow here, DuckDB alike) needs nothing of ours
    for name, rows in (("calls", 9), ("leaves", 99), ("episodes", 3)):
        table = pq.read_table(c.path / f"{name}.parquet")
        assert table.num_rows == rows == man["files"][f"{name}.parquet"]["rows"]


def test_interrupted_commit_leaves_previous_corpus_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "c"
    a = _write(tmp_path / "a.jsonl", [_rec(i) for i in range(10)])
    ingest([a], out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    b = _write(tmp_path / "b.jsonl", [_rec(i) for i in range(10, 20)])

    def boom(*args: Any, **kw: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_commit, "write_episodes", boom)
    with pytest.raises(KeyboardInterrupt):
        ingest([b], out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # temp files and staging removed
    monkeypatch.undo()
    assert ingest([b], out).calls == 20


def test_refuses_a_non_corpus_folder(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "precious.txt").write_text("keep me")
    with pytest.raises(TraceError) as e:
        ingest([_write(tmp_path / "a.jsonl", [_rec(0)])], tmp_path / "c")
    assert e.value.code == "E_USAGE"


def test_registry_is_validated_and_copied(tmp_path: Path) -> None:
    reg = tmp_path / "tools.json"
    reg.write_text('{"tools": [{"name": "lookup", "substitutes": ["order"]}, {"name": "order"}]}')
    out = tmp_path / "c"
    a = _write(tmp_path / "a.jsonl", [_rec(i) for i in range(4)])
    rep = ingest([a], out, registry=reg)
    assert rep.registry == "tools.json"
    assert (out / "tools.json").read_bytes() == reg.read_bytes()
    assert Corpus.open(out).manifest()["registry"] == {
        "file": "tools.json",
        "sha256": file_sha256(reg),
        "tools": 2,
    }
    # a registry alone (no new source) still updates the corpus
    reg.write_text('{"tools": [{"name": "lookup"}]}')
    rep2 = ingest([a], out, registry=reg)
    assert rep2.changed and Corpus.open(out).manifest()["registry"]["tools"] == 1
    bad = tmp_path / "bad.json"
    bad.write_text('{"tools": [{"nom": "x"}]}')
    with pytest.raises(ContractsError) as e:
        ingest([a], out, registry=bad)
    assert e.value.source == str(bad)
    assert Corpus.open(out).manifest()["registry"]["tools"] == 1  # unchanged


def test_registry_files_in_a_folder_are_skipped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _write(src / "a.jsonl", [_rec(0)])
    (src / "tools.json").write_text('[{"name": "lookup", "description": "d", "parameters": {}}]')
    rep = ingest([src], tmp_path / "c")
    by = {Path(s.source).name: s for s in rep.sources}
    assert by["tools.json"].skipped and by["tools.json"].format == "registry"
    assert rep.calls == 1


def test_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(orjson.dumps(_rec(i)) + b"\n" for i in range(6))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    rep = ingest(["-"], tmp_path / "c")
    assert rep.calls == 6 and rep.sources[0].source == "-"
    assert Corpus.open(tmp_path / "c").manifest()["sources"][0]["sha256"] == sha256_hex(data)


def test_corpus_info(tmp_path: Path) -> None:
    ingest([corrupted(tmp_path)], tmp_path / "c")
    info = corpus_info(tmp_path / "c")
    assert (info["calls"], info["rejects"]["total"]) == (16, 4)
    assert info["rejects"]["by_code"] == {"R_FIELD": 1, "R_JSON": 2, "R_UTF8": 1}
    assert {t["tool"]: t["calls"] for t in info["tools"]} == {"lookup": 7, "order": 9}
    with pytest.raises(TraceError):
        corpus_info(tmp_path / "nope")


def test_document_shapes(tmp_path: Path) -> None:
    """BOM, a broken array (one reject), a minified τ² object on one line, JSON Lines named .json."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + orjson.dumps(_rec(0)) + b"\n")
    (src / "broken.json").write_bytes(b'[\n  {"task_id": 1, "traj": []},\n  {"task_id": 2,\n')
    sim = {
        "id": "s1",
        "task_id": "t1",
        "reward_info": {"reward": 1.0},
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "a", "name": "f", "arguments": {"x": 1}, "requestor": "assistant"}],
            },
            {"role": "tool", "id": "a", "content": '{"y": 2}', "requestor": "assistant", "error": False},
        ],
    }
    (src / "tau2-min.json").write_bytes(
        orjson.dumps({"info": {}, "tasks": [], "simulations": [sim, {**sim, "id": "s2"}]})
    )
    (src / "lines.json").write_bytes(b"".join(orjson.dumps(_rec(i)) + b"\n" for i in range(3)))
    rep = ingest([src], tmp_path / "c")
    by = {Path(s.source).name: s for s in rep.sources}
    assert (by["bom.jsonl"].calls, by["bom.jsonl"].rejects) == (1, 0)
    assert (by["broken.json"].lines, by["broken.json"].rejects, by["broken.json"].format) == (1, 1, "unknown")
    assert (by["tau2-min.json"].format, by["tau2-min.json"].lines, by["tau2-min.json"].calls) == (
        "tau-bench",
        1,
        2,
    )
    assert (by["lines.json"].format, by["lines.json"].calls) == ("flat", 3)
    rej = Corpus.open(tmp_path / "c").rejects()
    assert [(Path(r["source"]).name, r["line"], r["code"]) for r in rej] == [("broken.json", 4, "R_JSON")]
    assert schema_errors(Corpus.open(tmp_path / "c").manifest(), "corpus-manifest") == []


def test_one_ingest_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "c"
    a = _write(tmp_path / "a.jsonl", [_rec(0)])
    ingest([a], out)
    held = ingest_commit.lock_corpus(out)
    try:
        with pytest.raises(TraceError) as e:
            ingest([_write(tmp_path / "b.jsonl", [_rec(1)])], out)
        assert "another ingest" in e.value.message
    finally:
        held.close()
    assert ingest([tmp_path / "b.jsonl"], out).calls == 2


def test_failed_first_ingest_leaves_no_folder(tmp_path: Path) -> None:
    with pytest.raises(TraceError):
        ingest([corrupted(tmp_path)], tmp_path / "new", strict=True)
    assert not (tmp_path / "new").exists()


def test_record_failing_half_way_is_undone(tmp_path: Path) -> None:
    """A second call nested too deep for the walk rejects the whole episode, first call included."""
    deep = "[" * 1000 + "]" * 1000
    ep = {
        "id": "e1",
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": '{"ok": 1}'},
            {"role": "tool", "tool_call_id": "b", "content": deep},
        ],
    }
    good = {
        "id": "e2",
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": '{"ok": 2}'},
        ],
    }
    f = tmp_path / "chat.jsonl"
    f.write_bytes(orjson.dumps(ep) + b"\n" + orjson.dumps(good) + b"\n")
    rep = ingest([f], tmp_path / "c")
    s = rep.sources[0]
    assert (s.lines, s.ok, s.rejects, s.calls) == (2, 1, 1, 1)
    c = Corpus.open(tmp_path / "c")
    assert c.scan_calls().collect()["trace_id"].to_list() == ["e2"]
    assert c.scan_leaves().collect()["cid"].unique().to_list() == c.scan_calls().collect()["cid"].to_list()
    assert c.rejects()[0]["error"] == "call 1 (g) is nested too deeply"


def _tau_runs(tasks: range, trial: int) -> list[dict[str, Any]]:
    return [
        {
            "task_id": t,
            "trial": trial,
            "reward": 1.0,
            "info": {"user_cost": 0.5 + t},
            "traj": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "a", "name": "f", "content": '{"x": 1}'},
            ],
        }
        for t in tasks
    ]


def test_episode_run_facts_and_a_corpus_without_them(tmp_path: Path) -> None:
    """τ-bench's trial and info.user_cost land in episodes.parquet; a corpus written before those columns
    existed opens with them as nulls, and an incremental ingest into it keeps old and new rows."""
    first = tmp_path / "a.json"
    first.write_bytes(orjson.dumps(_tau_runs(range(3), 0)))
    out = tmp_path / "c"
    ingest([first], out)
    eps = Corpus.open(out).scan_episodes().collect().sort("trace_id")
    assert eps.get_column("trial").to_list() == [0, 0, 0]
    assert eps.get_column("user_cost").to_list() == [0.5, 1.5, 2.5]
    assert eps.get_column("agent_cost").null_count() == 3
    # make it an old corpus: episodes.parquet without the late columns, corpus.json recording that
    f = out / "episodes.parquet"
    pl.read_parquet(f).drop("trial", "agent_cost", "user_cost").write_parquet(f)
    man = orjson.loads((out / "corpus.json").read_bytes())
    entry = man["files"]["episodes.parquet"]
    entry["columns"] = [c for c in entry["columns"] if c["name"] not in ("trial", "agent_cost", "user_cost")]
    entry["bytes"] = f.stat().st_size
    entry["sha256"] = file_sha256(f)
    (out / "corpus.json").write_bytes(orjson.dumps(man))
    old = Corpus.open(out).scan_episodes().collect()
    assert dict(old.schema) == EPISODE_SCHEMA and old.get_column("trial").null_count() == 3
    second = tmp_path / "b.json"
    second.write_bytes(orjson.dumps(_tau_runs(range(3, 5), 1)))
    ingest([second], out)
    eps = Corpus.open(out).scan_episodes().collect().sort("trace_id")
    assert eps.get_column("trace_id").to_list() == ["0-0", "1-0", "2-0", "3-1", "4-1"]
    assert eps.get_column("trial").to_list() == [None, None, None, 1, 1]
    assert eps.get_column("user_cost").to_list() == [None, None, None, 3.5, 4.5]


def test_flat_run_facts(tmp_path: Path) -> None:
    """A flat line may carry the run facts; a value of the wrong type is ignored, as before they existed."""
    src = tmp_path / "f.jsonl"
    lines = [
        {
            "trace_id": "e1",
            "task_id": "t1",
            "tool": "f",
            "arguments": {},
            "result": 1,
            "reward": 1,
            "trial": 0,
        },
        {"trace_id": "e1", "task_id": "t1", "tool": "f", "arguments": {}, "result": 2, "agent_cost": 0.5},
        {
            "trace_id": "e2",
            "task_id": "t1",
            "tool": "f",
            "arguments": {},
            "result": 1,
            "trial": 1,
            "user_cost": 2,
        },
        {
            "trace_id": "e3",
            "task_id": "t2",
            "tool": "f",
            "arguments": {},
            "result": 1,
            "agent_cost": "x",
            "trial": "a",
        },
    ]
    src.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    ingest([src], tmp_path / "c")
    eps = Corpus.open(tmp_path / "c").scan_episodes().collect().sort("trace_id")
    assert eps.select("trace_id", "reward", "trial", "agent_cost", "user_cost").rows() == [
        ("e1", 1.0, 0, 0.5, None),
        ("e2", None, 1, None, 2.0),
        ("e3", None, None, None, None),
    ]
    assert eps.get_column("n_calls").to_list() == [2, 1, 1]
