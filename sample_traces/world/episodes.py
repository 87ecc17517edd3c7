"""Episodes: one attempt at a task, as flat call records (DESIGN §2.1), and the clean set.

Why one rng per episode (`random.Random(f"{seed}:{trace_id}")`): an episode is then reproducible on
its own, which lets `bench/generate.py` stream millions of calls one episode at a time and lets the
fault injector and the format writers regenerate exactly the episode they need.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from .catalog import World
from .tasks import VISIBLE_TOOLS, Order, Task, make_task
from .tools import ERRORS, RESULTS, Ctx
from .vocab import CATEGORIES, CITIES, CURRENCIES, EPOCH, REFUND_REASONS, SERVICES, WAREHOUSES, iso, money

N_CLEAN_TASKS = 640  # retail-000 … retail-639 (LENGTH and UNIQUE need 300 tasks in a fold checker)
EPISODES_PER_CLEAN_TASK = 5
ERROR_RATE = 0.015

Plan = list[tuple[str, dict[str, Any]]]


def plan_episode(task: Task, rng: random.Random) -> Plan:
    """The tool calls of one attempt at a task: the scenario's core calls plus optional ones."""
    c, (o1, o2), (s1, s2, s3), (q1, q2) = task.customer, task.orders, task.skus, task.queries

    def quote(sku: str) -> tuple[str, dict[str, Any]]:
        return (
            "quote_shipping",
            {
                "sku": sku,
                "quantity": rng.choices((1, 2, 3, 5, 8, 12, 20, 40), (6, 5, 4, 3, 2, 2, 1, 1))[0],
                "destination_zip": c.zip if rng.random() < 0.7 else rng.choice(CITIES)[2],
                "service": rng.choices(SERVICES, (3, 5, 2))[0],
                "currency": "USD",
            },
        )

    def search(q: str) -> tuple[str, dict[str, Any]]:
        a: dict[str, Any] = {"query": q, "limit": rng.choice((5, 10, 20))}
        if rng.random() < 0.35:
            a["category"] = world_category(task, q)
        return ("search_products", a)

    def invoice(o: Order) -> tuple[str, dict[str, Any]]:
        cur = rng.choices(CURRENCIES, (2, 1, 5))[0]
        return (
            "create_invoice",
            {
                "order_id": o.order_id,
                "customer_id": c.customer_id,
                "currency": cur,
                "due_days": rng.choice((7, 14, 30, 45)),
            },
        )

    def maybe(p: float, call: tuple[str, dict[str, Any]]) -> Plan:
        return [call] if rng.random() < p else []

    item_sku = o1.items[0].sku
    cust = ("get_customer", {"customer_id": c.customer_id})
    plan: Plan
    if task.scenario == "order_status":
        plan = [cust, ("get_order", {"order_id": o1.order_id}), ("list_shipments", {"order_id": o1.order_id})]
        plan += maybe(0.6, ("get_order", {"order_id": o2.order_id}))
        plan += maybe(0.4, ("list_shipments", {"order_id": o2.order_id}))
        plan += [("lookup_inventory", {"sku": item_sku})]
        plan += maybe(0.5, ("get_stock_by_sku", {"sku": item_sku}))
        plan += maybe(0.5, quote(item_sku))
    elif task.scenario == "stock_check":
        plan = [search(q1), ("lookup_inventory", {"sku": s1})]
        plan += [("query_warehouse", {"sku": s1, "warehouse": rng.choice(WAREHOUSES)})]
        plan += maybe(0.5, ("query_warehouse", {"sku": s1, "warehouse": rng.choice(WAREHOUSES)}))
        plan += [("get_stock_by_sku", {"sku": s2}), ("lookup_inventory", {"sku": s2})]
        plan += maybe(0.6, ("lookup_inventory", {"sku": s3}))
        plan += [quote(s1), *maybe(0.6, quote(s2))]
    elif task.scenario == "refund":
        full = rng.random() < 0.4
        amount = o1.total_cents if full else rng.randint(100, max(101, o1.total_cents - 1))
        plan = [cust, ("get_order", {"order_id": o1.order_id}), ("list_shipments", {"order_id": o1.order_id})]
        plan += maybe(0.5, ("lookup_inventory", {"sku": item_sku}))
        plan += [
            (
                "refund_order",
                {"order_id": o1.order_id, "amount": money(amount), "reason": rng.choice(REFUND_REASONS)},
            )
        ]
        plan += maybe(0.5, ("get_order", {"order_id": o1.order_id}))
        plan += maybe(0.4, invoice(o1))
        plan += maybe(0.4, ("get_order", {"order_id": o2.order_id}))
    elif task.scenario == "invoice":
        plan = [cust, ("get_order", {"order_id": o1.order_id}), invoice(o1)]
        plan += maybe(0.5, ("list_shipments", {"order_id": o1.order_id}))
        plan += [quote(item_sku)]
        plan += maybe(0.5, ("get_order", {"order_id": o2.order_id}))
        plan += maybe(0.5, invoice(o2))
        plan += maybe(0.4, ("get_stock_by_sku", {"sku": item_sku}))
    else:  # shopping
        plan = [search(q1), search(q2), ("get_stock_by_sku", {"sku": s1})]
        plan += [("query_warehouse", {"sku": s1, "warehouse": rng.choice(WAREHOUSES)})]
        plan += [quote(s1), cust]
        plan += maybe(0.5, ("lookup_inventory", {"sku": s2}))
        plan += maybe(0.5, ("get_order", {"order_id": o1.order_id}))
        plan += maybe(0.4, quote(s2))
    return plan


