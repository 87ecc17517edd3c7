#!/usr/bin/env python3
"""A deterministic corpus of *real tool output*: τ-bench's own retail and airline tools, run in place.

    python bench/tau_tools.py --domain retail --tasks 600 --seed 1 -o retail.jsonl.gz
    python bench/tau_tools.py --domain both --tasks 600 --seed 1 -o out/   # out/{retail,airline}.jsonl.gz

What: agent-like episodes of tool calls whose results come from the unmodified τ-bench tool code
(`tau_bench.envs.{retail,airline}.tools`, `ALL_TOOLS`) invoked on τ-bench's public databases, written
as flat JSONL call records (`trace_id, task_id, step, tool, arguments, result, status, error`).

Why: `bench/generate.py` scales the sample world, whose tool results we wrote ourselves; mining and
auditing must also be measured on output that nobody here designed — real record shapes, real quirks
(a gift card `balance` that turns from int to float after a refund, a `status` key that only exists
after `cancel_reservation`, `get_reservation_details` answering "Error: user not found") and real
error texts, raised by the tools' own checks rather than injected.

Why one file of ~1,100 lines: it is a benchmark input generator, not library code; it is one agent
policy per domain (retail, airline) over the same episode machinery, and the two read best side by side.
Split it when a third domain arrives.

Source and licence: τ-bench, github.com/sierra-research/tau-bench (MIT, "Copyright (c) 2024 Sierra"),
commit 59a200c. The tool code and the databases are read from `../shared/data` beside the repository
(`tau_bench/tool_code` is put on `sys.path`); nothing of it is copied into this repository. See
`../shared/data/SOURCES.md`.

Episodes: a task (seeded from (seed, domain, task index)) picks a user and one to three requests the
user will make (retail: cancel / change the address, payment or items of a pending order, exchange or
return items of a delivered order, change the default address; airline: book, cancel, change flights,
add bags, change passengers, a compensation certificate). Each of the task's `trials` episodes is one
agent run on a fresh copy of the database: it authenticates the user (retail: by email or name + zip;
airline: the user id is given), reads the profile and several orders/reservations (sometimes walking
the order list to find the one the user describes), the products concerned, sometimes the product
list, airports, flight searches and `calculate`; then calls the write tools with arguments taken from
what the reads returned, and sometimes re-reads what it changed. The agent is competent but not
perfect: it mostly checks an order's status, a gift card's balance or a fare before a write, and
sometimes does not, so about 5% of calls end in the tools' own `Error: …` (wrong status, unknown id,
insufficient balance, a total that does not add up, …). An exception raised by a tool becomes
`"Error: <exception>"`, as τ-bench's `Env.step` does.

Scale: the default, 600 tasks × 8 trials, is about 39k (retail) and 36k (airline) calls, generated in
3-5 s a domain on one core.

Fresh database per episode: decoding the whole database again for every episode (τ-bench's
`Env.reset` reloads its data files) measured 35 ms (retail) and 85 ms (airline) an episode here,
3 and 7 minutes for a default run, many times the episodes' own cost. Instead every table is a `_Table`: a dict with the same keys, in the same order, whose values start as
*shared, deeply read-only* records (`_FrozenDict`/`_FrozenList`, decoded once); looking a record up by
key (`table[id]`, `table.get(id)` — how every tool reaches a record it may change) replaces it in this
episode's table by a fresh decode of that record's own bytes. Records that are only iterated over
(`find_user_id_by_email`, the flight searches, `list_all_product_types`) stay shared; any attempt to
change a shared record raises `SharedWriteError`, which is *not* turned into an `Error:` result but
aborts the run. So every value a tool sees is equal to the one a fresh full decode would give, plus
the episode's own writes. `generate(..., fresh="full")` does the full decode instead; the tests check
that both give the same bytes.

Determinism: every random choice comes from a `random.Random` seeded with the first 8 bytes of
sha256(f"{seed}:{domain}:{task}") (the task) or sha256(f"{seed}:{domain}:{task}:{trial}") (an
episode), never the global state; choices over dict keys are made over sorted keys; amounts the
agent computes are rounded to cents. Output lines are orjson with sorted keys, LF-terminated; a `.gz`
output is gzip with mtime 0 and no file name, so the same arguments give the same bytes on any
machine. Output goes to a temporary file in the target folder, renamed when complete.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, NoReturn

import orjson

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DOMAINS = ("retail", "airline")
TABLES: dict[str, tuple[str, ...]] = {
    "retail": ("users", "orders", "products"),
    "airline": ("users", "reservations", "flights"),
}
DEFAULT_TASKS = 600
DEFAULT_TRIALS = 8
DEFAULT_SEED = 1

Record = dict[str, Any]
Invoke = Callable[..., Any]

# ---- a fresh database per episode -------------------------------------------------------------------


class SharedWriteError(RuntimeError):
    """A tool tried to change a record shared between episodes: the copy-on-lookup premise is broken."""


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise SharedWriteError(f"a tool tried to change a shared read-only {type(self).__name__}")


class _FrozenDict(dict[str, Any]):
    """A dict no tool can change (json.dumps and reads work as on a dict)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


