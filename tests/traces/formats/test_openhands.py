"""OpenHands event streams: the real files of OpenHands' repository (tests/traces/data/formats/openhands/),
an evaluation output line and two saved trajectories, ingested by auto-detection through the library and
the CLI, compared call by call with the raw events."""

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
from output_contracts.traces.formats.openhands import OpenHandsAdapter
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls, reject_lines

DATA = Path(__file__).parents[1] / "data/formats/openhands"
Call = tuple[str, dict[str, Any], Any, str, str | None]


def _both(src: Path, tmp: Path) -> tuple[list[Call], Path]:
    got = both(src, tmp, "openhands", read_calls, reject_lines)
    return got.calls, got.lib


def _events(src: Path) -> list[dict[str, Any]]:
    doc = orjson.loads(src.read_bytes())
    return doc["history"] if isinstance(doc, dict) else doc


def _expected(events: list[dict[str, Any]]) -> list[Call]:
    """Each action with tool_call_metadata: the model's own arguments for its tool_call_id, the
    observation naming it as `cause`, `success: false` or an error observation as the error."""
    out: list[Call] = []
    for e in events:
        meta = e.get("tool_call_metadata")
        if "action" not in e or not meta:
            continue
        (tc,) = [
            t
            for ch in meta["model_response"]["choices"]
            for t in ch["message"]["tool_calls"]
            if t["id"] == meta["tool_call_id"]
        ]
        obs = [o for o in events if o.get("cause") == e["id"]]
        if not obs:
            continue
        text = obs[0]["content"]
        failed = obs[0]["observation"] == "error" or obs[0].get("success") is False
        args = orjson.loads(tc["function"]["arguments"])
        out.append(
            (meta["function_name"], args, None, "error", text)
            if failed
            else (meta["function_name"], args, text, "ok", None)
        )
    return out


FIXTURES = [
    # file, trace_id, kept, errors, reject codes
    (
        "multi_swe_bench_output_line2.jsonl",
        "ponylang__ponyc-4593",
        32,
        2,
        ["R_UNKEYED_RESULT", "R_UNMATCHED"],
    ),
    ("wrong_initial_state.json", "wrong_initial_state", 3, 0, ["R_UNMATCHED"]),
    ("basic_gui_mode.json", "basic_gui_mode", 4, 1, []),
]


@pytest.mark.parametrize(("name", "trace_id", "kept", "errors", "codes"), FIXTURES)
def test_event_stream(
    tmp_path: Path, name: str, trace_id: str, kept: int, errors: int, codes: list[str]
) -> None:
    src = DATA / name
    calls, lib = _both(src, tmp_path)
    events = _events(src)
    assert calls == _expected(events)
    assert len(calls) == kept and sum(c[3] == "error" for c in calls) == errors
    rejects = reject_lines(lib)
    assert sorted(r["code"] for r in rejects) == codes
    # conservation: every action carrying tool_call_metadata is kept or rejected, and every error
    # observation is a call's error or a reject
    n_tool_actions = sum(1 for e in events if "action" in e and e.get("tool_call_metadata"))
    assert kept + sum(r["code"] == "R_UNMATCHED" for r in rejects) == n_tool_actions
    n_error_obs = sum(1 for e in events if e.get("observation") == "error")
    assert n_error_obs == sum(1 for r in rejects if r["code"] == "R_UNKEYED_RESULT") + sum(
        1 for e in events if e.get("observation") == "error" and "cause" in e
    )
    eps = Corpus.open(lib).scan_episodes().collect()
    assert eps.select("trace_id", "task_id").rows() == [(trace_id, trace_id)]


def test_multi_swe_bench_literally(tmp_path: Path) -> None:
    """Values written here from the raw line: the failed `ls`, the refused editor call, `finish`."""
    calls, lib = _both(DATA / "multi_swe_bench_output_line2.jsonl", tmp_path)
    assert calls[1] == (
        "execute_bash",
        {"command": "ls src/lib"},
        None,
        "error",
        "ls: cannot access 'src/lib': No such file or directory",
    )
    assert calls[0][:2] == ("execute_bash", {"command": "ls /workspace/ponylang__ponyc__0.1"})
    assert {c[0] for c in calls} == {"execute_bash", "str_replace_editor"}
    unkeyed, unmatched = sorted(reject_lines(lib), key=lambda r: r["code"])
    assert unkeyed["error"] == "observation at position 28 has no id to join it to a call"
    assert orjson.loads(unkeyed["raw"])["content"].startswith("Parameter 'command' is expected to be one of")
    assert unmatched["error"] == "action 70 (finish) has no observation"


