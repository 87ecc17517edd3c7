"""Session and file formats on the real files in ../shared/data/formats/: Claude Code, Codex
CLI, ATIF, Inspect AI (`.json` and `.eval`), SWE-agent `.traj`, τ²-bench's directory layout.

Each file is ingested by auto-detection through the library and through the CLI entry point, and the
calls are compared with values read from the source file (written here as literals); every call the
file holds is either kept or rejected with a reason. Hypothesis round trips generate sessions in Claude
Code and Codex shape, ingest them and compare."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import TraceError
from output_contracts.traces.corpus import Corpus, corpus_info
from output_contracts.traces.formats.detect import FormatName
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls, read_rejects

Call = tuple[str, dict[str, Any], Any, str, str | None]  # tool, arguments, result, status, error


def _rejects(path: Path) -> list[tuple[Any, ...]]:
    """(code, line, reason) of every line of rejects.jsonl."""
    return read_rejects(path, "code", "line", "error")


def _both(src: Path, tmp: Path, fmt: str) -> tuple[list[Call], Path]:
    """Ingest `src` by auto-detection through the library and the CLI; both must agree, in `fmt`."""
    got = both(src, tmp, fmt, read_calls, _rejects)
    return got.calls, got.lib


# ---- Claude Code --------------------------------------------------------------------------------------

NEW_STRING = (
    "def repeat(times):\n    def decorator(func):\n        def wrapper(*args, **kwargs):\n"
    "            for _ in range(times):\n                result = func(*args, **kwargs)\n"
    "            return result\n        return wrapper\n    return decorator\n\n@repeat(3)\n"
    'def greet(name):\n    print(f"Hello, {name}!")\n\ngreet("Alice")'
)


def test_claude_code_session(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "formats/claude-code/representative_messages.jsonl"
    calls, lib = _both(src, tmp_path, "claude-code")
    assert calls == [
        (
            "Edit",
            {"file_path": "/tmp/decorator_example.py", "old_string": "", "new_string": NEW_STRING},
            "File created successfully at: /tmp/decorator_example.py",
            "ok",
            None,
        ),
        (
            "Bash",
            {
                "command": "python /tmp/decorator_example.py",
                "description": "Run the decorator example to show output",
            },
            "Hello, Alice!\nHello, Alice!\nHello, Alice!",
            "ok",
            None,
        ),
    ]
    assert _rejects(lib) == []
    rows = Corpus.open(lib).scan_calls().sort("step").collect()
    assert rows["trace_id"].to_list() == ["test_session"] * 2
    assert rows["line"].to_list() == [4, 8]  # the line of the tool_use, not of its result
    assert rows["started_at"].to_list() == ["2025-06-14T10:01:30Z", "2025-06-14T10:03:00Z"]
    eps = Corpus.open(lib).scan_episodes().collect()
    assert eps.select("trace_id", "task_id", "n_calls").rows() == [("test_session", "test_session", 2)]


def _cc(
    kind: str, sid: str, uuid: str, content: Any, *, side: bool = False, parent: str | None = None
) -> dict:
    return {
        "type": kind,
        "sessionId": sid,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": side,
        "timestamp": "2025-01-01T00:00:00Z",
        "message": {"role": kind, "content": content},
    }


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_claude_code_sidechains_and_conservation(tmp_path: Path) -> None:
    """A sub-agent's sidechain is its own episode linked to its parent; an unanswered tool_use, an
    orphan tool_result and a chat-only session are rejects with reasons, never dropped."""
    use = {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}
    side_use = {"type": "tool_use", "id": "s1", "name": "Grep", "input": {"pattern": "x"}}
    lines = [
        _cc("user", "S", "u1", "hi"),
        _cc("assistant", "S", "a1", [use], parent="u1"),
        _cc("user", "S", "sc1", "look", side=True),
        _cc("assistant", "S", "sc2", [side_use], side=True, parent="sc1"),
        _cc(
            "user",
            "S",
            "sc3",
            [{"type": "tool_result", "tool_use_id": "s1", "content": "x.py:1"}],
            side=True,
            parent="sc2",
        ),
        _cc(
            "user",
            "S",
            "u2",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": '{"found": 1}'}],
                }
            ],
        ),
        _cc("user", "S", "u3", [{"type": "tool_result", "tool_use_id": "nope", "content": "?"}]),
        _cc(
            "assistant",
            "S",
            "a2",
            [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}],
        ),
        _cc(
            "user",
            "S",
            "u4",
            [{"type": "tool_result", "tool_use_id": "t3", "content": "boom", "is_error": True}],
        ),
        _cc(
            "assistant",
            "S",
            "a3",
            [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "rm"}}],
        ),
        _cc(
            "user",
            "S",
            "u5",
            [{"type": "tool_result", "tool_use_id": "t3", "content": "Exit 1", "is_error": True}],
        ),
        _cc("assistant", "T", "b1", [{"type": "text", "text": "just chatting"}]),
        {"type": "summary", "summary": "s", "leafUuid": "a3"},
    ]
    src = _jsonl(tmp_path / "s.jsonl", lines)
    rep = ingest([src], tmp_path / "c")
    assert rep.sources[0].format == "claude-code" and rep.sources[0].lines == 13
    c = Corpus.open(tmp_path / "c")
    rows = c.scan_calls().sort("trace_id", "step").collect()
    assert rows.select("trace_id", "tool", "status", "error").rows() == [
        ("S", "Task", "ok", None),
        ("S", "Bash", "error", "Exit 1"),
        ("S/sidechain-sc1", "Grep", "ok", None),
    ]
    assert orjson.loads(rows["result"][0]) == {"found": 1}  # JSON text holding an object: decoded
    assert orjson.loads(rows["result"][2]) == "x.py:1"  # text stays text
    eps = {r["trace_id"]: r for r in c.scan_episodes().collect().iter_rows(named=True)}
    assert orjson.loads(eps["S/sidechain-sc1"]["labels"]) == {"parent_trace_id": "S", "sidechain": "sc1"}
    assert eps["S/sidechain-sc1"]["task_id"] == "S" and eps["T"]["n_calls"] == 0
    assert [(code, line) for code, line, _ in _rejects(tmp_path / "c")] == [
        ("R_ORPHAN_RESULT", 7),
        ("R_ORPHAN_RESULT", 9),  # t3's result came before its call
        ("R_UNMATCHED", 8),
        ("R_NO_CALLS", 12),
    ]
    # forced `anthropic` (one episode a line) cannot read it; the session format can
    assert ingest([src], tmp_path / "f", format="claude-code").calls == 3


# ---- Codex CLI ---------------------------------------------------------------------------------------


def test_codex_rollout(shared_data: Path, tmp_path: Path) -> None:
    src = next((shared_data / "formats/codex-cli").glob("rollout-*.jsonl"))
    calls, lib = _both(src, tmp_path, "codex")
    assert calls == [
        ("exec_command", {"cmd": "find . -maxdepth 1 -type f"}, "./alpha.txt\n./beta.txt", "ok", None),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"},
            "Done!",
            "ok",
            None,
        ),
        ("mcp__synthetic__lookup", {"query": "fixture"}, {"status": "ok"}, "ok", None),
    ]
    assert _rejects(lib) == []
    rows = Corpus.open(lib).scan_calls().sort("step").collect()
    assert set(rows["trace_id"]) == {"11111111-1111-4111-8111-111111111111"}
    assert rows["line"].to_list() == [6, 8, 10]


# ---- ATIF --------------------------------------------------------------------------------------------


def test_atif_with_ids(shared_data: Path, tmp_path: Path) -> None:
    calls, lib = _both(shared_data / "formats/atif/openhands_hello-world.trajectory.json", tmp_path, "atif")
    assert calls == [
        (
            "str_replace_editor",
            {
                "command": "create",
                "path": "/app/hello.txt",
                "file_text": "Hello, world!",
                "security_risk": "LOW",
            },
            "File created successfully at: /app/hello.txt",
            "ok",
            None,
        )
    ]
    (rej,) = _rejects(lib)
    assert rej[0] == "R_UNMATCHED" and "'call_fake_2' (finish)" in rej[2]
    eps = Corpus.open(lib).scan_episodes().collect()
    assert orjson.loads(eps["tools"][0]) == [
        "execute_bash",
        "think",
        "finish",
        "execute_ipython_cell",
        "task_tracker",
        "str_replace_editor",
    ]


def test_atif_by_position(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "formats/atif/terminus_2_hello-world-invalid-json.trajectory.json"
    calls, lib = _both(src, tmp_path, "atif")
    assert calls == [
        (
            "bash_command",
            {"keystrokes": "printf 'Hello, world!\\n' > hello.txt\n", "duration": 0.1},
            "New Terminal Output:\n\nroot@CONTAINER_ID:/app# printf 'Hello, world!\\n' > hello.txt\n\n\n",
            "ok",
            None,
        ),
        (
            "mark_task_complete",
            {},
            "Current terminal state:\nNew Terminal Output:\n\n\n\nAre you sure you want to mark the task as "
            "complete? This will trigger your solution to be graded and you won't be able to make any further "
            'corrections. If so, include "task_complete": true in your JSON response again.',
            "ok",
            None,
        ),
        ("mark_task_complete", {}, "New Terminal Output:\n\n\n\n", "ok", None),
    ]
    (rej,) = _rejects(lib)  # step 2: the parser's feedback to the model, an observation with no call
    assert rej[0] == "R_ORPHAN_RESULT" and "steps[1] result 0" in rej[2]


# ---- Inspect AI --------------------------------------------------------------------------------------


def test_inspect_json_tool_errors(shared_data: Path, tmp_path: Path) -> None:
    """The log holds 11 tool messages (with `error{type, message}`) and no assistant call: nothing can
    be kept (the arguments are not in the file), so each is a reject naming its id."""
    src = shared_data / "formats/inspect_ai/log_tool_call_error.json"
    with pytest.raises(TraceError) as e:  # no tool call read: an error unless allowed
        ingest([src], tmp_path / "c")
    assert e.value.message.startswith("no tool call found (0 rejects, 11 dropped calls);")
    assert not (tmp_path / "c").exists()
    rep = ingest([src], tmp_path / "c", allow_empty=True)
    assert rep.sources[0].format == "inspect-ai" and rep.calls == 0
    rejects = _rejects(tmp_path / "c")
    assert [code for code, _, _ in rejects] == ["R_ORPHAN_RESULT"] * 11
    assert [r[2].split("'")[1] for r in rejects] == [f"bash_{i}" for i in range(1, 12)]
    r = CliRunner().invoke(app, ["ingest", str(src), "-o", str(tmp_path / "cli"), "--json", "--allow-empty"])
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["sources"][0]["dropped_calls"] == 11
    eps = Corpus.open(tmp_path / "c").scan_episodes().collect()
    assert eps.select("trace_id", "task_id").rows() == [(".../1/epoch-4", "1")]


def test_inspect_errors_map_to_status(shared_data: Path, tmp_path: Path) -> None:
    """The same tool messages answering assistant calls (Inspect's shape: `function` a string,
    `arguments` an object): `error{type, message}` becomes status error with the message."""
    log = orjson.loads((shared_data / "formats/inspect_ai/log_tool_call_error.json").read_bytes())
    tools = log["samples"][0]["messages"]
    calls = [
        {"id": m["tool_call_id"], "function": "bash", "arguments": {"cmd": f"c{i}"}}
        for i, m in enumerate(tools)
    ]
    log["samples"][0]["messages"] = [{"role": "assistant", "content": "", "tool_calls": calls}, *tools]
    src = tmp_path / "log.json"
    src.write_bytes(orjson.dumps(log, option=orjson.OPT_INDENT_2))
    ingest([src], tmp_path / "c")
    got = read_calls(tmp_path / "c")
    assert len(got) == 11 and {c[3] for c in got} == {"error"}
    assert got[-1][4] == "The tool output limit of 10 MiB was exceeded."
    meta = Corpus.open(tmp_path / "c").scan_calls().collect()["meta"].to_list()
    assert orjson.loads(meta[-1]) == {"call_id": "bash_11", "error_type": "output_limit"}


def test_inspect_eval_zip(shared_data: Path, tmp_path: Path) -> None:
    """The `.eval` zip's one sample answers in text ("No"): a reject saying so, not a silent ok."""
    src = shared_data / "formats/inspect_ai/log_formats.eval"
    for how in ("lib", "cli"):
        out = tmp_path / how
        if how == "lib":
            rep = ingest([src], out, allow_empty=True)
            assert (rep.sources[0].format, rep.sources[0].lines, rep.calls) == ("inspect-ai", 1, 0)
        else:
            r = CliRunner().invoke(app, ["ingest", str(src), "-o", str(out), "--allow-empty"])
            assert r.exit_code == 0, r.output
        (rej,) = _rejects(out)
        assert rej[0] == "R_NO_CALLS" and rej[2].startswith("sample 1 (epoch 1) has assistant messages")


