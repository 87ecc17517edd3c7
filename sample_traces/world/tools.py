"""What each of the ten tools returns: one result function per tool, plus the errors it may raise.

Why results are computed from the task and not drawn freely: the planted invariants (an order's
`total = subtotal + tax`, an echoed `sku`, `last_counted_at <= restock_eta`) must hold by construction
in every clean result, so each function derives its figures from the world's facts and the call's
arguments, and draws only the noise (counts, ids, optional fields) from the episode's rng.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .catalog import World
from .tasks import Order, Task
from .vocab import (
    CARRIERS,
    CITIES,
    CURRENCY_TZ,
    LEGACY_BIN_TASK,
    TAX_BP,
    WAREHOUSES,
    free_text,
    hexid,
    iso,
    money,
)


@dataclass
class Ctx:
    """What a result may depend on besides the arguments: the task, the episode's rng, the call time."""

    world: World
    task: Task
    rng: random.Random
    now: datetime


def stock_result(sku: str, warehouse: str, ctx: Ctx, *, bin_location: bool = True) -> dict[str, Any]:
    """The shared result shape of the three inventory tools (they are declared substitutes)."""
    rng = ctx.rng
    p = ctx.world.by_sku[sku]
    on_hand = 0 if rng.random() < 0.15 else rng.randint(1, 250)
    reserved = 0 if on_hand == 0 or rng.random() < 0.4 else rng.randint(0, on_hand)
    available = on_hand - reserved
    counted = ctx.now - timedelta(seconds=rng.randint(3600, 20 * 86400))
    r: dict[str, Any] = {
        "sku": sku,
        "warehouse": warehouse,
        "on_hand": on_hand,
        "reserved": reserved,
        "available": available,
        "status": "out_of_stock" if available == 0 else ("low_stock" if available < 10 else "in_stock"),
        "unit_cost": money(p.cost_cents),
    }
    if bin_location:
        r["bin_location"] = p.bin_location
    r["last_counted_at"] = iso(counted)
    if rng.random() < 0.6:
        r["restock_eta"] = iso(counted + timedelta(seconds=rng.randint(86400, 30 * 86400)))
    if rng.random() < 0.3:
        r["note"] = free_text(rng)
    return r


