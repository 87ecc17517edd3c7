"""Generate the AutoGen AgentChat fixtures by running the unmodified package offline.

The model is autogen-ext's own `ReplayChatCompletionClient`, scripted to return `FunctionCall` lists;
everything else (AssistantAgent, tool execution, error capture, TaskResult, run_stream events) is the
package's own code. Three tools: `get_weather` (returns text), `convert_currency` (returns a dict, which
AutoGen turns into text) and `lookup_order` (raises for an unknown order).

Versions and commands (run from the repository root; the venvs are outside the repository):

    python3 -m venv .venvs/autogen04
    .venvs/autogen04/bin/pip install autogen-agentchat==0.4.0 autogen-ext==0.4.0
    .venvs/autogen04/bin/python tests/traces/data/formats/autogen/generate.py 0.4

    python3 -m venv .venvs/autogen07
    .venvs/autogen07/bin/pip install "autogen-agentchat==0.7.5" "autogen-ext==0.7.5"
    .venvs/autogen07/bin/python tests/traces/data/formats/autogen/generate.py 0.7

Each writes, into this folder, `taskresult-<v>.json` (the TaskResult of `agent.run`, serialised by
pydantic: `TaskResult.model_dump_json(indent=2)` on 0.7, `TypeAdapter(TaskResult).dump_json` on 0.4
where TaskResult is a dataclass) and `stream-<v>.jsonl` (each item `run_stream` yields, one a line, the
final TaskResult included, serialised the same way), and `state-<v>.json`, the agent's
`save_state()` after the run (`json.dumps(state, indent=2)`): its model context, `AssistantMessage`s with
FunctionCall lists and `FunctionExecutionResultMessage`s.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient
from pydantic import BaseModel, TypeAdapter

HERE = Path(__file__).parent
VERSION = sys.argv[1]


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"Sunny, 21 C in {city}"


def convert_currency(amount: float, to: str) -> dict[str, object]:
    """Convert an amount of euros to another currency."""
    rates = {"USD": 1.1, "GBP": 0.85}
    return {"amount": round(amount * rates[to], 2), "currency": to}


def lookup_order(order_id: str) -> str:
    """Status of an order."""
    if order_id != "A-100":
        raise KeyError(f"no order {order_id}")
    return "shipped"


def _usage() -> RequestUsage:
    return RequestUsage(prompt_tokens=10, completion_tokens=5)


def script() -> list[CreateResult | str]:
    """First turn: two calls (one fails); second turn: one more call; then the answer."""
    return [
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(id="call_w1", name="get_weather", arguments='{"city": "Paris"}'),
                FunctionCall(id="call_o1", name="lookup_order", arguments='{"order_id": "B-7"}'),
            ],
            usage=_usage(),
            cached=False,
        ),
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(id="call_c1", name="convert_currency", arguments='{"amount": 40, "to": "USD"}')
            ],
            usage=_usage(),
            cached=False,
        ),
        "It is sunny in Paris; order B-7 was not found; 40 EUR is 44 USD.",
    ]


def client() -> ReplayChatCompletionClient:
    c = ReplayChatCompletionClient(script())
    # the replay client says it cannot call functions; scripted calls need it to say it can
    c._model_info = {**c._model_info, "function_calling": True}  # type: ignore[typeddict-item]
    return c


def agent() -> AssistantAgent:
    kwargs: dict[str, object] = {}
    if VERSION != "0.4":
        kwargs["max_tool_iterations"] = 3  # 0.7: the agent loops over tool rounds itself
    return AssistantAgent(
        "assistant",
        model_client=client(),
        tools=[get_weather, convert_currency, lookup_order],
        reflect_on_tool_use=False,
        **kwargs,  # type: ignore[arg-type]
    )


def dump(item: object, indent: int | None = None) -> bytes:
    if isinstance(item, BaseModel):
        return item.model_dump_json(indent=indent).encode()
    return TypeAdapter(type(item)).dump_json(item, indent=indent)


TASK = "Weather in Paris, status of order B-7, and 40 EUR in USD?"


async def main() -> None:
    if VERSION == "0.4":
        # 0.4.0's AssistantAgent makes one tool round per run: the second round is a second run
        a = agent()
        first = await a.run(task=TASK)
        second = await a.run()
        result = TaskResult(messages=[*first.messages, *second.messages], stop_reason=second.stop_reason)
    else:
        a = agent()
        result = await a.run(task=TASK)
    (HERE / f"taskresult-{VERSION}.json").write_bytes(dump(result, indent=2) + b"\n")
    state = await a.save_state()  # the agent's model context, as `save_state` documents it: a JSON-able dict
    (HERE / f"state-{VERSION}.json").write_text(json.dumps(state, indent=2) + "\n")
    lines = [dump(item) async for item in agent().run_stream(task=TASK)]
    (HERE / f"stream-{VERSION}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


asyncio.run(main())