def test_broken_eval_zip(tmp_path: Path) -> None:
    src = tmp_path / "bad.eval"
    src.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    rep = ingest([src], tmp_path / "c", allow_empty=True)
    assert rep.sources[0].rejects == 1
    assert "unreadable zip container" in _rejects(tmp_path / "c")[0][2]


# ---- SWE-agent ---------------------------------------------------------------------------------------

SWE_CALLS = [
    (
        "create",
        {"filename": "reproduce.py"},
        "[File: reproduce.py (1 lines total)]\r\n1:\n(Open file: /testbed/reproduce.py)",
    ),
    (
        "insert",
        {
            "text": "from marshmallow.fields import TimeDelta\nfrom datetime import timedelta\n\n"
            'td_field = TimeDelta(precision="milliseconds")\n\nobj = dict()\n'
            'obj["td_field"] = timedelta(milliseconds=345)\n\nprint(td_field.serialize("td_field", obj))'
        },
        "[File: /testbed/reproduce.py (10 lines total)]",
    ),
    (
        "bash",
        {"command": "python reproduce.py"},
        "344\n(Open file: /testbed/reproduce.py)\n(Current directory: /testbed)\nbash-$",
    ),
    ("bash", {"command": "ls -F"}, "AUTHORS.rst\t    LICENSE\t RELEASING.md"),
    (
        "find_file",
        {"dir": "src", "file_name": "fields.py"},
        'Found 1 matches for "fields.py" in /testbed/src:',
    ),
    (
        "open",
        {"line_number": 1474, "path": "src/marshmallow/fields.py"},
        "[File: src/marshmallow/fields.py (1997 lines total)]",
    ),
    (
        "edit",
        {
            "search": "return int(value.total_seconds() / base_unit.total_seconds())",
            "replace": "# round to nearest int\nreturn int(round(value.total_seconds() / base_unit.total_seconds()))",
        },
        "Your proposed edit has introduced new syntax error(s).",
    ),
    (
        "edit",
        {
            "search": "return int(value.total_seconds() / base_unit.total_seconds())",
            "replace": "# round to nearest int\n        return int(round(value.total_seconds() / base_unit.total_seconds()))",
        },
        "Text replaced. Please review the changes",
    ),
    (
        "bash",
        {"command": "python reproduce.py"},
        "345\n(Open file: /testbed/src/marshmallow/fields.py)\n(Current directory: /testbed)\nbash-$",
    ),
    ("bash", {"command": "rm reproduce.py"}, "Your command ran successfully and did not produce any output."),
    ("submit", {}, "\r\ndiff --git a/src/marshmallow/fields.py b/src/marshmallow/fields.py"),
]