class _FrozenList(list[Any]):
    """A list no tool can change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


def _freeze(value: Any) -> Any:
    if type(value) is dict:
        return _FrozenDict((k, _freeze(v)) for k, v in value.items())
    if type(value) is list:
        return _FrozenList(_freeze(v) for v in value)
    return value


class _Table(dict[str, Any]):
    """One episode's table: shared read-only records, each replaced by a fresh decode when looked up."""

    __slots__ = ("_bytes",)

    def __init__(self, shared: dict[str, Any], record_bytes: dict[str, bytes]) -> None:
        super().__init__(shared)
        self._bytes = record_bytes

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) is _FrozenDict:
            value = orjson.loads(self._bytes[key])
            dict.__setitem__(self, key, value)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


@dataclass(frozen=True)
class Database:
    """A domain's tables, read once: file bytes, per-record bytes and shared read-only records."""

    domain: str
    raw: dict[str, bytes]
    record_bytes: dict[str, dict[str, bytes]]
    shared: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, data: Path, domain: str) -> Database:
        raw, rec, shared = {}, {}, {}
        for table in TABLES[domain]:
            raw[table] = (data / "tau_bench" / domain / f"{table}.json").read_bytes()
            decoded: dict[str, Any] = orjson.loads(raw[table])
            rec[table] = {k: orjson.dumps(v) for k, v in decoded.items()}
            shared[table] = {k: _freeze(v) for k, v in decoded.items()}
        return cls(domain, raw, rec, shared)

    def fresh(self, mode: Literal["lazy", "full"] = "lazy") -> dict[str, dict[str, Any]]:
        """A database no earlier episode has touched: copy-on-lookup tables, or a full decode."""
        if mode == "full":
            return {t: orjson.loads(b) for t, b in self.raw.items()}
        return {t: _Table(self.shared[t], self.record_bytes[t]) for t in self.shared}


@lru_cache(maxsize=4)
def _database(data: Path, domain: str) -> Database:
    return Database.load(data, domain)


def load_tools(data: Path, domain: str) -> dict[str, Invoke]:
    """`{tool name: invoke}` from τ-bench's `ALL_TOOLS`, imported in place from `<data>/tau_bench/tool_code`."""
    code = (data / "tau_bench" / "tool_code").resolve()
    if str(code) not in sys.path:
        sys.path.insert(0, str(code))
    mod = importlib.import_module(f"tau_bench.envs.{domain}.tools")
    where = Path(mod.__file__ or "").resolve()
    if not where.is_relative_to(code):
        raise RuntimeError(f"tau_bench was already imported from {where.parent}, not from {code}")
    return {cls.get_info()["function"]["name"]: cls.invoke for cls in mod.ALL_TOOLS}


# ---- one episode ------------------------------------------------------------------------------------


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _decode(out: Any) -> Any:
    """A tool's string: decoded when it is a JSON object or array, else the string itself."""
    if isinstance(out, str) and out[:1] in ("{", "["):
        try:
            return orjson.loads(out)
        except orjson.JSONDecodeError:
            return out
    return out


class Episode:
    """One agent run on its own fresh database; `call` invokes a tool as τ-bench's `Env.step` does."""

    def __init__(
        self, tools: dict[str, Invoke], db: dict[str, Any], rng: random.Random, trace_id: str, task_id: str
    ) -> None:
        self.tools, self.db, self.rng = tools, db, rng
        self.trace_id, self.task_id = trace_id, task_id
        self.records: list[Record] = []
        self.error: str | None = None

    def call(self, tool: str, **args: Any) -> Any:
        """The decoded result, or None when the tool answered `Error: …` (then in `self.error`)."""
        blob = orjson.dumps(args)
        try:
            out = self.tools[tool](self.db, **orjson.loads(blob))  # the tool may keep what it is given
        except SharedWriteError:
            raise
        except Exception as e:
            out = f"Error: {e}"
        rec: Record = {
            "trace_id": self.trace_id,
            "task_id": self.task_id,
            "step": len(self.records),
            "tool": tool,
            "arguments": orjson.loads(blob),
        }
        if isinstance(out, str) and out.startswith("Error:"):
            self.error = out
            rec.update(result=None, status="error", error=out)
            value = None
        else:
            self.error = None
            value = _decode(out)
            rec.update(result=value, status="ok", error=None)  # the agent reads it and never changes it
        self.records.append(rec)
        return value

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


def _money(x: float) -> float:
    return round(x, 2)


def _calc_expr(values: Iterable[float]) -> str:
    return " + ".join(str(v) for v in values)


# ---- retail -----------------------------------------------------------------------------------------

RETAIL_BY_STATUS: dict[str, tuple[tuple[str, int], ...]] = {
    "pending": (("cancel", 3), ("address", 2), ("payment", 3), ("items", 3)),
    "delivered": (("exchange", 4), ("return", 5)),
    "processed": (("cancel", 2), ("address", 1), ("return", 1)),
    "cancelled": (("return", 1), ("exchange", 1), ("cancel", 1)),
}
RETAIL_NEEDS = {
    "cancel": "pending",
    "address": "pending",
    "payment": "pending",
    "items": "pending",
    "exchange": "delivered",
    "return": "delivered",
}
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
# how often the agent calls a write tool although what it read says the call cannot succeed
P_IGNORE_STATUS = 0.45
P_IGNORE_BALANCE = 0.45


@dataclass
class Task:
    index: int
    user_id: str
    intents: list[tuple[str, str | None]]


