"""docs/examples' OpenAI- and Anthropic-style tool-calling loops, run with their recorded models (no
network, no SDK): the bad result reaches the model with its receipt and recovery tools, the clean one
without, and each tool result is the tool's own output."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(EXAMPLES))


def _contract(text: str) -> dict[str, Any]:
    oc: dict[str, Any] = json.loads(text)["outcome_contract"]
    return oc


def test_openai_loop_appends_the_receipt_to_the_tool_message() -> None:
    mod = _load("openai_loop")
    msgs = mod.run()
    tools = [m for m in msgs if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_1", "call_2"]
    body, receipt = tools[0]["content"].split("\n\n")
    assert json.loads(body) == mod.lookup_inventory("SKU-11456")
    oc = _contract(receipt)
    assert [(v["code"], v["path"], v["observed"]) for v in oc["violations"]] == [("NONNEG", "/available", -3)]
    # the episode offers two tools: get_stock_by_sku, a declared substitute, is not offered
    assert oc["recovery_tools"] == ["lookup_inventory", "query_warehouse"]
    # the recovery tool's clean result is the tool's output alone
    assert json.loads(tools[1]["content"]) == mod.query_warehouse("SKU-11456", "central")
    assert msgs[-1]["role"] == "assistant" and "out of stock" in msgs[-1]["content"]


def test_anthropic_loop_adds_a_second_text_block() -> None:
    mod = _load("anthropic_loop")
    msgs = mod.run()
    results = [
        b for m in msgs if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
    ]
    assert [r["tool_use_id"] for r in results] == ["toolu_01", "toolu_02"]
    first, second = results
    assert len(first["content"]) == 2 and len(second["content"]) == 1
    oc = _contract(first["content"][1]["text"])
    assert oc["tool"] == "lookup_inventory" and oc["binding"] is False
    assert [v["code"] for v in oc["violations"]] == ["NONNEG"]
    assert oc["recovery_tools"] == ["lookup_inventory", "query_warehouse"]
    assert json.loads(second["content"][0]["text"])["available"] == 0


def test_the_examples_run_as_scripts() -> None:
    for name in ("openai_loop", "anthropic_loop"):
        p = subprocess.run(
            [sys.executable, str(EXAMPLES / f"{name}.py")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert p.returncode == 0, p.stderr
        assert "receipt" in p.stdout and "NONNEG at /available observed -3" in p.stdout, p.stdout