def test_swe_agent_traj(shared_data: Path, tmp_path: Path) -> None:
    """11 calls; tool messages name their call in `tool_call_ids`, and the demonstration reuses ids (the
    second `edit` answers with the first's id): each call takes the first unused answer after it."""
    calls, lib = _both(
        shared_data / "formats/swe-agent/marshmallow-code__marshmallow-1867.traj", tmp_path, "swe-agent"
    )
    assert len(calls) == 11 and _rejects(lib) == []
    for (tool, args, result, status, error), (etool, eargs, prefix) in zip(calls, SWE_CALLS, strict=True):
        assert (tool, args, status, error) == (etool, eargs, "ok", None)
        assert isinstance(result, str) and result.startswith(prefix), (tool, result[:80])
    assert calls[2][2] == SWE_CALLS[2][2] and calls[8][2] == SWE_CALLS[8][2]  # whole results
    eps = Corpus.open(lib).scan_episodes().collect()
    assert eps.select("trace_id", "labels").rows() == [
        ("marshmallow-code__marshmallow-1867", '{"exit_status":"submitted"}')
    ]


# ---- τ²-bench directory layout ----------------------------------------------------------------------


def test_tau2_directory_layout(shared_data: Path, tmp_path: Path) -> None:
    """Was: the whole folder aborted with E_FORMAT. Now: results.json is skipped with a note, the voice
    simulation is one reject saying it holds agent speech and no call."""
    src = shared_data / "formats/tau2-dir-layout/experiment"
    rep = ingest([src], tmp_path / "c", allow_empty=True)
    by = {Path(s.source).name: s for s in rep.sources}
    assert by["results.json"].skipped and "results index" in str(by["results.json"].note)
    sim = by["49b22f0c-4a56-41c5-922f-bc2a56e53a23.json"]
    assert (sim.format, sim.lines, sim.calls, sim.rejects) == ("tau-bench", 1, 0, 1)
    ((code, _, reason),) = _rejects(tmp_path / "c")
    assert code == "R_NO_CALLS"
    assert reason == (
        "simulation '49b22f0c-4a56-41c5-922f-bc2a56e53a23' (full_duplex mode, 973 ticks, 542 with agent "
        "speech) holds no tool call"
    )
    r = CliRunner().invoke(app, ["ingest", str(src), "-o", str(tmp_path / "cli"), "--allow-empty"])
    assert r.exit_code == 0, r.output
    assert "results index" in r.output and "1 rejects" in r.output