def _weighted(rng: random.Random, pairs: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([k for k, _ in pairs], weights=[w for _, w in pairs])[0]


def _retail_task(db: Database, index: int, seed: int) -> Task:
    rng = _rng(seed, "retail", index)
    users, orders = db.shared["users"], db.shared["orders"]
    ids = sorted(users)
    with_orders = [u for u in ids if users[u]["orders"]]
    uid = rng.choice(with_orders if rng.random() < 0.95 else ids)
    own = list(users[uid]["orders"])
    n = 0 if not own else rng.choices([1, 2, 3], weights=[65, 28, 7])[0]
    intents: list[tuple[str, str | None]] = []
    for _ in range(n):
        oid = intents[-1][1] if intents and rng.random() < 0.4 else rng.choice(own)  # more about one order
        assert oid is not None
        intents.append((_weighted(rng, RETAIL_BY_STATUS[orders[oid]["status"]]), oid))
    if not intents or rng.random() < 0.12:
        intents.append(("user_address", None))
    return Task(index, uid, intents)


@dataclass
class _RetailAgent:
    ep: Episode
    profile: dict[str, Any]  # what the simulated user knows about themselves (email, name, zip)
    user_id: str = ""
    user: dict[str, Any] = field(default_factory=dict)
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    products: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)

    # -- reads --
    def identify(self) -> bool:
        ep, p = self.ep, self.profile
        by_email = ep.chance(0.55)
        for attempt in range(2):
            if by_email:
                email = p["email"]
                if attempt == 0 and ep.chance(0.05):  # the user misspells it
                    email = email.replace("@example.com", "@example.org")
                uid = ep.call("find_user_id_by_email", email=email)
            else:
                zip_ = p["address"]["zip"]
                if attempt == 0 and ep.chance(0.05):
                    zip_ = zip_[:-1] + str((int(zip_[-1]) + 1) % 10)
                first, last = p["name"]["first_name"], p["name"]["last_name"]
                if ep.chance(0.3):
                    first, last = first.lower(), last.lower()
                uid = ep.call("find_user_id_by_name_zip", first_name=first, last_name=last, zip=zip_)
            if isinstance(uid, str):
                self.user_id = uid
                return True
            by_email = not by_email
        return False

    def read_user(self) -> None:
        user = self.ep.call("get_user_details", user_id=self.user_id)
        if isinstance(user, dict):
            self.user = user

    def read_order(self, oid: str, *, typo: bool = False) -> dict[str, Any] | None:
        if typo:
            self.ep.call("get_order_details", order_id=oid.lstrip("#"))
        order = self.ep.call("get_order_details", order_id=oid)
        if isinstance(order, dict):
            self.orders[oid] = order
            return order
        return None

    def read_product(self, pid: str) -> dict[str, Any] | None:
        if pid not in self.products:
            prod = self.ep.call("get_product_details", product_id=pid)
            if not isinstance(prod, dict):
                return None
            self.products[pid] = prod
        return self.products[pid]

    def payment_methods(self) -> list[str]:
        return sorted(self.user.get("payment_methods", {}))

    def balance(self, pm: str) -> float | None:
        b = self.user.get("payment_methods", {}).get(pm, {}).get("balance")
        return float(b) if b is not None else None

    def new_address(self, base: dict[str, Any]) -> dict[str, str]:
        rng = self.ep.rng
        known = [self.user.get("address")] + [o["address"] for _, o in sorted(self.orders.items())]
        others = [a for a in known if a and a != base]
        if others and rng.random() < 0.45:
            return dict(rng.choice(others))
        addr = dict(base)
        if rng.random() < 0.5:
            addr["address2"] = f"{rng.choice(['Suite', 'Apt', 'Unit'])} {rng.randint(100, 999)}"
        else:
            street = addr["address1"].split(" ", 1)[-1]
            addr["address1"] = f"{rng.randint(100, 999)} {street}"
        return addr

    # -- the episode --
    def run(self, task: Task) -> None:
        ep, rng = self.ep, self.ep.rng
        if not self.identify():
            return
        self.read_user()
        if not self.user:
            return
        own: list[str] = list(self.user["orders"])
        targets = [oid for _, oid in task.intents if oid is not None]
        if targets and ep.chance(0.45):  # the user describes the order: the agent walks the list
            for oid in own:
                self.read_order(oid)
                if oid == targets[0]:
                    break
        for oid in dict.fromkeys(targets):
            if oid not in self.orders:
                self.read_order(oid, typo=ep.chance(0.06))
        extra = [o for o in own if o not in self.orders]
        for oid in rng.sample(extra, min(len(extra), rng.choice([0, 1, 1, 2, 2]))):
            self.read_order(oid)
        seen = sorted({i["product_id"] for o in self.orders.values() for i in o["items"]})
        for pid in rng.sample(seen, min(len(seen), rng.choice([0, 1, 2, 2, 3]))):
            self.read_product(pid)
        if ep.chance(0.12):
            ep.call("list_all_product_types")
        if self.orders and ep.chance(0.2):
            some = self.orders[rng.choice(sorted(self.orders))]
            ep.call("calculate", expression=_calc_expr(i["price"] for i in some["items"]))
        for kind, target in task.intents:
            if kind == "user_address":
                self.modify_user_address()
                continue
            assert target is not None
            oid = target
            order = self.orders.get(oid) or self.read_order(oid)
            if order is None:
                continue
            if order["status"] != RETAIL_NEEDS[kind] and not ep.chance(P_IGNORE_STATUS):
                self.refused.append(f"{kind} {oid} ({order['status']})")
                continue
            if ep.chance(0.05):
                ep.call(
                    "think", thought=f"The user wants to {kind} order {oid}; its status is {order['status']}."
                )
            getattr(self, f"do_{kind}")(oid, order)
        if self.refused and ep.chance(0.3):
            ep.call(
                "transfer_to_human_agents",
                summary=f"User {self.user_id} asks for: {'; '.join(self.refused)}, which the policy does not allow.",
            )

    def after_write(self, oid: str, result: Any, *, money: bool = False) -> None:
        if isinstance(result, dict):
            self.orders[oid] = result
            if self.ep.chance(0.35):
                self.read_order(oid)
            if money and self.ep.chance(0.25):
                self.read_user()

    def do_cancel(self, oid: str, order: dict[str, Any]) -> None:
        ep = self.ep
        if ep.chance(0.05):  # the user's own words, which the tool refuses
            ep.call("cancel_pending_order", order_id=oid, reason="changed my mind")
        res = ep.call("cancel_pending_order", order_id=oid, reason=ep.rng.choice(CANCEL_REASONS))
        self.after_write(oid, res, money=True)

    def do_address(self, oid: str, order: dict[str, Any]) -> None:
        res = self.ep.call("modify_pending_order_address", order_id=oid, **self.new_address(order["address"]))
        self.after_write(oid, res)

    def do_payment(self, oid: str, order: dict[str, Any]) -> None:
        ep, rng = self.ep, self.ep.rng
        current = order["payment_history"][0]["payment_method_id"]
        amount = order["payment_history"][0]["amount"]
        options = [pm for pm in self.payment_methods() if pm != current]
        if not options:
            return
        careful = not ep.chance(P_IGNORE_BALANCE)
        if careful:
            options = [pm for pm in options if (b := self.balance(pm)) is None or b >= amount] or options
        res = ep.call("modify_pending_order_payment", order_id=oid, payment_method_id=rng.choice(options))
        self.after_write(oid, res, money=True)

    def swap_items(self, order: dict[str, Any]) -> tuple[list[str], list[str], float]:
        """Items to change and their new variants (same product), chosen from the product details."""
        rng = self.ep.rng
        items = order["items"]
        picked = rng.sample(items, min(len(items), rng.choices([1, 2, 3], weights=[6, 3, 1])[0]))
        old_ids, new_ids, diff = [], [], 0.0
        for item in picked:
            prod = self.read_product(item["product_id"])
            if prod is None:
                continue
            variants = prod["variants"]
            others = [v for v in sorted(variants) if v != item["item_id"]]
            ok = [v for v in others if variants[v]["available"]]
            gone = [v for v in others if not variants[v]["available"]]
            pool = gone if gone and rng.random() < 0.08 else ok
            if not pool:
                continue
            new = rng.choice(pool)
            old_ids.append(item["item_id"])
            new_ids.append(new)
            diff += variants[new]["price"] - item["price"]
        return old_ids, new_ids, _money(diff)

    def pay_difference(self, order: dict[str, Any], diff: float) -> str | None:
        rng = self.ep.rng
        pms = self.payment_methods()
        if not pms:
            return None
        original = order["payment_history"][0]["payment_method_id"]
        pm = original if original in pms and rng.random() < 0.6 else rng.choice(pms)
        if (b := self.balance(pm)) is not None and b < diff and not self.ep.chance(P_IGNORE_BALANCE):
            non_gift = [p for p in pms if self.balance(p) is None]
            pm = rng.choice(non_gift) if non_gift else pm
        return pm

    def do_items(self, oid: str, order: dict[str, Any], tool: str = "modify_pending_order_items") -> None:
        ep = self.ep
        old_ids, new_ids, diff = self.swap_items(order)
        if not old_ids:
            return
        if ep.chance(0.5):
            prices = {i["item_id"]: i["price"] for i in order["items"]}
            news = [self.variant_price(order, o, n) for o, n in zip(old_ids, new_ids, strict=True)]
            ep.call(
                "calculate", expression=f"{_calc_expr(news)} - ({_calc_expr(prices[o] for o in old_ids)})"
            )
        pm = self.pay_difference(order, diff)
        if pm is None:
            return
        res = ep.call(tool, order_id=oid, item_ids=old_ids, new_item_ids=new_ids, payment_method_id=pm)
        self.after_write(oid, res, money=True)

    def variant_price(self, order: dict[str, Any], old: str, new: str) -> float:
        pid = next(i["product_id"] for i in order["items"] if i["item_id"] == old)
        price: float = self.products[pid]["variants"][new]["price"]
        return price

    def do_exchange(self, oid: str, order: dict[str, Any]) -> None:
        self.do_items(oid, order, tool="exchange_delivered_order_items")

    def do_return(self, oid: str, order: dict[str, Any]) -> None:
        ep, rng = self.ep, self.ep.rng
        items = order["items"]
        ids = [i["item_id"] for i in rng.sample(items, rng.randint(1, len(items)))]
        pms = self.payment_methods()
        original = order["payment_history"][0]["payment_method_id"]
        gifts = [p for p in pms if self.balance(p) is not None]
        r = rng.random()
        if r < 0.7 or not pms:
            pm = original
        elif r < 0.9 and gifts:
            pm = rng.choice(gifts)
        else:
            pm = rng.choice(pms)
        if ep.chance(0.3):
            ep.call("calculate", expression=_calc_expr(i["price"] for i in items if i["item_id"] in ids))
        res = ep.call("return_delivered_order_items", order_id=oid, item_ids=ids, payment_method_id=pm)
        self.after_write(oid, res)

    def modify_user_address(self) -> None:
        base = self.user.get("address")
        if not base:
            return
        res = self.ep.call("modify_user_address", user_id=self.user_id, **self.new_address(base))
        if isinstance(res, dict):
            self.user = res
            if self.ep.chance(0.3):
                self.read_user()


