"""The faulty set: clean episodes with about a fifth of their ok calls carrying one injected fault.

Why every fault is aimed at a planted invariant and recorded only in `labels`: the faulty set is the
ground truth an audit is scored against, so each changed value must be one a contract could catch
(or, for `plausible_string`, deliberately one it cannot), and nothing but the label may tell a
checker where it is. Faulty episodes belong to their own tasks (`retail-900` … `retail-999`), so
mining the clean set never sees one.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .catalog import World
from .episodes import episode_start, make_episode
from .planted import Rule
from .pointers import del_ptr, get_ptr, instances, set_ptr
from .tasks import make_task
from .vocab import CITIES, FIRST

FAULTY_TASKS = range(900, 1000)  # retail-900 … retail-999
EPISODES_PER_FAULTY_TASK = 10
FAULT_RATE = 0.2

#: Every fault kind, in the order the README lists them, with what it does (the README's table).
FAULT_KINDS = {
    "sign_flip": "negates a positive count or amount",
    "drop_field": "removes a required field",
    "null_field": "sets a typed field to null",
    "type_swap": "writes a number as a string",
    "stale_echo": "a result id that differs from the argument id",
    "date_swap": "swaps the two dates of an ordered pair",
    "relation_break": "moves a relation's left side by a few cents / units",
    "domain_drift": "a status-like value outside the domain",
    "plausible_string": "a realistic but wrong name, email, city or SKU (invisible to contracts by design)",
    "truncated_list": "cuts `/items` or `/lines` short, breaking the sum relation",
}

#: A new value per DOMAIN path, never one of the planted values.
DRIFT = {
    "/warehouse": ("south", "overflow"),
    "/status": ("on_hold", "unknown", "backordered"),
    "/shipments/*/status": ("lost", "exception"),
    "/tier": ("platinum", "staff"),
    "/results/*/category": ("electronics", "grocery"),
    "/service": ("same_day", "freight"),
    "/carrier": ("lasership", "ontrac"),
    "/currency": ("JPY", "CAD"),
    "/reason": ("other", "fraud"),
    "/method": ("gift_card", "check"),
}
#: Realistic but wrong strings (invisible to structural contracts by design).
PLAUSIBLE = {
    "get_customer": ("/name", "/email"),
    "get_order": ("/items/*/name", "/shipping_address/city"),
    "search_products": ("/results/*/name",),
    "create_invoice": ("/lines/*/sku",),
}
ID_ECHO_ARGS = ("$args/order_id", "$args/customer_id", "$args/sku")
#: Kinds that apply to few calls (only multi-item orders and invoices can be truncated, only four tools
#: carry a plausible string) are drawn more often when they do apply, to even out the kind counts.
KIND_WEIGHT = {"truncated_list": 8, "plausible_string": 2}


@dataclass(frozen=True)
class Fault:
    """One way to fault one call. All candidates are collected before one is drawn, so the draw is
    uniform over what applies to the call."""

    kind: str
    path: str
    apply: Callable[[dict[str, Any]], dict[str, Any]]  # mutates the result, returns extra label keys


def _plausible_value(world: World, rng: random.Random, path: str, old: str) -> str:
    for _ in range(50):
        if path == "/name":
            new = f"{rng.choice(FIRST)} {old.split(' ', 1)[1]}" if " " in old else rng.choice(FIRST)
        elif path == "/email":
            local, _, domain = old.partition("@")
            new = f"{rng.choice(FIRST).lower()}.{local.split('.', 1)[-1]}@{domain}"
        elif path.endswith("/city"):
            new = rng.choice(CITIES)[0]
        elif path.endswith("/sku"):
            new = rng.choice(world.products).sku
        else:
            new = rng.choice(world.products).name
        if new != old:
            return new
    raise AssertionError(path)


def _other_id(world: World, rng: random.Random, arg_path: str, old: str) -> str:
    if arg_path.endswith("order_id"):
        return f"ORD-{int(old.split('-')[1]) + rng.choice((-8, -4, 4, 8, 12))}"
    if arg_path.endswith("customer_id"):
        return next(c.customer_id for c in rng.sample(world.customers, 5) if c.customer_id != old)
    return next(p.sku for p in rng.sample(world.products, 5) if p.sku != old)


def candidate_faults(
    world: World, rec: dict[str, Any], rules: list[Rule], rng: random.Random
) -> dict[str, list[Fault]]:
    """Every fault that can be planted in this call, by kind, each aimed at a planted invariant."""
    res, tool = rec["result"], rec["tool"]
    out: dict[str, list[Fault]] = {k: [] for k in FAULT_KINDS}

    def setter(ptr: str, new: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def f(r: dict[str, Any]) -> dict[str, Any]:
            set_ptr(r, ptr, new)
            return {}

        return f

    for rule in (r for r in rules if r["tool"] == tool):
        code, paths = rule["code"], rule["paths"]
        if code in ("POSITIVE", "NONNEG"):
            for ptr, v in instances(res, paths[0]):
                if isinstance(v, int | float) and v > 0:
                    out["sign_flip"].append(Fault("sign_flip", ptr, setter(ptr, -v)))
        elif code == "REQUIRED":
            for ptr, _v in instances(res, paths[0]):

                def drop(r: dict[str, Any], ptr: str = ptr) -> dict[str, Any]:
                    del_ptr(r, ptr)
                    return {}

                out["drop_field"].append(Fault("drop_field", ptr, drop))
        elif code == "TYPE" and rule["params"]["kind"] not in ("array", "object"):
            for ptr, v in instances(res, paths[0]):
                out["null_field"].append(Fault("null_field", ptr, setter(ptr, None)))
                if isinstance(v, int | float) and not isinstance(v, bool):
                    out["type_swap"].append(Fault("type_swap", ptr, setter(ptr, str(v))))
        elif code == "ECHO" and paths[1] in ID_ECHO_ARGS:
            ok, v = get_ptr(res, paths[0])
            if ok:
                new_id = _other_id(world, rng, paths[1], v)
                out["stale_echo"].append(Fault("stale_echo", paths[0], setter(paths[0], new_id)))
        elif code == "DATE_ORDER":
            (ok_a, a), (ok_b, b) = get_ptr(res, paths[0]), get_ptr(res, paths[1])
            if ok_a and ok_b and a != b:

                def swap(
                    r: dict[str, Any], pa: str = paths[0], pb: str = paths[1], a: Any = a, b: Any = b
                ) -> dict[str, Any]:
                    set_ptr(r, pa, b)
                    set_ptr(r, pb, a)
                    return {"swapped_with": pb}

                out["date_swap"].append(Fault("date_swap", paths[0], swap))
        elif code == "RELATION":
            for ptr, v in instances(res, paths[0]):
                # A small move that keeps the value's sign, so only the relation breaks.
                broken: int | float
                if isinstance(v, int):
                    broken = v + rng.choice((-3, -2, -1, 1, 2, 3))
                    broken = broken if broken >= 0 else v + 2
                else:
                    broken = round(v + rng.choice((-0.07, -0.03, -0.01, 0.01, 0.02, 0.05)), 2)
                    broken = broken if broken > 0 else round(v + 0.05, 2)
                out["relation_break"].append(Fault("relation_break", ptr, setter(ptr, broken)))
        elif code == "DOMAIN":
            for ptr, _v in instances(res, paths[0]):
                out["domain_drift"].append(
                    Fault("domain_drift", ptr, setter(ptr, rng.choice(DRIFT[paths[0]])))
                )
    for pattern in PLAUSIBLE.get(tool, ()):
        for ptr, v in instances(res, pattern):
            new = _plausible_value(world, rng, pattern, v)
            out["plausible_string"].append(Fault("plausible_string", ptr, setter(ptr, new)))
    for pattern in ("/items", "/lines"):
        for ptr, v in instances(res, pattern):
            if isinstance(v, list) and len(v) >= 2:
                keep = rng.randint(1, len(v) - 1)
                out["truncated_list"].append(Fault("truncated_list", ptr, setter(ptr, v[:keep])))
    return {k: v for k, v in out.items() if v}


def inject(
    world: World, episode: list[dict[str, Any]], rules: list[Rule], trace_id: str
) -> list[dict[str, Any]]:
    """A faulty copy of a clean episode: about FAULT_RATE of its ok calls get one fault, at least one.

    The fault is recorded only in `labels` (`fault`, `fault_path`, `original`; `swapped_with` for
    date_swap); the episode's reward becomes 0.0. The kind is drawn uniformly among the kinds that
    apply to the call, then the target uniformly among that kind's candidates.
    """
    rng = random.Random(f"{world.seed}:faults:{trace_id}")
    out = copy.deepcopy(episode)
    ok_idx = [i for i, r in enumerate(out) if r["status"] == "ok"]
    chosen = [i for i in ok_idx if rng.random() < FAULT_RATE] or [rng.choice(ok_idx)]
    for r in out:
        r["reward"] = 0.0
    for i in chosen:
        rec = out[i]
        cands = candidate_faults(world, rec, rules, rng)
        if not cands:
            continue
        kinds = sorted(cands)
        kind = rng.choices(kinds, [KIND_WEIGHT.get(k, 1) for k in kinds])[0]
        fault = rng.choice(cands[kind])
        _present, original = get_ptr(rec["result"], fault.path)
        extra = fault.apply(rec["result"])
        rec["labels"] = {
            "fault": kind,
            "fault_path": fault.path,
            "original": copy.deepcopy(original),
            **extra,
        }
    return out


def faulty_episodes(
    world: World, rules: list[Rule]
) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
    """`(faulty, their clean originals)`: the originals let tests prove every change is labelled."""
    faulty, originals = [], []
    for t in FAULTY_TASKS:
        task = make_task(world, t)
        for e in range(EPISODES_PER_FAULTY_TASK):
            idx = t * 100 + e
            trace_id = f"ep-{idx:05d}"
            ep = make_episode(world, task, trace_id, episode_start(idx), 0.0)
            originals.append(ep)
            faulty.append(inject(world, ep, rules, trace_id))
    return faulty, originals