# ---- folder walk and corpus info ---------------------------------------------------------------------

OWNED = ["claude-code", "codex-cli", "atif", "inspect_ai", "swe-agent", "tau2-dir-layout"]


def test_folder_walk_and_per_format_info(shared_data: Path, tmp_path: Path) -> None:
    """Every folder of these formats in one run: each file is read or skipped with a note (a stray
    non-trace JSONL too), and `corpus info` counts calls and rejects per format, library and CLI."""
    extra = tmp_path / "extra"
    extra.mkdir()
    _jsonl(extra / "metrics.jsonl", [{"epoch": 1, "loss": 0.5}])
    srcs = [shared_data / "formats" / d for d in OWNED] + [extra]
    # the inspect_ai and tau2-dir-layout folders and `extra` yield no tool call (rejects, a skipped index,
    # a skipped file): each is an error on its own, accepted here to see every format's accounting
    rep = ingest(srcs, tmp_path / "c", allow_empty=True)
    assert rep.calls == 2 + 3 + 4 + 11
    skipped = {Path(s.source).name: s.note for s in rep.sources if s.skipped}
    assert set(skipped) == {"results.json", "metrics.jsonl"}
    assert skipped["metrics.jsonl"] == (
        "not traces: no format claims its first 1 record(s); "
        "closest are flat (no 'tool' field) and openai-chat (no 'messages' list)"
    )
    info = corpus_info(tmp_path / "c")
    assert info["formats"] == [
        {"format": "claude-code", "sources": 1, "calls": 2, "rejects": 0},
        {"format": "codex", "sources": 1, "calls": 3, "rejects": 0},
        {"format": "atif", "sources": 2, "calls": 4, "rejects": 2},
        {"format": "inspect-ai", "sources": 2, "calls": 0, "rejects": 12},
        {"format": "swe-agent", "sources": 1, "calls": 11, "rejects": 0},
        {"format": "tau-bench", "sources": 1, "calls": 0, "rejects": 1},
    ]
    assert sum(f["rejects"] for f in info["formats"]) == info["rejects"]["total"] == 15
    r = CliRunner().invoke(app, ["corpus", "info", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    rows = [line.split() for line in r.output.splitlines()]
    assert ["inspect-ai", "2", "0", "12"] in rows
    assert ["atif", "2", "4", "2"] in rows
    r = CliRunner().invoke(app, ["corpus", "info", str(tmp_path / "c"), "--json"])
    assert orjson.loads(r.stdout)["formats"] == info["formats"]


def test_unknown_jsonl_named_on_the_command_line_still_fails(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "metrics.jsonl", [{"epoch": 1, "loss": 0.5}])
    with pytest.raises(TraceError, match="unknown format"):
        ingest([src], tmp_path / "c")


def test_format_names() -> None:
    assert {"claude-code", "codex", "inspect-ai", "atif", "swe-agent"} <= {f.value for f in FormatName}


# ---- hypothesis round trips ----------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="{[\r"), max_size=12)
_args = st.dictionaries(
    st.sampled_from(["a", "b", "path", "n"]), st.one_of(st.integers(-5, 5), _text), max_size=3
)
_result = st.one_of(_text, st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 9), min_size=1))
_call = st.tuples(st.sampled_from(["Read", "Bash", "Edit", "mcp__x__y"]), _args, _result, st.booleans())


