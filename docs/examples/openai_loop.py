"""An OpenAI-style tool-calling loop with mined contracts in band (docs/api.md).

    python docs/examples/openai_loop.py [CONTRACTS] [REGISTRY]

The loop is the usual Chat Completions one: send `messages` and `tools`, run each `tool_calls[]` entry,
answer it with a `role: "tool"` message, repeat until the model answers in text. The one change is the
`checker.session(...).wrap_tool(fn)` around each tool: a result that breaks a mined contract reaches the
model with its receipt appended (`deliver="text"`), naming the recovery tools it can call instead.

No network and no SDK: `RecordedModel` replays a recorded conversation (a real client would be
`client.chat.completions.create(model=..., messages=messages, tools=tools)` and
`response.choices[0].message`). The inventory backend has a planted bug: `lookup_inventory` reports
`available = on_hand - reserved` even when more is reserved than on hand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from output_contracts import Checker
from output_contracts.registry.export import export_tools
from output_contracts.traces.tool_registry import load_registry

HERE = Path(__file__).resolve().parent
DEFAULT_CONTRACTS = HERE.parents[1] / "tests" / "golden" / "sample-contracts.json"
DEFAULT_REGISTRY = HERE.parents[1] / "sample_traces" / "tools.json"

STOCK = {  # the warehouse's real books
    ("SKU-11456", "central"): {"on_hand": 10, "reserved": 13, "unit_cost": 70.83, "bin": "C-10-6"},
}


def lookup_inventory(sku: str) -> dict[str, Any]:
    """The buggy tool: available = on_hand - reserved, unclamped."""
    row = STOCK[(sku, "central")]
    available = row["on_hand"] - row["reserved"]
    return {
        "sku": sku,
        "warehouse": "central",
        "on_hand": row["on_hand"],
        "reserved": row["reserved"],
        "available": available,
        "status": "low_stock",
        "unit_cost": row["unit_cost"],
        "bin_location": row["bin"],
        "last_counted_at": "2026-01-05T01:54:21Z",
    }


def query_warehouse(sku: str, warehouse: str) -> dict[str, Any]:
    """A substitute that reads the same books correctly (over-reserved stock is 0 available)."""
    row = STOCK[(sku, warehouse)]
    reserved = min(row["reserved"], row["on_hand"])
    return {
        "sku": sku,
        "warehouse": warehouse,
        "on_hand": row["on_hand"],
        "reserved": reserved,
        "available": row["on_hand"] - reserved,
        "status": "out_of_stock",
        "unit_cost": row["unit_cost"],
        "bin_location": row["bin"],
        "last_counted_at": "2026-01-05T01:54:21Z",
    }


def call(id_: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


#: The recorded assistant turns (what the model answered, in order).
RECORDING: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_1", "lookup_inventory", sku="SKU-11456")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_2", "query_warehouse", sku="SKU-11456", warehouse="central")],
    },
    {
        "role": "assistant",
        "content": "SKU-11456 is out of stock in central (0 available; 10 on hand, all reserved).",
    },
]


class RecordedModel:
    """Stands in for the chat completions endpoint: replays `RECORDING`, keeps what it was sent."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = list(turns)
        self.seen: list[list[dict[str, Any]]] = []

    def create(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.seen.append([dict(m) for m in messages])
        return self.turns.pop(0)


def run(contracts: Path = DEFAULT_CONTRACTS, registry: Path = DEFAULT_REGISTRY) -> list[dict[str, Any]]:
    """One episode; returns the whole transcript."""
    checker = Checker.load(contracts, registry=registry)
    reg = load_registry(registry)
    offered = ["lookup_inventory", "query_warehouse"]
    tools = [t for t in export_tools(reg, "openai") if t["function"]["name"] in offered]
    session = checker.session(visible_tools=offered)  # one per episode
    impl: dict[str, Callable[..., Any]] = {
        name: session.wrap_tool(fn, deliver="text")
        for name, fn in (("lookup_inventory", lookup_inventory), ("query_warehouse", query_warehouse))
    }
    model = RecordedModel(RECORDING)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "How many SKU-11456 can I ship from central?"}
    ]
    while True:
        msg = model.create(messages, tools)
        messages.append(msg)
        if not msg.get("tool_calls"):
            return messages
        for tc in msg["tool_calls"]:
            fn = tc["function"]
            text = impl[fn["name"]](**json.loads(fn["arguments"]))
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": text})


def summary(oc: dict[str, Any]) -> str:
    """One line of an `outcome_contract`: each violation's code, path and observed value, the recovery tools."""
    vs = "; ".join(
        f"{v['code']} at {v['path']} observed {json.dumps(v['observed'])}" for v in oc["violations"]
    )
    return f"{vs}; recovery_tools {', '.join(oc['recovery_tools'])}"


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv[1:3]]
    for m in run(*paths):
        if m["role"] == "tool":
            result, _, receipt = m["content"].partition("\n\n")
            print(f"tool {m['tool_call_id']}: {result[:90]} ...")
            if receipt:
                print("  + receipt: " + summary(json.loads(receipt)["outcome_contract"]))
        elif m.get("tool_calls"):
            for tc in m["tool_calls"]:
                print(f"assistant calls {tc['function']['name']}({tc['function']['arguments']})")
        else:
            print(f"{m['role']}: {m['content']}")


if __name__ == "__main__":
    main(sys.argv)
