"""Generate the langchain-core 0.1.0 fixtures: one agent run traced by LangChain's own tracer, two ways.

Producer: langchain-core 0.1.0 with langsmith 0.0.92 (what `pip install langchain-core==0.1.0` resolves
to), unmodified, installed outside the repository:

    python3 -m venv .venvs/lsold
    .venvs/lsold/bin/pip install langchain-core==0.1.0
    .venvs/lsold/bin/python tests/traces/data/formats/langsmith/generate_langchain_core_0_1.py

langchain-core 0.1.0 ships no fake chat model (they lived in `langchain` then), so the model is a
`BaseChatModel` subclass that replays scripted `AIMessage`s carrying OpenAI-style `tool_calls` in
`additional_kwargs` (as OpenAI chat models of that release returned them); nothing else is replaced. The
agent is a hand loop (`RunnableLambda`) over three `@tool`s: a string-input tool, a structured tool, and one
that raises (the loop shows the model an `Error:` tool message and goes on).

Runs of that release have no `trace_id` and no `dotted_order` (the tracer numbers runs with
`execution_order` and nests them in `child_runs`), and a tool run's `inputs` is `{"input": <str of the
tool input>}`, its `outputs` `{"output": <str>}`. Written with the release's own serialisers:

- `langchain-core-0.1-run-tree.json`: the root run as `RunCollectorCallbackHandler` keeps it
  (`traced_runs[0]`), dumped with the run's own pydantic `.json()`: one tree, children in `child_runs`.
- `langchain-core-0.1-posted-runs.jsonl`: every run of that tree, one a line, as the release's
  `LangChainTracer` sends it to LangSmith at the end of the run (`LangChainTracer._update_run_single`:
  `run.dict()`, here without `child_runs`, which the client drops), encoded as the langsmith 0.0.92 client
  encodes a request body (`json.dumps(..., default=langsmith.client._serialize_json)`); lines in start
  order. These lines carry only `parent_run_id` to place a run in its trace.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langsmith.client import _serialize_json

HERE = Path(__file__).parent


@tool
def lookup_order(order_id: str) -> dict:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped", "items": [{"sku": "SKU-1042", "qty": 2}]}


@tool
def refund(order_id: str, amount: float) -> str:
    """Refund part of an order."""
    if amount > 500:
        raise ValueError(f"amount {amount} exceeds refund limit of 500")
    return f"refunded {amount}"


@tool
def search_docs(query: str) -> str:
    """Search the help centre (a string-input tool)."""
    return f"3 articles match '{query}'"


TOOLS = {t.name: t for t in (lookup_order, refund, search_docs)}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


SCRIPT = [
    [
        _call("call_lookup_1", "lookup_order", {"order_id": "A-17"}),
        _call("call_search_1", "search_docs", {"query": "refund policy"}),
    ],
    [_call("call_refund_1", "refund", {"order_id": "A-17", "amount": 900.0})],
    [_call("call_refund_2", "refund", {"order_id": "A-17", "amount": 120.5})],
    [],
]


class ScriptedChatModel(BaseChatModel):
    """Replays SCRIPT: one AIMessage a turn (the only part of the stack that is replaced)."""

    turn: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        calls = SCRIPT[self.turn]
        self.turn += 1
        msg = AIMessage(
            content="" if calls else "Refunded 120.5 for order A-17.",
            additional_kwargs={"tool_calls": calls} if calls else {},
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])


def agent_loop(inputs: dict[str, Any], config: RunnableConfig) -> str:
    model = ScriptedChatModel()
    messages: list[BaseMessage] = [HumanMessage(content=inputs["question"])]
    while True:
        reply = model.invoke(messages, config=config)
        messages.append(reply)
        calls = reply.additional_kwargs.get("tool_calls") or []
        if not calls:
            return str(reply.content)
        for c in calls:
            t = TOOLS[c["function"]["name"]]
            args = json.loads(c["function"]["arguments"])
            tool_input: Any = args["query"] if t is search_docs else args
            try:
                out = t.invoke(tool_input, config=config)
            except Exception as e:  # the tool's run records the error; the model sees it as text
                out = f"Error: {e!r}"
            messages.append(ToolMessage(content=str(out), tool_call_id=c["id"]))


def main() -> None:
    cb = RunCollectorCallbackHandler()
    RunnableLambda(agent_loop).with_config(run_name="agent_loop").invoke(
        {"question": "Refund order A-17, as much as policy allows."},
        config={"callbacks": [cb], "metadata": {"thread_id": "conv-42"}},
    )
    (root,) = cb.traced_runs
    (HERE / "langchain-core-0.1-run-tree.json").write_text(root.json() + "\n")
    flat: list[Any] = []

    def walk(run: Any) -> None:
        flat.append(run)
        for child in run.child_runs:
            walk(child)

    walk(root)
    flat.sort(key=lambda r: (r.start_time, r.execution_order))
    lines = [json.dumps(r.dict(exclude={"child_runs"}), default=_serialize_json) for r in flat]
    (HERE / "langchain-core-0.1-posted-runs.jsonl").write_text("".join(x + "\n" for x in lines))
    print(f"wrote {len(flat)} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