def _expected(tool: str, args: dict[str, Any], result: Any, failed: bool) -> Call:
    text = result if isinstance(result, str) else orjson.dumps(result).decode()
    return (tool, args, None, "error", text) if failed else (tool, args, result, "ok", None)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_call, min_size=1, max_size=6), st.booleans())
def test_claude_code_round_trip(calls: list[tuple[str, dict[str, Any], Any, bool]], parallel: bool) -> None:
    """Generated sessions (calls one at a time, or all requested in one message and answered later)."""
    lines: list[dict[str, Any]] = [_cc("user", "G", "u0", "go")]
    uses = [
        {"type": "tool_use", "id": f"c{i}", "name": t, "input": a} for i, (t, a, _, _) in enumerate(calls)
    ]
    results = [
        {
            "type": "tool_result",
            "tool_use_id": f"c{i}",
            "content": r if isinstance(r, str) else orjson.dumps(r).decode(),
            "is_error": f,
        }
        for i, (_, _, r, f) in enumerate(calls)
    ]
    if parallel:
        lines += [_cc("assistant", "G", "a", uses), _cc("user", "G", "r", list(reversed(results)))]
    else:
        for i, (u, r) in enumerate(zip(uses, results, strict=True)):
            lines += [_cc("assistant", "G", f"a{i}", [u]), _cc("user", "G", f"r{i}", [r])]
    with tempfile.TemporaryDirectory() as tmp:
        src = _jsonl(Path(tmp) / "g.jsonl", lines)
        ingest([src], Path(tmp) / "c")
        assert read_calls(Path(tmp) / "c") == [_expected(*c) for c in calls]
        assert _rejects(Path(tmp) / "c") == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_call, st.booleans()), min_size=1, max_size=6))
