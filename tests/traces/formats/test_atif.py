"""ATIF sub-agent references on Harbor's golden trajectories (tests/traces/data/formats/atif/, SOURCES.md
there): Terminus-2's context summarisation writes a `system` step whose observation holds only
`subagent_trajectory_ref`; it is a link to the referenced trajectories (episodes labelled with their
parent), not a result answering no call.

Expected calls are read from the raw files here: each step's `tool_calls` paired in order with its
`observation.results` (Terminus-2 writes no `source_call_id`), references left aside."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.errors import TraceError
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_episodes, read_rejects, read_traced_calls

DATA = Path(__file__).resolve().parents[1] / "data/formats/atif"
SUMMARISED = DATA / "context-summarization"
PARENT = SUMMARISED / "hello-world-context-summarization.trajectory.json"
LINEAR = DATA / "linear-history"

Row = tuple[str, str, dict[str, Any], Any, str, str | None]  # trace, tool, arguments, result, status, error


def _expected(path: Path) -> list[Row]:
    doc = orjson.loads(path.read_bytes())
    rows: list[Row] = []
    for step in doc["steps"]:
        results = [r for r in (step.get("observation") or {}).get("results", []) if "content" in r]
        for tc, r in zip(step.get("tool_calls") or [], results, strict=False):
            rows.append((doc["session_id"], tc["function_name"], tc["arguments"], r["content"], "ok", None))
    return rows


def _refs(path: Path) -> dict[str, dict[str, Any]]:
    """The labels each `subagent_trajectory_ref` of a file should give its referenced episode."""
    doc = orjson.loads(path.read_bytes())
    out = {}
    for step in doc["steps"]:
        for r in (step.get("observation") or {}).get("results", []):
            for ref in r.get("subagent_trajectory_ref") or []:
                out[ref["session_id"]] = {
                    "parent_trace_id": doc["session_id"],
                    "trajectory_path": ref["trajectory_path"],
                }
    return out


def _rejects(corpus: Path) -> list[tuple[Any, ...]]:
    return read_rejects(corpus, "code", "error")


def _both(src: Path, tmp: Path) -> Path:
    """Ingest `src` by auto-detection through the library and the CLI; both must agree (atif)."""
    return both(src, tmp, "atif", read_traced_calls, _rejects, read_episodes).lib


def test_summarisation_step_links_its_trajectories(tmp_path: Path) -> None:
    """The parent alone: its 7 calls, and the `system` step's three references as linked episodes
    (no reject: the reference answers no call and is none)."""
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(PARENT, alone / PARENT.name)
    lib = _both(alone / PARENT.name, tmp_path)
    assert read_traced_calls(lib) == _expected(PARENT)
    assert [c[1] for c in read_traced_calls(lib)] == ["bash_command"] * 5 + ["mark_task_complete"] * 2
    assert _rejects(lib) == []
    eps = read_episodes(lib)
    links = _refs(PARENT)
    assert len(links) == 3
    assert eps == {
        "NORMALIZED_SESSION_ID": ("NORMALIZED_SESSION_ID", {}, 7),
        **{child: (child, labels, 0) for child, labels in links.items()},
    }
    assert eps["test-session-context-summarization-summarization-1-summary"][1] == {
        "parent_trace_id": "NORMALIZED_SESSION_ID",
        "trajectory_path": "trajectory.summarization-1-summary.json",
    }


def test_summarisation_folder_reads_the_referenced_trajectories(tmp_path: Path) -> None:
    """With the referenced files beside it, each is the linked episode, its calls its own."""
    lib = _both(SUMMARISED, tmp_path)
    files = sorted(SUMMARISED.glob("*.json"))
    assert read_traced_calls(lib) == sorted((row for f in files for row in _expected(f)), key=lambda r: r[0])
    eps = read_episodes(lib)
    t = "test-session-context-summarization-summarization-1-summary"
    assert {k: (labels, n) for k, (_, labels, n) in eps.items()} == {
        "NORMALIZED_SESSION_ID": ({}, 7),
        t: (_refs(PARENT)[t], 2),
        "test-session-context-summarization-summarization-1-questions": (
            _refs(PARENT)["test-session-context-summarization-summarization-1-questions"],
            0,
        ),
        "test-session-context-summarization-summarization-1-answers": (
            _refs(PARENT)["test-session-context-summarization-summarization-1-answers"],
            2,
        ),
    }
    # the questions agent only asks: a trajectory with an agent step and no call
    assert [code for code, _ in _rejects(lib)] == ["R_NO_CALLS"]


def test_linear_history(tmp_path: Path) -> None:
    """The linear-history pair: one episode over both files, the summarisation step a link; the agent
    steps made no tool call (their actions are JSON in the message text), so each observation is a
    result answering no call, said so."""
    with pytest.raises(TraceError, match=r"no tool call found in 2 files \(0 rejects, 7 dropped calls\)"):
        ingest([LINEAR], tmp_path / "c")  # nothing read is an error, unless allowed
    rep = ingest([LINEAR], tmp_path / "c", allow_empty=True)
    assert {s.format for s in rep.sources} == {"atif"} and rep.calls == 0
    rejects = _rejects(tmp_path / "c")
    assert [code for code, _ in rejects] == ["R_ORPHAN_RESULT"] * 7
    assert all("its step made none" in reason for _, reason in rejects)
    assert not any("steps[4] " in reason for _, reason in rejects[4:])  # the main file's system step
    main = LINEAR / "hello-world-context-summarization-linear-history.trajectory.json"
    assert orjson.loads(main.read_bytes())["continued_trajectory_ref"] == "trajectory.cont-1.json"
    eps = read_episodes(tmp_path / "c")
    assert eps == {
        "NORMALIZED_SESSION_ID": ("NORMALIZED_SESSION_ID", {}, 0),
        **{child: (child, labels, 0) for child, labels in _refs(main).items()},
    }
    r = CliRunner().invoke(app, ["ingest", str(LINEAR), "-o", str(tmp_path / "cli"), "--json"])
    # a run that reads no call may be refused as empty; when it is read, it reads the same
    if r.exit_code == 0:
        assert _rejects(tmp_path / "cli") == rejects


# ---- property: references anywhere leave the calls as they are ----------------------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="{[\r"), max_size=8)
_call = st.tuples(
    st.sampled_from(["bash", "edit"]), st.dictionaries(st.sampled_from(["a", "b"]), _text, max_size=2), _text
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.lists(_call, max_size=2),
            st.lists(st.sampled_from(["s1", "s2", "s3"]), max_size=2),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_references_round_trip(
    steps: list[tuple[list[tuple[str, dict[str, Any], str]], list[str], bool]],
) -> None:
    """Generated trajectories: agent steps with calls, and results holding only references (on a
    `system` step of their own, or among an agent step's results, before its answers): every call
    keeps its own result, every referenced trajectory is a linked episode, nothing is rejected."""
    doc: dict[str, Any] = {
        "schema_version": "ATIF-v1.5",
        "session_id": "P",
        "agent": {"name": "a"},
        "steps": [],
    }
    expected: list[Row] = []
    linked: list[str] = []
    n = 0
    for calls, refs, own_step in steps:
        tcs = []
        results: list[dict[str, Any]] = []
        for tool, args, out in calls:
            tcs.append({"tool_call_id": f"c{n}", "function_name": tool, "arguments": args})
            results.append({"content": out})
            expected.append(("P", tool, args, out, "ok", None))
            n += 1
        ref = {"subagent_trajectory_ref": [{"session_id": s, "trajectory_path": f"{s}.json"} for s in refs]}
        if refs and own_step:
            doc["steps"].append(
                {
                    "step_id": len(doc["steps"]) + 1,
                    "source": "system",
                    "message": "",
                    "observation": {"results": [ref]},
                }
            )
        elif refs:
            results.insert(0, ref)
        linked += [s for s in refs if s not in linked]
        step: dict[str, Any] = {"step_id": len(doc["steps"]) + 1, "source": "agent", "message": ""}
        if tcs or results:
            step["tool_calls"] = tcs
            step["observation"] = {"results": results}
        doc["steps"].append(step)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.trajectory.json"
        src.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        if n == 0:
            return  # no call at all: the trajectory is R_NO_CALLS, as before
        ingest([src], Path(tmp) / "c")
        assert read_traced_calls(Path(tmp) / "c") == expected
        assert _rejects(Path(tmp) / "c") == []
        eps = read_episodes(Path(tmp) / "c")
        assert {t: labels for t, (_, labels, _) in eps.items() if t != "P"} == {
            s: {"parent_trace_id": "P", "trajectory_path": f"{s}.json"} for s in linked
        }


def test_empty_reference_list_is_an_ordinary_result(tmp_path: Path) -> None:
    """`subagent_trajectory_ref: []` refers to nothing: the result answers its step's call as any result
    without `source_call_id` does; a reference naming no trajectory is a bad record (`R_FIELD`)."""
    step = {
        "step_id": 1,
        "source": "agent",
        "message": "",
        "tool_calls": [{"tool_call_id": "c", "function_name": "ls", "arguments": {}}],
        "observation": {"results": [{"content": "a.txt", "subagent_trajectory_ref": []}]},
    }
    doc = {"schema_version": "ATIF-v1.5", "session_id": "P", "agent": {"name": "a"}, "steps": [step]}
    (tmp_path / "t.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    ingest([tmp_path / "t.json"], tmp_path / "c")
    assert read_traced_calls(tmp_path / "c") == [("P", "ls", {}, "a.txt", "ok", None)]
    step["observation"] = {"results": [{"content": "a.txt"}, {"subagent_trajectory_ref": [{"extra": {}}]}]}
    (tmp_path / "u.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    # u.json alone yields nothing (its one record is rejected): allowed here to read its reject
    ingest([tmp_path / "t.json", tmp_path / "u.json"], tmp_path / "d", allow_empty=True)
    ((code, reason),) = _rejects(tmp_path / "d")
    assert code == "R_FIELD" and "names no trajectory" in reason
