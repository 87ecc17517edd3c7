"""Generate the CrewAI fixture: an unmodified `crewai` crew (one agent, one task, three tools, one of
which raises), instrumented by the unmodified `openinference-instrumentation-crewai`, run offline. Only
the model is replaced: `ScriptedLLM`, a `crewai.llms.base_llm.BaseLLM` subclass (CrewAI's own extension
point for custom models) that answers each call with the next pre-written ReAct text (`Thought / Action
/ Action Input`, then `Final Answer`); CrewAI parses the actions and runs the tools itself.

The crew runs twice: once with native function calling (the model returns OpenAI-style tool calls,
CrewAI's native loop runs them) and once with text actions (ReAct text parsed by CrewAI's `ToolUsage`),
the two ways CrewAI runs tools. Each run writes `crewai-<version>-<native|text>.openinference.otlp.jsonl`
beside this script: every span of the run, encoded by `opentelemetry-exporter-otlp-proto-common` into an
OTLP `ExportTraceServiceRequest` and written as OTLP/JSON (protobuf JSON mapping, trace and span ids as
hex as the OTLP/JSON spec says), one line; and `crewai-<version>-<mode>.crew_output.json`, the
`CrewOutput` that `kickoff()` returned, serialised by its own `model_dump_json(indent=2)` (read by the
`crewai` adapter).

Versions used: crewai 1.15.44, openinference-instrumentation-crewai 1.1.21, opentelemetry-sdk 1.45.2.
Command:

    python3 -m venv .venvs/crewai
    .venvs/crewai/bin/pip install crewai openinference-instrumentation-crewai \
        opentelemetry-exporter-otlp-proto-common
    .venvs/crewai/bin/python tests/traces/data/formats/crewai/generate.py
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # CrewAI's own anonymous telemetry: no network
os.environ["CREWAI_TRACING_ENABLED"] = "false"  # CrewAI's hosted tracing: no network

import crewai
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.crewai import CrewAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

HERE = Path(__file__).resolve().parent

#: The calls the model makes, in order (the same in both modes), then its final answer.
CALLS = [
    ("get_weather", {"city": "Paris"}),
    ("divide", {"a": 18, "b": 0}),
    ("lookup_order", {"order_id": "A-1001"}),
]
FINAL = "Paris is 18C; order A-1001 has shipped."
TEXT_SCRIPT = [f"Thought: I need {n}.\nAction: {n}\nAction Input: {json.dumps(a)}" for n, a in CALLS] + [
    f"Thought: I now know the final answer.\nFinal Answer: {FINAL}"
]
NATIVE_SCRIPT: list[Any] = [
    [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}]
    for i, (n, a) in enumerate(CALLS)
] + [FINAL]


class ScriptedLLM(BaseLLM):
    """Answers each call with the next entry of its script: native mode returns OpenAI-style tool calls
    (CrewAI's native function-calling loop runs them), text mode returns ReAct text (CrewAI parses the
    action and runs the tool through its `ToolUsage`)."""

    turn: int = 0
    native: bool = True

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        script = NATIVE_SCRIPT if self.native else TEXT_SCRIPT
        out = script[min(self.turn, len(script) - 1)]
        self.turn += 1
        return out

    def supports_function_calling(self) -> bool:
        return self.native


@tool("get_weather")
def get_weather(city: str) -> str:
    """The current weather of a city."""
    return json.dumps({"city": city, "temp_c": {"Paris": 18}.get(city, 20), "sky": "cloudy"})


@tool("divide")
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b  # b = 0 raises ZeroDivisionError


@tool("lookup_order")
def lookup_order(order_id: str) -> str:
    """The status of an order."""
    return json.dumps({"order_id": order_id, "status": "shipped"})


def run(native: bool) -> None:
    out = HERE / f"crewai-{crewai.__version__}-{'native' if native else 'text'}.openinference.otlp.jsonl"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = CrewAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    llm = ScriptedLLM(model="scripted", native=native)
    agent = Agent(
        role="assistant",
        goal="Answer questions about weather and orders",
        backstory="A helpful assistant with tools.",
        llm=llm,
        tools=[get_weather, divide, lookup_order],
    )
    task = Task(
        description="What is the weather in Paris, and where is order A-1001?",
        expected_output="One sentence.",
        agent=agent,
    )
    result = Crew(agents=[agent], tasks=[task]).kickoff()
    # what `kickoff()` returns (a CrewOutput), as pydantic serialises it: its tasks' messages hold the run
    crew_output = out.with_name(out.name.replace(".openinference.otlp.jsonl", ".crew_output.json"))
    crew_output.write_text(result.model_dump_json(indent=2) + "\n")
    provider.force_flush()
    doc = MessageToDict(encode_spans(memory.get_finished_spans()))
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in sp:
                        sp[k] = base64.b64decode(sp[k]).hex()
    out.write_text(json.dumps(doc) + "\n")
    instrumentor.uninstrument()
    print(f"crewai {crewai.__version__} -> {out}", file=sys.stderr)


def main() -> None:
    os.chdir(tempfile.mkdtemp(prefix="crewai-"))  # CrewAI writes its local storage under the cwd
    run(native=True)
    run(native=False)


if __name__ == "__main__":
    main()