def test_codex_round_trip(calls: list[tuple[tuple[str, dict[str, Any], Any, bool], bool]]) -> None:
    """Generated rollouts: `function_call` (JSON arguments) or `custom_tool_call` (text input)."""
    lines: list[dict[str, Any]] = [{"timestamp": "t", "type": "session_meta", "payload": {"id": "R"}}]
    expected: list[Call] = []
    for i, ((tool, args, result, _), custom) in enumerate(calls):
        out = result if isinstance(result, str) else orjson.dumps(result).decode()
        if custom:
            item = {
                "type": "custom_tool_call",
                "name": tool,
                "input": orjson.dumps(args).decode(),
                "call_id": f"k{i}",
            }
            expected.append((tool, {"input": orjson.dumps(args).decode()}, result, "ok", None))
            answer = {"type": "custom_tool_call_output", "call_id": f"k{i}", "output": out}
        else:
            item = {
                "type": "function_call",
                "name": tool,
                "arguments": orjson.dumps(args).decode(),
                "call_id": f"k{i}",
            }
            expected.append((tool, args, result, "ok", None))
            answer = {"type": "function_call_output", "call_id": f"k{i}", "output": out}
        lines += [
            {"timestamp": "t", "type": "response_item", "payload": item},
            {"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count"}},
            {"timestamp": "t", "type": "response_item", "payload": answer},
        ]
    with tempfile.TemporaryDirectory() as tmp:
        src = _jsonl(Path(tmp) / "rollout.jsonl", lines)
        ingest([src], Path(tmp) / "c")
        assert read_calls(Path(tmp) / "c") == expected
        assert _rejects(Path(tmp) / "c") == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(_call, st.booleans()), max_size=3), min_size=1, max_size=4), st.randoms())
