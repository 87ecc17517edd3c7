"""The tool registry (DESIGN §2.4), kept as the data file `registry.json` and written as `tools.json`.

Why a data file: the registry is a document (names, descriptions, JSON Schemas), read and edited as
one; in code it was a 230-line literal. Its enums restate the world's vocabulary (the warehouses a
`query_warehouse` call may name are the warehouses results come from), so `registry()` checks them,
and the tool names, against the code on every load: the file and the code cannot drift apart.
`search_products` and `list_shipments` declare no `output` on purpose: contracts for them can only
be mined.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import orjson

from .pointers import get_ptr
from .tools import RESULTS
from .vocab import CATEGORIES, CURRENCIES, ORDER_STATUSES, REFUND_REASONS, SERVICES, WAREHOUSES

REGISTRY = Path(__file__).with_name("registry.json")

#: Registry enums that restate the world's vocabulary: (tool, pointer into its entry, the values).
VOCABULARY: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    *(
        (tool, "/output/properties/warehouse/enum", WAREHOUSES)
        for tool in ("lookup_inventory", "query_warehouse", "get_stock_by_sku")
    ),
    ("query_warehouse", "/parameters/properties/warehouse/enum", WAREHOUSES),
    ("get_order", "/output/properties/status/enum", ORDER_STATUSES),
    ("search_products", "/parameters/properties/category/enum", tuple(CATEGORIES)),
    ("quote_shipping", "/parameters/properties/service/enum", SERVICES),
    ("quote_shipping", "/output/properties/service/enum", SERVICES),
    ("create_invoice", "/parameters/properties/currency/enum", CURRENCIES),
    ("create_invoice", "/output/properties/currency/enum", CURRENCIES),
    ("refund_order", "/parameters/properties/reason/enum", REFUND_REASONS),
    ("refund_order", "/output/properties/reason/enum", REFUND_REASONS),
)


@cache
def _checked_bytes() -> bytes:
    """`registry.json`, read once and checked against the code (ValueError on any disagreement)."""
    data = REGISTRY.read_bytes()
    tools = {t["name"]: t for t in orjson.loads(data)["tools"]}
    if list(tools) != list(RESULTS):
        raise ValueError(f"{REGISTRY.name} lists tools {list(tools)}, the world has {list(RESULTS)}")
    for tool, ptr, values in VOCABULARY:
        _present, enum = get_ptr(tools[tool], ptr)
        if enum != list(values):
            raise ValueError(
                f"{REGISTRY.name}: {tool} {ptr} is {enum}, the world's vocabulary is {list(values)}"
            )
    return data


def registry() -> dict[str, Any]:
    """The registry document, a fresh copy on every call (callers may change theirs freely)."""
    return orjson.loads(_checked_bytes())
