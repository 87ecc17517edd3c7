"""Generate the smolagents fixtures: an unmodified `smolagents` ToolCallingAgent, instrumented by the
unmodified `openinference-instrumentation-smolagents`, run offline: the model is smolagents' own
`OpenAIServerModel` pointed at a local stub of the OpenAI chat API (`stub_openai.py`) that answers each
request with the next pre-scripted assistant message with `tool_calls`; nothing else is replaced. (The
instrumentation traces only the model classes smolagents exports, so a `Model` subclass of our own would
leave no LLM spans.)

Writes, into the folder given (default: this script's folder):
- `smolagents-<version>.openinference.otlp.jsonl`: the spans, exported by the OpenTelemetry SDK
  (`BatchSpanProcessor`) and encoded by `opentelemetry-exporter-otlp-proto-common` into an OTLP
  `ExportTraceServiceRequest`, written as OTLP/JSON (protobuf JSON mapping, trace and span ids as hex as
  the OTLP/JSON spec says), one export batch a line;
- `smolagents-<version>.memory.json`: `agent.memory.get_full_steps()` as smolagents returns it,
  written with `json.dumps`.

Versions used: smolagents 1.26.0, openinference-instrumentation-smolagents 0.1.43, opentelemetry-sdk 1.45.2
(and the older pair named in SOURCES.md). Command:

    python3 -m venv .venvs/smolagents
    .venvs/smolagents/bin/pip install smolagents openinference-instrumentation-smolagents \
        opentelemetry-sdk opentelemetry-exporter-otlp-proto-common openai
    .venvs/smolagents/bin/python tests/traces/data/formats/smolagents/generate.py

The run: step 1 calls `get_weather(city="Paris")`; step 2 asks for `get_weather(city="Berlin")` and
`get_population(city="Berlin")` in one message (run in parallel threads); step 3 calls
`convert_currency(amount=10, currency="XYZ")`, which raises; step 4 calls `final_answer`.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import smolagents
from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

sys.path.insert(0, str(Path(__file__).parent))
from stub_openai import StubOpenAI

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
VERSION = smolagents.__version__


class JsonLinesExporter(SpanExporter):
    """Each export batch as one OTLP/JSON `ExportTraceServiceRequest` line."""

    def __init__(self, path: Path) -> None:
        self.fh = path.open("w")

    def export(self, spans):  # type: ignore[no-untyped-def]
        doc = MessageToDict(encode_spans(spans))
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if k in sp:
                            sp[k] = base64.b64decode(sp[k]).hex()
        self.fh.write(json.dumps(doc) + "\n")
        self.fh.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.fh.close()


provider = TracerProvider()
provider.add_span_processor(
    BatchSpanProcessor(JsonLinesExporter(OUT / f"smolagents-{VERSION}.openinference.otlp.jsonl"))
)
trace_api.set_tracer_provider(provider)
SmolagentsInstrumentor().instrument(tracer_provider=provider)


@tool
def get_weather(city: str) -> str:
    """The current weather of a city.

    Args:
        city: the city's name
    """
    return json.dumps({"city": city, "temp_c": {"Paris": 18, "Berlin": 12}.get(city, 20), "sky": "clear"})


@tool
def get_population(city: str) -> int:
    """The population of a city.

    Args:
        city: the city's name
    """
    return {"Paris": 2102650, "Berlin": 3878100}[city]


@tool
def convert_currency(amount: float, currency: str) -> float:
    """Convert an amount of euros to another currency.

    Args:
        amount: the amount in euros
        currency: the ISO code of the target currency
    """
    rates = {"USD": 1.08, "GBP": 0.85}
    if currency not in rates:
        raise ValueError(f"unknown currency {currency!r}")
    return amount * rates[currency]


def call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


SCRIPT = [
    [call("call_1", "get_weather", {"city": "Paris"})],
    [call("call_2", "get_weather", {"city": "Berlin"}), call("call_3", "get_population", {"city": "Berlin"})],
    [call("call_4", "convert_currency", {"amount": 10, "currency": "XYZ"})],
    [call("call_5", "final_answer", {"answer": "Paris 18C clear; Berlin 12C, 3878100 people"})],
]


stub = StubOpenAI([{"content": None, "tool_calls": calls} for calls in SCRIPT])
model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=stub.url, api_key="offline")

agent = ToolCallingAgent(
    tools=[get_weather, get_population, convert_currency], model=model, max_steps=6, verbosity_level=0
)
agent.run("What is the weather in Paris and Berlin, Berlin's population, and 10 EUR in XYZ?")
provider.force_flush()
provider.shutdown()
stub.close()
try:
    memory = json.dumps(agent.memory.get_full_steps(), indent=1) + "\n"
except TypeError as e:  # before 1.10 the steps' dicts hold ChatMessage objects: no JSON form
    print(f"smolagents {VERSION}: memory.get_full_steps() is not JSON ({e}); not written")
else:
    (OUT / f"smolagents-{VERSION}.memory.json").write_text(memory)