def r_lookup_inventory(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    p = ctx.world.by_sku[a["sku"]]
    return stock_result(a["sku"], p.warehouse, ctx, bin_location=ctx.task.task_id != LEGACY_BIN_TASK)


def r_query_warehouse(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    return stock_result(a["sku"], a["warehouse"], ctx)


def r_get_stock_by_sku(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    return stock_result(a["sku"], ctx.rng.choice(WAREHOUSES), ctx)


def find_order(ctx: Ctx, order_id: str) -> Order:
    return next(o for o in ctx.task.orders if o.order_id == order_id)


def r_get_order(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    o = find_order(ctx, a["order_id"])
    r: dict[str, Any] = {
        "order_id": o.order_id,
        "customer_id": o.customer_id,
        "status": o.status,
        "items": [
            {
                "sku": i.sku,
                "name": i.name,
                "quantity": i.quantity,
                "unit_price": money(i.unit_price_cents),
                "line_total": money(i.quantity * i.unit_price_cents),
            }
            for i in o.items
        ],
        "subtotal": money(o.subtotal_cents),
        "tax": money(o.tax_cents),
        "total": money(o.total_cents),
        "currency": "USD",
        "shipping_address": {"street": o.street, "city": o.city, "state": o.state, "zip": o.zip},
        "created_at": iso(o.created_at),
    }
    if o.shipped_at is not None:
        r["shipped_at"] = iso(o.shipped_at)
    if o.delivered_at is not None:
        r["delivered_at"] = iso(o.delivered_at)
    if o.delivery_instructions is not None:
        r["delivery_instructions"] = o.delivery_instructions
    return r


def r_list_shipments(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    o = find_order(ctx, a["order_id"])
    return {"order_id": o.order_id, "count": len(o.shipments), "shipments": [dict(s) for s in o.shipments]}


def r_get_customer(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    c = ctx.task.customer
    r: dict[str, Any] = {
        "customer_id": c.customer_id,
        "name": c.name,
        "email": c.email,
        "tier": c.tier,
        "member_since": iso(c.member_since),
        "last_login": iso(c.last_login),
        "next_renewal": iso(c.next_renewal),
        "lifetime_orders": c.lifetime_orders,
        "lifetime_spend": money(c.lifetime_spend_cents),
        "balance_delta": money(c.balance_delta_cents),
        "referrer": c.referrer,
        "marketing_opt_in": c.marketing_opt_in,
    }
    if c.phone is not None:
        r["phone"] = c.phone
    return r


def r_search_products(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    rng = ctx.rng
    pool = [p for p in ctx.world.products if "category" not in a or p.category == a["category"]]
    hits = 0 if rng.random() < 0.12 else rng.randint(1, 140)
    shown = rng.sample(pool, min(hits, a["limit"], len(pool)))
    return {
        "query": a["query"],
        "total_hits": hits,
        "results": [
            {
                "sku": p.sku,
                "name": p.name,
                "category": p.category,
                "price": money(p.price_cents),
                "rating": None if rng.random() < 0.25 else rng.randint(10, 50) / 10,
                "in_stock": rng.random() < 0.8,
            }
            for p in shown
        ],
        "next_cursor": f"cur_{hexid(ctx.now, a['query'], n=10)}" if hits > a["limit"] else None,
        "took_ms": rng.randint(12, 950),
    }


SERVICE_FACTOR = {"ground": 1.0, "express": 2.1, "overnight": 3.6}
SERVICE_DAYS = {"ground": (3, 7), "express": (2, 3), "overnight": (1, 1)}


def r_quote_shipping(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    rng = ctx.rng
    p = ctx.world.by_sku[a["sku"]]
    state = next((st for _c, st, z in CITIES if z == a["destination_zip"]), "CA")
    rate = round((60 + p.weight_g / 40 + rng.randint(0, 40)) * SERVICE_FACTOR[a["service"]])
    freight = a["quantity"] * rate
    taxes = round(freight * TAX_BP[state] / 10000)
    fees = rng.randint(150, 899)
    lo, hi = SERVICE_DAYS[a["service"]]
    return {
        "quote_id": f"Q-{hexid(ctx.now, a['sku'], rng.random(), n=10).upper()}",
        "sku": a["sku"],
        "service": a["service"],
        "carrier": rng.choice(CARRIERS),
        "unit_rate": money(rate),
        "freight": money(freight),
        "taxes": money(taxes),
        "fees": money(fees),
        "total": money(freight + taxes + fees),
        "currency": "USD",
        "estimated_days": rng.randint(lo, hi),
        "quoted_at": iso(ctx.now),
        "valid_until": iso(ctx.now + timedelta(seconds=rng.randint(86400, 7 * 86400))),
    }


def r_create_invoice(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    rng = ctx.rng
    o = find_order(ctx, a["order_id"])
    status = rng.choices(("draft", "issued", "paid"), (3, 4, 3))[0]
    subtotal, tax = o.subtotal_cents, o.tax_cents
    total = subtotal + tax
    paid = (
        total
        if status == "paid"
        else (rng.randint(1, total - 1) if status == "issued" and rng.random() < 0.3 else 0)
    )
    issued = ctx.now.astimezone(CURRENCY_TZ[a["currency"]])
    r: dict[str, Any] = {
        "invoice_id": f"INV-{hexid(ctx.now, a['order_id'], rng.random(), n=10).upper()}",
        "order_id": o.order_id,
        "customer_id": a["customer_id"],
        "currency": a["currency"],
        "status": status,
        "lines": [
            {
                "sku": i.sku,
                "quantity": i.quantity,
                "unit_price_cents": i.unit_price_cents,
                "line_total_cents": i.quantity * i.unit_price_cents,
            }
            for i in o.items
        ],
        "subtotal_cents": subtotal,
        "tax_cents": tax,
        "total_cents": total,
        "paid_cents": paid,
        "amount_due_cents": total - paid,
        "issued_at": iso(issued),
        "due_at": iso(issued + timedelta(days=a["due_days"])),
    }
    if rng.random() < 0.6:
        r["notes"] = free_text(rng)
    return r


def r_refund_order(a: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    rng = ctx.rng
    status = rng.choices(("approved", "pending_review", "rejected"), (5, 3, 2))[0]
    r: dict[str, Any] = {
        "refund_id": f"RF-{hexid(ctx.now, a['order_id'], rng.random(), n=10).upper()}",
        "order_id": a["order_id"],
        "amount": a["amount"],
        "reason": a["reason"],
        "status": status,
        "method": rng.choice(("original_payment", "store_credit")),
        "requested_at": iso(ctx.now),
    }
    if status != "pending_review":
        r["processed_at"] = iso(ctx.now + timedelta(seconds=rng.randint(60, 48 * 3600)))
    return r


RESULTS: dict[str, Callable[[dict[str, Any], Ctx], dict[str, Any]]] = {
    "lookup_inventory": r_lookup_inventory,
    "query_warehouse": r_query_warehouse,
    "get_stock_by_sku": r_get_stock_by_sku,
    "get_order": r_get_order,
    "list_shipments": r_list_shipments,
    "get_customer": r_get_customer,
    "search_products": r_search_products,
    "quote_shipping": r_quote_shipping,
    "create_invoice": r_create_invoice,
    "refund_order": r_refund_order,
}

ERRORS: dict[str, tuple[str, ...]] = {
    "lookup_inventory": ("inventory service timeout after 30s", "rate limit exceeded (429)"),
    "query_warehouse": ("warehouse {warehouse} is offline for maintenance", "rate limit exceeded (429)"),
    "get_stock_by_sku": ("stock index unavailable, retry later",),
    "get_order": ("order {order_id} is locked by another session", "database timeout after 10s"),
    "list_shipments": ("carrier gateway returned 502",),
    "get_customer": ("customer service timeout after 30s",),
    "search_products": ("search backend overloaded (503)",),
    "quote_shipping": ("no rate available for zip {destination_zip}", "carrier gateway returned 502"),
    "create_invoice": ("billing system unavailable (503)",),
    "refund_order": ("refund for {order_id} requires manager approval token",),
}
