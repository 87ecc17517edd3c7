"""Claude Code sub-agents on real session files (tests/traces/data/formats/claude-code/, SOURCES.md there):
a main session whose sub-agent (Task) calls are only inside `agent_progress` lines, and a project folder
where the sub-agent also has its own transcript (`<session>/subagents/agent-<id>.jsonl`).

Expected calls are read from the raw files here, independently of the adapter: every `tool_use` block
of a message, joined by id to the `tool_result` block that answers it."""

from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_episodes, read_rejects, read_traced_calls

DATA = Path(__file__).resolve().parents[1] / "data/formats/claude-code"
PROGRESS_ONLY = DATA / "subagent.jsonl.gz"
PROJECT = DATA / "project"
SID = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
MAIN = PROJECT / f"{SID}.jsonl"
AGENT_FILE = PROJECT / SID / "subagents/agent-aac57f5.jsonl"
COMPACT_FILE = PROJECT / SID / "subagents/agent-acompact-946d2b.jsonl"

Row = tuple[str, str, dict[str, Any], Any, str, str | None]  # trace, tool, arguments, result, status, error


def _lines(path: Path) -> list[dict[str, Any]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [orjson.loads(x) for x in raw.splitlines() if x.strip()]


def _messages(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(trace, message) of every user/assistant message of a file, progress-embedded ones included."""
    out = []
    for r in _lines(path):
        sid = r.get("sessionId")
        if r.get("type") in ("user", "assistant"):
            side = r.get("isSidechain") is True
            out.append((f"{sid}/sidechain-{r['agentId']}" if side else sid, r["message"]))
        elif r.get("type") == "progress" and r["data"].get("type") == "agent_progress":
            out.append((f"{sid}/sidechain-{r['data']['agentId']}", r["data"]["message"]["message"]))
    return out


def _text(content: Any) -> Any:
    if isinstance(content, list) and all(b.get("type") == "text" for b in content):
        return "".join(b["text"] for b in content)
    return content


def _expected(*paths: Path) -> list[Row]:
    """Each tool_use joined to its tool_result by id (first answer wins), in call order per trace."""
    uses: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    answers: dict[tuple[str, str], dict[str, Any]] = {}
    for p in paths:
        for trace, msg in _messages(p):
            for b in msg["content"] if isinstance(msg["content"], list) else ():
                if b.get("type") == "tool_use":
                    uses.setdefault((trace, b["id"]), (b["name"], b["input"]))
                elif b.get("type") == "tool_result":
                    answers.setdefault((trace, b["tool_use_id"]), b)
    rows: list[Row] = []
    for (trace, cid), (tool, args) in uses.items():
        b = answers[(trace, cid)]
        text = _text(b.get("content"))
        if b.get("is_error") is True:
            rows.append((trace, tool, args, None, "error", text))
            continue
        if isinstance(text, str) and text.lstrip()[:1] in ("{", "["):
            try:
                decoded = orjson.loads(text)
                text = decoded if isinstance(decoded, dict | list) else text
            except orjson.JSONDecodeError:
                pass
        rows.append((trace, tool, args, text, "ok", None))
    return sorted(rows, key=lambda r: r[0])


def _rejects(corpus: Path) -> list[tuple[Any, ...]]:
    return read_rejects(corpus, "code", "line", "error")


def _both(src: Path, tmp: Path) -> Path:
    """Ingest `src` by auto-detection through the library and the CLI; both must agree (claude-code)."""
    return both(src, tmp, "claude-code", read_traced_calls, _rejects).lib


def test_progress_only_subagent_calls_are_read(tmp_path: Path) -> None:
    """The sub-agent's calls exist only inside `agent_progress` lines: they are its own episode,
    linked to the session, each call exactly as the raw file has it."""
    lib = _both(PROGRESS_ONLY, tmp_path)
    sid = "491e126e-1e71-469c-ade2-fcc8af567c74"
    side = f"{sid}/sidechain-afb92ff"
    calls = read_traced_calls(lib)
    assert sorted(calls, key=lambda r: r[0]) == _expected(PROGRESS_ONLY)
    assert [c[0] for c in calls].count(sid) == 16 and [c[0] for c in calls].count(side) == 9
    sibling = "<tool_use_error>Sibling tool call errored</tool_use_error>"
    assert [(c[1], c[2], c[5]) for c in calls if c[4] == "error"] == [
        (
            "Read",
            {"file_path": "/home/marco/projects/spotter"},
            "EISDIR: illegal operation on a directory, read",
        ),
        ("Read", {"file_path": "/home/marco/projects/spotter/mix.exs"}, sibling),
        (
            "Bash",
            {"command": "git log --oneline -10", "description": "Check recent commits and project state"},
            sibling,
        ),
    ]
    assert all(c[0] == side for c in calls if c[4] == "error")
    eps = read_episodes(lib)
    assert eps[side] == (sid, {"parent_trace_id": sid, "sidechain": "afb92ff"}, 9)
    assert eps[sid] == (sid, {}, 16)
    assert _rejects(lib) == []


def test_project_folder_reads_agent_files_once(tmp_path: Path) -> None:
    """The folder walk reads the session and its `subagents/agent-*.jsonl`; the sub-agent's messages,
    in the agent file and again as progress lines of the session, are counted once."""
    lib = _both(PROJECT, tmp_path)
    calls = read_traced_calls(lib)
    side = f"{SID}/sidechain-aac57f5"
    assert sorted(calls, key=lambda r: r[0]) == _expected(MAIN, AGENT_FILE)
    assert len(calls) == 24 and sum(c[0] == side for c in calls) == 12
    assert calls[12][:3] == (
        side,
        "WebSearch",
        {"query": "hex.pm opentelemetry_api elixir latest version 2026"},
    )
    assert [c[1] for c in calls[:12]].count("Task") == 1  # the call that started the sub-agent
    eps = read_episodes(lib)
    assert eps[side] == (SID, {"parent_trace_id": SID, "sidechain": "aac57f5"}, 12)
    compact = f"{SID}/sidechain-{_lines(COMPACT_FILE)[0]['agentId']}"
    assert eps[compact] == (SID, {"parent_trace_id": SID, "sidechain": "acompact-946d2b"}, 0)
    # the compaction agent wrote a summary and called nothing: its episode is kept and reported
    assert [(c, line) for c, line, _ in _rejects(lib)] == [("R_NO_CALLS", 1)]


def test_session_file_alone_reads_the_progress_copies(tmp_path: Path) -> None:
    """Without its agent file beside it, the session's progress lines give the same sub-agent calls
    the agent file gives; with the agent file beside it, they are left to that file."""
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(MAIN, alone / MAIN.name)
    got = read_traced_calls(_both(alone / MAIN.name, tmp_path / "a"))
    ingest([AGENT_FILE], tmp_path / "agent")
    side = f"{SID}/sidechain-aac57f5"
    assert [c for c in got if c[0] == side] == read_traced_calls(tmp_path / "agent")
    beside = ingest([MAIN], tmp_path / "beside")
    assert beside.calls == 12 and {c[0] for c in read_traced_calls(tmp_path / "beside")} == {SID}


def test_sidechain_lines_and_progress_copies_in_one_file(tmp_path: Path) -> None:
    """Old sessions kept a sub-agent's messages as sidechain lines of the session file: with the same
    messages also in progress lines (either first), each call is counted once and nothing is rejected."""
    main = MAIN.read_bytes()
    agent = AGENT_FILE.read_bytes()
    for name, body in (("side-first", agent + main), ("progress-first", main + agent)):
        d = tmp_path / name
        d.mkdir()
        (d / "s.jsonl").write_bytes(body)
        rep = ingest([d / "s.jsonl"], d / "c")
        assert rep.calls == 24, name
        assert _rejects(d / "c") == [], name
        assert sorted(read_traced_calls(d / "c"), key=lambda r: r[0]) == _expected(MAIN, AGENT_FILE)


# ---- property: progress copies and sidechain lines in any mix ----------------------------------------------

_text_st = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="{[\r\n"), max_size=8)
_call = st.tuples(
    st.sampled_from(["Read", "Grep", "Bash"]),
    st.dictionaries(st.sampled_from(["a", "path"]), _text_st, max_size=2),
    _text_st,
    st.booleans(),
)


def _msg(kind: str, uuid: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, "timestamp": "t", "message": {"role": kind, "content": content}}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_call, min_size=1, max_size=5),
    st.lists(st.sampled_from(["progress", "side", "side+progress", "progress+side"])),
)
def test_progress_and_sidechain_mix_round_trip(
    calls: list[tuple[str, dict[str, Any], str, bool]], how: list[str]
) -> None:
    """Each sub-agent message written as a progress line, a sidechain line or both (in any order): every
    call comes back once, with its own result, in the sub-agent's episode."""
    msgs: list[dict[str, Any]] = []
    for i, (tool, args, result, failed) in enumerate(calls):
        msgs.append(
            _msg("assistant", f"a{i}", [{"type": "tool_use", "id": f"c{i}", "name": tool, "input": args}])
        )
        msgs.append(
            _msg(
                "user",
                f"u{i}",
                [{"type": "tool_result", "tool_use_id": f"c{i}", "content": result, "is_error": failed}],
            )
        )
    lines: list[dict[str, Any]] = [
        {
            "type": "user",
            "sessionId": "S",
            "uuid": "m0",
            "isSidechain": False,
            "message": {"role": "user", "content": "go"},
        }
    ]
    for k, m in enumerate(msgs):
        mode = how[k % len(how)] if how else "progress"
        prog = {
            "type": "progress",
            "sessionId": "S",
            "uuid": f"p{k}",
            "parentToolUseID": "task1",
            "data": {"type": "agent_progress", "agentId": "ag", "message": m},
        }
        side = {**m, "sessionId": "S", "isSidechain": True, "agentId": "ag"}
        lines += {
            "progress": [prog],
            "side": [side],
            "side+progress": [side, prog],
            "progress+side": [prog, side],
        }[mode]
    expected = [
        ("S/sidechain-ag", t, a, None, "error", r) if f else ("S/sidechain-ag", t, a, r, "ok", None)
        for t, a, r, f in calls
    ]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "s.jsonl"
        src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
        ingest([src], Path(tmp) / "c")
        assert read_traced_calls(Path(tmp) / "c") == expected
        assert _rejects(Path(tmp) / "c") == []
        assert read_episodes(Path(tmp) / "c")["S/sidechain-ag"][1] == {
            "parent_trace_id": "S",
            "sidechain": "ag",
        }
