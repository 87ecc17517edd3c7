"""A small MCP server over stdio, with no dependency: the sample world's inventory tools (docs/proxy.md).

    python docs/examples/mcp_inventory_server.py [--delay TOOL=SECONDS] [--crash-on TOOL] [--chatty]

It speaks the MCP stdio transport (newline-delimited JSON-RPC 2.0; `initialize`, `ping`, `tools/list`,
`tools/call`, notifications ignored) the way the specification (2025-06-18) describes it: a line that is
not JSON gets a parse error (-32700), an unknown method -32601, a batch (2025-03-26) an array of answers.

Tools: `lookup_inventory` (structured output, plus the JSON as text) has a planted bug: it reports
`available = on_hand - reserved` even when more is reserved than on hand (SKU-11456); `query_warehouse`
(text output only) reads the same books correctly. `--delay` makes a tool slow and `--crash-on` makes
the server die on a tool's call: both are for trying the proxy's timeouts and crash handling; `--chatty`
sends a log notification (`notifications/message`) before each tool result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

BOOKS = {
    ("SKU-11456", "central"): {"on_hand": 10, "reserved": 13, "unit_cost": 70.83, "bin": "C-10-6"},
    ("SKU-10798", "east"): {"on_hand": 180, "reserved": 0, "unit_cost": 8.12, "bin": "G-19-9"},
}
HOME = {"SKU-11456": "central", "SKU-10798": "east"}
SKU = {"type": "string", "pattern": "^SKU-[0-9]+$"}
TOOLS = [
    {
        "name": "lookup_inventory",
        "description": "Look up stock for a SKU in its home warehouse.",
        "inputSchema": {"type": "object", "properties": {"sku": SKU}, "required": ["sku"]},
    },
    {
        "name": "query_warehouse",
        "description": "Stock of a SKU in one warehouse.",
        "inputSchema": {
            "type": "object",
            "properties": {"sku": SKU, "warehouse": {"type": "string"}},
            "required": ["sku", "warehouse"],
        },
    },
]


def stock(sku: str, warehouse: str, *, clamp: bool) -> dict[str, Any]:
    row = BOOKS[(sku, warehouse)]
    reserved = min(row["reserved"], row["on_hand"]) if clamp else row["reserved"]
    available = row["on_hand"] - reserved
    status = "out_of_stock" if available <= 0 else "low_stock" if available < 20 else "in_stock"
    return {
        "sku": sku,
        "warehouse": warehouse,
        "on_hand": row["on_hand"],
        "reserved": reserved,
        "available": available,
        "status": status,
        "unit_cost": row["unit_cost"],
        "bin_location": row["bin"],
        "last_counted_at": "2026-01-05T01:54:21Z",
    }


def call_tool(name: str, args: dict[str, Any], opts: argparse.Namespace) -> dict[str, Any]:
    if name == opts.crash_on:
        print(f"inventory server: crashing on {name} as asked", file=sys.stderr, flush=True)
        os._exit(3)
    if name in opts.delays:
        time.sleep(opts.delays[name])
    try:
        if name == "lookup_inventory":
            data = stock(args["sku"], HOME[args["sku"]], clamp=False)
            return {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
        if name == "query_warehouse":
            data = stock(args["sku"], args["warehouse"], clamp=True)
            return {"content": [{"type": "text", "text": json.dumps(data)}]}
    except KeyError as e:
        return {"content": [{"type": "text", "text": f"unknown SKU or warehouse: {e}"}], "isError": True}
    raise LookupError(name)


def answer(msg: Any, opts: argparse.Namespace) -> dict[str, Any] | None:
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    if "id" not in msg:
        return None  # a notification
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "inventory", "version": "1.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            result = call_tool(params.get("name"), params.get("arguments") or {}, opts)
        except LookupError:
            return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "Unknown tool"}}
    else:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay", action="append", default=[], metavar="TOOL=SECONDS")
    ap.add_argument("--crash-on", metavar="TOOL")
    ap.add_argument("--chatty", action="store_true")
    opts = ap.parse_args()
    opts.delays = {k: float(v) for k, v in (d.split("=", 1) for d in opts.delay)}
    for line in sys.stdin:
        if not line.strip():
            continue
        if opts.chatty and '"tools/call"' in line:
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "calling"},
            }
            sys.stdout.write(json.dumps(note) + "\n")
            sys.stdout.flush()
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            out: Any = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        else:
            if isinstance(msg, list):
                out = [a for a in (answer(m, opts) for m in msg) if a is not None] or None
            else:
                out = answer(msg, opts)
        if out is not None:
            sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
