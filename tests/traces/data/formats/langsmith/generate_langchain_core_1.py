"""Generate `langchain-core-<X.Y>-list-runs.jsonl`: LangSmith runs of a LangGraph ReAct agent, one a line.

Producers, unmodified, installed outside the repository (`<X.Y>` is the installed langchain-core's):

- langchain-core 1.8.3, langsmith 0.15.1, langgraph 1.2.24 (langgraph-prebuilt 1.1.3):

      python3 -m venv .venvs/lsnew
      .venvs/lsnew/bin/pip install langchain-core==1.8.3 langsmith==0.15.1 langgraph==1.2.24
      .venvs/lsnew/bin/python tests/traces/data/formats/langsmith/generate_langchain_core_1.py

- langchain-core 0.3.28, langsmith 0.2.11, langgraph 0.2.60 (what pip resolves for the first two pins):

      python3 -m venv .venvs/lsmid
      .venvs/lsmid/bin/pip install langchain-core==0.3.28 langgraph==0.2.60
      .venvs/lsmid/bin/python tests/traces/data/formats/langsmith/generate_langchain_core_1.py

Only the model is replaced: langchain-core's own `GenericFakeChatModel` replays scripted `AIMessage`s
with `tool_calls`. Three `@tool` functions (one string-input tool, two with keyword arguments); one raises,
and the agent's ToolNode (`handle_tool_errors=True`) returns the error to the model as an error `ToolMessage`.

Runs are collected in memory by LangChain's own tracer (`RunCollectorCallbackHandler`, passed in the
run's `callbacks` so that every child run is traced under its parent, as LangSmith tracing does); in langchain-core 0.3 and 1.x a collected run *is* a `langsmith.RunTree`. Each run
of the tree is written on its own line as the dict `RunTree.post()` sends to LangSmith
(`RunTree._get_dicts_safe()`: the tree's fields without `child_runs`), encoded with the langsmith client's
own JSON encoder (`langsmith._internal._serde.dumps_json`): the fields LangSmith stores and `list_runs()`
returns (`id`, `name`, `run_type`, `inputs`, `outputs`, `error`, `parent_run_id`, `trace_id`,
`dotted_order`, `start_time`, `end_time`, `extra`, `tags`, `session_name`, ...). Lines are in `dotted_order`
(tree order), with the run ids, times and trace ids as the tracer made them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import langchain_core
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langgraph.prebuilt import ToolNode, create_react_agent
from langsmith._internal._serde import dumps_json

_V = ".".join(langchain_core.__version__.split(".")[:2])
OUT = Path(__file__).with_name(f"langchain-core-{_V}-list-runs.jsonl")


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
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


class ScriptedModel(GenericFakeChatModel):
    """langchain-core's fake chat model; `bind_tools` is a no-op because the replies are scripted."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


def script() -> list[AIMessage]:
    return [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "lookup_order", "args": {"order_id": "A-17"}, "id": "call_lookup_1"},
                {"name": "search_docs", "args": {"query": "refund policy"}, "id": "call_search_1"},
            ],
        ),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "refund", "args": {"order_id": "A-17", "amount": 900.0}, "id": "call_refund_1"},
            ],
        ),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "refund", "args": {"order_id": "A-17", "amount": 120.5}, "id": "call_refund_2"},
            ],
        ),
        AIMessage(content="Refunded 120.5 for order A-17."),
    ]


def main() -> None:
    model = ScriptedModel(messages=iter(script()))
    # handle_tool_errors=True: the raised error goes back to the model as a ToolMessage(status="error")
    tools = ToolNode([lookup_order, refund, search_docs], handle_tool_errors=True)
    agent = create_react_agent(model, tools)
    cb = RunCollectorCallbackHandler()
    agent.invoke(
        {"messages": [HumanMessage("Refund order A-17, as much as policy allows.")]},
        config={"callbacks": [cb], "metadata": {"thread_id": "conv-42"}},
    )
    lines: list[bytes] = []

    def walk(run: Any) -> None:
        lines.append(dumps_json(run._get_dicts_safe()))
        for child in run.child_runs:
            walk(child)

    for root in cb.traced_runs:
        walk(root)
    runs = sorted(lines, key=lambda b: json.loads(b)["dotted_order"])
    OUT.write_bytes(b"".join(r + b"\n" for r in runs))
    print(f"wrote {OUT} ({len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
