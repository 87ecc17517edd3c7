"""Every planted invariant holds in the clean set, with support above the miner's default thresholds in
the whole corpus and in every 5-fold checker's training tasks; every noise field breaks the rules it
must not become. Checked with plain Python (tests/sample_traces/invariants.py), independent of the miner."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

import pytest

from tests.sample_traces.invariants import Tally, check_call, instances, tally, values

CODES = {"REQUIRED", "TYPE", "POSITIVE", "NONNEG", "DOMAIN", "ECHO", "DATE_ORDER", "RELATION", "CONDITIONAL"}
#: DESIGN §3 default support, per code: (calls or values, distinct tasks).
SUPPORT = {
    "REQUIRED": (20, 3),
    "TYPE": (20, 3),
    "POSITIVE": (30, 1),
    "NONNEG": (30, 1),
    "DOMAIN": (50, 2),
    "ECHO": (20, 3),
    "DATE_ORDER": (20, 7),
    "RELATION": (30, 1),
    "CONDITIONAL": (30, 30),
}
K, SEED = 5, 13


def fold_of(task_id: str, seed: int, k: int) -> int:
    """DESIGN §3's fold assignment, restated here so this test does not depend on the miner's import
    chain (output_contracts.codes.folds implements the same formula)."""
    return int(hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()[:8], 16) % k


def meets_support(rule: dict[str, Any], t: Tally, factor: float = 1.0) -> list[str]:
    """Why `t` would not support `rule` at `factor` times the default thresholds (empty = it would)."""
    code = rule["code"]
    n_min, tasks_min = SUPPORT[code]
    why = []
    n = t.examples if code in ("POSITIVE", "NONNEG", "DOMAIN") else t.calls
    if n < n_min * factor:
        why.append(f"support {n} < {n_min * factor}")
    if len(t.tasks) < tasks_min * factor:
        why.append(f"tasks {len(t.tasks)} < {tasks_min * factor}")
    if code == "DOMAIN":
        vals = rule["params"]["values"]
        if len(vals) > 8 or len(vals) > t.examples / 10:
            why.append(f"{len(vals)} values is not a small domain for {t.examples} examples")
        for v in vals:
            if t.value_counts.get(v, 0) < 3 * factor or len(t.value_tasks.get(v, ())) < 2:
                why.append(
                    f"value {v!r} seen {t.value_counts.get(v, 0)} times in {len(t.value_tasks.get(v, ()))} tasks"
                )
        singletons = sum(1 for c in t.value_counts.values() if c == 1)
        if singletons / max(t.examples, 1) >= 0.01:
            why.append("Good-Turing unseen mass >= 1%")
    if code == "ECHO" and len(t.distinct) < 2:
        why.append("fewer than 2 distinct argument values")
    if code == "RELATION" and len(t.distinct) < 5:
        why.append(f"only {len(t.distinct)} distinct tuples")
    return why


def merge(ts: list[Tally]) -> Tally:
    m = Tally()
    for t in ts:
        m.examples += t.examples
        m.calls += t.calls
        m.violations += t.violations
        m.tasks |= t.tasks
        m.distinct |= t.distinct
        for v, c in t.value_counts.items():
            m.value_counts[v] = m.value_counts.get(v, 0) + c
        for v, s in t.value_tasks.items():
            m.value_tasks.setdefault(v, set()).update(s)
    return m


@pytest.fixture(scope="module")
def by_tool(clean: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in clean:
        if r["status"] == "ok":
            out[r["tool"]].append(r)
    return out


@pytest.fixture(scope="module")
def fold_tallies(planted: dict[str, Any], by_tool: dict[str, list[dict[str, Any]]]) -> list[list[Tally]]:
    """Per planted rule, one Tally per fold of the clean tasks (DESIGN §3 fold assignment, seed 13)."""
    folds: dict[str, int] = {}
    out = []
    for rule in planted["planted"]:
        ts = [Tally() for _ in range(K)]
        for rec in by_tool[rule["tool"]]:
            task = rec["task_id"]
            f = folds.get(task)
            if f is None:
                f = folds[task] = fold_of(task, SEED, K)
            check_call(rule, rec, ts[f])
        out.append(ts)
    return out


def label(rule: dict[str, Any]) -> str:
    return f"{rule['tool']} {rule['code']} {rule['paths']} {rule['params']}"


def test_planted_list_is_rich(planted: dict[str, Any]) -> None:
    rules = planted["planted"]
    assert len(rules) >= 25
    assert {r["code"] for r in rules} == CODES
    per_code: dict[str, int] = defaultdict(int)
    for r in rules:
        per_code[r["code"]] += 1
    assert min(per_code.values()) >= 3, per_code
    keys = [(r["tool"], r["code"], tuple(r["paths"]), repr(r["params"])) for r in rules]
    assert len(keys) == len(set(keys)), "duplicate planted rules"
    assert len({r["tool"] for r in rules}) >= 8


def test_planted_params_follow_the_notation(planted: dict[str, Any]) -> None:
    for r in planted["planted"]:
        code, paths, params = r["code"], r["paths"], r["params"]
        assert all(p == "" or p.startswith("/") or p.startswith("$args/") for p in paths), label(r)
        if code == "TYPE":
            assert params["kind"] in ("int", "number", "string", "bool", "object", "array")
        elif code == "DOMAIN":
            assert params["values"] == sorted(params["values"]) and 1 <= len(params["values"]) <= 8
        elif code == "ECHO":
            assert len(paths) == 2 and not paths[0].startswith("$args") and paths[1].startswith("$args/")
        elif code == "DATE_ORDER":
            assert len(paths) == 2
        elif code == "RELATION":
            form = params["form"]
            assert form in ("linear", "product", "sum_over"), label(r)
            if form == "linear":
                assert len(params["coef"]) == len(paths) - 1 and set(params["coef"]) <= {1, -1}
            else:
                assert len(paths) == (3 if form == "product" else 2)
        elif code == "CONDITIONAL":
            assert len(paths) == 2 and params["then"] in ("present", "absent", "nonempty", "empty")
            when = params["when"]
            assert set(when) in ({"in"}, {"sign"}) and when[next(iter(when))], label(r)
        else:
            assert params == {} and len(paths) == 1


def test_every_planted_invariant_holds_with_support(
    planted: dict[str, Any], fold_tallies: list[list[Tally]]
) -> None:
    problems = []
    for rule, ts in zip(planted["planted"], fold_tallies, strict=True):
        whole = merge(ts)
        if whole.violations:
            problems.append(f"{label(rule)}: {len(whole.violations)} violations, e.g. {whole.violations[:2]}")
            continue
        # Comfortably above the thresholds on the whole corpus ...
        why = meets_support(rule, whole, factor=2.0)
        if why:
            problems.append(f"{label(rule)}: whole corpus: {why}")
        # ... and still above them in each fold checker's training tasks (all folds but one).
        for f in range(K):
            why = meets_support(rule, merge([t for g, t in enumerate(ts) if g != f]))
            if why:
                problems.append(f"{label(rule)}: without fold {f}: {why}")
    assert not problems, "\n".join(problems)


def test_weaker_class_only(planted: dict[str, Any], clean: list[dict[str, Any]]) -> None:
    """Fields planted as NONNEG are often exactly 0, so POSITIVE must not be claimed for them."""
    nonneg = [r for r in planted["planted"] if r["code"] == "NONNEG"]
    assert len(nonneg) >= 8
    for r in nonneg:
        zeros = sum(
            v == 0
            for rec in clean
            if rec["tool"] == r["tool"] and rec["status"] == "ok"
            for v in values(rec, r["paths"][0])
        )
        assert zeros >= 10, f"{label(r)}: only {zeros} zeros"


def noise_breaks(n: dict[str, Any], code: str, recs: list[dict[str, Any]]) -> tuple[int, set[str]]:
    """How many examples break `code` on the noise field, and in how many distinct tasks."""
    bad = 0
    tasks: set[str] = set()
    path = n["path"]
    for rec in recs:
        res = rec["result"]
        hit = False
        if code == "REQUIRED":
            parent, _, key = path.rpartition("/")
            hit = any(isinstance(node, dict) and key not in node for _p, node in instances(res, parent))
        elif code == "TYPE":
            # The TYPE noise fields are nullable: a null beside strings or numbers is a second kind.
            vals = values(rec, path)
            hit = any(v is None for v in vals) and any(v is not None for r in recs for v in values(r, path))
        elif code == "POSITIVE":
            hit = any(v <= 0 for v in values(rec, path))
        elif code == "NONNEG":
            hit = any(v < 0 for v in values(rec, path))
        elif code == "ECHO":
            a, b = values(rec, path), values(rec, n["with"])
            hit = bool(a and b and a[0] != b[0])
        elif code == "DATE_ORDER":
            a, b = values(rec, path), values(rec, n["with"])
            hit = bool(a and b and a[0] > b[0])
        if hit:
            bad += 1
            tasks.add(rec["task_id"])
    return bad, tasks


def test_noise_never_becomes_a_rule(
    planted: dict[str, Any], by_tool: dict[str, list[dict[str, Any]]]
) -> None:
    problems = []
    noise = planted["noise"]
    assert len(noise) >= 20
    for n in noise:
        recs = by_tool[n["tool"]]
        for code in n["codes"]:
            assert code in CODES, n
            if code == "DOMAIN":
                vals = [v for rec in recs for v in values(rec, n["path"])]
                counts: dict[str, int] = defaultdict(int)
                for v in vals:
                    counts[repr(v)] += 1
                distinct = len(counts)
                if n["crossfit"]:
                    # A small domain except for one value confined to a single task.
                    ok = distinct <= 8 and len(vals) >= 50
                else:
                    ok = distinct > 2 * 8  # far above the 8-value cap, so no fold checker sees a domain
                if not ok:
                    problems.append(f"{n['tool']} {n['path']} DOMAIN: {distinct} distinct of {len(vals)}")
                continue
            if code == "ECHO":
                args = {repr(v) for rec in recs for v in values(rec, n["with"])}
                if len(args) >= 2:
                    problems.append(f"{n['tool']} {n['path']} ECHO: argument is not constant")
                continue
            bad, tasks = noise_breaks(n, code, recs)
            if code == "DATE_ORDER":
                n_rev = dict(n, path=n["with"], **{"with": n["path"]})
                bad2, tasks2 = noise_breaks(n_rev, code, recs)
                bad, tasks = min(bad, bad2), tasks if len(tasks) < len(tasks2) else tasks2
            # Broken often and in many tasks, so no fold checker learns it by chance; crossfit noise
            # is broken in exactly one task on purpose.
            if n["crossfit"]:
                if len(tasks) != 1 or bad < 3:
                    problems.append(
                        f"{n['tool']} {n['path']} {code}: crossfit noise broken in {len(tasks)} tasks"
                    )
            elif bad < 30 or len(tasks) < 20:
                problems.append(
                    f"{n['tool']} {n['path']} {code}: broken only {bad} times in {len(tasks)} tasks"
                )
    assert not problems, "\n".join(problems)


def test_noise_and_planted_do_not_contradict(planted: dict[str, Any]) -> None:
    rules = {
        (r["tool"], r["code"], r["paths"][0])
        for r in planted["planted"]
        if r["code"] not in ("ECHO", "DATE_ORDER")
    }
    for n in planted["noise"]:
        for code in n["codes"]:
            assert (n["tool"], code, n["path"]) not in rules, n


def test_substitutes_share_their_invariants(planted: dict[str, Any]) -> None:
    def shape(tool: str) -> set[tuple[str, str, str]]:
        return {
            (r["code"], repr(r["paths"]), repr(r["params"]))
            for r in planted["planted"]
            if r["tool"] == tool and r["code"] not in ("REQUIRED", "ECHO")
        }

    assert shape("lookup_inventory") == shape("query_warehouse") == shape("get_stock_by_sku")
    assert (
        tally({"tool": "lookup_inventory", "code": "REQUIRED", "paths": ["/sku"], "params": {}}, []).examples
        == 0
    )