def _retail_episode(ep: Episode, task: Task, db: Database) -> None:
    _RetailAgent(ep, db.shared["users"][task.user_id]).run(task)


# ---- airline ----------------------------------------------------------------------------------------

AIRLINE_KINDS: tuple[tuple[str, int], ...] = (
    ("book", 3),
    ("cancel", 3),
    ("flights", 3),
    ("baggage", 2),
    ("passengers", 1),
    ("certificate", 1),
)
FREE_BAGS = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 3},
}
CABINS = ("basic_economy", "economy", "business")
FUTURE_DATES = tuple(f"2024-05-{d:02d}" for d in range(16, 31))
DAY_BEFORE = "2024-05-14T15:00:00"


@dataclass
class Trip:
    origin: str
    destination: str
    round_trip: bool
    cabin: str
    dates: tuple[str, str]
    companions: int
    bags: int
    insurance: bool


def _airline_task(db: Database, index: int, seed: int) -> tuple[Task, Trip]:
    rng = _rng(seed, "airline", index)
    users, flights = db.shared["users"], db.shared["flights"]
    uid = rng.choice(sorted(users))
    own = list(users[uid]["reservations"])
    n = rng.choices([1, 2, 3], weights=[35, 45, 20])[0]
    intents: list[tuple[str, str | None]] = []
    for _ in range(n):
        kind = _weighted(rng, AIRLINE_KINDS)
        if kind == "book" or not own:
            intents.append(("book", None))
        else:
            intents.append((kind, rng.choice(own)))
    first = flights[rng.choice(sorted(flights))]
    origin, destination = first["origin"], first["destination"]
    if rng.random() < 0.3:  # a trip that may need a connection
        onward = sorted(
            k for k, f in flights.items() if f["origin"] == destination and f["destination"] != origin
        )
        if onward:
            destination = flights[rng.choice(onward)]["destination"]
    out = rng.randrange(len(FUTURE_DATES) - 1)
    back = rng.randrange(out + 1, len(FUTURE_DATES))
    trip = Trip(
        origin=origin,
        destination=destination,
        round_trip=rng.random() < 0.4,
        cabin=rng.choices(CABINS, weights=[3, 5, 2])[0],
        dates=(FUTURE_DATES[out], FUTURE_DATES[back]),
        companions=rng.choices([0, 1, 2, 3], weights=[5, 3, 2, 1])[0],
        bags=rng.randint(0, 3),
        insurance=rng.random() < 0.4,
    )
    return Task(index, uid, intents), trip


