"""mini-swe-agent trajectories (tests/traces/data/formats/mini-swe-agent/, written by the unmodified
package run offline with its deterministic test models): 1.17.5 text actions, 2.4.6 tool calling and
2.4.6 text actions, ingested by auto-detection through the library and the CLI, call by call; a
property test of the 1.x observation parsing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import RecordContext
from output_contracts.traces.formats.mini_swe_agent import MiniSweAgentAdapter
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls, reject_lines

DATA = Path(__file__).parents[1] / "data/formats/mini-swe-agent"
Call = tuple[str, dict[str, Any], Any, str, str | None]
CONFIG = {"retries": 3, "verbose": False}
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat config.json"
MISSING = "cat: notes.txt: No such file or directory\n"


def _both(src: Path, tmp: Path) -> tuple[list[Call], Path]:
    got = both(src, tmp, "mini-swe-agent", read_calls, reject_lines)
    return got.calls, got.lib


def _bash(cmd: str) -> dict[str, str]:
    return {"command": cmd}


EXPECTED: dict[str, tuple[str, list[Call], list[str]]] = {
    "v1.17.5/demo.traj.json": (
        "demo-retries",
        [
            ("bash", _bash("ls"), "config.json\nmain.py\n", "ok", None),
            ("bash", _bash("cat notes.txt"), None, "error", MISSING),
            ("bash", _bash("cat config.json"), CONFIG, "ok", None),
            ("bash", _bash(SUBMIT), CONFIG, "ok", None),
        ],
        ["R_UNMATCHED"],  # the reply with two bash blocks, refused and not run
    ),
    "v2.4.6/demo.traj.json": (
        "demo",
        [
            ("bash", _bash("ls"), "config.json\nmain.py\n", "ok", None),
            ("bash", _bash("cat notes.txt"), None, "error", MISSING),
            ("bash", _bash("cat config.json"), CONFIG, "ok", None),
            ("bash", _bash("python3 main.py"), "hi\n", "ok", None),
            ("bash", _bash(SUBMIT), CONFIG, "ok", None),
        ],
        [],
    ),
    "v2.4.6/demo-textbased.traj.json": (
        "demo-textbased",
        [
            ("bash", _bash("ls"), "config.json\n", "ok", None),
            ("bash", _bash("cat notes.txt"), None, "error", MISSING),
            ("bash", _bash(SUBMIT), CONFIG, "ok", None),
        ],
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_trajectory(tmp_path: Path, name: str) -> None:
    trace_id, expected, codes = EXPECTED[name]
    calls, lib = _both(DATA / name, tmp_path)
    assert calls == expected
    assert [r["code"] for r in reject_lines(lib)] == codes
    eps = Corpus.open(lib).scan_episodes().collect()
    assert eps.select("trace_id", "task_id").rows() == [(trace_id, trace_id)]
    assert orjson.loads(eps["labels"][0]) == {"exit_status": "Submitted"}


def test_tool_calls_read_from_the_raw_file(tmp_path: Path) -> None:
    """2.4.6 tool calling, against the raw messages: each tool_calls entry's arguments, and its answer's
    `extra.raw_output` / return code, by `tool_call_id`."""
    doc = orjson.loads((DATA / "v2.4.6/demo.traj.json").read_bytes())
    answers = {m["tool_call_id"]: m["extra"] for m in doc["messages"] if m["role"] == "tool"}
    want = []
    for m in doc["messages"]:
        for tc in m.get("tool_calls") or []:
            args = orjson.loads(tc["function"]["arguments"])
            ex = answers.get(tc["id"])
            if ex is None:  # the submission: the exit message
                want.append((tc["function"]["name"], args, doc["info"]["submission"]))
            else:
                want.append((tc["function"]["name"], args, ex["raw_output"], ex["returncode"]))
    calls, _ = _both(DATA / "v2.4.6/demo.traj.json", tmp_path)
    assert len(calls) == len(want) == 5
    for c, w in zip(calls, want, strict=True):
        assert c[:2] == w[:2]
        text = c[2] if c[3] == "ok" else c[4]
        assert text == w[2] or orjson.loads(w[2]) == text
        if len(w) == 4:
            assert (c[3] == "error") == (w[3] != 0)


def test_forced_format_and_lacks(tmp_path: Path) -> None:
    src = DATA / "v1.17.5/demo.traj.json"
    r = CliRunner().invoke(
        app, ["ingest", str(src), "-o", str(tmp_path / "c"), "--format", "mini-swe-agent", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["calls"] == 4
    a = MiniSweAgentAdapter()
    assert a.lacks(orjson.loads(src.read_bytes())) is None
    assert (
        a.lacks({"messages": []}) == "no 'trajectory_format' naming mini-swe-agent (nor 'info.mini_version')"
    )
    assert a.lacks({"info": {}}) == "no 'messages' list"


_cmd = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="`"), min_size=1
).filter(lambda s: s.strip() != "" and "\n" not in s)
_out = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="{[<"), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_cmd, _out, st.integers(-2, 3)), min_size=1, max_size=5))
def test_text_observations_round_trip(steps: list[tuple[str, str, int]]) -> None:
    """1.x messages rendered the way mini-swe-agent's default observation template renders them
    (`<returncode>N</returncode>\\n<output>\\nTEXT</output>`): each command comes back with its output,
    an error exactly when the return code is not 0."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for cmd, out, rc in steps:
        msgs.append({"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{cmd}\n```"})
        msgs.append({"role": "user", "content": f"<returncode>{rc}</returncode>\n<output>\n{out}</output>"})
    rec = {
        "info": {"exit_status": "LimitsExceeded"},
        "messages": msgs,
        "trajectory_format": "mini-swe-agent-1",
    }
    parsed = MiniSweAgentAdapter().parse(rec, RecordContext("x.traj.json", "0" * 64, 1))
    assert not parsed.dropped
    got = [(c.tool, c.arguments, c.result, c.status, c.error) for c in parsed.calls]
    assert got == [
        ("bash", {"command": cmd.strip()}, None, "error", out)
        if rc
        else ("bash", {"command": cmd.strip()}, out, "ok", None)
        for cmd, out, rc in steps
    ]


def test_v1_messages_with_model_response_extra(tmp_path: Path) -> None:
    """1.x models other than the test model store the raw response in each assistant message's
    `extra.response`: derived from the 1.17.5 fixture, the same calls are read."""
    doc = orjson.loads((DATA / "v1.17.5/demo.traj.json").read_bytes())
    for m in doc["messages"]:
        if m["role"] == "assistant":
            m["extra"] = {"response": {"choices": [{"message": {"content": m["content"]}}]}}
    src = tmp_path / "with-extra.traj.json"
    src.write_bytes(orjson.dumps(doc))
    ingest([src], tmp_path / "c")
    assert read_calls(tmp_path / "c") == EXPECTED["v1.17.5/demo.traj.json"][1]
    assert [r["code"] for r in reject_lines(tmp_path / "c")] == ["R_UNMATCHED"]