def test_forced_format(tmp_path: Path) -> None:
    src = DATA / "wrong_initial_state.json"
    r = CliRunner().invoke(
        app, ["ingest", str(src), "-o", str(tmp_path / "c"), "--format", "openhands", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["calls"] == 3


def test_lacks_and_sniff() -> None:
    a = OpenHandsAdapter()
    line = orjson.loads((DATA / "multi_swe_bench_output_line2.jsonl").read_bytes())
    assert a.lacks(line) is None and a.sniff(line) == 2
    assert a.lacks({"messages": []}) == "no 'history' list (or array) of OpenHands events"
    talk = [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}]
    assert a.sniff(talk) == 1 and a.lacks(talk) == "no action event with tool_call_metadata.function_name"


def test_cause_join_not_order(tmp_path: Path) -> None:
    """Derived from the real trajectory: the observations moved after all actions (as when several
    calls of one response run before their results are written) still join by `cause`."""
    events = _events(DATA / "wrong_initial_state.json")
    acts = [e for e in events if "observation" not in e]
    obs = [e for e in events if "observation" in e]
    src = tmp_path / "reordered.json"
    src.write_bytes(orjson.dumps(acts[:-1] + obs[::-1] + acts[-1:]))
    direct = tmp_path / "direct"
    ingest([DATA / "wrong_initial_state.json"], direct)
    ingest([src], tmp_path / "c")
    assert read_calls(tmp_path / "c") == read_calls(direct)


def _action(i: int, cmd: str) -> dict[str, Any]:
    args = orjson.dumps({"command": cmd}).decode()
    meta = {
        "function_name": "execute_bash",
        "tool_call_id": f"toolu_{i}",
        "model_response": {
            "choices": [{"message": {"tool_calls": [{"id": f"toolu_{i}", "function": {"arguments": args}}]}}]
        },
    }
    return {"id": i, "source": "agent", "action": "run", "tool_call_metadata": meta, "args": {"command": cmd}}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=8),
            st.text(alphabet="abc xyz\n", max_size=10),
            st.sampled_from(["ok", "fail", "error", "none"]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.randoms(use_true_random=False),
)
def test_cause_join_property(steps: list[tuple[str, str, str]], rnd: Any) -> None:
    """Generated streams: each observation lands anywhere after its action (with environment events
    between), and joins by `cause`: `success: false` and error observations are errors, an action with
    no observation is the one `R_UNMATCHED` reject."""
    events: list[dict[str, Any]] = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}}
    ]
    pending: list[dict[str, Any]] = []
    for i, (cmd, out, kind) in enumerate(steps, start=1):
        events.append(_action(i, cmd))
        if kind != "none":
            obs: dict[str, Any] = {"id": 100 + i, "source": "agent", "cause": i, "content": out, "extras": {}}
            obs |= (
                {"observation": "error"}
                if kind == "error"
                else {"observation": "run", "success": kind == "ok"}
            )
            pending.append(obs)
        rnd.shuffle(pending)
        while pending and rnd.random() < 0.5:
            events.append(pending.pop())
        events.append(
            {"id": 200 + i, "source": "environment", "observation": "agent_state_changed", "content": ""}
        )
    events.extend(pending)
    parsed = OpenHandsAdapter().parse(events, RecordContext("t.json", "0" * 64, 1))
    got = [(c.tool, c.arguments, c.result, c.status, c.error) for c in parsed.calls]
    want = [
        ("execute_bash", {"command": cmd}, out, "ok", None)
        if kind == "ok"
        else ("execute_bash", {"command": cmd}, None, "error", out)
        for cmd, out, kind in steps
        if kind != "none"
    ]
    assert got == want
    assert [d.code for d in parsed.dropped] == ["R_UNMATCHED"] * sum(k == "none" for _, _, k in steps)