def _legs(res: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A reservation's flights split into the outbound and the return journey."""
    out: list[dict[str, Any]] = []
    back: list[dict[str, Any]] = []
    cur = out
    for f in res["flights"]:
        cur.append(f)
        if cur is out and f["destination"] == res["destination"]:
            cur = back
    return out, back


def _segments(option: dict[str, Any] | list[dict[str, Any]], date: str) -> list[dict[str, Any]]:
    """A search result (direct: one flight; one stop: a pair) as segments with their date."""
    if isinstance(option, dict):
        return [{**option, "date": date}]
    return list(option)


@dataclass
class _AirlineAgent:
    ep: Episode
    user_id: str
    user: dict[str, Any] = field(default_factory=dict)
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    certificates: int = 0
    refused: list[str] = field(default_factory=list)

    def read_user(self) -> None:
        user = self.ep.call("get_user_details", user_id=self.user_id)
        if isinstance(user, dict):
            self.user = user

    def read_reservation(self, rid: str, *, typo: bool = False) -> dict[str, Any] | None:
        if typo:
            self.ep.call(
                "get_reservation_details", reservation_id=rid.replace("O", "0").replace("I", "1") + "X"
            )
        res = self.ep.call("get_reservation_details", reservation_id=rid)
        if isinstance(res, dict):
            self.reservations[rid] = res
            return res
        return None

    def methods(self, *sources: str) -> list[str]:
        pms = self.user.get("payment_methods", {})
        return [k for k in sorted(pms) if pms[k]["source"] in sources]

    def funds(self, pm: str) -> int | float | None:
        amount: int | float | None = self.user.get("payment_methods", {}).get(pm, {}).get("amount")
        return amount

    def search(self, origin: str, destination: str, date: str) -> list[list[dict[str, Any]]]:
        """Direct flights, or one-stop ones when there is none (or the agent wants more choice)."""
        ep = self.ep
        options: list[list[dict[str, Any]]] = []
        direct = ep.call("search_direct_flight", origin=origin, destination=destination, date=date)
        if isinstance(direct, list):
            options = [_segments(o, date) for o in direct]
        if not options or ep.chance(0.15):
            stop = ep.call("search_onestop_flight", origin=origin, destination=destination, date=date)
            if isinstance(stop, list):
                options += [_segments(o, date) for o in stop]
        return options

    def pick(
        self, options: list[list[dict[str, Any]]], cabin: str, seats: int
    ) -> list[dict[str, Any]] | None:
        rng = self.ep.rng
        fits = [o for o in options if all(s["available_seats"][cabin] >= seats for s in o)]
        pool = fits if fits and rng.random() < 0.97 else options
        return rng.choice(pool) if pool else None

    def run(self, task: Task, trip: Trip) -> None:
        ep, rng = self.ep, self.ep.rng
        self.read_user()
        if not self.user:
            return
        own: list[str] = list(self.user["reservations"])
        targets = list(dict.fromkeys(rid for _, rid in task.intents if rid is not None))
        if targets and ep.chance(0.25):  # the user does not remember the id: the agent looks through them
            for rid in own:
                self.read_reservation(rid)
                if rid == targets[0]:
                    break
        for rid in targets:
            if rid not in self.reservations:
                self.read_reservation(rid, typo=ep.chance(0.1))
        extra = [r for r in own if r not in self.reservations]
        for rid in rng.sample(extra, min(len(extra), rng.choice([0, 1, 1, 2]))):
            self.read_reservation(rid)
        if ep.chance(0.1):
            ep.call("list_all_airports")
        for kind, target in task.intents:
            if kind == "book":
                self.book(trip)
                continue
            assert target is not None
            rid = target
            res = self.reservations.get(rid) or self.read_reservation(rid)
            if res is None or res.get("status") == "cancelled":
                continue
            if ep.chance(0.05):
                ep.call(
                    "think",
                    thought=f"The user wants to change reservation {rid} ({kind}); check the policy first.",
                )
            getattr(self, f"do_{kind}")(rid, res)
        if self.refused and ep.chance(0.3):
            ep.call(
                "transfer_to_human_agents",
                summary=f"User {self.user_id} asks for: {'; '.join(self.refused)}, which the policy does not allow.",
            )

    def after_write(self, rid: str, result: Any, *, money: bool = False) -> None:
        if isinstance(result, dict):
            self.reservations[rid] = result
            if self.ep.chance(0.4):
                self.read_reservation(rid)
            if money and self.ep.chance(0.2):
                self.read_user()

    # -- book --
    def book(self, trip: Trip) -> None:
        ep, rng = self.ep, self.ep.rng
        n = 1 + trip.companions
        chosen: list[dict[str, Any]] = []
        journeys = [(trip.origin, trip.destination, trip.dates[0])]
        if trip.round_trip:
            journeys.append((trip.destination, trip.origin, trip.dates[1]))
        for origin, destination, date in journeys:
            option = self.pick(self.search(origin, destination, date), trip.cabin, n)
            if option is None:
                self.refused.append(f"no flight {origin}-{destination} on {date}")
                return
            chosen += option
        saved = list(self.user.get("saved_passengers", []))
        me = {"first_name": self.user["name"]["first_name"], "last_name": self.user["name"]["last_name"]}
        me["dob"] = self.user["dob"]
        people = ([me] if rng.random() < 0.9 else []) + rng.sample(saved, min(len(saved), trip.companions))
        if not people:
            people = [me]
        n = len(people)
        free = FREE_BAGS[self.user["membership"]][trip.cabin] * n
        nonfree = max(0, trip.bags * n - free) if rng.random() < 0.9 else 0
        fares = [s["prices"][trip.cabin] for s in chosen]  # as the search listed them
        total = sum(fares) * n + (30 * n if trip.insurance else 0) + 50 * nonfree
        if ep.chance(0.6):
            expr = f"({_calc_expr(fares)}) * {n}"
            if trip.insurance:
                expr += f" + 30 * {n}"
            if nonfree:
                expr += f" + 50 * {nonfree}"
            ep.call("calculate", expression=expr)
        if ep.chance(0.15):  # forgot the insurance or the bags in the total
            total -= 30 * n if trip.insurance else 50 * nonfree
        args = {
            "user_id": self.user_id,
            "origin": trip.origin,
            "destination": trip.destination,
            "flight_type": "round_trip" if trip.round_trip else "one_way",
            "cabin": trip.cabin,
            "flights": [{"flight_number": s["flight_number"], "date": s["date"]} for s in chosen],
            "passengers": people,
            "total_baggages": trip.bags * n,
            "nonfree_baggages": nonfree,
            "insurance": "yes" if trip.insurance else "no",
        }
        for _ in range(2):
            payment = self.pay(total)
            if payment is None:
                self.refused.append(f"cannot pay {total}")
                return
            res = ep.call("book_reservation", payment_methods=payment, **args)
            if isinstance(res, dict):
                self.reservations[res["reservation_id"]] = res
                if ep.chance(0.4):
                    self.read_reservation(res["reservation_id"])
                if ep.chance(0.2):
                    self.read_user()
                return
            m = re.search(r"total price is (\d+)", ep.error or "")
            if m is None or not ep.chance(0.8):
                return
            total = int(m.group(1))  # the agent takes the tool's figure and tries again

    def pay(self, total: int) -> list[dict[str, Any]] | None:
        """At most one certificate, one credit card and three gift cards; balances as last read."""
        rng = self.ep.rng
        cards, gifts, certs = (
            self.methods("credit_card"),
            self.methods("gift_card"),
            self.methods("certificate"),
        )
        careful = not self.ep.chance(P_IGNORE_BALANCE)
        plan: list[dict[str, Any]] = []
        left: int | float = total
        if certs and rng.random() < 0.4:
            cert = rng.choice(certs)
            use = min(left, self.funds(cert) or 0)
            plan.append({"payment_id": cert, "amount": use})
            left -= use
        if left and gifts and (not cards or rng.random() < 0.4):
            for g in rng.sample(gifts, min(3, len(gifts))):
                have = self.funds(g) or 0
                use = min(left, have) if careful else left
                if use > 0:
                    plan.append({"payment_id": g, "amount": use})
                    left -= use
                if left <= 0:
                    break
        if left > 0:
            if not cards:
                return None  # not enough on the certificates and gift cards, and no credit card
            plan.append({"payment_id": rng.choice(cards), "amount": left})
        return plan

    def one_method(self, price: float) -> str | None:
        """A credit card or a gift card (not a certificate) that covers `price`, as far as the agent knows."""
        rng = self.ep.rng
        if self.ep.chance(0.06):
            certs = self.methods("certificate")
            if certs:
                return rng.choice(certs)
        pms = self.methods("credit_card", "gift_card")
        if not pms:
            return None
        pm = rng.choice(pms)
        if (f := self.funds(pm)) is not None and f < price and not self.ep.chance(P_IGNORE_BALANCE):
            cards = self.methods("credit_card")
            pm = rng.choice(cards) if cards else pm
        return pm

    # -- changes to a reservation --
    def do_cancel(self, rid: str, res: dict[str, Any]) -> None:
        allowed = res["created_at"] >= DAY_BEFORE or res["cabin"] == "business" or res["insurance"] == "yes"
        flown = any(f["date"] < FUTURE_DATES[0] for f in res["flights"])
        if (not allowed or flown) and not self.ep.chance(0.15):
            self.refused.append(f"cancel {rid}")
            return
        self.after_write(rid, self.ep.call("cancel_reservation", reservation_id=rid))

    def do_baggage(self, rid: str, res: dict[str, Any]) -> None:
        ep = self.ep
        n = len(res["passengers"])
        total = res["total_baggages"] + ep.rng.randint(1, 2 * n)
        free = FREE_BAGS[self.user["membership"]][res["cabin"]] * n
        nonfree = max(res["nonfree_baggages"], total - free)
        fee = 50 * (nonfree - res["nonfree_baggages"])
        if fee and ep.chance(0.3):
            ep.call("calculate", expression=f"50 * {nonfree - res['nonfree_baggages']}")
        pm = self.one_method(fee)
        if pm is None:
            return
        res2 = ep.call(
            "update_reservation_baggages",
            reservation_id=rid,
            total_baggages=total,
            nonfree_baggages=nonfree,
            payment_id=pm,
        )
        self.after_write(rid, res2, money=bool(fee))

    def do_flights(self, rid: str, res: dict[str, Any]) -> None:
        ep, rng = self.ep, self.ep.rng
        if res["cabin"] != "business" and rng.random() < 0.3:
            self.upgrade(rid, res)
            return
        if res["cabin"] == "basic_economy" and not ep.chance(0.1):
            self.refused.append(f"change flights of basic economy {rid}")
            return
        out, back = _legs(res)
        legs = [out, back] if back else [out]
        i = rng.randrange(len(legs))
        leg = legs[i]
        cabin = res["cabin"]
        if rng.random() < 0.25 and cabin != "business":
            cabin = CABINS[CABINS.index(cabin) + 1]
        if i == 1:  # a new return date after the outbound journey
            dates = [d for d in FUTURE_DATES if d >= out[-1]["date"]]
        else:  # a new outbound date before the return journey, if any
            dates = [d for d in FUTURE_DATES if not back or d <= back[0]["date"]]
        date = rng.choice(dates or FUTURE_DATES)
        n = len(res["passengers"])
        option = self.pick(self.search(leg[0]["origin"], leg[-1]["destination"], date), cabin, n)
        if option is None:
            return
        legs[i] = option
        flights = [{"flight_number": s["flight_number"], "date": s["date"]} for lg in legs for s in lg]
        old = sum(f["price"] for f in res["flights"]) * n
        new = sum(s["prices"][cabin] if "prices" in s else s["price"] for lg in legs for s in lg) * n
        if ep.chance(0.4):
            ep.call("calculate", expression=f"{new} - {old}")
        pm = self.one_method(new - old)
        if pm is None:
            return
        res2 = ep.call(
            "update_reservation_flights", reservation_id=rid, cabin=cabin, flights=flights, payment_id=pm
        )
        self.after_write(rid, res2, money=True)

    def upgrade(self, rid: str, res: dict[str, Any]) -> None:
        """A cabin change on the same flights: every segment is re-priced, so each must still be on sale."""
        ep = self.ep
        cabin = CABINS[CABINS.index(res["cabin"]) + 1]
        n = len(res["passengers"])
        new, on_sale = 0, True
        for seg in res["flights"]:
            found = ep.call(
                "search_direct_flight", origin=seg["origin"], destination=seg["destination"], date=seg["date"]
            )
            match = [f for f in found or [] if f["flight_number"] == seg["flight_number"]]
            on_sale = on_sale and bool(match)
            new += match[0]["prices"][cabin] if match else seg["price"]
        if not on_sale and not ep.chance(P_IGNORE_STATUS):
            self.refused.append(f"upgrade {rid} to {cabin}")
            return
        diff = (new - sum(f["price"] for f in res["flights"])) * n
        if ep.chance(0.5):
            ep.call("calculate", expression=f"({new} - {sum(f['price'] for f in res['flights'])}) * {n}")
        pm = self.one_method(diff)
        if pm is None:
            return
        flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in res["flights"]]
        res2 = ep.call(
            "update_reservation_flights", reservation_id=rid, cabin=cabin, flights=flights, payment_id=pm
        )
        self.after_write(rid, res2, money=True)

    def do_passengers(self, rid: str, res: dict[str, Any]) -> None:
        ep, rng = self.ep, self.ep.rng
        people = [dict(p) for p in res["passengers"]]
        saved = [p for p in self.user.get("saved_passengers", []) if p not in people]
        j = rng.randrange(len(people))
        if saved and rng.random() < 0.6:
            people[j] = dict(rng.choice(saved))
        else:  # a corrected date of birth
            y, m, d = people[j]["dob"].split("-")
            people[j]["dob"] = f"{y}-{m}-{(int(d) % 28) + 1:02d}"
        if ep.chance(0.15) and saved:
            people.append(dict(saved[0]))  # the user wants to add someone: the tool refuses
        self.after_write(rid, ep.call("update_reservation_passengers", reservation_id=rid, passengers=people))

    def do_certificate(self, rid: str, res: dict[str, Any]) -> None:
        ep = self.ep
        eligible = (
            self.user["membership"] in ("silver", "gold")
            or res["insurance"] == "yes"
            or res["cabin"] == "business"
        )
        if self.certificates >= 2 or (not eligible and not ep.chance(0.15)):
            self.refused.append(f"compensation for {rid}")
            return
        per = 100 if ep.rng.random() < 0.5 else 50
        self.certificates += 1
        if ep.chance(0.3):
            ep.call("calculate", expression=f"{per} * {len(res['passengers'])}")
        ep.call("send_certificate", user_id=self.user_id, amount=per * len(res["passengers"]))
        if ep.chance(0.3):
            self.read_user()


