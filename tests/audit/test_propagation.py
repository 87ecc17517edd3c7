"""Propagation of receipted values: hand-made episodes whose answer is known, through the
library, the audit report (schema, renderers) and the CLI."""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from output_contracts.audit.propagation import propagation_episodes, trackable
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.conftest import CliRun


def _call(
    trace: str, step: int, tool: str, args: dict[str, Any], result: Any, reward: float
) -> dict[str, Any]:
    return {
        "trace_id": trace,
        "task_id": trace,
        "step": step,
        "tool": tool,
        "arguments": args,
        "result": result,
        "reward": reward,
    }


def _episodes() -> list[dict[str, Any]]:
    return [
        # a: the receipted id is used by a later call -> propagates (reward 0)
        _call("a", 0, "get_order", {"order_id": "ORD-1"}, {"order_id": "ORD-X"}, 0.0),
        _call("a", 1, "cancel_order", {"order_id": "ORD-X"}, {"ok": True}, 0.0),
        # b: the value was the agent's own argument before the receipt -> not carried by the result
        _call("b", 0, "get_order", {"order_id": "ORD-Y"}, {"order_id": "ORD-Y", "note": "x"}, 1.0),
        _call("b", 1, "cancel_order", {"order_id": "ORD-Y"}, {"ok": True}, 1.0),
        # c: a small integer is not trackable, although it reappears
        _call("c", 0, "get_stock", {"sku": "S-1"}, {"available": 5}, 1.0),
        _call("c", 1, "reserve", {"sku": "S-1", "qty": 5}, {"ok": True}, 1.0),
        # d: a number reappears (as 1234.5) in a later argument -> propagates (reward 1)
        _call("d", 0, "quote", {"sku": "S-2"}, {"total": 1234.5}, 1.0),
        _call("d", 1, "pay", {"amount": 1234.5}, {"ok": True}, 1.0),
        # e: trackable but never used again
        _call("e", 0, "get_order", {"order_id": "ORD-2"}, {"order_id": "ABCD-9"}, 1.0),
        _call("e", 1, "get_customer", {"customer_id": "C-1"}, {"name": "n"}, 1.0),
        # f: a labelled (injected) fault whose value reappears: counted apart (a placebo offline)
        _call("f", 0, "get_order", {"order_id": "ORD-3"}, {"order_id": "ORD-Z"}, 0.0),
        _call("f", 1, "cancel_order", {"order_id": "ORD-Z"}, {"ok": True}, 0.0),
    ]


def _event(corpus: Corpus, trace: str, observed: Any, present: bool = True) -> dict[str, Any]:
    """A fire event on the first call of `trace` with one violation whose witness is `observed`."""
    first = (pl.col("trace_id") == trace) & (pl.col("step") == 0)
    call_id = corpus.scan_calls().filter(first).select("call_id").collect().item()
    return {"call_id": call_id, "violations": [{"observed": observed, "present": present}]}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(_episodes(), tmp_path_factory.mktemp("prop") / "c")


def test_known_answer(corpus: Corpus) -> None:
    events = [
        _event(corpus, "a", "ORD-X"),
        _event(corpus, "b", "ORD-Y"),
        _event(corpus, "c", 5),
        _event(corpus, "d", 1234.5),
        _event(corpus, "e", "ABCD-9"),
        _event(corpus, "f", "ORD-Z"),
    ]
    labelled = {events[5]["call_id"]}
    frame = propagation_episodes(corpus, events, labelled)
    got = {r["trace_id"]: r for r in frame.iter_rows(named=True)}
    assert sorted(got) == ["a", "b", "d", "e", "f"]  # c is not trackable
    assert {t for t, r in got.items() if r["organic_prop"]} == {"a", "d"}
    assert {t for t, r in got.items() if r["organic"]} == {"a", "b", "d", "e"}
    assert got["f"]["labelled"] and got["f"]["labelled_prop"] and not got["f"]["organic"]


def test_missing_fields_and_truncated_witnesses_are_not_followed(corpus: Corpus) -> None:
    events = [_event(corpus, "a", None, present=False), _event(corpus, "e", "ABCD-9" * 40 + "…")]
    assert propagation_episodes(corpus, events, set()).is_empty()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, None),
        (7, None),
        (-99, None),
        (100, ("n", None, 100.0)),
        (0.5, ("n", None, 0.5)),
        ("abc", None),
        ("abcd", ("s", "abcd", None)),
        ([1, 2], None),
        ({"a": 1}, None),
        (float("nan"), None),
    ],
)
def test_trackable(value: Any, expected: Any) -> None:
    assert trackable(value) == expected


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text()))
def test_trackable_never_accepts_what_chance_repeats(value: Any) -> None:
    t = trackable(value)
    if t is not None:
        assert not isinstance(value, bool) and value is not None
        if isinstance(value, str):
            assert len(value.strip()) >= 4
        else:
            assert abs(value) >= 100 or not float(value).is_integer()


def test_audit_report_section_schema_and_renderers(sample_inject_audit: CliRun) -> None:
    """The sample world audited with injected faults: the section is in the JSON (valid), the Markdown
    and the terminal table, with the spurious receipts' three denominators. The audit is
    `contracts audit sample_traces/clean --folds 5 --inject all --rate 0.1 ...` run once per pytest run
    (tests/conftest.py), whose outputs tests/test_golden.py also compares whole."""
    run = sample_inject_audit
    assert run.exit_code == 0, run.stdout + run.stderr
    doc = orjson.loads((run.work / "audit-inject.json").read_bytes())
    assert schema_errors(doc, "audit-report") == []
    p = doc["propagation"]
    lab = p["labelled"]
    assert lab["trackable_episodes"] == lab["propagating"]["denominator"] > 0
    n_out = lab["outcome_propagating"]["episodes"] + lab["outcome_not_propagating"]["episodes"]
    assert n_out == lab["trackable_episodes"]
    sp = doc["spurious"]
    assert sp["without_fault"]["denominator"] >= sp["denominator"]
    md = (run.work / "audit-inject.md").read_text()
    assert "## Propagation of receipted values" in md
    assert "per 100 episodes without a fault (the paper's count)" in md
    assert "propagation (labelled)" in run.stderr or "propagation (labelled)" in run.stdout
