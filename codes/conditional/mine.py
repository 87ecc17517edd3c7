"""CONDITIONAL — `paths [P, D]` (no wildcards), params `{"when": W, "then": T}`

*Qualifying example*: a clean call whose D has the group's value (strings, booleans, null) or sign
(whole numbers that are sometimes 0 and sometimes positive: a count of hits, of shipments). Candidates,
per tool: D among result fields holding strings (at most 16 distinct in the candidate sample) or
booleans, or such counts; P every other field without wildcards, not an ancestor of D, that is optional
(*present*/*absent*), holds arrays of both emptinesses (*nonempty*/*empty*) or strings, booleans and null
(*equals*). *Holds* per the chance argument below. *Catches*: a field dropped from the very records that
must have it (`drop_field` on `delivered_at` of a delivered order), a list emptied while its own count
says it has items (`empty_list` on search results: the sample world's `/results` went from 74% to 100%),
an exchange or return record that lost its items, a currency that does not fit the country.

Found on real tool output: τ-bench retail `get_order_details` — `/fulfillments` empty when `/status` in
{pending, pending (item modified)} and not empty when delivered, processed, return or exchange requested;
`/return_items` present when `return requested`; the four `/exchange_*` fields when `exchange requested`.
τ-bench airline has no optional field or list that depends on a categorical one, and gets none.
Conservation candidates P = Σ Q: P a plain numeric field or the first member (`*0`) of a numeric field of
an array of a plain parent, Q a numeric field of another such array (never P's own). Found on τ-bench
retail: `get_order_details` `/payment_history/*0/amount = Σ /items/*/price (cent)` when `/status` is any
state but `pending (item modified)` — a conservation across arrays, on the tools' own output
(it took retail `duplicate_items` from 31% to 60%).

Statistics: per (part, fold): groups (D, value) — calls, tasks, examples; pairs (D, value, P) — P present,
an array, an empty array, a scalar, least and greatest scalar; the tool's base rates (P, and P = c) and
calls; for conservation, per (D, value, pair) judged calls, calls holding at each tolerance, whole and
2-decimal calls, the 5 smallest hashes of P's values, and per pair the same over the tool with its
failing tasks. Sums, minima, maxima and bottom-k sets: they merge exactly over parts and folds.

Checker semantics: see [codes.md](codes.md#conditional).

**CONDITIONAL: the base rate, corrected for the number of tries.** "P is present whenever D = v" is evidence
of a dependence only if it would be unlikely were P's presence independent of D. Let q be the share of the
tool's clean calls (every value of D) that show the fact (P present; P absent; a non-empty or an empty
array; P = c). Independence would give each of the group's t tasks the fact with probability at most q, all
t with probability at most q^t. Per tool and checker many (group, P, consequent) pairs are tried — m of them
— so the test is Bonferroni's: a rule is kept only if q^t ≤ 0.01 / m. With q = 0.5 and m = 100, 14 tasks
suffice; with q = 0.9, 88. A field present at random in half the calls, or absent in 1 of 20 whatever the
status, never passes; one present in 90% of all calls is no evidence for a group of 40 tasks (0.92^40 ≈
0.04). Each group also needs 30 calls from 30 tasks of its own, D must take 2–16 values in the checker's
data (counted exactly per checker; screened on the candidate sample so that no choice depends on how the
corpus is split into parts), and a fact of every call (q = 1) is left to REQUIRED, LENGTH and DOMAIN. Values
of D whose groups give the same consequent are merged into one rule; its support is the groups' calls summed
and the largest group's tasks (a lower bound of the union's).

*Conservation given a state* (`then: {"sum": tol}`) rests on RELATION's argument instead: an identity
P = Σ Q that holds to the cent on every call of a group over ≥ 5 distinct values of P is no coincidence.
What needs its own argument is the condition, because it says "the identity never fails in these
states". Two tests, Bonferroni over the (D, pair) tried per tool: the failures must be explained by D
— had the k tasks with a failure been independent of D, all k would have missed the condition's groups
with probability (1 − s)^k, s the condition's share of the judged calls; kept only if that is ≤ 0.01 / m
— and the condition must have the tasks of a rare-event claim: its largest group ≥ 300 tasks (LENGTH's
rule of three). On τ-bench retail the status condition passes both (the 45 failures of a 600-task
corpus all fall in `pending (item modified)`; 373 tasks in the largest other state); a condition on
`/address/state` that happened to hold in four states of 37 tasks each passed the first and fails the
second, as it should: an order from those states gets modified in the next task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from output_contracts.codes.consistent.episodes import value_expr, value_hash
from output_contracts.codes.mining_context import MiningContext, support_ok
from output_contracts.codes.mining_frames import (
    CLS_ARR,
    CLS_BOOL,
    CLS_NULL,
    CLS_NUM,
    CLS_STR,
    KIND_CODE,
    Leaves,
    by_checker,
    cand_frame,
    fold_examples,
    merged_examples,
)
from output_contracts.codes.relation.check import CENT_TOL, REL_TOL
from output_contracts.codes.relation.mine import RELATION_MIN_TUPLES
from output_contracts.frames import pack_pair
from output_contracts.jsonutil import canonical_str

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "a call whose discriminator D has the condition's value (one value, one group)"
SUPPORT = "≥ {min_support} calls, ≥ {min_tasks} tasks per group"
CONDITIONS = (
    "the fact holds on every call of the group; D has 2–16 values; "
    "q^t ≤ 0.01 / m against the tool's base rate q (below); not a fact of every call"
)

#: At most this many distinct values for a string discriminator (or an *equals* consequent).
DISC_MAX = 16
#: The family-wise chance bound of the Bonferroni test (see the module docstring).
CHANCE = 0.01
#: Tasks in the condition of a conservation rule (P = Σ Q): "it never fails in these states" is a claim
#: about a rare event, LENGTH's rule of three (a 1% bound at 300 tasks).
SUM_MIN_TASKS = 300
CODE = "CONDITIONAL"
_U32 = pl.UInt32


def _cond_expr() -> pl.Expr:
    """`output_contracts.codes.conditional.check.cond_key` over mining leaves (kind class, code, num, str)."""
    cls, num = pl.col("cls"), pl.col("num")
    return (
        pl.when(cls == CLS_STR)
        .then(pl.lit("s:") + pl.col("str"))
        .when(cls == CLS_BOOL)
        .then(pl.when(num != 0).then(pl.lit("b:true")).otherwise(pl.lit("b:false")))
        .when(cls == CLS_NULL)
        .then(pl.lit("z"))
        .when(cls == CLS_NUM)
        .then(
            pl.when(num == 0)
            .then(pl.lit("n:zero"))
            .when(num > 0)
            .then(pl.lit("n:positive"))
            .otherwise(pl.lit("n:negative"))
        )
        .otherwise(None)
    )


#: `_cond_hash` of the conditions that are not strings (a string's is its text's hash, salted)
_COND_CONST = {"b:true": 1, "b:false": 2, "z": 3, "n:zero": 4, "n:positive": 5, "n:negative": 6}
_STR_SALT = 0x9E3779B97F4A7C15


def _cond_hash() -> pl.Expr:
    """The condition key of `_cond_expr` as a 64-bit hash, without building its text (the text is
    made once per group, `_cond_expr` over the group's first row)."""
    cls, num = pl.col("cls"), pl.col("num")
    const = _COND_CONST

    def lit(key: str) -> pl.Expr:
        return pl.lit(const[key], pl.UInt64)

    return (
        pl.when(cls == CLS_STR)
        .then(pl.col("str").hash() ^ pl.lit(_STR_SALT, pl.UInt64))
        .when(cls == CLS_BOOL)
        .then(pl.when(num != 0).then(lit("b:true")).otherwise(lit("b:false")))
        .when(cls == CLS_NULL)
        .then(lit("z"))
        .when(cls == CLS_NUM)
        .then(
            pl.when(num == 0)
            .then(lit("n:zero"))
            .when(num > 0)
            .then(lit("n:positive"))
            .otherwise(lit("n:negative"))
        )
        .otherwise(None)
    )


def _is_ancestor(a: str, b: str) -> bool:
    return b.startswith(a + "/")


def _decode_cond(key: str) -> tuple[str, Any]:
    """A condition key as (form, value): ("sign", "zero") or ("in", JSON scalar)."""
    if key.startswith("n:"):
        return "sign", key[2:]
    if key == "z":
        return "in", None
    if key.startswith("b:"):
        return "in", key == "b:true"
    return "in", key[2:]


def _decode_value(key: str) -> Any:
    """A `value_expr` key of a string, bool or null back to the JSON value."""
    if key == "z":
        return None
    if key.startswith("b"):
        return float(key[1:]) != 0
    return key[1:]


_CENT = ((pl.col("num") * 100).round() - pl.col("num") * 100).abs() <= 1e-6
_SUM_SCHEMA = {
    "spid": _U32,
    "tool": pl.String,
    "ppid": _U32,
    "ppath": pl.String,
    "first": pl.Int64,
    "qpid": _U32,
    "qpath": pl.String,
    "apid": _U32,
}


def _sum_pairs(ctx: MiningContext, tools: set[str]) -> pl.DataFrame:
    """The conservation candidates P = Σ Q of the tools with a discriminator: P a plain numeric result
    field or the first member (`*0`) of a numeric field of an array of a plain parent, Q a numeric field
    of an array of a plain parent (one `*`, no map key), never P's own array; with the pid of Q's array
    (its presence makes a call qualify). Columns: spid (pair id), tool, ppid, ppath (P's rule path),
    first (the token position of P's index, or -1), qpid, qpath, apid."""
    pats = ctx.data.patterns.filter(pl.col("side") == "result")
    pid_of = {(t, p): pid for pid, t, p in pats.select("pid", "tool", "pattern").iter_rows()}
    number = (1 << KIND_CODE["int"]) | (1 << KIND_CODE["float"])
    numeric = pats.filter(((pl.col("kinds") & number) > 0) & pl.col("tool").is_in(sorted(tools)))
    plain: dict[str, list[tuple[int, str, int]]] = {}
    members: dict[str, list[tuple[int, str, str]]] = {}
    for pid, tool, pattern, wild in numeric.select("pid", "tool", "pattern", "wild").iter_rows():
        toks = pattern.split("/")
        if not wild and pattern:
            plain.setdefault(tool, []).append((pid, pattern, -1))
        elif toks.count("*") == 1 and "~*" not in toks:
            members.setdefault(tool, []).append((pid, pattern, pattern[: pattern.index("/*")]))
    rows: list[tuple[Any, ...]] = []
    for tool in sorted(members):
        ps = list(plain.get(tool, []))
        ps += [
            (pid, pat.replace("/*", "/*0", 1), pat.split("/").index("*")) for pid, pat, _a in members[tool]
        ]
        for qpid, qpat, array in sorted(members[tool], key=lambda m: m[1]):
            apid = pid_of.get((tool, array))
            if apid is None:
                continue
            for ppid, ppat, first in sorted(ps, key=lambda x: x[1]):
                if first >= 0 and ppat.startswith(array + "/"):
                    continue  # a member of Q's own array: its first member, or a sum over one member
                rows.append((len(rows), tool, ppid, ppat, first, qpid, qpat, apid))
    return pl.DataFrame(rows, schema=_SUM_SCHEMA, orient="row")


def _sum_rows(part: Leaves, sums: pl.DataFrame, d: pl.LazyFrame) -> list[pl.DataFrame]:
    """Per (part, fold) rows of the conservation candidates: per group (D, key, pair) — judged calls (P a
    number and Q's array present), calls where P = Σ Q exactly, to the cent, to 1e-9 relative, calls
    whose P and Q's members are all whole (`n_int`) or of 2 decimals (`n_cent`), P's least and greatest
    value; per pair (`sb`) — the same counts over all the tool's calls."""
    if sums.height == 0:
        return []
    res = part.result().lazy()
    num = pl.col("cls") == CLS_NUM
    plain_p = sums.filter(pl.col("first") < 0).select("ppid").unique()
    first_p = sums.filter(pl.col("first") >= 0).select("ppid", "first").unique()
    pv = res.filter(pl.col("pid").is_in(plain_p["ppid"].implode()) & num).select(
        "cid", "task", "fold", pl.col("pid").alias("ppid"), "num", "code"
    )
    if first_p.height:
        fv = (
            part.scan_paths(first_p["ppid"].to_list())
            .filter(num)
            .join(first_p.lazy().rename({"ppid": "pid"}), on="pid")
            .filter(pl.col("path").str.split("/").list.get(pl.col("first")) == "0")
            .select("cid", "task", "fold", pl.col("pid").alias("ppid"), "num", "code")
        )
        pv = pl.concat([pv, fv])
    pv = pv.select(
        "cid",
        "task",
        "fold",
        "ppid",
        pl.col("num").alias("p"),
        (pl.col("code") == KIND_CODE["int"]).alias("p_int"),
        _CENT.alias("p_cent"),
    )
    qs = (
        res.filter(pl.col("pid").is_in(sums["qpid"].unique().implode()) & num)
        .group_by("cid", pl.col("pid").alias("qpid"))
        .agg(
            pl.col("num").sum().alias("s"),
            (pl.col("code") == KIND_CODE["int"]).all().alias("q_int"),
            _CENT.all().alias("q_cent"),
        )
    )
    arrays = res.filter(
        pl.col("pid").is_in(sums["apid"].unique().implode()) & (pl.col("cls") == CLS_ARR)
    ).select("cid", pl.col("pid").alias("apid"))
    diff = (pl.col("p") - pl.col("s")).abs()
    judged = (
        pv.join(sums.lazy().select("spid", "ppid", "qpid", "apid"), on="ppid")
        .join(arrays, on=["cid", "apid"], how="semi")
        .join(qs, on=["cid", "qpid"], how="left")
        .with_columns(
            pl.col("s").fill_null(0.0), pl.col("q_int").fill_null(True), pl.col("q_cent").fill_null(True)
        )
        .with_columns(
            (diff == 0).alias("h_exact"),
            (diff <= CENT_TOL).alias("h_cent"),
            (diff <= REL_TOL * pl.max_horizontal(pl.lit(1.0), pl.col("p").abs(), pl.col("s").abs())).alias(
                "h_rel"
            ),
            (pl.col("p_int") & pl.col("q_int")).alias("all_int"),
            (pl.col("p_cent") & pl.col("q_cent")).alias("all_cent"),
            pl.col("p").hash().alias("ph"),
        )
        .collect()
        .lazy()
    )
    counts = [
        pl.len().alias("judged"),
        pl.col("h_exact").sum(),
        pl.col("h_cent").sum(),
        pl.col("h_rel").sum(),
        pl.col("all_int").sum().alias("n_int"),
        pl.col("all_cent").sum().alias("n_cent"),
    ]
    # P's distinct values per group (bottom-k hashes) matter only where the identity held on every
    # judged call of the fold at some tolerance: a fold with a call where it fails at all three fails
    # every checker that sees it whatever its values, so its list is left null (not computed)
    keys = ["dpid", "dkey", "spid", "fold"]
    dj = d.join(
        judged.select("cid", "spid", "fold", "ph", "h_exact", "h_cent", "h_rel", "all_int", "all_cent"),
        on="cid",
    ).collect()
    failed = ~(pl.col("h_exact") | pl.col("h_cent") | pl.col("h_rel"))
    grouped = dj.lazy().group_by(keys).agg(*counts, failed.any().alias("_failed"))
    phash = (
        dj.lazy()
        .join(grouped.filter(~pl.col("_failed")).select(keys), on=keys, how="semi")
        .group_by(keys)
        .agg(pl.col("ph").unique().bottom_k(RELATION_MIN_TUPLES).alias("phash"))
    )
    fails = [
        pl.col("task").filter(~pl.col(h)).n_unique().alias("f_" + h[2:])
        for h in ("h_exact", "h_cent", "h_rel")
    ]
    base = judged.group_by("spid", "fold").agg(*counts, *fails).with_columns(pl.lit("sb").alias("part"))
    g, ph, b = pl.collect_all([grouped, phash, base])
    g = g.join(ph, on=keys, how="left").drop("_failed").with_columns(pl.lit("s").alias("part"))
    return [g, b]


def _sum_cands(of: Any, groups: pl.DataFrame, sums: pl.DataFrame, k: int) -> pl.DataFrame:
    """The groups of the conservation rules kept, per checker (one row per group of a kept rule).

    Per (D, pair, checker): the tolerance is the one the tool's values admit (exact when every P and
    member is whole, cent when all have 2 decimals, else relative). A group *holds* when P = Σ Q on
    every one of its calls, P and Q's array present in all of them, P taking >= RELATION_MIN_TUPLES
    values (RELATION's evidence: an exact identity over several values is no coincidence; counted
    exactly over parts and folds as the smallest value hashes). The rule's condition is the set of
    holding groups, kept only when
    - the identity fails somewhere (else it is RELATION's unconditional fact), and the failures are
      explained by D: had they been independent of D, the k tasks with a failure would all have missed
      the condition's groups with probability (1 − s)^k, s the condition's share of judged calls;
      Bonferroni over the (D, pair) tried per tool: (1 − s)^k <= CHANCE / m;
    - the condition has the tasks of a rare-event claim ("never fails here"): its largest group holds
      >= SUM_MIN_TASKS tasks (the rule of three: a 1% bound at 300), a lower bound of the union's."""
    empty = pl.DataFrame(schema={"tool": pl.String, "checker": pl.Int32})
    g_rows, b_rows = of("s"), of("sb")
    if sums.height == 0 or g_rows.height == 0:
        return empty
    sums_c = ["judged", "h_exact", "h_cent", "h_rel", "n_int", "n_cent"]
    grp = by_checker(
        g_rows,
        ["dpid", "dkey", "spid"],
        [
            *(pl.col(c).sum() for c in sums_c),
            pl.col("phash").list.explode().unique().bottom_k(RELATION_MIN_TUPLES),
        ],
        k,
    )
    fails = ["f_exact", "f_cent", "f_rel"]
    base = by_checker(b_rows, ["spid"], [pl.col(c).sum().alias("b_" + c) for c in [*sums_c, *fails]], k)
    base = base.with_columns(
        pl.when(pl.col("b_n_int") == pl.col("b_judged"))
        .then(pl.lit("exact"))
        .when(pl.col("b_n_cent") == pl.col("b_judged"))
        .then(pl.lit("cent"))
        .otherwise(pl.lit("rel"))
        .alias("tol")
    )

    def by_tol(prefix: str) -> pl.Expr:
        return (
            pl.when(pl.col("tol") == "exact")
            .then(pl.col(prefix + "exact"))
            .when(pl.col("tol") == "cent")
            .then(pl.col(prefix + "cent"))
            .otherwise(pl.col(prefix + "rel"))
        )

    c = (
        groups.join(grp, on=["dpid", "dkey", "checker"])
        .join(sums.select("spid", "tool", "ppid", "qpid"), on=["spid", "tool"])
        .join(base, on=["spid", "checker"])
    )
    n = pl.col("n")
    c = c.with_columns(
        (
            (pl.col("judged") == n)
            & (by_tol("h_") == n)
            & (pl.col("phash").list.len() >= RELATION_MIN_TUPLES)
        ).alias("ok"),
        by_tol("b_f_").alias("fail_tasks"),
    )
    m = (
        c.select("tool", "checker", "dpid", "spid")
        .unique()
        .group_by("tool", "checker")
        .agg(pl.len().alias("m"))
    )
    ok = c.filter("ok")
    per_rule = (
        ok.group_by("tool", "checker", "dpid", "spid")
        .agg(pl.col("judged").sum().alias("c_judged"), pl.col("tasks").max().alias("c_tasks"))
        .join(base.select("spid", "checker", "b_judged"), on=["spid", "checker"])
        .join(c.select("spid", "checker", "fail_tasks").unique(), on=["spid", "checker"])
        .join(m, on=["tool", "checker"])
    )
    share = pl.col("c_judged").cast(pl.Float64) / pl.col("b_judged").cast(pl.Float64)
    explained = (
        pl.col("fail_tasks").cast(pl.Float64) * (1 - share).log() <= (pl.lit(CHANCE) / pl.col("m")).log()
    )
    kept = per_rule.filter(
        (pl.col("fail_tasks") > 0) & (share < 1) & explained & (pl.col("c_tasks") >= SUM_MIN_TASKS)
    )
    return ok.join(kept.select("tool", "checker", "dpid", "spid"), on=["tool", "checker", "dpid", "spid"])


class ConditionalMiner:
    """The CONDITIONAL rule class.

    Candidates, per tool, among result fields without wildcards: discriminators D — a field holding strings
    (at most DISC_MAX distinct ones in the candidate sample), booleans, or whole numbers that are sometimes 0
    and sometimes positive (the sign is the condition: a count of hits, of items); and consequents P — every
    other such field that is not an ancestor of D, with the consequent types its data admits:
    *present*/*absent* where P is optional (present in some calls of the tool, not all), *nonempty*/*empty*
    where P holds arrays of both kinds, *equals* where P holds strings (at most DISC_MAX), booleans or null.

    A group is judged when it has at least `min_support` CONDITIONAL calls (30) from `min_tasks` tasks (30),
    and D has 2..DISC_MAX values in the checker's data. The consequent must hold on every call of the group
    (*nonempty*, *empty*, *equals*: P present, of the right kind, in every one).

    Many (group, P, consequent) pairs are tried per tool, so the bound is Bonferroni's: keep only if q^t ≤
    CHANCE / m, where m is the number of pairs tried for that tool in that checker (CHANCE = 0.01). Values of
    D whose groups give the same consequent are merged into one rule (`when: {"in": [...]}`); its support is
    the sum of the groups' calls and the largest group's tasks (a lower bound of the union's distinct tasks).

    Statistics, per (part, fold): groups (D, condition key) — calls, tasks, example calls; pairs (D, key, P) —
    calls with P present, with P an array, an empty array, a scalar, and the least and greatest scalar value
    key (64-bit hashes: equal least and greatest is one value); the tool's base rates (P) — the same counts
    over all its calls; the equals base rate (P, value) — calls, and the value's text; and calls per tool. All
    are sums, minima or maxima, and tasks are counted per part and fold, where each task lies in one of each:
    every statistic merges exactly.
    """

    codes = (CODE,)

    def plan(self, ctx: MiningContext) -> dict[str, Any] | None:
        """Discriminator pids, consequent pids (and which admit *equals*), pid -> tool and pattern.

        Every choice here is made from facts that do not depend on how the corpus is split into task
        parts (the kinds a pattern held, the merged node counts, minima and maxima, and the candidate
        sample, `ctx.sample`), so that the Bonferroni count and the rules do not either; the distinct
        values of a discriminator are screened on the sample (at most DISC_MAX there) and counted
        exactly per checker in `finish`."""
        pats = ctx.data.patterns.filter(
            (pl.col("side") == "result") & ~pl.col("wild") & (pl.col("pattern") != "")
        ).select("pid", "tool", "pattern", "kinds")
        if pats.height == 0:
            return None
        full = ctx.stats.filter(pl.col("checker") == -1)
        num = full.filter(pl.col("cls") == CLS_NUM).select("tool", "pattern", "n", "n_int", "min", "max")
        numeric = {(t, p): (n == ni and mn == 0 and (mx or 0) > 0) for t, p, n, ni, mn, mx in num.iter_rows()}
        held = full.group_by("tool", "pattern").agg(
            pl.col("n").sum(), pl.col("min_len").filter(pl.col("cls") == CLS_ARR).min()
        )
        count = {(t, p): (n, ml) for t, p, n, ml in held.iter_rows()}
        tool_calls = dict(
            ctx.data.calls.group_by("tool")
            .agg(pl.len())
            .select(pl.col("tool").cast(pl.String), "len")
            .iter_rows()
        )  # grouped on the Categorical, the few groups made text (not every call's tool)
        in_sample = dict(
            ctx.sample.result()
            .filter(pl.col("cls") == CLS_STR)
            .group_by("pid")
            .agg(pl.col("str").n_unique())
            .iter_rows()
        )
        text = (1 << KIND_CODE["string"]) | (1 << KIND_CODE["bool"]) | (1 << KIND_CODE["null"])
        whole = (1 << KIND_CODE["int"]) | (1 << KIND_CODE["null"])
        disc: list[int] = []
        eq: list[int] = []
        cons: list[int] = []
        tool_of: dict[int, str] = {}
        path_of: dict[int, str] = {}
        for pid, tool, pattern, kinds in pats.iter_rows():
            tool_of[pid], path_of[pid] = tool, pattern
            few = in_sample.get(pid, 0) <= DISC_MAX
            categorical = kinds & ~text == 0 and kinds & (
                (1 << KIND_CODE["string"]) | (1 << KIND_CODE["bool"])
            )
            if (categorical and few) or (kinds & ~whole == 0 and numeric.get((tool, pattern), False)):
                disc.append(pid)
            n, min_len = count.get((tool, pattern), (0, None))
            optional = 0 < n < tool_calls.get(tool, 0)
            if categorical and few:
                eq.append(pid)
            if optional or min_len == 0 or (categorical and few):
                cons.append(pid)
        if not disc:
            return None
        pairs = [
            (d, p)
            for d in sorted(disc)
            for p in sorted(cons)
            if p != d and tool_of[p] == tool_of[d] and not _is_ancestor(path_of[p], path_of[d])
        ]
        sums = _sum_pairs(ctx, {tool_of[d] for d in disc})
        if not pairs and sums.height == 0:
            return None
        return {
            "disc": pl.Series(sorted(disc), dtype=_U32),
            "cons": pl.Series(sorted({p for _d, p in pairs}), dtype=_U32),
            "eq": set(eq),
            "pairs": pl.DataFrame(pairs, schema={"dpid": _U32, "ppid": _U32}, orient="row"),
            "sums": sums,
            "tool_of": tool_of,
            "path_of": path_of,
        }

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None:
            return None
        res = part.result().lazy()
        cls = pl.col("cls")
        # the condition key as a 64-bit hash through the joins and group-bys (`dkey`), its text made
        # once per group (`dtext`); the leaves' own task and fold, no join with the calls
        d = (
            res.filter(pl.col("pid").is_in(plan["disc"].implode()))
            .select(
                "cid",
                "task",
                "fold",
                pl.col("pid").alias("dpid"),
                _cond_hash().alias("dkey"),
                "cls",
                "num",
                "str",
            )
            .filter(pl.col("dkey").is_not_null())
            .collect()
        )
        # a scalar's value as a 64-bit hash (`vkey`); its text only per distinct value (`values`)
        p = (
            res.filter(pl.col("pid").is_in(plan["cons"].implode()))
            .select(
                "cid",
                "fold",
                pl.col("pid").alias("ppid"),
                (cls == CLS_ARR).alias("arr"),
                ((cls == CLS_ARR) & (pl.col("len") == 0)).alias("empty"),
                value_hash(cls == CLS_NULL, cls == CLS_BOOL, pl.lit(False), cls == CLS_STR).alias("vkey"),
                "cls",
                "num",
                "str",
            )
            .collect()
        )
        groups = (
            d.lazy()
            .group_by("dpid", "dkey", "fold")
            .agg(
                pl.len().alias("n"),
                pl.col("task").n_unique().alias("tasks"),
                fold_examples(distinct=False),
                pl.col("cls").first(),
                pl.col("num").first(),
                pl.col("str").first(),
            )
            .with_columns(_cond_expr().alias("dtext"), pl.lit("g").alias("part"))
            .drop("cls", "num", "str")
        )
        pair_ids = plan["pairs"].select(pack_pair("dpid", "ppid")).to_series()
        paired = (
            d.lazy()
            .select("cid", "fold", "dpid", "dkey")
            .join(p.lazy().select("cid", "ppid", "arr", "empty", "vkey"), on="cid")
            .filter(pack_pair("dpid", "ppid").is_in(pair_ids.implode()))
            .group_by("dpid", "dkey", "ppid", "fold")
            .agg(
                pl.len().alias("present"),
                pl.col("arr").sum().alias("arr"),
                pl.col("empty").sum().alias("empty"),
                pl.col("vkey").count().alias("nscalar"),
                pl.col("vkey").min().alias("vmin"),
                pl.col("vkey").max().alias("vmax"),
            )
            .with_columns(pl.lit("j").alias("part"))
        )
        base = (
            p.lazy()
            .group_by("ppid", "fold")
            .agg(
                pl.len().alias("present"),
                pl.col("arr").sum().alias("arr"),
                pl.col("empty").sum().alias("empty"),
            )
            .with_columns(pl.lit("b").alias("part"))
        )
        eq = pl.Series(sorted(plan["eq"]), dtype=_U32)
        values = (
            p.lazy()
            .filter(pl.col("ppid").is_in(eq.implode()) & pl.col("vkey").is_not_null())
            .group_by("ppid", "vkey", "fold")
            .agg(pl.len().alias("n"), pl.col("cls").first(), pl.col("num").first(), pl.col("str").first())
            .with_columns(
                value_expr(cls == CLS_NULL, cls == CLS_BOOL, pl.lit(False), cls == CLS_STR).alias("vtext"),
                pl.lit("v").alias("part"),
            )
            .drop("cls", "num", "str")
        )
        frames = pl.collect_all([groups, paired, base, values])
        frames += _sum_rows(part, plan["sums"], d.lazy().select("cid", "dpid", "dkey"))
        return pl.concat(frames, how="diagonal_relaxed")

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None or not rows:
            return cand_frame()
        k = ctx.data.k
        allrows = pl.concat(rows, how="diagonal_relaxed")

        def of(tag: str) -> pl.DataFrame:
            return allrows.filter(pl.col("part") == tag)

        tool_df = pl.DataFrame(
            {"dpid": list(plan["tool_of"]), "tool": list(plan["tool_of"].values())},
            schema={"dpid": _U32, "tool": pl.String},
        )
        groups = by_checker(
            of("g"),
            ["dpid", "dkey"],
            [pl.col("n").sum(), pl.col("tasks").sum(), merged_examples(), pl.col("dtext").first()],
            k,
        ).join(tool_df, on="dpid")
        # D's values in the checker's data: 2..DISC_MAX (a condition, not a constant, not an id)
        nvals = groups.group_by("dpid", "checker").agg(pl.len().alias("nvals"))
        groups = groups.join(nvals, on=["dpid", "checker"]).filter(pl.col("nvals").is_between(2, DISC_MAX))
        groups = groups.filter(support_ok(ctx, CODE))
        if groups.height == 0:
            return cand_frame()
        paired = by_checker(
            of("j"),
            ["dpid", "dkey", "ppid"],
            [
                pl.col("present").sum(),
                pl.col("arr").sum(),
                pl.col("empty").sum(),
                pl.col("nscalar").sum(),
                pl.col("vmin").min(),
                pl.col("vmax").max(),
            ],
            k,
        )
        base = by_checker(
            of("b"),
            ["ppid"],
            [
                pl.col("present").sum().alias("b_present"),
                pl.col("arr").sum().alias("b_arr"),
                pl.col("empty").sum().alias("b_empty"),
            ],
            k,
        )
        values = by_checker(
            of("v"), ["ppid", "vkey"], [pl.col("n").sum().alias("v_n"), pl.col("vtext").first()], k
        )
        per_tool = by_checker(
            ctx.data.calls.group_by("tool", "fold")
            .agg(pl.len().alias("t_n"))
            .with_columns(pl.col("tool").cast(pl.String)),
            ["tool"],
            [pl.col("t_n").sum()],
            k,
        )
        eq = pl.Series(sorted(plan["eq"]), dtype=_U32)
        zero = pl.lit(0, pl.UInt32)
        cand = (
            groups.join(plan["pairs"], on="dpid")
            .join(paired, on=["dpid", "dkey", "ppid", "checker"], how="left")
            .join(base, on=["ppid", "checker"], how="left")
            .join(per_tool, on=["tool", "checker"])
            .with_columns(
                [pl.col(c).fill_null(zero) for c in ("present", "arr", "empty", "nscalar")]
                + [pl.col(c).fill_null(zero) for c in ("b_present", "b_arr", "b_empty")]
            )
            .with_columns(pl.col("ppid").is_in(eq.implode()).alias("eqc"))
        )
        n, tn = pl.col("n"), pl.col("t_n")
        b_full = pl.col("b_arr") - pl.col("b_empty")
        optional = (pl.col("b_present") > 0) & (pl.col("b_present") < tn)
        both_arrays = (pl.col("b_empty") > 0) & (b_full > 0)
        # tests tried per (tool, checker): the Bonferroni m
        cand = cand.with_columns(
            (
                optional.cast(pl.Int64) * 2 + both_arrays.cast(pl.Int64) * 2 + pl.col("eqc").cast(pl.Int64)
            ).alias("tries")
        )
        m = cand.group_by("tool", "checker").agg(pl.col("tries").sum().alias("m"))
        cand = cand.join(m, on=["tool", "checker"]).filter(pl.col("tries") > 0)
        # the equals base rate: calls of the tool whose P holds the group's one value
        cand = cand.join(
            values.rename({"vkey": "vmin"}), on=["ppid", "vmin", "checker"], how="left"
        ).with_columns(pl.col("v_n").fill_null(zero))
        tf = tn.cast(pl.Float64)
        forms = [
            ("present", optional & (pl.col("present") == n), pl.col("b_present") / tf),
            ("absent", optional & (pl.col("present") == 0), 1 - pl.col("b_present") / tf),
            (
                "nonempty",
                both_arrays & (pl.col("arr") == n) & (pl.col("empty") == 0),
                b_full / tf,
            ),
            ("empty", both_arrays & (pl.col("arr") == n) & (pl.col("empty") == n), pl.col("b_empty") / tf),
            (
                "equals",
                pl.col("eqc")
                & (pl.col("nscalar") == n)
                & (pl.col("vmin") == pl.col("vmax"))
                & (pl.col("v_n") < tn),
                pl.col("v_n") / tf,
            ),
        ]
        held = []
        for form, ok, q in forms:
            # q^t <= CHANCE / m, in logs (q = 0 cannot occur: the group itself shows the fact)
            chance = pl.col("tasks").cast(pl.Float64) * q.log() <= (pl.lit(CHANCE) / pl.col("m")).log()
            held.append(
                cand.filter(ok & chance).with_columns(
                    pl.lit(form).alias("form"),
                    pl.when(pl.lit(form == "equals")).then(pl.col("vtext")).otherwise(None).alias("value"),
                )
            )
        # P = Σ Q on every call of the group, within the tolerance its values admit, on RELATION's
        # evidence (an exact identity over >= 5 distinct values is no coincidence); not on every call
        scand = _sum_cands(of, groups, plan["sums"], k)
        if scand.height:
            held.append(scand.with_columns(pl.lit("sum").alias("form"), pl.col("tol").alias("value")))
        kept = pl.concat(held, how="diagonal_relaxed")
        if kept.height == 0:
            return cand_frame()
        kept = kept.with_columns(pl.col("dtext").str.starts_with("n:").alias("numeric"))
        kept = kept.with_columns(
            pl.col("qpid").fill_null(pl.lit(0, _U32))
            if "qpid" in kept.columns
            else pl.lit(0, _U32).alias("qpid")
        )
        merged = kept.group_by("checker", "tool", "dpid", "ppid", "qpid", "form", "value", "numeric").agg(
            pl.col("dtext").sort(),
            pl.col("n").sum(),
            pl.col("tasks").max(),
            merged_examples(),
        )
        path_of = plan["path_of"]
        out = []
        sum_paths = {
            (pp, qp): (ppath, qpath)
            for pp, qp, ppath, qpath in plan["sums"].select("ppid", "qpid", "ppath", "qpath").iter_rows()
        }
        for checker, tool, dpid, ppid, qpid, form, value, _num, dkeys, nn, tasks, ex in merged.iter_rows():
            decoded = [_decode_cond(x) for x in dkeys]
            if decoded[0][0] == "sign":
                when: dict[str, Any] = {"sign": sorted(v for _f, v in decoded)}
            else:
                vals = sorted((v for _f, v in decoded), key=canonical_str)
                when = {"in": vals}
            then: Any = {"equals": _decode_value(value)} if form == "equals" else form
            if form == "sum":
                then = {"sum": value}
                ppath, qpath = sum_paths[(ppid, qpid)]
                paths = [ppath, path_of[dpid], qpath]
            else:
                paths = [path_of[ppid], path_of[dpid]]
            params = canonical_str({"then": then, "when": when})
            out.append((checker, tool, CODE, paths, params, nn, tasks, nn, ex))
        frame = pl.DataFrame(
            out,
            schema={
                "checker": pl.Int32,
                "tool": pl.String,
                "code": pl.String,
                "paths": pl.List(pl.String),
                "params": pl.String,
                "calls": pl.Int64,
                "tasks": pl.Int64,
                "n": pl.Int64,
                "ex": pl.List(pl.UInt64),
            },
            orient="row",
        )
        return cand_frame(frame)


#: This folder's miners, in the order the miner runs them.
MINERS = (ConditionalMiner,)
