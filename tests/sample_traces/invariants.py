"""A plain-Python checker of the planted invariants, independent of the miner.

The sample world's tests use it to prove that every invariant `sample_traces/planted.json` lists really
holds in the clean data with the support the miner's default thresholds need, that every noise field
really breaks the rules it must not become, and that every injected fault breaks a planted invariant
(except `plausible_string`, invisible to structural contracts by design). It reads rule paths in the
planted notation: result patterns with `*` for array indexes, argument patterns prefixed `$args`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

ARGS = "$args"


def side_and_pattern(rule_path: str) -> tuple[str, str]:
    if rule_path.startswith(ARGS):
        return "arguments", rule_path[len(ARGS) :]
    return "result", rule_path


def instances(doc: Any, pattern: str) -> list[tuple[str, Any]]:
    """`(pointer, value)` for every node matching `pattern` (`*` = any array index)."""
    found: list[tuple[str, Any]] = [("", doc)]
    for tok in pattern.split("/")[1:] if pattern else []:
        nxt: list[tuple[str, Any]] = []
        for ptr, v in found:
            if tok == "*" and isinstance(v, list):
                nxt.extend((f"{ptr}/{i}", x) for i, x in enumerate(v))
            elif tok != "*" and isinstance(v, dict) and tok in v:
                nxt.append((f"{ptr}/{tok}", v[tok]))
        found = nxt
    return found


def values(rec: dict[str, Any], rule_path: str) -> list[Any]:
    side, pattern = side_and_pattern(rule_path)
    return [v for _p, v in instances(rec[side], pattern)]


def kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def close(a: float, b: float) -> bool:
    """Exact for integers; to the cent (and 1e-9 relative) for 2-decimal amounts."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return abs(a - b) < 0.005 and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def date(s: Any) -> datetime | None:
    if not isinstance(s, str) or len(s) < 10:
        return None
    try:
        t = datetime.fromisoformat(s)
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


@dataclass
class Tally:
    """What one rule saw over a set of calls: qualifying examples, counterexamples, support."""

    examples: int = 0
    calls: int = 0
    violations: list[str] = field(default_factory=list)
    tasks: set[str] = field(default_factory=set)
    distinct: set[Any] = field(default_factory=set)
    value_tasks: dict[Any, set[str]] = field(default_factory=dict)
    value_counts: dict[Any, int] = field(default_factory=dict)


def _linear_holds(
    rec: dict[str, Any], paths: list[str], coef: list[int]
) -> tuple[bool, tuple[Any, ...]] | None:
    vals = []
    for p in paths:
        vs = values(rec, p)
        if len(vs) != 1 or not is_num(vs[0]):
            return None
        vals.append(vs[0])
    rhs = sum(c * x for c, x in zip(coef, vals[1:], strict=True))
    return close(vals[0], rhs), tuple(vals)


def _condition(when: dict[str, Any], v: Any) -> bool:
    """Whether a discriminator value meets a CONDITIONAL rule's `when`."""
    if "sign" in when:
        if not is_num(v):
            return False
        return ("zero" if v == 0 else "positive" if v > 0 else "negative") in when["sign"]
    return any(kind(v) == kind(w) and v == w for w in when["in"])


