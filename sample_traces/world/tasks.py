"""Tasks: one customer's request (two orders, three SKUs of interest, search phrases) and its orders.

Why tasks and not independent calls: a benchmark attempts each task several times, so the episodes
of a task call tools with similar arguments. Every draw for a task comes from its own
`random.Random(f"{seed}:task:{task_id}")`, so task `t` is the same whether it is made alone (as
`bench/generate.py` does, streaming millions of calls) or among all the others.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .catalog import Customer, World
from .vocab import (
    CARRIERS,
    LEGACY_BIN_TASK,
    ORDER_STATUSES,
    RARE_CARRIER_TASK,
    TAX_BP,
    free_text,
    hexid,
    money,
)


@dataclass(frozen=True)
class Item:
    """An order line; its unit price may be discounted from the catalog price (a sale)."""

    sku: str
    name: str
    quantity: int
    unit_price_cents: int


@dataclass(frozen=True)
class Order:
    """An order of a task's customer. Totals are computed in integer cents, so the relations planted
    on `get_order` and `create_invoice` (`total = subtotal + tax`) hold exactly."""

    order_id: str
    customer_id: str
    status: str
    items: tuple[Item, ...]
    state: str
    city: str
    zip: str
    street: str
    created_at: datetime
    shipped_at: datetime | None
    delivered_at: datetime | None
    delivery_instructions: str | None
    shipments: tuple[dict[str, Any], ...]

    @property
    def subtotal_cents(self) -> int:
        return sum(i.quantity * i.unit_price_cents for i in self.items)

    @property
    def tax_cents(self) -> int:
        return round(self.subtotal_cents * TAX_BP[self.state] / 10000)

    @property
    def total_cents(self) -> int:
        return self.subtotal_cents + self.tax_cents


SCENARIOS = ("order_status", "stock_check", "refund", "invoice", "shopping")
SCENARIO_WEIGHTS = (25, 25, 20, 15, 15)
#: The tools the agent is given for each kind of request (the episode's visible tool set). Only stock
#: requests see all three inventory substitutes; an order-status agent sees two, a refund agent one, so
#: receipts offer different recovery tools in different episodes (DESIGN §4).
VISIBLE_TOOLS = {
    "order_status": (
        "get_customer", "get_order", "list_shipments", "lookup_inventory", "get_stock_by_sku", "quote_shipping",
    ),
    "stock_check": ("search_products", "lookup_inventory", "query_warehouse", "get_stock_by_sku", "quote_shipping"),
    "refund": ("get_customer", "get_order", "list_shipments", "lookup_inventory", "refund_order", "create_invoice"),
    "invoice": (
        "get_customer", "get_order", "create_invoice", "list_shipments", "quote_shipping", "get_stock_by_sku",
    ),
    "shopping": (
        "search_products", "get_stock_by_sku", "query_warehouse", "quote_shipping", "get_customer",
        "lookup_inventory", "get_order",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Task:
    """One request, attempted in several episodes; everything its calls may name is fixed here."""

    task_id: str
    scenario: str
    customer: Customer
    orders: tuple[Order, ...]
    skus: tuple[str, ...]
    queries: tuple[str, ...]


def make_order(
    world: World, rng: random.Random, order_id: str, cust: Customer, status: str, tag: str
) -> Order:
    """One order with its items and shipments; shipments follow the order status."""
    created = datetime(2025, 11, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 80 * 86400))
    shipped = delivered = None
    if status in ("shipped", "delivered"):
        shipped = created + timedelta(seconds=rng.randint(6 * 3600, 4 * 86400))
        if status == "delivered":
            delivered = shipped + timedelta(seconds=rng.randint(86400, 7 * 86400))
    items = []
    for p in rng.sample(world.products, rng.choices((1, 2, 3, 4, 5), (3, 4, 3, 2, 1))[0]):
        price = p.price_cents if rng.random() < 0.7 else round(p.price_cents * rng.uniform(0.7, 0.95))
        items.append(Item(p.sku, p.name, rng.choices((1, 2, 3, 4, 6), (5, 3, 2, 1, 1))[0], price))
    shipments: list[dict[str, Any]] = []
    n_ship = {"shipped": rng.randint(1, 3), "delivered": rng.randint(1, 3), "processing": rng.randint(0, 1)}
    ship_status = {"shipped": "in_transit", "delivered": "delivered", "processing": "label_created"}
    for j in range(n_ship.get(status, 0)):
        carrier = "ontrac" if tag == RARE_CARRIER_TASK else rng.choice(CARRIERS)
        shipments.append(
            {
                "shipment_id": f"SHP-{hexid(order_id, j, n=8).upper()}",
                "carrier": carrier,
                "tracking_number": hexid("trk", order_id, j, n=14).upper(),
                "packages": rng.choices((1, 2, 3, 4), (4, 3, 2, 1))[0],
                "weight_kg": money(rng.randint(25, 3000)),
                "status": ship_status[status],
            }
        )
    return Order(
        order_id=order_id,
        customer_id=cust.customer_id,
        status=status,
        items=tuple(items),
        state=cust.state,
        city=cust.city,
        zip=cust.zip,
        street=cust.street,
        created_at=created,
        shipped_at=shipped,
        delivered_at=delivered,
        delivery_instructions=free_text(rng) if rng.random() < 0.6 else None,
        shipments=tuple(shipments),
    )


def make_task(world: World, task_num: int) -> Task:
    """A task: one customer, two orders, three SKUs of interest, a scenario and search phrases."""
    task_id = f"retail-{task_num:03d}"
    rng = random.Random(f"{world.seed}:task:{task_id}")
    scenario = rng.choices(SCENARIOS, SCENARIO_WEIGHTS)[0]
    if task_id == LEGACY_BIN_TASK:
        scenario = "stock_check"
    if task_id == RARE_CARRIER_TASK:
        scenario = "order_status"
    cust = rng.choice(world.customers)
    statuses = rng.choices(ORDER_STATUSES, (1, 3, 2, 2, 3), k=2)
    if scenario == "refund":
        statuses[0] = rng.choice(("delivered", "shipped"))
    if task_id == RARE_CARRIER_TASK:
        statuses[0] = "shipped"
    orders = tuple(
        make_order(
            world, rng, f"ORD-{500000 + task_num * 4 + j}", cust, statuses[j], task_id if j == 0 else ""
        )
        for j in range(2)
    )
    skus = tuple(p.sku for p in rng.sample(world.products, 3))
    queries = tuple(
        f"{world.by_sku[s].name.split(' ', 1)[1].lower()}"
        if rng.random() < 0.5
        else world.by_sku[s].name.lower()
        for s in skus[:2]
    )
    return Task(task_id, scenario, cust, orders, skus, queries)
