"""SWE-agent trajectories whose actions are text (0.x, and 1.x with a thought-action parser): the real
demonstration files of SWE-agent's repository (tests/traces/data/formats/swe-agent/), ingested by
auto-detection through the library and the CLI, compared call by call with the raw files; a property
test of the action parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.swe_agent import parse_action
from output_contracts.traces.ingest import ingest
from tests.traces.formats.read_back import both, read_calls

DATA = Path(__file__).parents[1] / "data/formats/swe-agent"
Call = tuple[str, dict[str, Any], Any, str, str | None]


def _both(src: Path, tmp: Path) -> tuple[list[Call], Path]:
    """Ingest `src` by auto-detection through the library and the CLI; both read it as swe-agent."""
    got = both(src, tmp, "swe-agent", read_calls)
    return got.calls, got.lib


def _expected(src: Path) -> list[Call]:
    """Each step of the raw file: `split(None, 1)` of the action (an independent reading), the
    observation, and SWE-agent's failure message for the edit linter."""
    out: list[Call] = []
    for st_ in orjson.loads(src.read_bytes())["trajectory"]:
        parts = st_["action"].strip().split(None, 1)
        args = {"args": parts[1]} if len(parts) == 2 else {}
        obs = st_["observation"]
        if obs.startswith("Your proposed edit has introduced new syntax error(s)"):
            out.append((parts[0], args, None, "error", obs))
        else:
            out.append((parts[0], args, obs, "ok", None))
    return out


FIXTURES = [
    # file, trace_id, calls, errors, exit_status
    (
        "v0.7.0/marshmallow-code__marshmallow-1867.traj",
        "marshmallow-code__marshmallow-1867",
        11,
        1,
        "submitted",
    ),
    ("v0.7.0/BabyEncryption.traj", "BabyEncryption", 16, 3, "submitted"),
    ("v1/marshmallow-code__marshmallow-1867.traj", "marshmallow-code__marshmallow-1867", 11, 1, "submitted"),
]


@pytest.mark.parametrize(("name", "trace_id", "n", "errors", "exit_status"), FIXTURES)
def test_text_action_trajectory(
    tmp_path: Path, name: str, trace_id: str, n: int, errors: int, exit_status: str
) -> None:
    src = DATA / name
    calls, lib = _both(src, tmp_path)
    assert calls == _expected(src)
    assert len(calls) == n and sum(c[3] == "error" for c in calls) == errors
    assert not (lib / "rejects.jsonl").exists() or (lib / "rejects.jsonl").read_bytes() == b""
    eps = Corpus.open(lib).scan_episodes().collect()
    assert eps.select("trace_id", "task_id").rows() == [(trace_id, trace_id)]
    assert orjson.loads(eps["labels"][0]) == {"exit_status": exit_status}


def test_marshmallow_calls_literally() -> None:
    """The 0.x marshmallow file, by values written here: commands, argument text, a multi-line edit
    body, the linter's refusal as an error, `submit` with no arguments."""
    calls = _calls_of(DATA / "v0.7.0/marshmallow-code__marshmallow-1867.traj")
    assert [c[0] for c in calls] == [
        "create", "edit", "python", "ls", "find_file", "open", "edit", "edit", "python", "rm", "submit"
    ]  # fmt: skip
    assert calls[0][1] == {"args": "reproduce.py"}
    assert calls[4][1] == {"args": '"fields.py" src'}
    assert calls[5][1] == {"args": "src/marshmallow/fields.py 1474"}
    assert calls[7][1] == {
        "args": "1475:1475\n        return int(round(value.total_seconds() / base_unit.total_seconds()))"
        "  # round to nearest int\nend_of_edit"
    }
    assert calls[2][2:] == ("344\n", "ok", None) and calls[8][2:] == ("345\n", "ok", None)
    assert calls[6][2] is None and calls[6][3] == "error"
    assert str(calls[6][4]).startswith("Your proposed edit has introduced new syntax error(s).")
    assert calls[9][2] == "" and calls[10][1] == {}
    assert str(calls[10][2]).startswith("\ndiff --git a/src/marshmallow/fields.py")


def _calls_of(src: Path) -> list[Call]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        ingest([src], Path(d) / "c")
        return read_calls(Path(d) / "c")


def test_forced_format_and_steps(tmp_path: Path) -> None:
    src = DATA / "v1/marshmallow-code__marshmallow-1867.traj"
    r = CliRunner().invoke(
        app, ["ingest", str(src), "-o", str(tmp_path / "c"), "--format", "swe-agent", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert orjson.loads(r.stdout)["calls"] == 11
    steps = Corpus.open(tmp_path / "c").scan_calls().sort("step").collect()["step"].to_list()
    assert steps == list(range(11))


def test_blank_action_and_missing_observation_are_rejects(tmp_path: Path) -> None:
    """Derived from the real 0.x file: one step's action blanked, another's observation removed: the
    other nine calls are kept, the two are rejected with their codes."""
    doc = orjson.loads((DATA / "v0.7.0/marshmallow-code__marshmallow-1867.traj").read_bytes())
    doc["trajectory"][3]["action"] = "  \n"
    del doc["trajectory"][4]["observation"]
    src = tmp_path / "t.traj"
    src.write_bytes(orjson.dumps(doc))
    rep = ingest([src], tmp_path / "c")
    assert rep.calls == 9
    rejects = [orjson.loads(x) for x in (tmp_path / "c/rejects.jsonl").read_bytes().splitlines()]
    assert [r["code"] for r in rejects] == ["R_FIELD", "R_UNMATCHED"]
    assert "blank action" in rejects[0]["error"] and "find_file" in rejects[1]["error"]


_word = st.text(st.characters(codec="utf-8", exclude_categories=("Zs", "Zl", "Zp", "Cc", "Cs")), min_size=1)
_body = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(_word, _body, st.sampled_from([" ", "  ", "\t", " \t"]), st.sampled_from(["", "\n", " \n", "\n\n"]))
def test_parse_action_property(tool: str, body: str, gap: str, tail: str) -> None:
    """`TOOL GAP BODY TAIL` parses to TOOL and BODY without its surrounding whitespace: the argument
    text is kept verbatim (inner newlines, quotes, indentation after the first line)."""
    assert parse_action(tool + tail) == (tool, {})
    got = parse_action(tool + gap + body + tail)
    text = body.strip()
    if not text:
        assert got == (tool, {})
        return
    assert got is not None and got[0] == tool
    assert got[1] == {"args": body.lstrip(" \t").rstrip()}
    assert parse_action("") is None and parse_action(" \n\t") is None


def test_lacks_names_the_missing_shape() -> None:
    from output_contracts.traces.formats.swe_agent import SweAgentAdapter

    a = SweAgentAdapter()
    assert a.lacks(orjson.loads((DATA / "v1/marshmallow-code__marshmallow-1867.traj").read_bytes())) is None
    assert a.lacks({"trajectory": []}) == "no 'history' list of messages"
    assert a.lacks({"history": []}) == "no 'trajectory' list of steps"
    assert a.lacks([]) == "not a JSON object"
