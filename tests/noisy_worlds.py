"""Random small corpora that reach every rule class, for the property tests that mine them: random tools
(ids echoed from arguments, counts and amounts, states and state-dependent fields, ordered dates, sums and
products, item lists, id maps, optional, null and mixed-kind fields, list and scalar results), random
tasks, episodes and folds, random noise that breaks each invariant on some calls, error calls, faulty
(labelled) episodes and rewards, and a registry declaring output schemas for some tools. Read by
tests/mining/test_verify_by_construction.py and RELATION's plan tests (tests/codes/relation/)."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from output_contracts.codes.mine_params import MineParams, default_min_tasks
from output_contracts.codes.table import names

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
STATES = ("open", "paid", "shipped", "cancelled", "returned")
WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma")
#: What noise can break on a call: each names one invariant of the world below.
BREAKS = (
    "echo",
    "sign",
    "domain",
    "sum",
    "product",
    "count",
    "order",
    "missing",
    "kind",
    "unique",
    "empty",
    "entity",
    "state",
    "shape",
    "range",
    "date",
)


@dataclass(frozen=True)
class World:
    """The knobs of one random corpus (the values themselves come from `seed`)."""

    seed: int
    tasks: int
    episodes: int  # per task
    calls: int  # most calls an episode makes
    tools: int
    ids: int  # entities per task
    noise: float  # chance that a call breaks one invariant
    faulty: float  # chance that an episode is labelled faulty (its calls break freely)
    errors: float  # chance that a call is an error call
    rewards: bool  # episodes carry a reward (some below 1)


CODES = names()


FEATURES = ("id", "num", "amount", "state", "dates", "sum", "items", "tags", "map", "name", "opt", "kinds")


def tool_table(r: random.Random, w: World) -> list[tuple[str, str, set[str]]]:
    """(name, result shape, features) of every tool of `w`, drawn first from the world's generator."""
    tools = []
    for t in range(w.tools):
        shape = r.choice(("object", "object", "object", "list", "scalar"))
        tools.append((f"tool_{t}", shape, {f for f in FEATURES if r.random() < 0.45} | {"id"}))
    return tools


