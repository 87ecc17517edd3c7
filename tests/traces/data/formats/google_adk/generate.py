"""Generate the Google ADK session fixtures by running the unmodified `google-adk` offline.

Only the model is replaced: `ScriptedLlm` subclasses ADK's own `BaseLlm` and answers each request with
the next scripted `LlmResponse` (function-call parts, then a text answer). The agent is an `LlmAgent`
with three tools run by an `InMemoryRunner`: `get_weather` (returns text), `lookup_order` (returns
ADK's documented error dict, `{"status": "error", "error_message": ...}`, for an unknown order) and
`convert_currency` (raises for an unknown currency; `on_tool_error_callback` is unset, so what ADK
does with the exception is its own default: it records an error event and ends the run). The model
also calls `get_forecast`, which does not exist (ADK answers `{"error": ...}` itself).

Version and command (from the repository root; the venv is outside the repository):

    python3 -m venv .venvs/adk
    .venvs/adk/bin/pip install google-adk==2.15.0
    .venvs/adk/bin/python tests/traces/data/formats/google_adk/generate.py

Writes into this folder, for a session whose model gives call ids and one whose model gives none (ADK
then fills in `adk-...` ids itself, so the id-less variant is the model's response without ids):

- `session-camel.json`: `session.model_dump_json(by_alias=True, indent=2)` (the camelCase the ADK web
  server and `adk api_server` return);
- `session-snake.json`: `json.dumps(session.model_dump(mode="json"), indent=2)` (snake_case).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

HERE = Path(__file__).parent


def get_weather(city: str) -> str:
    """Current weather of a city (text: ADK wraps it as `{"result": text}`)."""
    return f"Sunny, 21 C in {city}"


def lookup_order(order_id: str) -> dict[str, Any]:
    """Status of an order."""
    if order_id != "A-100":
        return {"status": "error", "error_message": f"no order {order_id}"}
    return {"status": "success", "order_status": "shipped"}


def convert_currency(amount: float, to: str) -> dict[str, Any]:
    """Convert an amount of euros to another currency."""
    rates = {"USD": 1.1, "GBP": 0.85}
    return {"amount": round(amount * rates[to], 2), "currency": to}  # KeyError for another currency


def _call(name: str, args: dict[str, Any], cid: str | None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=cid, name=name, args=args))


class ScriptedLlm(BaseLlm):
    """A model that replays `script`, one response per request."""

    script: list[LlmResponse]
    turn: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        del llm_request, stream  # the script ignores what is asked
        response = self.script[self.turn]
        self.turn += 1
        yield response


def script(ids: bool) -> list[LlmResponse]:
    def cid(x: str) -> str | None:
        return x if ids else None

    return [
        LlmResponse(
            content=types.Content(
                role="model",
                parts=[
                    _call("get_weather", {"city": "Paris"}, cid("call_w1")),
                    _call("lookup_order", {"order_id": "B-7"}, cid("call_o1")),
                    _call("get_forecast", {"city": "Paris"}, cid("call_f1")),  # no such tool
                ],
            )
        ),
        LlmResponse(
            content=types.Content(
                role="model",
                parts=[_call("convert_currency", {"amount": 40, "to": "CHF"}, cid("call_c1"))],
            )
        ),
        LlmResponse(
            content=types.Content(
                role="model",
                parts=[_call("convert_currency", {"amount": 40, "to": "USD"}, cid("call_c2"))],
            )
        ),
        LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text="Sunny in Paris; 40 EUR is 44 USD.")])
        ),
    ]


async def run(ids: bool) -> Any:
    agent = LlmAgent(
        name="helper",
        model=ScriptedLlm(model="scripted", script=script(ids)),
        instruction="Answer with the tools.",
        tools=[get_weather, lookup_order, convert_currency],
    )
    runner = InMemoryRunner(agent=agent, app_name="fixture_app")
    session = await runner.session_service.create_session(app_name="fixture_app", user_id="user-1")
    message = types.Content(
        role="user", parts=[types.Part(text="Weather in Paris, order B-7, 40 EUR in CHF?")]
    )
    try:
        async for _ in runner.run_async(user_id="user-1", session_id=session.id, new_message=message):
            pass
    except Exception as e:  # a tool's exception ends the run: the session keeps what was done
        print(f"run ended by {type(e).__name__}: {e}")
    return await runner.session_service.get_session(
        app_name="fixture_app", user_id="user-1", session_id=session.id
    )


async def main() -> None:
    for ids, tag in ((True, "ids"), (False, "noids")):
        session = await run(ids)
        (HERE / f"session-camel-{tag}.json").write_text(
            session.model_dump_json(by_alias=True, indent=2) + "\n"
        )
        (HERE / f"session-snake-{tag}.json").write_text(
            json.dumps(session.model_dump(mode="json"), indent=2) + "\n"
        )


asyncio.run(main())
