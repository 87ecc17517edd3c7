"""The `langsmith` adapter on runs written by the unmodified producers (tests/traces/data/formats/langsmith/,
see its SOURCES.md): langchain-core 1.8 + langsmith 0.15 (a LangGraph agent, runs one a line with
`trace_id` and `dotted_order`, `ToolMessage` outputs) and langchain-core 0.1.0 (a run tree, and the same
runs one a line with only `parent_run_id`, string outputs, `{"input": ...}` inputs).

Every fixture is ingested by auto-detection through the library and the CLI; each call is compared with
what the test reads from the raw file itself. Derived inputs (lines reversed, as `list_runs` lists newest
first; a run left unfinished; bad inputs) check the parent chain and the rejects, and a hypothesis
property builds random run trees, writes them as a tree and as shuffled lines without trace ids, and
requires the same calls in the same traces."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import RecordContext
from output_contracts.traces.formats.detect import ADAPTERS, FormatName, best_match
from output_contracts.traces.formats.langsmith import (
    LangSmithAdapter,
    dotted_root,
    unwrap_arguments,
    unwrap_output,
)
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_rejects

DATA = Path(__file__).parents[1] / "data/formats/langsmith"
NEW = DATA / "langchain-core-1.8-list-runs.jsonl"
MID = DATA / "langchain-core-0.3-list-runs.jsonl"
OLD_TREE = DATA / "langchain-core-0.1-run-tree.json"
OLD_LINES = DATA / "langchain-core-0.1-posted-runs.jsonl"

Call = tuple[str, dict[str, Any], Any, str, str | None]  # tool, arguments, result, status, error


def _calls(path: Path) -> list[dict[str, Any]]:
    rows = Corpus.open(path).scan_calls().sort("trace_id", "step").collect().iter_rows(named=True)
    return [
        {
            **r,
            "arguments": orjson.loads(r["arguments"]),
            "result": None if r["result"] is None else orjson.loads(r["result"]),
            "meta": orjson.loads(r["meta"]),
        }
        for r in rows
    ]


def _rejects(path: Path) -> list[tuple[Any, ...]]:
    return read_rejects(path, "code", "line", "error")


def _both(src: Path, tmp: Path) -> tuple[list[dict[str, Any]], Path]:
    """Ingest `src` by auto-detection through the library and through the CLI: both read it as
    `langsmith`, with the same calls and rejects."""
    got = both(src, tmp, "langsmith", _calls, _rejects)
    return got.calls, got.lib


def _tuples(calls: list[dict[str, Any]]) -> list[Call]:
    return [(c["tool"], c["arguments"], c["result"], c["status"], c["error"]) for c in calls]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _tree_runs(root: dict[str, Any]) -> list[dict[str, Any]]:
    out = [root]
    for c in root.get("child_runs") or []:
        out += _tree_runs(c)
    return out


# ---- what the raw files say, read here without the adapter ---------------------------------------------


def _expected_new(run: dict[str, Any]) -> Call:
    """langchain-core 1.8: `inputs` are the kwargs (0.3: `{"input": str(kwargs)}`), `outputs.output` a
    ToolMessage dict whose content is text (JSON text for a tool returning a dict), `error` the exception
    and its traceback."""
    args = run["inputs"]
    if list(args) == ["input"] and args["input"].startswith("{"):  # 0.3: {"input": str(kwargs)}
        args = ast.literal_eval(args["input"])
    if run.get("error"):
        return (run["name"], args, None, "error", run["error"])
    msg = run["outputs"]["output"]
    assert msg["type"] == "tool" and msg["status"] == "success"
    content = msg["content"]
    return (
        run["name"],
        args,
        json.loads(content) if content.startswith("{") else content,
        "ok",
        None,
    )


def _expected_old(run: dict[str, Any]) -> Call:
    """langchain-core 0.1: `inputs` = `{"input": str(tool input)}`, `outputs` = `{"output": str(result)}`."""
    text = run["inputs"]["input"]
    args = ast.literal_eval(text) if text.startswith("{") else {"input": text}
    if run.get("error"):
        return (run["name"], args, None, "error", run["error"])
    out = run["outputs"]["output"]
    return (run["name"], args, ast.literal_eval(out) if out.startswith("{") else out, "ok", None)


@pytest.mark.parametrize("src", [NEW, MID])
def test_list_runs(src: Path, tmp_path: Path) -> None:
    """langchain-core 1.8 and 0.3: runs a line with `trace_id` and `dotted_order` (0.3 without
    `parent_run_id` and without `extra.tool_call_id`)."""
    runs = _lines(src)
    tools = [r for r in runs if r["run_type"] == "tool"]
    calls, lib = _both(src, tmp_path)
    assert _tuples(calls) == [_expected_new(r) for r in tools]
    assert [c[0] for c in _tuples(calls)] == ["lookup_order", "search_docs", "refund", "refund"]
    assert [c["status"] for c in calls] == ["ok", "ok", "error", "ok"]
    err = calls[2]["error"]
    assert err.startswith("ValueError('amount 900.0 exceeds refund limit of 500')Traceback (most recent")
    assert calls[0]["result"] == {
        "order_id": "A-17",
        "status": "shipped",
        "items": [{"sku": "SKU-1042", "qty": 2}],
    }
    (root,) = [r for r in runs if r["id"] == r["trace_id"]]
    assert {c["trace_id"] for c in calls} == {root["id"]} == {r["trace_id"] for r in runs}
    assert {c["task_id"] for c in calls} == {"conv-42"}  # extra.metadata.thread_id
    ids = [
        r["extra"].get("tool_call_id") or (r.get("outputs") or {}).get("output", {}).get("tool_call_id")
        for r in tools
    ]
    assert ids == ["call_lookup_1", "call_search_1", "call_refund_1" if src == NEW else None, "call_refund_2"]
    assert [c["meta"].get("tool_call_id") for c in calls] == ids
    assert [c["meta"]["run_id"] for c in calls] == [r["id"] for r in tools]
    assert [c["meta"]["parent_run_id"] for c in calls] == [
        r["dotted_order"].split(".")[-2][-36:] for r in tools
    ]
    assert [c["line"] for c in calls] == [runs.index(r) + 1 for r in tools]
    assert [c["started_at"] for c in calls] == [r["start_time"] for r in tools]
    assert _rejects(lib) == []
    eps = Corpus.open(lib).scan_episodes().collect()
    assert eps.select("trace_id", "task_id", "n_calls").rows() == [(root["id"], "conv-42", 4)]


def test_langchain_core_0_1_run_tree(tmp_path: Path) -> None:
    root = json.loads(OLD_TREE.read_text())
    assert "trace_id" not in root and "dotted_order" not in root  # the older shape
    tools = [r for r in _tree_runs(root) if r["run_type"] == "tool"]
    calls, lib = _both(OLD_TREE, tmp_path)
    assert _tuples(calls) == [_expected_old(r) for r in tools]
    assert [c[:2] for c in _tuples(calls)] == [
        ("lookup_order", {"order_id": "A-17"}),
        ("search_docs", {"input": "refund policy"}),  # a string-input tool: the text stays enveloped
        ("refund", {"order_id": "A-17", "amount": 900.0}),
        ("refund", {"order_id": "A-17", "amount": 120.5}),
    ]
    assert calls[2]["error"] == "ValueError('amount 900.0 exceeds refund limit of 500')"
    assert {c["trace_id"] for c in calls} == {root["id"]}
    assert [(c["line"], c["index"], c["step"]) for c in calls] == [(1, i, i) for i in range(4)]
    assert _rejects(lib) == []


def test_langchain_core_0_1_posted_runs(tmp_path: Path) -> None:
    runs = _lines(OLD_LINES)
    assert not any("trace_id" in r or "dotted_order" in r for r in runs)
    tools = [r for r in runs if r["run_type"] == "tool"]
    calls, lib = _both(OLD_LINES, tmp_path)
    assert _tuples(calls) == [_expected_old(r) for r in tools]
    (root,) = [r for r in runs if r["parent_run_id"] is None]
    assert {c["trace_id"] for c in calls} == {root["id"]}
    assert [c["step"] for c in calls] == [0, 1, 2, 3]
    # the tree and the lines are the same run: the same calls
    tree_calls = _calls_of(ingest_to(OLD_TREE, tmp_path / "tree"))
    assert _tuples(calls) == tree_calls
    assert _rejects(lib) == []


def ingest_to(src: Path, out: Path) -> Path:
    ingest([src], out)
    return out


def _calls_of(path: Path) -> list[Call]:
    return _tuples(_calls(path))


def test_lines_newest_first_find_their_trace_when_the_file_ends(tmp_path: Path) -> None:
    """`list_runs` lists newest first: a child is read before its parent, so its trace is found through
    the `parent_run_id` chain when the file ends; the calls are those of the file in its own order."""
    src = tmp_path / "reversed.jsonl"
    src.write_text("".join(reversed(OLD_LINES.read_text().splitlines(keepends=True))))
    calls, lib = _both(src, tmp_path / "r")
    (root,) = [r for r in _lines(OLD_LINES) if r["parent_run_id"] is None]
    assert {c["trace_id"] for c in calls} == {root["id"]}
    assert sorted(_tuples(calls), key=repr) == sorted(
        _calls_of(ingest_to(OLD_LINES, tmp_path / "o")), key=repr
    )
    assert _rejects(lib) == []


def test_json_array_of_runs(tmp_path: Path) -> None:
    src = tmp_path / "runs.json"
    src.write_text(json.dumps(_lines(NEW), indent=1))
    calls, _ = _both(src, tmp_path / "a")
    assert _tuples(calls) == [_expected_new(r) for r in _lines(NEW) if r["run_type"] == "tool"]


def test_pretty_printed_run_tree(tmp_path: Path) -> None:
    """A tree saved with indentation is a whole-file document: the same calls as the one-line file."""
    src = tmp_path / "tree.json"
    src.write_text(json.dumps(json.loads(OLD_TREE.read_text()), indent=2))
    calls, _ = _both(src, tmp_path / "p")
    assert _tuples(calls) == _calls_of(ingest_to(OLD_TREE, tmp_path / "one"))


def test_rejects_unfinished_and_bad_inputs(tmp_path: Path) -> None:
    runs = _lines(NEW)
    tools = [i for i, r in enumerate(runs) if r["run_type"] == "tool"]
    unfinished = runs[tools[0]] = {**runs[tools[0]], "status": "pending"}
    del unfinished["outputs"], unfinished["end_time"]
    runs[tools[1]] = {**runs[tools[1]], "inputs": "refund policy"}
    src = tmp_path / "bad.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in runs))
    calls, lib = _both(src, tmp_path / "b")
    assert [c["tool"] for c in calls] == ["refund", "refund"]
    rej = _rejects(lib)
    assert [(code, line) for code, line, _ in rej] == [
        ("R_UNMATCHED", tools[0] + 1),
        ("R_FIELD", tools[1] + 1),
    ]
    assert "not finished" in rej[0][2] and "'inputs' is not an object" in rej[1][2]


def _tool_run(outputs: Any, **extra: Any) -> dict[str, Any]:
    return {
        "id": "r1",
        "name": "t",
        "run_type": "tool",
        "inputs": {"x": 1},
        "outputs": outputs,
        "trace_id": "tr",
        "dotted_order": "20250101T000000000000Zr1",
        **extra,
    }


def _parse(*records: Any) -> tuple[list[Any], list[Any]]:
    a = LangSmithAdapter().begin()
    calls: list[Any] = []
    dropped: list[Any] = []
    for i, r in enumerate(records, 1):
        p = a.parse(r, RecordContext("s", "0" * 64, i))
        calls += p.calls
        dropped += p.dropped
    p = a.finish(RecordContext("s", "0" * 64, len(records)))
    return calls + list(p.calls), dropped + list(p.dropped)


def test_tool_message_error_status_and_lc_form() -> None:
    """A ToolMessage with `status: "error"` (a tool that handled its own error) is an error call with its
    content as the error text; the `lc` constructor form of a ToolMessage reads the same."""
    msg = {"content": "Error: no such order", "tool_call_id": "c9", "status": "error"}
    for out in (
        {"output": {**msg, "type": "tool"}},
        {
            "output": {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "ToolMessage"],
                "kwargs": msg,
            }
        },
    ):
        (call,), dropped = _parse(_tool_run(out))
        assert (call.status, call.error, call.result, call.meta["tool_call_id"]) == (
            "error",
            "Error: no such order",
            None,
            "c9",
        )
        assert dropped == []
    (call,), _ = _parse(_tool_run({"result": 3}))  # not the envelope: the outputs as they are
    assert call.result == {"result": 3}
    (call,), _ = _parse(_tool_run(None, error="boom", status="error"))
    assert (call.status, call.error, call.result) == ("error", "boom", None)


def test_detection_and_lacks() -> None:
    runs = _lines(NEW)
    a = ADAPTERS["langsmith"]
    assert FormatName("langsmith").value == "langsmith"
    assert all(best_match(r) == ("langsmith", 2) for r in runs)
    assert all(a.lacks(r) is None for r in runs)  # type: ignore[attr-defined]
    flat = {"trace_id": "t", "tool": "x", "arguments": {}, "result": 1}
    assert a.sniff(flat) == 0
    assert a.lacks(flat) == "no run object with 'run_type', 'id', 'name' and 'inputs'"  # type: ignore[attr-defined]
    bare = {"id": "r", "name": "n", "run_type": "tool", "inputs": {}}
    assert a.sniff(bare) == 1 and a.lacks(bare) is not None  # type: ignore[attr-defined]
    assert a.sniff({**bare, "run_type": "agent"}) == 0
    assert best_match(json.loads(OLD_TREE.read_text())) == ("langsmith", 2)


# ---- properties ----------------------------------------------------------------------------------------

_KEY = st.text(alphabet="abcxyz_", min_size=1, max_size=6)
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_VALUE = st.recursive(
    _LEAF, lambda c: st.lists(c, max_size=3) | st.dictionaries(_KEY, c, max_size=3), max_leaves=8
)
_KWARGS = st.dictionaries(_KEY, _VALUE, max_size=4)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_KWARGS)
def test_input_envelope_round_trip(kwargs: dict[str, Any]) -> None:
    """The `{"input": text}` envelope gives back the kwargs from their `str()` (langchain-core 0.1) and
    their JSON; plain text that is no dict stays enveloped."""
    if kwargs:
        assert unwrap_arguments({"input": str(kwargs)}) == kwargs
        assert unwrap_arguments({"input": json.dumps(kwargs)}) == kwargs
    assert unwrap_arguments(kwargs) == kwargs if list(kwargs) != ["input"] else True
    assert unwrap_arguments({"input": "plain words"}) == {"input": "plain words"}


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUE)
def test_output_envelope_round_trip(value: Any) -> None:
    msg = {"type": "tool", "content": json.dumps(value), "tool_call_id": "c", "status": "success"}
    got = unwrap_output({"output": msg})
    want = value if isinstance(value, dict | list) else json.dumps(value)
    assert (got.result, got.failed, got.tool_call_id) == (want, None, "c")
    if isinstance(value, dict | list):
        assert unwrap_output({"output": str(value)}).result == value


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.uuids(), st.lists(st.uuids(), max_size=3))
def test_dotted_root(root: Any, rest: list[Any]) -> None:
    dotted = ".".join(f"20250102T030405{i:06d}Z{u}" for i, u in enumerate([root, *rest]))
    assert dotted_root(dotted) == str(root)


@st.composite
def _forest(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One to three run trees of chains and tools (tools as leaves), in the langchain-core 0.1 shape."""
    n = 0
    roots: list[dict[str, Any]] = []

    def run(kind: str, depth: int) -> dict[str, Any]:
        nonlocal n
        n += 1
        rid = f"run-{n:03d}"
        r: dict[str, Any] = {"id": rid, "name": f"{kind}{n}", "run_type": kind, "execution_order": n}
        if kind == "tool":
            r["inputs"] = {"input": str(draw(_KWARGS))}
            r["outputs"] = {"output": f"out {n}"}
        else:
            r["inputs"] = {}
            r["outputs"] = {}
            kids = draw(st.lists(st.sampled_from(["tool", "chain"] if depth < 3 else ["tool"]), max_size=3))
            r["child_runs"] = [run(k, depth + 1) for k in kids]
        return r

    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        roots.append(run("chain", 0))
    return roots