#: Declarable fields per feature: (field, the declaration its data honours, one it may not honour).
DECLARED: dict[str, list[tuple[str, dict[str, Any], dict[str, Any]]]] = {
    "id": [
        ("id", {"type": "string"}, {"type": "integer"}),
        ("qty", {"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 2}),
        ("code", {"type": "string"}, {"type": "string", "enum": ["AB-001"]}),
    ],
    "num": [("n", {"type": "integer", "minimum": 0}, {"type": "integer", "exclusiveMinimum": 0})],
    "amount": [("amount", {"type": "number", "exclusiveMinimum": 0}, {"type": "integer"})],
    "state": [
        ("state", {"type": "string", "enum": list(STATES)}, {"type": "string", "enum": list(STATES[:3])}),
        ("refunded", {"type": "boolean"}, {"type": "string"}),
    ],
    "dates": [("start", {"type": "string", "format": "date-time"}, {"type": "number"})],
    "items": [
        (
            "items",
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"p": {"type": "number", "minimum": 0}},
                    "required": ["p"],
                },
            },
            {"type": "array", "items": {"type": "object", "required": ["p", "discount"]}},
        )
    ],
    "map": [
        (
            "stock",
            {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            },
            {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"qty": {"type": "string"}}},
            },
        )
    ],
    "name": [("name", {"type": "string"}, {"type": "boolean"})],
    "opt": [("opt", {"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 1})],
    "kinds": [("maybe", {"type": "string"}, {"type": "string", "enum": list(WORDS)})],
}


def registry(w: World) -> dict[str, Any]:
    """A `tools.json` declaring output schemas for some tools of `w`: mostly what the data honours, some
    declarations it contradicts (a wrong type, a narrower enum, a stricter bound, an optional field
    declared required), which mining must leave out of every checker whose data contradicts them."""
    tools = tool_table(random.Random(w.seed), w)
    r = random.Random(w.seed + 1)
    specs = []
    for name, shape, feats in tools:
        if r.random() < 0.4:
            continue
        props: dict[str, Any] = {}
        for f in sorted(feats):
            for field, right, wrong in DECLARED.get(f, []):
                if r.random() < 0.7:
                    props[field] = wrong if r.random() < 0.2 else right
        required = [f for f in props if f not in ("opt", "stock") or r.random() < 0.2]
        obj = {"type": "object", "properties": props, "required": required}
        output = {"object": obj, "list": {"type": "array", "items": obj}, "scalar": {"type": "string"}}[shape]
        spec: dict[str, Any] = {"name": name, "output": output}
        if r.random() < 0.5:
            spec["parameters"] = {"type": "object", "properties": {"id": {"type": "string"}}}
        specs.append(spec)
    return {"tools": specs}


def records(w: World) -> list[dict[str, Any]]:
    """Flat call records of `w`: every tool gets a random subset of the features below."""
    r = random.Random(w.seed)
    tools = tool_table(r, w)
    names: dict[tuple[str, str], str] = {}
    out: list[dict[str, Any]] = []
    for ti in range(w.tasks):
        task = f"task-{ti:02d}"
        for e in range(w.episodes):
            trace = f"{task}-ep{e}"
            faulty = r.random() < w.faulty
            reward = (1.0 if r.random() < 0.8 else 0.0) if w.rewards else None
            for step in range(r.randint(1, w.calls)):
                name, shape, feats = r.choice(tools)
                oid = f"o-{ti}-{e}-{r.randrange(w.ids)}"
                broken = r.choice(BREAKS) if faulty or r.random() < w.noise else None
                rec: dict[str, Any] = {
                    "trace_id": trace,
                    "task_id": task,
                    "step": step,
                    "tool": name,
                    "arguments": {"id": oid, "qty": r.randint(1, 3)},
                }
                if reward is not None:
                    rec["reward"] = reward
                if faulty:
                    rec["labels"] = {"fault": "planted"}
                if r.random() < w.errors:
                    rec.update(status="error", error="boom")
                    out.append(rec)
                    continue
                rec["result"] = result(r, shape, feats, rec["arguments"], broken, names, trace)
                out.append(rec)
    return out


def result(
    r: random.Random,
    shape: str,
    feats: set[str],
    args: dict[str, Any],
    broken: str | None,
    names: dict[tuple[str, str], str],
    trace: str,
) -> Any:
    """One call's result: an object of the tool's features, a list of such objects, or a scalar."""
    if shape == "scalar":
        return r.choice(WORDS) if broken != "kind" else r.randint(0, 9)
    if shape == "list":
        n = r.randint(0, 3) if broken == "empty" else r.randint(1, 3)
        return [obj(r, feats, args, broken if i == 0 else None, names, trace) for i in range(n)]
    return obj(r, feats, args, broken, names, trace)


def obj(
    r: random.Random,
    feats: set[str],
    args: dict[str, Any],
    broken: str | None,
    names: dict[tuple[str, str], str],
    trace: str,
) -> dict[str, Any]:
    """One result object; `broken` names the invariant this object breaks (or None)."""
    o: dict[str, Any] = {}
    oid = str(args["id"])
    if "id" in feats:
        o["id"] = oid if broken != "echo" else f"o-x-{r.randrange(99)}"
        o["qty"] = args["qty"]
        o["code"] = f"AB-{r.randrange(1000):03d}" if broken != "shape" else f"ab{r.randrange(99)}"
    if "num" in feats:
        o["n"] = r.randint(0, 9) if broken != "sign" else r.randint(-9, -1)
        o["big"] = r.randint(100, 900) if broken != "range" else 10**7
    if "amount" in feats:
        o["amount"] = round(r.uniform(0.5, 300), 2) if broken != "sign" else -1.25
    if "state" in feats:
        s = r.choice(STATES) if broken != "domain" else f"odd-{r.randrange(9)}"
        o["state"] = s
        # CONDITIONAL: refunded (and a reason given) in the returned state only
        returned = (s == "returned") != (broken == "state")
        o["refunded"] = returned
        if returned:
            o["reason"] = r.choice(WORDS)
    if "dates" in feats:
        start = T0 + dt.timedelta(hours=r.randint(0, 5000))
        end = start + dt.timedelta(hours=r.randint(1, 90))
        if broken == "order":
            start, end = end, start
        o["start"] = start.isoformat()
        o["end"] = end.isoformat() if broken != "date" else "soon"
        o["day"] = start.date().isoformat()
    if "sum" in feats:
        x, y = r.randint(0, 50), r.randint(0, 50)
        o.update(x=x, y=y, z=x + y + (1 if broken == "sum" else 0))
    if "items" in feats:
        items = []
        for _ in range(r.randint(1, 3) if broken != "empty" else 0):
            p, q = round(r.uniform(1, 30), 2), r.randint(1, 4)
            items.append({"p": p, "q": q, "t": round(p * q + (0.01 if broken == "product" else 0), 2)})
        o["items"] = items
        o["total"] = round(sum(i["t"] for i in items), 2)
        o["count"] = len(items) + (1 if broken == "count" else 0)
    if "tags" in feats:
        tags = r.sample(WORDS, r.randint(1, 4))
        if broken == "unique":
            tags.append(tags[0])
        o["tags"] = tags
        o["lines"] = [
            {"sku": f"s-{i}-{r.randrange(9)}", "n": r.randint(1, 5)} for i in range(r.randint(1, 3))
        ]
    if "map" in feats:
        o["stock"] = {f"k{r.randrange(30)}": {"qty": r.randint(0, 9)} for _ in range(r.randint(1, 3))}
    if "name" in feats:
        # CONSISTENT: an entity's name never changes within an episode (nor across: one name per id)
        key = (trace, oid)
        name = names.setdefault(key, r.choice(WORDS))
        o["name"] = name if broken != "entity" else f"{name}-renamed"
    if "opt" in feats and r.random() < 0.4:
        o["opt"] = r.randint(1, 3)
    if "kinds" in feats:
        o["maybe"] = None if r.random() < 0.3 else r.choice(WORDS)
        o["flag"] = r.random() < 0.5
        o["nested"] = {"a": {"b": r.randint(1, 5)}, "c": [r.randint(0, 3)]}
    if broken == "missing" and o:
        del o[r.choice(sorted(o))]
    if broken == "kind" and o:
        k = r.choice(sorted(o))
        o[k] = str(o[k]) if not isinstance(o[k], str) else r.randint(0, 5)
    return o


def low_params(k: int, seed: int, clean: str, min_tasks: int) -> MineParams:
    """Every code's thresholds low, so that small corpora admit rules of every class."""
    return MineParams(
        k=k,
        seed=seed,
        min_support=dict.fromkeys(CODES, 3),
        min_tasks=dict.fromkeys(default_min_tasks(), min_tasks),
        clean=MineParams.of(clean=clean).clean,
    )