# ---- the corpus -------------------------------------------------------------------------------------


def generate(
    domain: str,
    *,
    tasks: int,
    seed: int,
    trials: int = DEFAULT_TRIALS,
    data: Path | None = None,
    fresh: Literal["lazy", "full"] = "lazy",
) -> Iterator[Record]:
    """Flat call records of `tasks` × `trials` episodes of `domain` (one episode's records at a time)."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r} (expected one of {', '.join(DOMAINS)})")
    data = Path(data) if data is not None else DEFAULT_DATA
    tools = load_tools(data, domain)
    db = _database(data.resolve(), domain)
    for t in range(tasks):
        task_id = f"{domain}-{t:04d}"
        if domain == "retail":
            task = _retail_task(db, t, seed)
        else:
            task, trip = _airline_task(db, t, seed)
        for trial in range(trials):
            ep = Episode(tools, db.fresh(fresh), _rng(seed, domain, t, trial), f"{task_id}-{trial}", task_id)
            if domain == "retail":
                _retail_episode(ep, task, db)
            else:
                _AirlineAgent(ep, task.user_id).run(task, trip)
            yield from ep.records


def write(records: Iterable[Record], path: Path) -> int:
    """Write records as sorted-key JSONL (gzip, mtime 0, when `path` ends in .gz); atomic; returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    try:
        with open(tmp, "wb") as raw:
            out: Any = (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
                if path.name.endswith(".gz")
                else raw
            )
            buf: list[bytes] = []
            for rec in records:
                buf.append(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE))
                n += 1
                if len(buf) >= 4096:
                    out.write(b"".join(buf))
                    buf.clear()
            out.write(b"".join(buf))
            if out is not raw:
                out.close()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n