def _flatten(run: dict[str, Any], parent: str | None) -> list[dict[str, Any]]:
    flat = {k: v for k, v in run.items() if k != "child_runs"}
    flat["parent_run_id"] = parent
    out = [flat]
    for c in run.get("child_runs", []):
        out += _flatten(c, run["id"])
    return out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_forest(), st.randoms(use_true_random=False))
def test_trees_and_shuffled_lines_agree(roots: list[dict[str, Any]], rnd: random.Random) -> None:
    """Runs without trace ids: each call's trace is its tree's root, whether the runs come as trees or
    as lines in any order (children before parents included)."""
    want = sorted((c.trace_id, c.tool, repr(c.arguments)) for root in roots for c in _parse(root)[0])
    expected = sorted(
        (root["id"], r["name"], repr(unwrap_arguments(r["inputs"])))
        for root in roots
        for r in _tree_runs(root)
        if r["run_type"] == "tool"
    )
    assert want == expected
    lines = [f for root in roots for f in _flatten(root, None)]
    rnd.shuffle(lines)
    calls, dropped = _parse(*lines)
    assert sorted((c.trace_id, c.tool, repr(c.arguments)) for c in calls) == expected
    assert dropped == []


@pytest.mark.parametrize("src", [NEW, OLD_TREE, OLD_LINES])
def test_forced_format_reads_the_same(src: Path, tmp_path: Path) -> None:
    ingest([src], tmp_path / "auto")
    ingest([src], tmp_path / "forced", format="langsmith")
    assert _calls_of(tmp_path / "auto") == _calls_of(tmp_path / "forced")