def test_atif_round_trip(
    steps: list[list[tuple[tuple[str, dict[str, Any], Any, bool], bool]]], rnd: Any
) -> None:
    """Generated trajectories: each step's results either name their call (`source_call_id`, in any
    order) or not (then in call order); every call comes back with its own result."""
    doc: dict[str, Any] = {"schema_version": "ATIF-v1.5", "session_id": "H", "steps": []}
    expected: list[Call] = []
    n = 0
    for si, step in enumerate(steps):
        tcs, results = [], []
        for (tool, args, result, _), by_id in step:
            cid = f"c{n}"
            n += 1
            tcs.append({"tool_call_id": cid, "function_name": tool, "arguments": args})
            content = result if isinstance(result, str) else orjson.dumps(result).decode()
            results.append({"source_call_id": cid, "content": content} if by_id else {"content": content})
            expected.append((tool, args, result, "ok", None))
        keyed = [r for r in results if "source_call_id" in r]
        rnd.shuffle(keyed)  # results with ids may come in any order; those without keep theirs
        doc["steps"].append(
            {
                "step_id": si + 1,
                "source": "agent",
                "tool_calls": tcs,
                "observation": {"results": keyed + [r for r in results if "source_call_id" not in r]},
            }
        )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.trajectory.json"
        src.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        if n == 0:
            with pytest.raises(TraceError):  # agent steps, no call: one R_NO_CALLS reject, so not "empty"
                ingest([src], Path(tmp) / "c", strict=True)
            return
        ingest([src], Path(tmp) / "c")
        assert read_calls(Path(tmp) / "c") == expected
        assert _rejects(Path(tmp) / "c") == []


def test_claude_code_agent_file_links_to_parent(tmp_path: Path) -> None:
    """A sub-agent transcript in its own file (`agentId` on every line) is an episode of the parent
    session, whichever file is read first."""
    side = [
        {**_cc("user", "P", "x1", "find it", side=True), "agentId": "a7"},
        {
            **_cc(
                "assistant",
                "P",
                "x2",
                [{"type": "tool_use", "id": "g", "name": "Glob", "input": {"pattern": "*.py"}}],
                side=True,
            ),
            "agentId": "a7",
        },
        {
            **_cc(
                "user", "P", "x3", [{"type": "tool_result", "tool_use_id": "g", "content": "a.py"}], side=True
            ),
            "agentId": "a7",
        },
    ]
    _jsonl(tmp_path / "agent-a7.jsonl", side)
    rep = ingest([tmp_path / "agent-a7.jsonl"], tmp_path / "c")
    assert rep.calls == 1
    eps = Corpus.open(tmp_path / "c").scan_episodes().collect()
    assert eps.select("trace_id", "task_id").rows() == [("P/sidechain-a7", "P")]
    assert orjson.loads(eps["labels"][0]) == {"parent_trace_id": "P", "sidechain": "a7"}


