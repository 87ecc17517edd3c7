"""Generate the OpenLLMetry fixtures: the unmodified `opentelemetry-instrumentation-openai` (OpenLLMetry,
the instrumentation `traceloop-sdk` installs) on the unmodified `openai` client, run offline against a
local stub of the OpenAI chat API (`../smolagents/stub_openai.py`) that answers with pre-scripted
`tool_calls`. As in OpenLLMetry's quick start there is no enclosing span: each chat call is its own trace,
and the tool results reach the model only in the next call's prompt.

Versions: opentelemetry-instrumentation-openai 0.62.4, openai 3.63.0, opentelemetry-sdk 1.45.2. Command:

    python3 -m venv .venvs/openllmetry
    .venvs/openllmetry/bin/pip install openai opentelemetry-instrumentation-openai \\
        opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
    .venvs/openllmetry/bin/python tests/traces/data/formats/openllmetry/generate.py

Writes (OTLP/JSON: `encode_spans` of opentelemetry-exporter-otlp-proto-common, protobuf JSON mapping,
ids as hex; one `BatchSpanProcessor` export batch a line):
- `openllmetry-0.62.4.otlp.jsonl`: the three chat calls' traces, exported together;
- `openllmetry-0.62.4.part1.otlp.jsonl` / `.part2.otlp.jsonl`: the same run again, the exporter moved to
  a second file after the first chat call (as a service that rotates its export files).

The run: call 1 asks for `get_weather(city="Paris")` and `get_exchange_rate(currency="XYZ")`; the
application runs them, the second fails (its tool message is `Error: ...`); call 2 asks for
`get_weather(city="Rome")`; call 3 answers in text.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import openai
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.openai.version import __version__ as INSTR_VERSION
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "smolagents"))
from stub_openai import StubOpenAI  # noqa: E402

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE


class JsonLinesExporter(SpanExporter):
    """Each export batch as one OTLP/JSON `ExportTraceServiceRequest` line, to the current `path`."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def export(self, spans):  # type: ignore[no-untyped-def]
        doc = MessageToDict(encode_spans(spans))
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    for k in ("traceId", "spanId", "parentSpanId"):
                        if k in sp:
                            sp[k] = base64.b64decode(sp[k]).hex()
        assert self.path is not None
        with self.path.open("a") as fh:
            fh.write(json.dumps(doc) + "\n")
        return SpanExportResult.SUCCESS


exporter = JsonLinesExporter()
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
trace_api.set_tracer_provider(provider)
OpenAIInstrumentor().instrument(tracer_provider=provider)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]},
        },
    }
    for name, desc, arg in [
        ("get_weather", "The current weather of a city", "city"),
        ("get_exchange_rate", "Euros per unit of a currency", "currency"),
    ]
]


def call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def run_tool(name: str, args: dict) -> str:
    if name == "get_weather":
        return json.dumps({"city": args["city"], "temp_c": {"Paris": 18, "Rome": 24}[args["city"]]})
    rates = {"USD": 0.92}
    if args["currency"] not in rates:
        return f"Error: unknown currency {args['currency']!r}"
    return str(rates[args["currency"]])


def conversation(prefix: str, rotate: Path | None) -> None:
    script = [
        {
            "content": None,
            "tool_calls": [
                call(f"call_{prefix}1", "get_weather", {"city": "Paris"}),
                call(f"call_{prefix}2", "get_exchange_rate", {"currency": "XYZ"}),
            ],
        },
        {"content": None, "tool_calls": [call(f"call_{prefix}3", "get_weather", {"city": "Rome"})]},
        {"content": "Paris 18C, Rome 24C; XYZ is not a currency I know."},
    ]
    stub = StubOpenAI(script)
    client = openai.OpenAI(base_url=stub.url, api_key="offline")
    messages: list[dict] = [{"role": "user", "content": "Weather in Paris and Rome, and the XYZ rate?"}]
    for turn in range(3):
        r = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        msg = r.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        for tc in msg.tool_calls or []:
            out = run_tool(tc.function.name, json.loads(tc.function.arguments))
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": out})
        if turn == 0 and rotate is not None:
            provider.force_flush()
            exporter.path = rotate
    provider.force_flush()
    stub.close()


for p in OUT.glob(f"openllmetry-{INSTR_VERSION}*.otlp.jsonl"):
    p.unlink()
exporter.path = OUT / f"openllmetry-{INSTR_VERSION}.otlp.jsonl"
conversation("a", None)
exporter.path = OUT / f"openllmetry-{INSTR_VERSION}.part1.otlp.jsonl"
conversation("b", OUT / f"openllmetry-{INSTR_VERSION}.part2.otlp.jsonl")
provider.shutdown()