@dataclass
class Tally:
    """Counts of a record stream, taken as it passes through."""

    calls: int = 0
    errors: int = 0
    episodes: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)
    tools: Counter[str] = field(default_factory=Counter)

    def watch(self, records: Iterable[Record]) -> Iterator[Record]:
        for r in records:
            self.calls += 1
            self.errors += r["status"] == "error"
            self.episodes.add(r["trace_id"])
            self.tasks.add(r["task_id"])
            self.tools[r["tool"]] += 1
            yield r

    def line(self, domain: str, seconds: float) -> str:
        share = self.errors / self.calls if self.calls else 0.0
        tools = " ".join(f"{k}={v}" for k, v in sorted(self.tools.items()))
        return (
            f"{domain}: {self.calls} calls, {len(self.episodes)} episodes, {len(self.tasks)} tasks, "
            f"{self.errors} errors ({share:.1%}), {seconds:.1f}s; {tools}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--domain", choices=[*DOMAINS, "both"], required=True)
    ap.add_argument("--tasks", type=int, default=DEFAULT_TASKS)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--trials", type=int, default=DEFAULT_TRIALS, help="episodes per task")
    ap.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (default ../shared/data)"
    )
    ap.add_argument("-o", "--out", type=Path, required=True, help="a file, or a folder with --domain both")
    a = ap.parse_args(argv)
    if a.tasks < 0 or a.trials < 1:
        print("error: --tasks must be >= 0 and --trials >= 1", file=sys.stderr)
        return 2
    if not (a.data / "tau_bench" / "tool_code").is_dir():
        print(f"error: τ-bench data not found under {a.data} (expected tau_bench/tool_code)", file=sys.stderr)
        return 2
    domains = list(DOMAINS) if a.domain == "both" else [a.domain]
    for domain in domains:
        out = a.out / f"{domain}.jsonl.gz" if a.domain == "both" else a.out
        start = time.perf_counter()
        tally = Tally()
        write(tally.watch(generate(domain, tasks=a.tasks, seed=a.seed, trials=a.trials, data=a.data)), out)
        print(tally.line(domain, time.perf_counter() - start), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