@pytest.mark.parametrize(
    ("path", "fmt", "calls"),
    [
        ("claude-code/representative_messages.jsonl", "claude-code", 2),
        ("codex-cli", "codex", 3),
        ("atif", "atif", 4),
        ("swe-agent/marshmallow-code__marshmallow-1867.traj", "swe-agent", 11),
        ("inspect_ai/log_tool_call_error.json", "inspect-ai", 0),
    ],
)
def test_forced_format_through_cli(
    shared_data: Path, tmp_path: Path, path: str, fmt: str, calls: int
) -> None:
    """`--format NAME` reads the same calls as auto-detection."""
    r = CliRunner().invoke(
        app,
        ["ingest", str(shared_data / "formats" / path), "-o", str(tmp_path / "c"), "--format", fmt, "--json"]
        + (["--allow-empty"] if calls == 0 else []),
    )
    assert r.exit_code == 0, r.output
    out = orjson.loads(r.stdout)
    assert out["calls"] == calls and {s["format"] for s in out["sources"]} == {fmt}


def test_reject_codes_documented_and_in_schema() -> None:
    """Every stable reject code of `formats.adapter` is in docs/formats.md's table and the manifest schema."""
    from output_contracts.traces.formats import adapter as base

    codes = {v for k, v in vars(base).items() if k.startswith("R_") and isinstance(v, str)}
    assert "R_NO_CALLS" in codes
    repo = Path(__file__).resolve().parents[2]
    docs = (repo / "docs/formats.md").read_text()
    schema = orjson.loads((repo / "output_contracts/schemas/corpus-manifest.schema.json").read_bytes())
    enum = set(schema["$defs"]["reject"]["properties"]["code"]["enum"])
    for code in sorted(codes):
        assert f"| `{code}` |" in docs, code
    assert codes <= enum


def test_tau2_simulation_without_calls_is_a_reject(tmp_path: Path) -> None:
    """A τ² simulation where the agent spoke and called nothing: `R_NO_CALLS`, in a pretty-printed
    results file (one record a simulation) and in a minified one (one line), beside a simulation with
    a call that is kept."""
    talk = {
        "id": "s0",
        "task_id": "t0",
        "messages": [{"role": "assistant", "content": "Hello"}],
        "reward_info": {"reward": 0.0},
    }
    act = {
        "id": "s1",
        "task_id": "t1",
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "a", "name": "get", "arguments": {"k": 1}}]},
            {"role": "tool", "id": "a", "content": "v"},
        ],
        "reward_info": {"reward": 1.0},
    }
    doc = {"info": {}, "tasks": [], "simulations": [talk, act]}
    (tmp_path / "pretty.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    (tmp_path / "mini.json").write_bytes(orjson.dumps(doc))
    for name in ("pretty.json", "mini.json"):
        out = tmp_path / name.replace(".json", "")
        rep = ingest([tmp_path / name], out)
        assert rep.calls == 1 and rep.sources[0].format == "tau-bench"
        ((code, _, reason),) = _rejects(out)
        assert (code, reason) == ("R_NO_CALLS", "simulation 's0' has assistant messages but no tool call")
        # both layouts keep the silent simulation's episode: its reward is an outcome
        eps = pl.read_parquet(out / "episodes.parquet").sort("trace_id")
        assert eps["trace_id"].to_list() == ["s0", "s1"] and eps["reward"].to_list() == [0.0, 1.0]