def check_call(rule: dict[str, Any], rec: dict[str, Any], t: Tally) -> None:
    """Add one call's evidence for `rule` to `t` (the call's tool must be the rule's tool)."""
    code, paths, params = rule["code"], rule["paths"], rule["params"]
    res = rec["result"]
    where = f"{rec['trace_id']}#{rec['step']}"
    before = t.examples
    if code == "REQUIRED":
        parent, _, key = paths[0].rpartition("/")
        for ptr, node in instances(res, parent):
            if isinstance(node, dict):
                t.examples += 1
                if key not in node:
                    t.violations.append(f"{where}: {ptr}/{key} missing")
    elif code == "TYPE":
        for v in values(rec, paths[0]):
            t.examples += 1
            k = kind(v)
            ok = k == params["kind"] or (params["kind"] == "number" and k == "int")
            if not ok:
                t.violations.append(f"{where}: {paths[0]} is {k}")
    elif code in ("POSITIVE", "NONNEG"):
        for v in values(rec, paths[0]):
            t.examples += 1
            if not is_num(v) or (v <= 0 if code == "POSITIVE" else v < 0):
                t.violations.append(f"{where}: {paths[0]} = {v!r}")
    elif code == "DOMAIN":
        for v in values(rec, paths[0]):
            t.examples += 1
            if v not in params["values"]:
                t.violations.append(f"{where}: {paths[0]} = {v!r}")
            t.value_counts[v] = t.value_counts.get(v, 0) + 1
            t.value_tasks.setdefault(v, set()).add(rec["task_id"])
    elif code == "ECHO":
        a, b = values(rec, paths[0]), values(rec, paths[1])
        if len(a) == 1 and len(b) == 1:
            t.examples += 1
            t.distinct.add(orjson_key(b[0]))
            if a[0] != b[0] or kind(a[0]) != kind(b[0]):
                t.violations.append(f"{where}: {a[0]!r} != {b[0]!r}")
    elif code == "DATE_ORDER":
        a, b = values(rec, paths[0]), values(rec, paths[1])
        if len(a) == 1 and len(b) == 1:
            da, db = date(a[0]), date(b[0])
            if da is None or db is None:
                t.violations.append(f"{where}: not zoned ISO dates {a[0]!r}, {b[0]!r}")
            else:
                t.examples += 1
                if not da <= db:
                    t.violations.append(f"{where}: {a[0]} > {b[0]}")
    elif code == "RELATION":
        form = params["form"]
        if form == "linear":
            got = _linear_holds(rec, paths, params["coef"])
            if got is not None:
                t.examples += 1
                t.distinct.add(got[1])
                if not got[0]:
                    t.violations.append(f"{where}: {paths[0]} != {params['coef']} . {paths[1:]} ({got[1]})")
        elif form == "product":
            a, x, y = (values(rec, p) for p in paths)
            if a and len(a) == len(x) == len(y):
                t.examples += 1
                for va, vx, vy in zip(a, x, y, strict=True):
                    t.distinct.add((va, vx, vy))
                    if not (is_num(va) and is_num(vx) and is_num(vy) and close(va, vx * vy)):
                        t.violations.append(f"{where}: {va!r} != {vx!r} * {vy!r}")
            elif a or x or y:
                t.violations.append(f"{where}: product operands misaligned")
        elif form == "sum_over":
            a, xs = values(rec, paths[0]), values(rec, paths[1])
            if len(a) == 1:
                t.examples += 1
                total = sum(xs) if all(is_num(x) for x in xs) else None
                t.distinct.add((a[0], total))
                if total is None or not is_num(a[0]) or not close(a[0], total):
                    t.violations.append(f"{where}: {a[0]!r} != sum {xs!r}")
        else:
            raise AssertionError(form)
    elif code == "CONDITIONAL":
        d = values(rec, paths[1])
        if len(d) == 1 and _condition(params["when"], d[0]):
            t.examples += 1
            p = values(rec, paths[0])
            then = params["then"]
            if then == "present" and not p:
                t.violations.append(f"{where}: {paths[0]} missing with {paths[1]} = {d[0]!r}")
            elif then == "absent" and p:
                t.violations.append(f"{where}: {paths[0]} present with {paths[1]} = {d[0]!r}")
            elif then in ("nonempty", "empty") and (
                len(p) != 1 or not isinstance(p[0], list) or (len(p[0]) > 0) != (then == "nonempty")
            ):
                t.violations.append(f"{where}: {paths[0]} = {p!r} with {paths[1]} = {d[0]!r}")
    else:
        raise AssertionError(code)
    if t.examples > before:
        t.calls += 1
        t.tasks.add(rec["task_id"])


def orjson_key(v: Any) -> Any:
    return (kind(v), v) if not isinstance(v, list | dict) else (kind(v), repr(v))


def tally(rule: dict[str, Any], records: Iterable[dict[str, Any]]) -> Tally:
    """Evidence for `rule` over the ok calls of its tool among `records`."""
    t = Tally()
    for rec in records:
        if rec["tool"] == rule["tool"] and rec["status"] == "ok":
            check_call(rule, rec, t)
    return t


def broken_rules(rules: list[dict[str, Any]], rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules of `rec`'s tool that this one call violates."""
    out = []
    for r in rules:
        if r["tool"] == rec["tool"]:
            t = Tally()
            check_call(r, rec, t)
            if t.violations:
                out.append(r)
    return out