def world_category(task: Task, query: str) -> str:
    """The category a search is narrowed to: the category of the product the phrase came from."""
    for noun_cat, nouns in CATEGORIES.items():
        if any(n.lower() in query for n in nouns):
            return noun_cat
    return "home"


def fill(template: str, args: dict[str, Any]) -> str:
    """An error message with the call's arguments filled in (kept as is if it names one the call lacks)."""
    try:
        return template.format(**args)
    except KeyError:
        return template


def make_episode(
    world: World,
    task: Task,
    trace_id: str,
    start: datetime,
    reward: float,
    force_error_step: int | None = None,
) -> list[dict[str, Any]]:
    """One episode as flat records (DESIGN §2.1), clean: labels are empty."""
    rng = random.Random(f"{world.seed}:{trace_id}")
    now = start
    records = []
    for step, (tool, args) in enumerate(plan_episode(task, rng)):
        now += timedelta(seconds=rng.randint(2, 25))
        ctx = Ctx(world, task, rng, now)
        result = RESULTS[tool](args, ctx)  # always drawn, so an error does not shift later draws
        is_error = rng.random() < ERROR_RATE or step == force_error_step
        records.append(
            {
                "trace_id": trace_id,
                "task_id": task.task_id,
                "step": step,
                "tool": tool,
                "arguments": args,
                "result": None if is_error else result,
                "status": "error" if is_error else "ok",
                "error": fill(rng.choice(ERRORS[tool]), args) if is_error else None,
                "started_at": iso(now),
                "labels": {},
                "reward": reward,
                "tools": list(VISIBLE_TOOLS[task.scenario]),
            }
        )
    return records


def episode_start(index: int) -> datetime:
    """Episodes run back to back over about a month."""
    return EPOCH + timedelta(minutes=23 * index)


def clean_episodes(world: World) -> list[list[dict[str, Any]]]:
    eps = []
    for t in range(N_CLEAN_TASKS):
        task = make_task(world, t)
        for e in range(EPISODES_PER_CLEAN_TASK):
            idx = t * EPISODES_PER_CLEAN_TASK + e
            eps.append(make_episode(world, task, f"ep-{idx:05d}", episode_start(idx), 1.0))
    return eps
