"""An Anthropic-style tool-calling loop with mined contracts in band (docs/api.md).

    python docs/examples/anthropic_loop.py [CONTRACTS] [REGISTRY]

The Messages API loop: the assistant answers with `tool_use` blocks; each is run and answered, in the
next user turn, by a `tool_result` block whose `content` is a list of content blocks. The receipt goes
in as a second text block of that list: the tools are wrapped with `deliver=` a callback that keeps the
receipt of the call in hand, so the result block stays exactly what the tool returned.

No network and no SDK: `RecordedModel` replays a recorded conversation (a real client would be
`client.messages.create(model=..., max_tokens=..., tools=tools, messages=messages)`). The tools and
their planted bug are those of `openai_loop.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from output_contracts import Checker, Receipt, checked
from output_contracts.registry.export import export_tools
from output_contracts.traces.tool_registry import load_registry

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_loop import DEFAULT_CONTRACTS, DEFAULT_REGISTRY, lookup_inventory, query_warehouse, summary

RECORDING: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check the stock."},
            {"type": "tool_use", "id": "toolu_01", "name": "lookup_inventory", "input": {"sku": "SKU-11456"}},
        ],
        "stop_reason": "tool_use",
    },
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "query_warehouse",
                "input": {"sku": "SKU-11456", "warehouse": "central"},
            }
        ],
        "stop_reason": "tool_use",
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "SKU-11456 is out of stock in central: 10 on hand, all reserved."}
        ],
        "stop_reason": "end_turn",
    },
]


class RecordedModel:
    """Stands in for the Messages endpoint: replays `RECORDING`, keeps what it was sent."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = list(turns)
        self.seen: list[list[dict[str, Any]]] = []

    def create(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.seen.append(list(messages))
        return self.turns.pop(0)


def run(contracts: Path = DEFAULT_CONTRACTS, registry: Path = DEFAULT_REGISTRY) -> list[dict[str, Any]]:
    """One episode; returns the whole transcript."""
    checker = Checker.load(contracts, registry=registry)
    offered = ["lookup_inventory", "query_warehouse"]
    tools = [t for t in export_tools(load_registry(registry), "anthropic") if t["name"] in offered]
    session = checker.session(visible_tools=offered)
    receipts: list[Receipt] = []  # the receipt of the call being answered, if any
    impl = {
        fn.__name__: checked(session, deliver=receipts.append)(fn)
        for fn in (lookup_inventory, query_warehouse)
    }
    model = RecordedModel(RECORDING)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "How many SKU-11456 can I ship from central?"}
    ]
    while True:
        msg = model.create(messages, tools)
        messages.append({"role": "assistant", "content": msg["content"]})
        if msg["stop_reason"] != "tool_use":
            return messages
        results = []
        for block in msg["content"]:
            if block["type"] != "tool_use":
                continue
            receipts.clear()
            out = impl[block["name"]](**block["input"])
            content = [{"type": "text", "text": json.dumps(out)}]
            content += [{"type": "text", "text": r.to_text()} for r in receipts]
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": content})
        messages.append({"role": "user", "content": results})


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv[1:3]]
    for m in run(*paths):
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in blocks:
            if b["type"] == "text":
                print(f"{m['role']}: {b['text']}")
            elif b["type"] == "tool_use":
                print(f"{m['role']} tool_use {b['name']}({json.dumps(b['input'])})")
            else:
                print(f"{m['role']} tool_result {b['tool_use_id']}: {len(b['content'])} text blocks")
                text = [c["text"] for c in b["content"]]
                print(f"  {text[0][:90]} ...")
                for t in text[1:]:
                    print("  + receipt block: " + summary(json.loads(t)["outcome_contract"]))


if __name__ == "__main__":
    main(sys.argv)
