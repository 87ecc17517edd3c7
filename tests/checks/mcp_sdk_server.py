"""A real MCP server written with the official `mcp` SDK (a test dependency), for the proxy's end-to-end
test: the sample world's `lookup_inventory` (structured output; a planted bug for SKU-11456: more
reserved than on hand gives available = -3) and `query_warehouse` (correct)."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("inventory")
BOOKS = {
    ("SKU-11456", "central"): (10, 13, 70.83, "C-10-6"),
    ("SKU-10798", "east"): (180, 0, 8.12, "G-19-9"),
}
HOME = {"SKU-11456": "central", "SKU-10798": "east"}


def _stock(sku: str, warehouse: str, clamp: bool) -> dict[str, Any]:
    on_hand, reserved, cost, bin_ = BOOKS[(sku, warehouse)]
    if clamp:
        reserved = min(reserved, on_hand)
    available = on_hand - reserved
    return {
        "sku": sku,
        "warehouse": warehouse,
        "on_hand": on_hand,
        "reserved": reserved,
        "available": available,
        "status": "out_of_stock" if available <= 0 else "low_stock" if available < 20 else "in_stock",
        "unit_cost": cost,
        "bin_location": bin_,
        "last_counted_at": "2026-01-05T01:54:21Z",
    }


@server.tool()
def lookup_inventory(sku: str) -> dict[str, Any]:
    """Stock of a SKU in its home warehouse."""
    return _stock(sku, HOME[sku], clamp=False)


@server.tool()
def query_warehouse(sku: str, warehouse: str) -> dict[str, Any]:
    """Stock of a SKU in one warehouse."""
    return _stock(sku, warehouse, clamp=True)


if __name__ == "__main__":
    server.run("stdio")