def test_llm_requested_calls_without_a_tool_run(tmp_path: Path) -> None:
    """The model's requests (the `llm` runs' `tool_calls`) are the tool runs' calls, never counted twice;
    a request whose tool run is missing from the file is `R_UNMATCHED` on the llm run's line."""
    runs = _lines(NEW)
    (gone,) = [i for i, r in enumerate(runs) if r["name"] == "search_docs"]
    (asker,) = [
        i
        for i, r in enumerate(runs)
        if r["run_type"] == "llm" and "call_search_1" in json.dumps(r["outputs"])
    ]
    src = tmp_path / "missing.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for i, r in enumerate(runs) if i != gone))
    calls, lib = _both(src, tmp_path / "m")
    assert [c["tool"] for c in calls] == ["lookup_order", "refund", "refund"]
    rej = _rejects(lib)
    assert [(code, line) for code, line, _ in rej] == [
        ("R_UNMATCHED", asker + 1)
    ]  # no line removed before it
    assert "'call_search_1' (search_docs)" in rej[0][2]
    # tool runs that record no call id are matched to the requests by tool and arguments
    plain = [
        {**r, "extra": {k: v for k, v in r["extra"].items() if k != "tool_call_id"}}
        if r["run_type"] == "tool"
        else r
        for r in runs
    ]
    for r in plain:
        if r["run_type"] == "tool":
            r["outputs"] = (
                {"output": {**r["outputs"]["output"], "tool_call_id": None}}
                if r.get("outputs")
                else r.get("outputs")
            )
    calls, dropped = _parse(*plain)
    assert len(calls) == 4 and dropped == []
    assert all("tool_call_id" not in c.meta for c in calls)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), st.booleans(), st.booleans()), max_size=6
    ),
    st.randoms(use_true_random=False),
)
def test_requests_against_tool_runs(spec: list[tuple[str, int, bool, bool]], rnd: random.Random) -> None:
    """Each call an llm run asks for is kept once (its tool run) or is one `R_UNMATCHED` (no tool run),
    whether the tool run names the call id or not, in any line order, with no trace id on any line."""
    root = {
        "id": "root",
        "name": "agent",
        "run_type": "chain",
        "inputs": {},
        "outputs": {},
        "parent_run_id": None,
    }
    tool_calls = [{"name": t, "args": {"n": n}, "id": f"call_{i}"} for i, (t, n, _, _) in enumerate(spec)]
    llm = {
        "id": "llm",
        "name": "model",
        "run_type": "llm",
        "inputs": {},
        "parent_run_id": "root",
        "outputs": {
            "generations": [
                [{"message": {"lc": 1, "type": "constructor", "kwargs": {"tool_calls": tool_calls}}}]
            ]
        },
    }
    runs: list[dict[str, Any]] = [root, llm]
    for i, (t, n, executed, named) in enumerate(spec):
        if executed:
            runs.append(
                {
                    "id": f"tool_{i}",
                    "name": t,
                    "run_type": "tool",
                    "parent_run_id": "root",
                    "inputs": {"n": n},
                    "outputs": {"output": f"r{i}"},
                    "extra": {"tool_call_id": f"call_{i}"} if named else {},
                }
            )
    rnd.shuffle(runs)
    calls, dropped = _parse(*runs)
    assert sorted(c.meta["run_id"] for c in calls) == sorted(f"tool_{i}" for i, s in enumerate(spec) if s[2])
    assert {c.trace_id for c in calls} <= {"root"}
    assert [d.code for d in dropped] == ["R_UNMATCHED"] * sum(not s[2] for s in spec)
    # which request is reported: by id when every tool run names its call; else the same tool and args
    if all(s[3] for s in spec):
        assert sorted(d.raw["id"] for d in dropped) == sorted(
            f"call_{i}" for i, s in enumerate(spec) if not s[2]
        )
    else:
        missing = sorted((s[0], s[1]) for s in spec if not s[2])
        assert sorted((d.raw["name"], d.raw["args"]["n"]) for d in dropped) == missing
