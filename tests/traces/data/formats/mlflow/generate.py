"""Generate the MLflow trace fixtures by running the unmodified MLflow tracing SDK offline.

Producer: `mlflow-skinny` (the MLflow client without the server extras; its tracing is the same code as
`mlflow`'s). Run once per major version, each in its own virtualenv outside the repository:

    python3 -m venv .venvs/mlflow2 && .venvs/mlflow2/bin/pip install 'mlflow-skinny<3'
    python3 -m venv .venvs/mlflow3 && .venvs/mlflow3/bin/pip install 'mlflow-skinny>=3'
    .venvs/mlflow2/bin/python tests/traces/data/formats/mlflow/generate.py   # mlflow-skinny 2.22.5
    .venvs/mlflow3/bin/python tests/traces/data/formats/mlflow/generate.py   # mlflow-skinny 3.18.0

It writes, into `v2/` or `v3/` beside this script:

- `traces.jsonl`: one `Trace.to_json()` a line, for every trace of the run (what `mlflow.get_trace(id)
  .to_json()` gives a user who saves traces to a file);
- `trace.json`: the first trace as `to_json(pretty=True)` (one pretty-printed document);
- `artifact-traces.json` (MLflow 2 only): the trace data file MLflow 2's local file store itself keeps
  for the second trace (`mlruns/<experiment>/traces/<id>/artifacts/traces.json`, copied verbatim), which
  a user may point ingest at directly. MLflow 3 refuses the file store unless told otherwise and its
  recommended sqlite store keeps spans in the database, so there is no such file for it.

Only the model is scripted: `scripted_model` returns pre-written tool calls instead of calling an LLM.
The agent loop, the tools and every span come from MLflow's own `@mlflow.trace` decorator and
`mlflow.start_span` context manager, with a local file tracking store (no server, no network).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import SpanType

MAJOR = int(mlflow.__version__.split(".")[0])
OUT = Path(__file__).resolve().parent / f"v{MAJOR}"

# ---- tools ------------------------------------------------------------------------------------------

WEATHER = {"Paris": {"temp_c": 18, "sky": "cloudy"}, "Oslo": {"temp_c": 4, "sky": "snow"}}
ORDERS = {"A-1001": {"status": "shipped", "items": 2}}


@mlflow.trace(span_type=SpanType.TOOL)
def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    w = WEATHER[city]  # a city not in the table raises KeyError: a failing tool call
    return {"city": city, "temp": w["temp_c"], "unit": unit, "sky": w["sky"]}


@mlflow.trace(span_type=SpanType.TOOL, name="divide_numbers")
def divide(a: float, b: float) -> float:
    return a / b  # b = 0 raises ZeroDivisionError


@mlflow.trace(span_type=SpanType.TOOL)
def save_note(text: str) -> None:
    # returns nothing: the span's output is null
    return None


def lookup_order(order_id: str) -> str:
    """A tool traced by hand with `mlflow.start_span`, the SDK's other way of making a span."""
    with mlflow.start_span(name="lookup_order", span_type=SpanType.TOOL) as span:
        span.set_inputs({"order_id": order_id})
        order = ORDERS.get(order_id)
        text = json.dumps(order) if order else f"no order {order_id}"
        span.set_outputs(text)
        return text


def run_shell(command: str) -> str:
    """Traced by hand with a plain-text input (not an object of named arguments)."""
    with mlflow.start_span(name="run_shell", span_type=SpanType.TOOL) as span:
        span.set_inputs(command)
        out = f"ran: {command}"
        span.set_outputs(out)
        return out


def ping(host: str) -> str:
    """Traced by hand, but the output is never set on the span."""
    with mlflow.start_span(name="ping", span_type=SpanType.TOOL) as span:
        span.set_inputs({"host": host})
        return "pong"


TOOLS = {
    "get_weather": get_weather,
    "divide": divide,
    "save_note": save_note,
    "lookup_order": lookup_order,
    "run_shell": run_shell,
    "ping": ping,
}

# ---- the scripted model and the agent loop ---------------------------------------------------------

SCRIPTS = [
    [  # trace 1: two weather calls (one fails), a division that fails, a note
        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Atlantis", "unit": "kelvin"})],
        [("divide", {"a": 18, "b": 0})],
        [("save_note", {"text": "Paris is 18C"})],
        [],
    ],
    [  # trace 2: an order lookup, two divisions that work (a renamed span called twice), a tool traced
        # with a text input, one whose span never gets its output
        [("lookup_order", {"order_id": "A-1001"})],
        [("divide", {"a": 10, "b": 4})],
        [("divide", {"a": 1, "b": 8})],
        [("run_shell", {"command": "ls /tmp"}), ("ping", {"host": "example.org"})],
        [],
    ],
    [[]],  # trace 3: the model answers without calling a tool
]


@mlflow.trace(span_type=SpanType.CHAT_MODEL)
def scripted_model(messages: list[dict[str, Any]], turn: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    if not turn:
        return {"role": "assistant", "content": "Done."}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{len(messages)}_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(turn)
        ],
    }


@mlflow.trace(span_type=SpanType.AGENT)
def run_agent(question: str, script: list[list[tuple[str, dict[str, Any]]]]) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for turn in script:
        reply = scripted_model(messages, turn)
        messages.append(reply)
        for tc in reply.get("tool_calls", []):
            fn = TOOLS[tc["function"]["name"]]
            try:
                out = fn(**json.loads(tc["function"]["arguments"]))
                content = json.dumps(out)
            except Exception as e:  # the agent reports the failure to the model and goes on
                content = f"Error: {type(e).__name__}: {e}"
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": content})
    return str(messages[-1]["content"])


def main() -> None:
    store = Path(tempfile.mkdtemp(prefix="mlruns-"))
    os.chdir(store)  # a sqlite store puts its artifacts under the working directory
    # MLflow 3 refuses the file store by default and recommends sqlite; MLflow 2's default is the file store
    uri = f"sqlite:///{store}/mlflow.db" if MAJOR >= 3 else f"file://{store}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("scripted-agent")
    ids = []
    for q, script in zip(["Weather in Paris?", "Where is order A-1001?", "Say hello."], SCRIPTS, strict=True):
        run_agent(q, script)
        ids.append(mlflow.get_last_active_trace_id())
    mlflow.flush_trace_async_logging()  # MLflow 3 logs traces on a background queue
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    traces = [mlflow.get_trace(i) for i in ids]
    (OUT / "traces.jsonl").write_text("".join(t.to_json() + "\n" for t in traces))
    (OUT / "trace.json").write_text(traces[0].to_json(pretty=True) + "\n")
    found = sorted(store.glob(f"**/traces/{ids[1]}/artifacts/traces.json"))
    # MLflow 2's file store keeps the spans in this file; MLflow 3's sqlite store keeps them in the database
    assert len(found) == (1 if MAJOR < 3 else 0), found
    if found:
        shutil.copyfile(found[0], OUT / "artifact-traces.json")
    shutil.rmtree(store)
    print(f"mlflow {mlflow.__version__} -> {OUT}: {ids}", file=sys.stderr)


if __name__ == "__main__":
    main()
