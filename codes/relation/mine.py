"""RELATION — `paths [A, X1, ...]`

Forms: `{"form": "linear", "coef": [c1..], "tol": T}` — A = Σ ci·Xi, ci ∈ {1, −1}, 1 to 3 terms (A = B,
A = B ± C, A = B + C + D, e.g. total = fare + taxes + fees); `{"form": "product", "tol": T}` — A = X1 × X2
(e.g. freight = `$args/quantity` × unit_rate); `{"form": "sum_over", "tol": T}` — A = Σ of every number at
a wildcard pattern (subtotal = Σ `/items/*/line_total`; an empty sum is 0); `{"form": "count_of", "tol":
"exact"}` — A = the number of members of the array at X1 (`/count = len(/shipments)`). A is a result field; operands
may be argument paths. Operands have no wildcard (paired per call, arguments included) or all lie in the
same array element (`/items/*/line_total = /items/*/quantity × /items/*/unit_price`). The first member of
an array of a plain parent counts as a field without wildcard (`/payment_history/*0/amount`), so a
conservation across arrays can be stated (`/payment_history/*0/amount = Σ /items/*/price`, held by
τ-bench retail's cancel, exchange, return and address/payment-change tools on every call); not with
another first member of the same array (the array-element group says it of every member) nor with the
sum or length of its own array (that holds only while the array has one member). Tolerance T:
`exact` when every operand is an int; `cent` (|A − rhs| ≤ 0.005 + 1e-9) when every value has at most
2 decimals; otherwise `rel` (|A − rhs| ≤ 1e-9 · max(1, |A|, |rhs|)).

*Qualifying example*: an instance where every operand is present and numeric. *Trivial cases*: no
operand constant over the qualifying examples (a relation that holds because a side is constant or
always zero says nothing), and for three-term sums no *pair* of terms constant either (`/a = /x + /y −
/z` where `/y − /z` is always 0 is really `/a = /x`); ≥ 5 distinct operand tuples (a `count_of` needs
only its two sides to vary, see below); a one-term equality
between a result and an argument is ECHO's business and is not emitted. *Implied relations are dropped*:
linear relations are kept in order of fewest terms, fewest minus signs, then path order, and one whose
coefficient vector lies in the span of those already kept (exact rational elimination) is dropped — so
`/on_hand = /available + /reserved` is stated once, not again as `/available = /on_hand − /reserved`, and
A = C is not stated when A = B and B = C are; products and sums are deduplicated after replacing every
field by the first field of its equality class. *Catches*: a total that no longer adds up, a line total
that is not quantity × price, a list that lost or repeated members while its count did not
(`count_of`: an emptied or duplicated page, a count zeroed by a sentinel).

*`count_of` (count-like fields equal to len(list))*: the left side is a result number, the
right side the length of a result array at a pattern without wildcards (the search covers the plain
group of a tool, not arrays nested in arrays). Its chance argument replaces the ≥ 5 tuples of the other
forms: if the count and the list's length were unrelated, a call would match with probability
Σ_v P(count = v)·P(len = v) ≤ max_v P(len = v) = q, and tasks are independent, so holding on t tasks
has chance at most q^t. A `count_of` is kept only when both sides vary, the most common length takes
at most `COUNT_OF_MAX_SHARE` = 0.75 of the qualifying calls (counted per checker, merged over parts and
folds) and the calls come from at least `COUNT_OF_MIN_TASKS` = 30 tasks: q^t ≤ 0.75^30 ≈ 2·10⁻⁴.

*Search* (near-linear in calls): candidates are generated on a few rows per fold — the 6 rows with the
most non-zero fields and one row per field where it is present, drawn from the rows of the tool's first
4,000 calls (by call key) in that fold —
by meeting in the middle (A − d·D = b·B + c·C, joined on a key rounded to the cent), so three-term sums
cost fields² per row, not fields⁴; a larger sample of rows per fold then refutes candidates (one refuted
in two or more folds cannot hold in any checker: a fold checker leaves out only one fold), and the
survivors are verified on every call with vectorised polars expressions. Groups with more than 40
numeric fields skip three-term sums; more than 150 skip the search. Known limit: a relation whose fields
are never all present together in a fold's generation rows is not proposed (sampling bounds the cost,
never the correctness of what is emitted).

Checker semantics: every operand present and numeric ⇒ |A − rhs| within T. Violation path = A's
concrete path; expected the computed right-hand side; observed A's value.

**RELATION: coefficients in {−1, 1}, 5 tuples.** Small integer coefficients keep the search finite and
the relations meaningful (totals, differences, products); Daikon's minimum for ternary invariants is 5
distinct tuples, below which an exact linear fit is likely by chance.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import ARGS_PREFIX
from output_contracts.codes.date_order.mine import WILD_PREFIX
from output_contracts.codes.mining_context import MiningContext
from output_contracts.codes.mining_frames import (
    CAND_SCHEMA,
    CLS_ARR,
    CLS_NUM,
    FULL,
    KIND_CODE,
    SAMPLE_CALLS,
    Leaves,
    by_checker,
    cand_frame,
    merged_examples,
)
from output_contracts.jsonutil import canonical_str
from output_contracts.traces.pointers import MAP_TOKEN

#: This folder's row of the support table of docs/rules.md: the qualifying example, the default
#: support (filled in with the spec's `min_support` and `min_tasks`) and the extra conditions.
QUALIFYING = "an instance with every operand numeric"
SUPPORT = "≥ {min_support} calls"
CONDITIONS = "≥ 5 distinct tuples; no constant operand or pair of terms; not implied"

RELATION_MIN_TUPLES = 5  # Daikon's ternary minimum: >= 5 distinct operand tuples
RELATION_MAX_TERMS = 3
#: RELATION count_of: kept only when the most common length takes at most this share of the qualifying
#: calls and they come from at least COUNT_OF_MIN_TASKS tasks (a coincidence then has chance at most
#: 0.75^30 ~ 2e-4; docs/rules.md).
COUNT_OF_MAX_SHARE = 0.75
COUNT_OF_MIN_TASKS = 30
#: What the contract set records of these constants (its `params`).
CONSTANTS = {
    "min_tuples": RELATION_MIN_TUPLES,
    "max_terms": RELATION_MAX_TERMS,
    "count_of_max_share": COUNT_OF_MAX_SHARE,
    "count_of_min_tasks": COUNT_OF_MIN_TASKS,
}

#: The rule-path token of the first member of an array (`output_contracts.traces.pointers.fixed_index`).
FIRST_TOKEN = "*0"

WINDOW = 4000  # rows of each fold (first by call key) of the sample's wide frame that samples are drawn from
GEN_ROWS = 6  # rows of each fold candidates are generated from (the most informative ones)
SAMPLE_ROWS = 32  # first rows (by call key) of each fold that refute candidates ...
SAMPLE_PER_COLUMN = 4  # ... plus, per field, the first rows where that field is present
MAX_FIELDS_TERNARY = 40  # three-term sums are searched for up to this many fields in one group
MAX_FIELDS = 150  # beyond this many numeric fields in one group, no relation search at all
GEN_ABS, GEN_REL = 0.006, 1e-9  # candidate tolerance: looser than every verification tolerance
BATCH = 150  # candidates verified per polars pass
WIDE_BATCH_ROWS = 65_536  # numbers of the specs whose wide frames are built together (`_wide_all`)


@dataclass(frozen=True)
class Field:
    """One operand column of a group's wide frame."""

    name: str  # column name in the wide frame
    path: str  # rule path (`/total`, `$args/qty`, `/items/*/price` for a sum)
    result: bool  # a result field (may be the left-hand side)
    is_sum: bool  # Σ over a wildcard pattern (only as the sum_over term)
    is_len: bool = False  # the length of an array (only as the count_of term)
    first: str = ""  # for the member at index 0 of an array (`/payment_history/*0/amount`): that array


@dataclass(frozen=True)
class Cand:
    """A candidate relation over field indexes: lhs = form(terms)."""

    form: str  # linear | product | sum_over | count_of
    lhs: int
    terms: tuple[int, ...]
    coef: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupSpec:
    """One relation search space: the plain numeric fields of a tool (results and arguments, plus the
    sums over its wildcard patterns), or the numeric fields of one array instance group. Fixed from
    corpus-wide facts, so that every task part builds the same columns."""

    tool: str
    group: str  # "" for the plain group, else the pattern up to its last `*`
    fields: tuple[Field, ...]
    name_of: tuple[tuple[int, str], ...]  # (pid, column name) of every field
    #: (pid, column name) of the first-member fields: the same pids as some sums, read at index 0
    firsts: tuple[tuple[int, str], ...] = ()


_CENT = ((pl.col("num") * 100).round() - pl.col("num") * 100).abs() <= 1e-6
_IS_INT = pl.col("code") == KIND_CODE["int"]


def _specs(ctx: MiningContext, num_pids: pl.Series) -> list[GroupSpec]:
    """The search spaces, from the patterns that hold a number in some clean call (`num_pids`), and
    (as count_of terms) the result arrays at patterns without wildcards that never hold a number."""
    pats = ctx.data.patterns.filter(pl.col("pid").is_in(num_pids.implode()))
    held = ctx.stats.filter(pl.col("cls") == CLS_ARR).select(
        pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String)
    )
    arrays = (
        ctx.data.patterns.filter(
            ~pl.col("pid").is_in(num_pids.implode()) & ~pl.col("wild") & (pl.col("side") == "result")
        )
        .with_columns(pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String))
        .join(held.unique(), on=["tool", "pattern"], how="semi")
    )
    plain = pats.filter(~pl.col("wild")).with_columns(
        pl.when(pl.col("side") == "arg")
        .then(pl.lit(ARGS_PREFIX) + pl.col("pattern"))
        .otherwise("pattern")
        .alias("col")
    )
    wild = pats.filter(pl.col("wild") & (pl.col("side") == "result")).with_columns(
        pl.col("pattern").str.extract(WILD_PREFIX, 1).alias("group")
    )
    out: list[GroupSpec] = []
    # every tool with a plain numeric field, or with an array whose first member can be one
    first_tools = wild.filter(pl.col("pattern").str.count_matches("/*", literal=True) == 1)["tool"]
    for tool in sorted(set(plain["tool"].to_list()) | set(first_tools.to_list())):
        names = plain.filter(pl.col("tool") == tool).sort("col")
        if names.height > MAX_FIELDS:
            continue
        fields = [Field(f"c{i}", c, not c.startswith(ARGS_PREFIX), False) for i, c in enumerate(names["col"])]
        name_of = list(zip(names["pid"].to_list(), [f.name for f in fields], strict=True))
        # Sums range over array members only (a map's entries are paired per key, never summed).
        snames = wild.filter(
            (pl.col("tool") == tool) & ~pl.col("pattern").str.contains(MAP_TOKEN, literal=True)
        ).sort("pattern")
        sfields = [Field(f"s{i}", p, True, True) for i, p in enumerate(snames["pattern"])]
        name_of += list(zip(snames["pid"].to_list(), [f.name for f in sfields], strict=True))
        lnames = arrays.filter(pl.col("tool") == tool).sort("pattern")
        lfields = [Field(f"l{i}", p, True, False, True) for i, p in enumerate(lnames["pattern"])]
        name_of += list(zip(lnames["pid"].to_list(), [f.name for f in lfields], strict=True))
        # The first member of each array of a plain parent (one `*`): a plain field of the call, so that
        # a conservation across arrays (`/payment_history/*0/amount = Σ /items/*/price`) can be stated.
        fnames = snames.filter(pl.col("pattern").str.count_matches("/*", literal=True) == 1)
        ffields = [
            Field(f"f{i}", p.replace("/*", "/" + FIRST_TOKEN, 1), True, False, first=p[: p.index("/*")])
            for i, p in enumerate(fnames["pattern"])
        ]
        firsts = tuple(zip(fnames["pid"].to_list(), [f.name for f in ffields], strict=True))
        out.append(GroupSpec(tool, "", tuple(fields + sfields + lfields + ffields), tuple(name_of), firsts))
    for (tool, group), g in sorted(
        wild.group_by("tool", "group"), key=lambda t: (str(t[0][0]), str(t[0][1]))
    ):
        cols = g.sort("pattern")
        if cols.height < 2 or cols.height > MAX_FIELDS:
            continue
        fields = [Field(f"c{i}", c, True, False) for i, c in enumerate(cols["pattern"])]
        name_of = list(zip(cols["pid"].to_list(), [f.name for f in fields], strict=True))
        out.append(GroupSpec(str(tool), str(group), tuple(fields), tuple(name_of)))
    return out


def _wide_all(
    specs: Sequence[tuple[int, GroupSpec]], part: Leaves, stats: bool = True
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame | None]]:
    """The wide frames of every spec of one task part, a batch of specs at a time, and their per-field
    per-fold stats: (wide, stats) per batch.

    Wide: `spec`, `cid`, `inst` (the array instance of a group spec; null for a plain spec), one Float64
    column per field name of a spec of the batch (`c0`, `s1`, ...; a spec's rows hold null in the names
    that are not its own), `fold`, `task`; one row per (spec, call) or (spec, call, instance), each
    spec's rows together, by call and instance. A spec with no row has none. Stats (None when `stats`
    is off: the plan needs none): spec, name, fold, n, n_int, n_cent (int / 2-decimal counts).

    Every spec's rows are cut from the part in one pass per kind of field (a pattern id belongs to at
    most one plain spec and one array group). Every step after that (pivot, sums, the join to the
    calls, the sort, the stats) runs once per batch with the spec as a key: a polars step costs about
    as much on one spec's few rows as on all of them (on a small corpus RELATION's plan was a quarter
    of the mine, most of it steps repeated per spec). A batch holds specs of at most `WIDE_BATCH_ROWS`
    numbers together (a larger spec is a batch of its own), since its wide frame has a column for
    every field name of the batch on every row: on a large part, all specs at once measured no faster
    and held 100 MB more at 1M calls."""
    calls_tool = part.calls.select("cid", "fold", "task", "tool")
    plain_map = _field_map([(i, s.name_of) for i, s in specs if not s.group])
    len_pids = sorted({p for _, s in specs for p, n in s.name_of if n.startswith("l")})
    nums = (
        part.leaves.lazy()
        .filter((pl.col("cls") == CLS_NUM) | ((pl.col("cls") == CLS_ARR) & pl.col("pid").is_in(len_pids)))
        .select(
            "cid",
            "pid",
            # an array's row stands for its length: an int
            pl.when(pl.col("cls") == CLS_ARR)
            .then(pl.lit(KIND_CODE["int"]))
            .otherwise(pl.col("code"))
            .cast(pl.UInt8)
            .alias("code"),
            pl.when(pl.col("cls") == CLS_ARR)
            .then(pl.col("len").cast(pl.Float64))
            .otherwise("num")
            .alias("num"),
            "fold",
        )
        .join(plain_map.lazy(), on="pid", how="inner", maintain_order="left")
        .collect()
    )
    flat = nums.filter(~pl.col("sum")).drop("sum")
    srows = nums.filter(pl.col("sum")).drop("sum")
    group_map = _field_map([(i, s.name_of) for i, s in specs if s.group])
    first_map = _field_map([(i, s.firsts) for i, s in specs if s.firsts])
    wild_pids = sorted(set(group_map["pid"].to_list()) | set(first_map["pid"].to_list()))
    wl: pl.DataFrame | None = None
    if wild_pids:
        wnum = part.scan_paths(wild_pids).filter(pl.col("cls") == CLS_NUM).collect()
        if group_map.height:
            groups = pl.DataFrame(
                [(p, s.group) for _, s in specs if s.group for p, _ in s.name_of],
                schema={"pid": pl.UInt32, "group": pl.String},
                orient="row",
            )
            # The pattern after its last `*` has no index, so it ends the path verbatim: cut it off (its
            # length is counted once per pattern, not per row).
            cuts = groups.join(part.patterns.select("pid", "pattern"), on="pid").select(
                "pid", (pl.col("pattern").str.len_chars() - pl.col("group").str.len_chars()).alias("cut")
            )
            wl = (
                wnum.lazy()
                .join(cuts.lazy(), on="pid")
                .with_columns(
                    pl.col("path").str.slice(0, pl.col("path").str.len_chars() - pl.col("cut")).alias("inst")
                )
                .select("cid", "fold", "pid", "inst", "num", "code")
                .join(group_map.lazy(), on="pid", how="inner", maintain_order="left")
                .drop("sum")
                .collect()
            )
        if first_map.height:
            # the member at index 0: its path is the pattern with the one `*` written `0`
            zero = pl.DataFrame(
                {"pid": first_map["pid"], "path": [_first_path(p) for p in _patterns_of(part, first_map)]},
                schema={"pid": pl.UInt32, "path": pl.String},
            )
            first = (
                wnum.join(zero, on=["pid", "path"], how="semi")
                .select("cid", "pid", "code", "num", "fold")
                .join(first_map, on="pid")
            )
            # a spec's own numbers first, then its first members (`first` in the pivot keeps that order)
            flat = pl.concat([flat, first.select(flat.columns)])
    sizes: dict[int, int] = {}
    for frame in (flat, srows, *([wl] if wl is not None else [])):
        for sp, n in frame.group_by("spec").len().iter_rows():
            sizes[sp] = sizes.get(sp, 0) + n
    batches: list[list[int]] = [[]]
    rows = 0
    for i, _ in specs:
        if i not in sizes:
            continue
        if batches[-1] and rows + sizes[i] > WIDE_BATCH_ROWS:
            batches.append([])
            rows = 0
        batches[-1].append(i)
        rows += sizes[i]
    keys = (
        pl.concat(
            [m.select("key", "spec", pl.col("col").alias("name")) for m in (plain_map, group_map, first_map)]
        ).unique()
        if stats
        else None
    )
    batches = [b for b in batches if b]
    flats, sums, wls = (_split(f, batches) if f is not None else None for f in (flat, srows, wl))
    assert flats is not None and sums is not None
    for j, batch in enumerate(batches):
        members = set(batch)
        chosen = [(i, sp) for i, sp in specs if i in members]
        yield _wide_batch(chosen, flats[j], sums[j], wls[j] if wls is not None else None, calls_tool, keys)


def _split(frame: pl.DataFrame, batches: Sequence[Sequence[int]]) -> list[pl.DataFrame]:
    """The rows of each batch of specs (by the `spec` column), in their order: one partition, not a
    filter per batch."""
    if len(batches) == 1:
        return [frame]
    parts = frame.partition_by("spec", as_dict=True, maintain_order=True)
    out = []
    for b in batches:
        got = [parts[(i,)] for i in b if (i,) in parts]
        out.append(pl.concat(got) if got else frame.clear())
    return out


def _wide_batch(
    specs: Sequence[tuple[int, GroupSpec]],
    flat: pl.DataFrame,
    srows: pl.DataFrame,
    wl: pl.DataFrame | None,
    calls_tool: pl.DataFrame,
    keys: pl.DataFrame | None,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """`_wide_all`'s frames of one batch of specs from their rows: `flat` (a plain spec's numbers and
    first members), `srows` (the numbers it sums), `wl` (a group spec's numbers, with `inst`); `keys`:
    field key -> spec, name (None: no stats)."""
    calls = calls_tool.drop("tool")
    frames = []
    if flat.height:
        # A call's leaves are all its own tool's, so a plain spec's rows are its calls: one row per call
        # pivots every plain spec at once (the spec comes back from the call's tool).
        wide = flat.pivot(on="col", index="cid", values="num", aggregate_function="first")
        if srows.height:
            wide = wide.join(
                srows.pivot(on="col", index="cid", values="num", aggregate_function="sum"),
                on="cid",
                how="left",
            )
        spec_of = {s.tool: i for i, s in specs if not s.group}
        wide = wide.join(calls_tool, on="cid", how="inner").with_columns(
            pl.col("tool").cast(pl.String).replace_strict(spec_of, return_dtype=pl.Int64).alias("spec")
        )
        # an empty sum is 0: a call without the array sums to 0 over it (in the specs that sum it)
        summed: dict[str, list[int]] = {}
        for i, s in specs:
            for f in s.fields:
                if f.is_sum and not s.group:
                    summed.setdefault(f.name, []).append(i)
        wide = wide.with_columns(
            pl.when(pl.col("spec").is_in(ids))
            .then(pl.col(name).fill_null(0.0) if name in wide.columns else pl.lit(0.0))
            .otherwise(pl.col(name) if name in wide.columns else pl.lit(None, pl.Float64))
            .alias(name)
            for name, ids in summed.items()
        )
        frames.append(wide.drop("tool").sort("cid"))
    if wl is not None and wl.height:
        frames.append(
            wl.pivot(on="col", index=["spec", "cid", "inst"], values="num", aggregate_function="first")
            .join(calls, on="cid", how="inner")
            .sort("spec", "cid", "inst")
        )
    names = sorted({f.name for _, s in specs for f in s.fields})
    # a spec's rows all come from one of the frames, so concatenating keeps each spec's order
    wide = (
        pl.concat(frames, how="diagonal")
        if frames
        else pl.DataFrame(schema={"spec": pl.Int64(), **calls.schema})
    )
    wide = wide.with_columns(
        [pl.lit(None, pl.String).alias("inst")] * ("inst" not in wide.columns)
        + [pl.lit(None, pl.Float64).alias(n) for n in names if n not in wide.columns]
    )
    fst = None
    if keys is not None:
        longs = [flat.select("key", "fold", "code", "num"), srows.select("key", "fold", "code", "num")]
        if wl is not None:
            longs.append(wl.select("key", "fold", "code", "num"))
        fst = (
            pl.concat(longs)
            .group_by("key", "fold")
            .agg(pl.len().alias("n"), _IS_INT.sum().alias("n_int"), _CENT.sum().alias("n_cent"))
            .join(keys, on="key")
            .drop("key")
        )
    return wide, fst


def _spec_frame(wide: pl.DataFrame, spec: GroupSpec) -> pl.DataFrame:
    """One spec's rows of a `_wide_all` frame (its partition) with its own columns only: cid, inst (a
    group spec), its fields, fold, task."""
    return wide.select(
        "cid", *(["inst"] if spec.group else []), *(f.name for f in spec.fields), "fold", "task"
    )


def _wide_frames(
    specs: Sequence[tuple[int, GroupSpec]], part: Leaves, stats: bool = True
) -> Iterator[tuple[int, pl.DataFrame, pl.DataFrame | None]]:
    """(spec index, wide frame, per-field per-fold stats) of one task part, for every spec with rows
    (`_wide_all` split by spec). Wide frame: one row per call (plain group) or array instance (`inst`),
    one Float64 column per field, plus cid, fold, task; per-field stats: name, fold, n, n_int, n_cent,
    or None when `stats` is off."""
    of = dict(specs)
    for wide, fst in _wide_all(specs, part, stats):
        fsts = _by_spec(fst) if fst is not None else {}
        for i, w in sorted(_by_spec(wide).items()):
            yield i, _spec_frame(w, of[i]), fsts.get(i)


def _field_map(named: Sequence[tuple[int, Sequence[tuple[int, str]]]]) -> pl.DataFrame:
    """pid -> spec, col (the field's column name), sum (a Σ field), key (the field's number: one
    integer for (spec, col), the same in every map) of the given specs' fields."""
    kinds = {"c": 0, "s": 1, "l": 2, "f": 3}
    rows = [
        (p, i, n, n.startswith("s"), (i << 32) | (kinds[n[0]] << 28) | int(n[1:]))
        for i, name_of in named
        for p, n in name_of
    ]
    return pl.DataFrame(
        rows,
        schema={"pid": pl.UInt32, "spec": pl.Int64, "col": pl.String, "sum": pl.Boolean, "key": pl.Int64},
        orient="row",
    )


def _by_spec(rows: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """`rows` split by their `spec` column (row order kept within each)."""
    return {
        int(key[0]): frame
        for key, frame in rows.partition_by(
            "spec", as_dict=True, include_key=False, maintain_order=True
        ).items()
    }


def _patterns_of(part: Leaves, fmap: pl.DataFrame) -> list[str]:
    """The patterns of `fmap`'s pids, in its row order."""
    return (
        fmap.select("pid")
        .join(part.patterns.select("pid", "pattern"), on="pid", how="left", maintain_order="left")["pattern"]
        .to_list()
    )


def _first_path(pattern: str) -> str:
    """The concrete path of the member at index 0 of a pattern's one array wildcard."""
    tokens = pattern.split("/")
    tokens[tokens.index("*")] = "0"
    return "/".join(tokens)


def _sample_all(wide: pl.DataFrame, names: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(generation rows, refutation rows) of every fold of every spec of a `_wide_all` frame (`names`:
    its field columns), as wide frames with `spec` and `_r`, the row's number within its spec's frame.

    Both come from a bounded window of each fold: its first WINDOW rows by call key. Generation rows
    are the GEN_ROWS rows of the window with the most present non-zero fields (rows of zeros match
    everything and teach nothing) plus, per field, the first row where that field is present;
    refutation rows are the first SAMPLE_ROWS rows plus, per field, the first SAMPLE_PER_COLUMN rows
    where it is present. Sampling only prunes candidates: every relation emitted is verified on every
    call, so the window bounds cost, not correctness (a relation over fields that never co-occur in a
    window is not proposed).

    Every spec at once, the spec a key of every step: a spec's rows hold null in the names that are not
    its fields, which count as absent, so its picks are those made on its own frame alone
    (`tests/codes/relation/reference.sample_rows`)."""
    w = (
        wide.with_columns(pl.int_range(pl.len(), dtype=pl.UInt32).over("spec").alias("_r"))
        .group_by("spec", "fold", maintain_order=True)
        .head(WINDOW)
    )
    score = pl.sum_horizontal([(pl.col(n).is_not_null() & (pl.col(n) != 0)).cast(pl.Int32) for n in names])
    key = ["spec", "_r"]
    gen_picks = [
        w.with_columns(score.alias("_score"))
        .sort(["spec", "fold", "_score", "_r"], descending=[False, False, True, False])
        .group_by("spec", "fold", maintain_order=True)
        .head(GEN_ROWS)
        .select(key)
    ]
    ref_picks = [w.group_by("spec", "fold", maintain_order=True).head(SAMPLE_ROWS).select(key)]
    present = (
        w.select(*key, "fold", *[pl.col(n).is_not_null() for n in names])
        .unpivot(index=[*key, "fold"])
        .filter(pl.col("value"))
        .select(*key, pl.col("_r").rank("ordinal").over("spec", "fold", "variable").alias("_rank"))
    )
    gen_picks.append(present.filter(pl.col("_rank") == 1).select(key))
    ref_picks.append(present.filter(pl.col("_rank") <= SAMPLE_PER_COLUMN).select(key))
    gen = w.join(pl.concat(gen_picks).unique(), on=key, how="semi").sort(key)
    ref = w.join(pl.concat(ref_picks).unique(), on=key, how="semi").sort(key)
    return gen, ref


def _long_all(rows: pl.DataFrame, fields: Sequence[tuple[int, Sequence[Field]]]) -> pl.DataFrame:
    """(s, r, j, v): every present value (|v| < 1e15) of the sample rows of several specs (`rows` with
    `spec`, as `_sample_all` makes them; `fields`: (spec, its fields)), field j by index within its
    spec."""
    jmap = pl.DataFrame(
        [(i, f.name, j) for i, fs in fields for j, f in enumerate(fs)],
        schema={"spec": pl.Int64, "name": pl.String, "j": pl.Int64},
        orient="row",
    )
    names = sorted(set(jmap["name"].to_list()))
    return (
        rows.select("spec", "_r", *names)
        .unpivot(index=["spec", "_r"], variable_name="name", value_name="v")
        .drop_nulls("v")
        .filter(pl.col("v").abs() < 1e15)
        .join(jmap, on=["spec", "name"])
        .select(pl.col("spec").alias("s"), pl.col("_r").alias("r"), "j", "v")
    )


def _close(a: str, b: str) -> pl.Expr:
    x, y = pl.col(a), pl.col(b)
    return (x - y).abs() <= GEN_ABS + GEN_REL * pl.max_horizontal(pl.lit(1.0), x.abs(), y.abs())


def _keyed(df: pl.DataFrame, value: str) -> pl.DataFrame:
    """`df` three times, with key = round(value·100) + {-1, 0, 1}: a join on the key then finds every
    pair within one cent, the superset the GEN tolerance filter narrows."""
    # values beyond Int64 cents (|v| > 9.2e16) cannot be matched to the cent: no key, never joined
    base = (pl.col(value) * 100).round().cast(pl.Int64, strict=False)
    return pl.concat([df.with_columns((base + d).alias("key")) for d in (-1, 0, 1)]).filter(
        pl.col("key").is_not_null()
    )


# The vectorised candidate encoding: one Int64 row (form, a, t0, t1, t2, c0, c1, c2) per candidate.
# `form` names the shape; an unused term slot holds NO_TERM (with coefficient 0), which `_refute`
# maps to an extra constant 0.0 value, so every form is evaluated by one expression without nulls
# (a null would not survive the joins and `unique` that deduplicate candidates).
LINEAR, PRODUCT, SUM_OVER, COUNT_OF = 0, 1, 2, 3
NO_TERM = -1


#: One refutation input of `_refute`: (spec index, sample rows, the spec's fields, whether three-term
#: sums are searched).
Batch = Sequence[tuple[int, pl.DataFrame, list[Field], bool]]


def _roles(spaces: Sequence[tuple[int, Sequence[Field], bool]]) -> pl.DataFrame:
    """(s, j) -> res (may be the left-hand side), sl (a sum or length: only the sum_over/count_of term),
    is_sum, is_len, tern (the spec searches three-term sums) of every field of every space (spec,
    fields, tern)."""
    rows = [
        (s, j, f.result and not f.is_sum and not f.is_len, f.is_sum, f.is_len, tern)
        for s, fields, tern in spaces
        for j, f in enumerate(fields)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "s": pl.Int64,
            "j": pl.Int64,
            "res": pl.Boolean,
            "is_sum": pl.Boolean,
            "is_len": pl.Boolean,
            "tern": pl.Boolean,
        },
        orient="row",
    )


def _generate(long: pl.DataFrame, spaces: Sequence[tuple[int, Sequence[Field], bool]]) -> pl.DataFrame:
    """Candidates matching on at least one generation row where all their operands are present, of
    every space of `spaces` (spec, fields, whether three-term sums are searched) at once, from their
    generation rows in long form (s, r, j, v: `_long_all`). Rows of different specs never pair, since
    every join is on (s, r): one polars pass per step for all specs, not one per spec (the sample rows
    are few, so per-spec passes were mostly fixed cost).

    Rows (s, form, a, t0, t1, t2, c0, c1, c2): LINEAR (unused terms = NO_TERM, coef 0), PRODUCT,
    SUM_OVER, COUNT_OF. Three-term sums are found by meeting in the middle: A − d·D = b·B + c·C,
    joined on a rounded key, so the cost is (fields² per row), not fields⁴.
    """
    cols = ["s", *CAND_COLS]
    long = long.join(_roles(spaces), on=["s", "j"])
    on = ["s", "r"]
    lhs = long.filter("res").select("s", "r", "tern", pl.col("j").alias("a"), pl.col("v").alias("va"))
    ops = long.filter(~pl.col("is_sum") & ~pl.col("is_len")).select("s", "r", "j", "v")
    sm = long.filter("is_sum").select("s", "r", pl.col("j").alias("w"), pl.col("v").alias("vw"))
    ln = long.filter("is_len").select("s", "r", pl.col("j").alias("w"), pl.col("v").alias("vw"))
    out: list[pl.DataFrame] = []
    n1, z = pl.lit(NO_TERM, pl.Int64), pl.lit(0, pl.Int64)

    def emit(df: pl.DataFrame, form: int, t: list[pl.Expr], c: list[pl.Expr]) -> None:
        out.append(
            df.select(
                "s",
                pl.lit(form, pl.Int64).alias("form"),
                pl.col("a").cast(pl.Int64),
                *[x.cast(pl.Int64).alias(f"t{i}") for i, x in enumerate(t)],
                *[x.cast(pl.Int64).alias(f"c{i}") for i, x in enumerate(c)],
            )
        )

    one = lhs.join(ops.rename({"j": "b", "v": "vb"}), on=on).filter(
        (pl.col("a") != pl.col("b")) & _close("va", "vb")
    )
    emit(one, LINEAR, [pl.col("b"), n1, n1], [pl.lit(1), z, z])
    so = lhs.join(sm, on=on).filter(_close("va", "vw"))
    emit(so, SUM_OVER, [pl.col("w"), n1, n1], [z, z, z])
    co = lhs.join(ln, on=on).filter(pl.col("va") == pl.col("vw"))
    emit(co, COUNT_OF, [pl.col("w"), n1, n1], [z, z, z])
    pairs = (
        ops.rename({"j": "b", "v": "vb"})
        .join(ops.rename({"j": "c", "v": "vc"}), on=on)
        .filter(pl.col("b") < pl.col("c"))
    )
    variants = pl.concat(
        [
            pairs.select(
                "s",
                "r",
                "b",
                "c",
                pl.lit(sb).alias("sb"),
                pl.lit(sc).alias("sc"),
                (sb * pl.col("vb") + sc * pl.col("vc")).alias("u"),
            )
            for sb, sc in ((1, 1), (1, -1), (-1, 1), (-1, -1))
        ]
    )
    vk = _keyed(variants, "u")
    lk = lhs.with_columns((pl.col("va") * 100).round().cast(pl.Int64).alias("key"))
    key = [*on, "key"]
    two = lk.join(vk.filter((pl.col("sb") == 1) | (pl.col("sc") == 1)), on=key).filter(
        (pl.col("a") != pl.col("b")) & (pl.col("a") != pl.col("c")) & _close("va", "u")
    )
    emit(two, LINEAR, [pl.col("b"), pl.col("c"), n1], [pl.col("sb"), pl.col("sc"), z])
    prod = _keyed(pairs.with_columns((pl.col("vb") * pl.col("vc")).alias("u")), "u")
    pr = lk.join(prod, on=key).filter(
        (pl.col("a") != pl.col("b")) & (pl.col("a") != pl.col("c")) & _close("va", "u")
    )
    emit(pr, PRODUCT, [pl.col("b"), pl.col("c"), n1], [z, z, z])
    tern = lhs.filter("tern")
    if tern.height:
        part = pl.concat(
            [
                tern.join(ops.rename({"j": "d", "v": "vd"}), on=on)
                .filter(pl.col("a") != pl.col("d"))
                .select(
                    "s", "r", "a", "d", pl.lit(sd).alias("sd"), (pl.col("va") - sd * pl.col("vd")).alias("u")
                )
                for sd in (1, -1)
            ]
        )
        pk = part.with_columns((pl.col("u") * 100).round().cast(pl.Int64).alias("key")).rename({"u": "ul"})
        three = (
            pk.join(vk, on=key)
            .filter(
                (pl.col("d") != pl.col("b"))
                & (pl.col("d") != pl.col("c"))
                & (pl.col("a") != pl.col("b"))
                & (pl.col("a") != pl.col("c"))
                & ((pl.col("sb") == 1) | (pl.col("sc") == 1) | (pl.col("sd") == 1))
                & _close("ul", "u")
            )
            .select("s", "a", "b", "c", "d", "sb", "sc", "sd")
            .unique()
        )
        # Canonical term order: positive terms first, then by field index.
        canon = []
        for s, a, b, c, d, sb, sc, sd in three.iter_rows():
            terms = sorted(((b, sb), (c, sc), (d, sd)), key=lambda t: (-t[1], t[0]))
            canon.append(
                (s, LINEAR, a, terms[0][0], terms[1][0], terms[2][0], terms[0][1], terms[1][1], terms[2][1])
            )
        if canon:
            out.append(pl.DataFrame(canon, schema=cols, orient="row"))
    schema = {"s": pl.Int64(), **CAND_COLS}
    allc = pl.concat([f.select(cols).cast(schema) for f in out]).unique()  # type: ignore[arg-type]
    # Two-term linear in canonical order too (positive first).
    swap = (
        (pl.col("form") == LINEAR)
        & (pl.col("t2") == NO_TERM)
        & (pl.col("t1") != NO_TERM)
        & (pl.col("c0") == -1)
    )
    allc = allc.with_columns(
        pl.when(swap).then(pl.col("t1")).otherwise(pl.col("t0")).alias("t0"),
        pl.when(swap).then(pl.col("t0")).otherwise(pl.col("t1")).alias("t1"),
        pl.when(swap).then(pl.col("c1")).otherwise(pl.col("c0")).alias("c0"),
        pl.when(swap).then(pl.col("c0")).otherwise(pl.col("c1")).alias("c1"),
    )
    return allc.unique().sort(cols)


CAND_COLS: dict[str, pl.DataType] = {k: pl.Int64() for k in ("form", "a", "t0", "t1", "t2", "c0", "c1", "c2")}


def _refute(cands: pl.DataFrame, batch: Batch, k: int) -> dict[int, pl.DataFrame]:
    """Per spec of `batch`: its candidates (`_generate`'s rows) less those refuted on its refutation
    rows of two or more folds (of one fold when k == 1).

    Vectorised as one join of candidates with the rows' value lists of the same spec (`list.get` by
    field index; the extra last element is the 0 of unused terms), every spec at once."""
    allowed = 1 if k > 1 else 0
    refs = [
        ref.select(
            pl.lit(s, pl.Int64).alias("s"),
            "fold",
            pl.concat_list([*[pl.col(f.name).cast(pl.Float64) for f in fields], pl.lit(0.0)]).alias("vals"),
        )
        for s, ref, fields, _ in batch
        if ref.height
    ]
    idx = cands.with_row_index("_c")
    if refs and cands.height:
        width = pl.DataFrame(
            [(s, len(fields)) for s, _, fields, _ in batch],
            schema={"s": pl.Int64, "_m": pl.Int64},
            orient="row",
        )
        v = {c: pl.col("vals").list.get(pl.col(f"_{c}")) for c in ("a", "t0", "t1", "t2")}
        rhs = (
            pl.when(pl.col("form") == LINEAR)
            .then(pl.col("c0") * v["t0"] + pl.col("c1") * v["t1"] + pl.col("c2") * v["t2"])
            .when(pl.col("form") == PRODUCT)
            .then(v["t0"] * v["t1"])
            .otherwise(v["t0"])
        )
        bad = (
            idx.join(width, on="s")
            .with_columns(
                [
                    pl.when(pl.col(c) == NO_TERM).then(pl.col("_m")).otherwise(pl.col(c)).alias(f"_{c}")
                    for c in ("a", "t0", "t1", "t2")
                ]
            )
            .join(pl.concat(refs), on="s")
            .with_columns(v["a"].alias("_lhs"), rhs.alias("_rhs"))
            .filter(pl.col("_lhs").is_not_null() & pl.col("_rhs").is_not_null() & ~_close("_lhs", "_rhs"))
            .group_by("_c")
            .agg(pl.col("fold").n_unique().alias("_folds"))
            .filter(pl.col("_folds") > allowed)
        )
        idx = idx.join(bad, on="_c", how="anti")
    kept = idx.select("s", *CAND_COLS)
    return {
        int(key[0]): frame
        for key, frame in kept.partition_by("s", as_dict=True, include_key=False, maintain_order=True).items()
    }


_NO_CANDS = pl.DataFrame(schema=CAND_COLS)


def _to_cands(arr: pl.DataFrame) -> list[Cand]:
    out = []
    for form, a, t0, t1, t2, c0, c1, c2 in arr.iter_rows():
        if form == LINEAR:
            terms = tuple(t for t, c in ((t0, c0), (t1, c1), (t2, c2)) if c != 0)
            coef = tuple(c for c in (c0, c1, c2) if c != 0)
            out.append(Cand("linear", a, terms, coef))
        elif form == PRODUCT:
            out.append(Cand("product", a, (t0, t1)))
        else:
            out.append(Cand("sum_over" if form == SUM_OVER else "count_of", a, (t0,)))
    return out


def _across(c: Cand, fields: list[Field]) -> bool:
    """Whether a candidate that reads first members relates them across arrays or to other fields.

    Dropped: one whose every operand is a first member of the same array (the instance group states it
    for every member, not only the first), and one that relates a first member to the sum or the length
    of its own array (it holds on the calls whose array has one member, a count the data cannot
    vouch for)."""
    ops = [fields[i] for i in (c.lhs, *c.terms)]
    firsts = {f.first for f in ops if f.first}
    if not firsts:
        return True
    if len(firsts) == 1 and all(f.first for f in ops):
        return False
    for f in ops:
        if f.is_sum or f.is_len:
            array = f.path if f.is_len else f.path[: f.path.index("/*")]
            if array in firsts:
                return False
    return True


def _rhs_expr(c: Cand, fields: list[Field]) -> pl.Expr:
    t = [pl.col(fields[i].name).cast(pl.Float64) for i in c.terms]
    if c.form == "product":
        return t[0] * t[1]
    if c.form in ("sum_over", "count_of"):
        return t[0]
    e = t[0] * c.coef[0]
    for k_, x in zip(c.coef[1:], t[1:], strict=True):
        e = e + x * k_
    return e


def _varying_parts(c: Cand, fields: list[Field]) -> list[pl.Expr]:
    """What must vary over the qualifying examples for `c` to say something: every operand, and for a
    three-term sum every pair of its terms (`/a = /x + /y - /z` where `/y - /z` is constant is really a
    two-term relation plus a constant)."""
    col = [pl.col(fields[i].name).cast(pl.Float64) for i in (c.lhs, *c.terms)]
    parts = list(col)
    if c.form == "linear" and len(c.terms) == 3:
        t = [k * x for k, x in zip(c.coef, col[1:], strict=True)]
        parts += [t[0] + t[1], t[0] + t[2], t[1] + t[2]]
    return parts


def _qualifies(c: Cand, fields: list[Field]) -> pl.Expr:
    """A row qualifies for `c` when every operand is present."""
    return pl.all_horizontal([pl.col(fields[i].name).is_not_null() for i in (c.lhs, *c.terms)])


def _count_hist(wide: pl.DataFrame, fields: list[Field], cands: list[Cand]) -> pl.DataFrame:
    """Per (count_of candidate index, fold, length) of one task part: qualifying rows with that length
    (a monoid: summed over parts), for the share of the most common length (`_count_ok`)."""
    frames = [
        wide.filter(_qualifies(c, fields))
        .group_by("fold", pl.col(fields[c.terms[0]].name).alias("v"))
        .agg(pl.len().cast(pl.Int64).alias("n"))
        .select(pl.lit(j, pl.Int64).alias("cand"), "fold", "v", "n")
        for j, c in enumerate(cands)
        if c.form == "count_of"
    ]
    schema = {"cand": pl.Int64, "fold": wide.schema["fold"], "v": pl.Float64, "n": pl.Int64}
    return pl.concat([f.cast(schema) for f in frames]) if frames else pl.DataFrame(schema=schema)  # type: ignore[arg-type]


def _count_ok(hist: pl.DataFrame, k: int, keys: Sequence[str] = ("cand",)) -> dict[tuple[int, ...], float]:
    """(count_of candidate, checker) -> the share of its qualifying calls that have the most common
    length (docs/rules.md: a count matching a list's length by coincidence on t tasks has chance at
    most that share to the power t). `keys`: what names a candidate (`("spec", "cand")` for the rows
    of several specs at once; the dictionary's keys are then (spec, cand, checker))."""
    if hist.height == 0:
        return {}
    merged = by_checker(hist, [*keys, "v"], [pl.col("n").sum()], k)
    share = merged.group_by(*keys, "checker").agg((pl.col("n").max() / pl.col("n").sum()).alias("q"))
    return {tuple(r[:-1]): r[-1] for r in share.select(*keys, "checker", "q").iter_rows()}


def _verify_part(wide: pl.DataFrame, fields: list[Field], cands: list[Cand]) -> pl.DataFrame:
    """Per (candidate index, fold) of one task part: qualifying rows/calls/tasks, violations per
    tolerance, distinct tuples (bottom-k hashes), operand min/max, examples: monoids, merged by
    `_verify_merge`."""
    frames = []
    # A plain group's frame has one row per call (array instance groups have `inst`): its distinct
    # qualifying calls are its qualifying rows, counted without hashing the call keys.
    per_call = "inst" not in wide.columns
    for start in range(0, len(cands), BATCH):
        batch = cands[start : start + BATCH]
        aggs: list[pl.Expr] = []
        for j, c in enumerate(batch, start=start):
            ops = [c.lhs, *c.terms]
            a = pl.col(fields[c.lhs].name).cast(pl.Float64)
            rhs = _rhs_expr(c, fields)
            qual = _qualifies(c, fields)
            diff = (a - rhs).abs()
            scale = pl.max_horizontal(pl.lit(1.0), a.abs(), rhs.abs())
            cids = pl.col("cid").filter(qual)
            aggs += [
                qual.sum().alias(f"q{j}"),
                (qual.sum() if per_call else cids.n_unique()).alias(f"calls{j}"),
                pl.col("task").filter(qual).n_unique().alias(f"tasks{j}"),
                (qual & (diff > 0)).sum().alias(f"vx{j}"),
                (qual & (diff > 0.005 + 1e-9)).sum().alias(f"vc{j}"),
                (qual & (diff > 1e-9 * scale)).sum().alias(f"vr{j}"),
                pl.struct([pl.col(fields[i].name) for i in ops])
                .filter(qual)
                .hash()
                .unique()
                .bottom_k(RELATION_MIN_TUPLES)
                .alias(f"tup{j}"),
                (cids if per_call else cids.unique()).bottom_k(3).sort().alias(f"ex{j}"),
            ]
            for o, e in enumerate(_varying_parts(c, fields)):
                col = e.filter(qual)
                aggs += [col.min().alias(f"mn{j}_{o}"), col.max().alias(f"mx{j}_{o}")]
        per_fold = wide.group_by("fold").agg(aggs)
        # Long form: one row per (candidate, fold). The casts and operand lists of the whole batch in
        # one select, then each candidate's frame assembled from those columns (a select per candidate
        # was most of mining's time on corpora with thousands of candidates).
        nops = {j: len(_varying_parts(c, fields)) for j, c in enumerate(batch, start=start)}
        cols = per_fold.select(
            "fold",
            *(
                e
                for j, n in nops.items()
                for e in (
                    *(pl.col(f"{m}{j}").cast(pl.Int64) for m in ("q", "calls", "tasks", "vx", "vc", "vr")),
                    pl.col(f"tup{j}"),
                    pl.col(f"ex{j}").cast(pl.List(pl.UInt64)),
                    pl.concat_list([pl.col(f"mn{j}_{o}") for o in range(n)]).alias(f"mn{j}"),
                    pl.concat_list([pl.col(f"mx{j}_{o}") for o in range(n)]).alias(f"mx{j}"),
                )
            ),
        )
        fold = cols.get_column("fold")
        for j in nops:
            frames.append(
                pl.DataFrame(
                    [
                        pl.Series("cand", [j] * cols.height, dtype=pl.Int64),
                        fold,
                        *(
                            cols.get_column(f"{m}{j}").alias(m)
                            for m in ("q", "calls", "tasks", "vx", "vc", "vr", "tup", "ex", "mn", "mx")
                        ),
                    ]
                )
            )
    return pl.concat(frames)


def _verify_merge(long: pl.DataFrame, k: int, keys: Sequence[str] = ("cand",)) -> pl.DataFrame:
    """Per (candidate index, checker): the parts' and folds' `_verify_part` rows merged. `keys`: what
    names a candidate (`("spec", "cand")` for the rows of several specs at once)."""
    keys = list(keys)
    # Operand index `o` within each row's list (one row per part, candidate and fold).
    rowed = long.with_row_index("_row")
    mn_parts = rowed.explode("mn").with_columns(pl.int_range(pl.len()).over("_row").alias("o"))
    mx_parts = rowed.explode("mx").with_columns(pl.int_range(pl.len()).over("_row").alias("o"))
    ranges = by_checker(
        mn_parts.select("_row", *keys, "fold", "o", "mn").join(
            mx_parts.select("_row", "o", "mx"), on=["_row", "o"]
        ),
        [*keys, "o"],
        [pl.col("mn").min(), pl.col("mx").max()],
        k,
    )
    varying = ranges.group_by(*keys, "checker").agg(
        ((pl.col("mn") < pl.col("mx")) | pl.col("mn").is_null()).all().alias("varying")
    )
    merged = by_checker(
        long.drop("mn", "mx"),
        keys,
        [
            pl.col("q").sum(),
            pl.col("calls").sum(),
            pl.col("tasks").sum(),
            pl.col("vx").sum(),
            pl.col("vc").sum(),
            pl.col("vr").sum(),
            pl.col("tup").list.explode(keep_nulls=False, empty_as_null=False).n_unique().alias("tuples"),
            merged_examples(),
        ],
        k,
    )
    return merged.join(varying, on=[*keys, "checker"], how="left")


def _tol_for(c: Cand, klass: dict[int, str]) -> str:
    kinds = {klass.get(i, "rel") for i in (c.lhs, *c.terms)}
    if kinds == {"int"}:
        return "exact"
    if kinds <= {"int", "cent"}:
        return "cent"
    return "rel"


def _order_key(c: Cand, fields: list[Field]) -> tuple[object, ...]:
    form_rank = {"linear": 0, "product": 1, "sum_over": 2, "count_of": 3}[c.form]
    return (
        form_rank,
        len(c.terms),
        sum(1 for x in c.coef if x < 0),
        [fields[i].path for i in (c.lhs, *c.terms)],
    )


class _Span:
    """Exact incremental row reduction over the rationals: is a vector in the span of those added?"""

    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[int, Fraction]]] = []  # (pivot, row with row[pivot] == 1)

    def reduce(self, v: dict[int, Fraction]) -> dict[int, Fraction]:
        v = {i: x for i, x in v.items() if x != 0}
        for piv, row in self.rows:
            f = v.get(piv)
            if f:
                for i, x in row.items():
                    v[i] = v.get(i, Fraction(0)) - f * x
                v = {i: x for i, x in v.items() if x != 0}
        return v

    def add(self, v: dict[int, Fraction]) -> bool:
        """Add `v`; False (and nothing added) when it is already in the span."""
        r = self.reduce(v)
        if not r:
            return False
        piv = min(r)
        inv = 1 / r[piv]
        self.rows.append((piv, {i: x * inv for i, x in r.items()}))
        return True


def _vector(c: Cand) -> dict[int, Fraction]:
    v: dict[int, Fraction] = {c.lhs: Fraction(1)}
    for k_, t in zip(c.coef, c.terms, strict=True):
        v[t] = v.get(t, Fraction(0)) - k_
    return v


def _reduce(
    holding: list[Cand],
    fields: list[Field],
    known_eq: list[tuple[int, int]],
    known: list[Cand] = (),  # type: ignore[assignment]
) -> list[Cand]:
    """Drop implied relations (module docstring): span test for linear, equality classes for the rest.

    `known_eq` (result = argument equalities, ECHO's business) and `known` (linear relations that hold
    with enough support but are trivial — too few distinct tuples or a constant side) are true facts
    that are never emitted; a relation that follows from them together with kept ones is dropped too
    (`/a = /few + /same - /few2` when `/a = /same` is kept and `/few = /few2` holds trivially).
    """
    m = len(fields)
    span = _Span()
    rep = list(range(m))

    def find(i: int) -> int:
        while rep[i] != i:
            i = rep[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        rep[max(ra, rb)] = min(ra, rb)

    for a, b in known_eq:  # result = argument equalities (ECHO's) are known but never emitted
        span.add({a: Fraction(1), b: Fraction(-1)})
        union(a, b)
    kept: list[Cand] = []
    for c in sorted((c for c in holding if c.form == "linear"), key=lambda c: _order_key(c, fields)):
        if not span.add(_vector(c)):
            continue
        kept.append(c)
        if len(c.terms) == 1:
            union(c.lhs, c.terms[0])
    seen: set[tuple[object, ...]] = set()
    for c in sorted((c for c in holding if c.form != "linear"), key=lambda c: _order_key(c, fields)):
        key: tuple[object, ...] = (c.form, find(c.lhs), tuple(sorted(find(t) for t in c.terms)))
        if key in seen:
            continue
        seen.add(key)
        kept.append(c)
    return kept


def _whole_tools(ctx: MiningContext) -> set[str]:
    """The tools whose every clean call is in the candidate sample: no (tool, fold) has more than
    SAMPLE_CALLS calls (`output_contracts.codes.mining_frames.first_calls`), so the sample's rows of such a tool
    are all of its rows, in every part together."""
    per_fold = ctx.data.calls.group_by("tool", "fold").len()
    tools = per_fold.group_by("tool").agg((pl.col("len").max() <= SAMPLE_CALLS).alias("whole"))
    return set(tools.filter("whole")["tool"].cast(pl.String).to_list())


def _presence(wide: pl.DataFrame, fields: list[Field]) -> list[tuple[int, int, int]]:
    """(presence mask, distinct calls, distinct tasks) per set of fields present together in a row of
    a wide frame (bit j: field j is not null) and fold (counted per fold, as `_verify_merge` sums them)."""
    n = len(fields)
    groups = wide.group_by([*(pl.col(f.name).is_not_null() for f in fields), "fold"]).agg(
        pl.col("cid").n_unique().alias("_calls"), pl.col("task").n_unique().alias("_tasks")
    )
    return [
        (sum(1 << j for j, present in enumerate(row[:n]) if present), row[n + 1], row[n + 2])
        for row in groups.iter_rows()
    ]


#: Above this many (candidate, presence set) pairs `_reachable` keeps every candidate (a bound on its
#: Python work; keeping a candidate never changes the contract set, only what `scan` counts).
MAX_REACH_PAIRS = 4_000_000


def _reachable(
    cands: list[Cand], fields: list[Field], presence: list[tuple[int, int, int]], need: tuple[int, int]
) -> list[Cand]:
    """The candidates that can reach RELATION's support in some checker, from the presence sets of every
    row of their space (`_presence` of a tool whose rows are all in the sample).

    A candidate qualifies on the rows where all its operands are present, so the calls and tasks of those
    presence sets, summed, bound its qualifying calls and tasks in the full checker, which sees more
    than any fold checker: below `need` (calls, tasks) it is dropped by `Relation._finish_group` in every
    checker whatever it counts, so it is not counted (on worlds with thousands of candidates over rare
    fields most of them). Kept whatever the bound: an argument echo (`/id = $args/id`), which is never
    emitted but joins `known_eq` without a support threshold."""
    if len(cands) * len(presence) > MAX_REACH_PAIRS:
        return cands
    out = []
    for c in cands:
        if c.form == "linear" and len(c.terms) == 1 and not fields[c.terms[0]].result:
            out.append(c)
            continue
        m = 0
        for i in (c.lhs, *c.terms):
            m |= 1 << i
        calls = tasks = 0
        for pm, n, t in presence:
            if pm & m == m:
                calls += n
                tasks += t
        if calls >= need[0] and tasks >= need[1]:
            out.append(c)
    return out


@dataclass(frozen=True)
class _Plan:
    specs: list[GroupSpec]
    cands: dict[int, list[Cand]]  # spec index -> candidates surviving the sample


class RelationMiner:
    """The RELATION rule class.

    `count_of`: its own chance argument replaces the tuple count (`_count_ok`).

    Search (near-linear in calls): candidate relations are generated on a few rows of each fold (the rows with
    the most non-zero fields, plus one row per field where it is present, all from the rows of the tool's
    first SAMPLE_CALLS calls by call key in that fold: the candidate sample, read once whatever the corpus
    size) by meeting in the middle with polars joins (A − d·D = b·B + c·C on a key rounded to the cent); a
    larger sample of rows refutes candidates in one vectorised join of each space's candidates with its rows
    (a candidate refuted in two or more folds cannot hold in any checker: a fold checker leaves out only one
    fold), and only the survivors are verified on every call. Sampling, generation and refutation run for
    every search space at once (rows keyed by space), since the sample rows are few; the wide frames (one row
    per call or array instance, one column per field) are built a batch of spaces at a time (`_wide_all`).

    Why one module of ~800 lines: generation, refutation, verification and the implied-relation filter share
    one numbering of the fields of a search space (`GroupSpec`, `Field`) and one candidate encoding; split
    apart, each stage would re-derive them or pass them through a public interface nobody else uses. The
    stages are separate functions in order of the pipeline.
    """

    codes = ("RELATION",)

    def plan(self, ctx: MiningContext) -> _Plan | None:
        """Search spaces from the patterns holding numbers; candidates generated and refuted on the
        sample (the first SAMPLE_CALLS calls of each tool and fold by call key)."""
        specs = _specs(ctx, ctx.num_pids)
        whole = _whole_tools(ctx)
        presence: dict[int, list[tuple[int, int, int]]] = {}
        spaces: list[tuple[int, list[Field], bool]] = []
        gens: list[pl.DataFrame] = []
        refs: dict[int, pl.DataFrame] = {}
        for wide, _ in _wide_all(list(enumerate(specs)), ctx.sample, stats=False):
            live = sorted(i for i in wide["spec"].unique().to_list() if len(specs[i].fields) >= 2)
            if not live:
                continue
            wide = wide.filter(pl.col("spec").is_in(live))
            of_whole = [i for i in live if specs[i].tool in whole]
            if of_whole:
                for i, frame in _by_spec(wide.filter(pl.col("spec").is_in(of_whole))).items():
                    presence[i] = _presence(frame, list(specs[i].fields))
            batch = [
                (
                    i,
                    list(specs[i].fields),
                    sum(1 for f in specs[i].fields if not (f.is_sum or f.is_len)) <= MAX_FIELDS_TERNARY,
                )
                for i in live
            ]
            # every spec of the batch sampled at once (rows keyed by spec)
            gen, ref = _sample_all(wide, sorted({f.name for _, fields, _ in batch for f in fields}))
            gens.append(_long_all(gen, [(i, fields) for i, fields, _ in batch]))
            refs.update(_by_spec(ref))
            spaces += batch
        if not spaces:
            return None
        spaces.sort(key=lambda t: t[0])
        # every spec generated and refuted at once
        survivors = _refute(
            _generate(pl.concat(gens), spaces),
            [(i, refs[i], fields, t) for i, fields, t in spaces if i in refs],
            ctx.data.k,
        )
        need = (ctx.params.needed("RELATION"), ctx.params.tasks_needed("RELATION"))
        cands: dict[int, list[Cand]] = {}
        for i, fields, _ in spaces:
            found = [c for c in _to_cands(survivors.get(i, _NO_CANDS)) if _across(c, fields)]
            if i in presence:
                found = _reachable(found, fields, presence[i], need)
            if found:
                cands[i] = found
        return _Plan(specs, cands) if cands else None

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> Any:
        """{spec index: (verification rows, per-field stats)} of one task part."""
        if plan is None:
            return None
        wanted = [(i, s) for i, s in enumerate(plan.specs) if i in plan.cands]
        out = {}
        for i, wide, fst in _wide_frames(wanted, part):
            if wide.height:
                fields = list(plan.specs[i].fields)
                out[i] = (
                    _verify_part(wide, fields, plan.cands[i]),
                    fst,
                    _count_hist(wide, fields, plan.cands[i]),
                )
        return out

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[Any]) -> pl.DataFrame:
        if plan is None:
            return cand_frame()
        k = ctx.data.k
        specs = [j for j in sorted(plan.cands) if any(j in r for r in rows)]
        if not specs:
            return cand_frame()

        def tagged(slot: int) -> pl.DataFrame:
            """Every spec's rows of one kind (verification, field stats, count histogram), by spec."""
            return pl.concat(
                [
                    r[j][slot].with_columns(pl.lit(j, pl.Int64).alias("spec"))
                    for j in specs
                    for r in rows
                    if j in r
                ]
            )

        # Every spec merged at once, with the spec as a key: a polars step costs about as much on a
        # spec's few rows as on all of them (RELATION's finish was a seventh of a small corpus's mine).
        res = _by_spec(_verify_merge(tagged(0), k, keys=("spec", "cand")))
        shares: dict[int, dict[tuple[int, int], float]] = {}
        for (j, c, ch), q in _count_ok(tagged(2), k, keys=("spec", "cand")).items():
            shares.setdefault(j, {})[(c, ch)] = q
        klass_rows = _by_spec(
            by_checker(
                tagged(1).select("spec", "name", "fold", "n", "n_int", "n_cent"),
                ["spec", "name"],
                [pl.col("n").sum(), pl.col("n_int").sum(), pl.col("n_cent").sum()],
                k,
            )
        )
        out = []
        for j in specs:
            if j not in res:  # no verification row (a part's rows are never empty: defensive)
                continue
            spec = plan.specs[j]
            out.append(
                self._finish_group(
                    ctx,
                    spec.tool,
                    res[j],
                    list(spec.fields),
                    plan.cands[j],
                    klass_rows.get(j, pl.DataFrame()),  # no number seen: no class
                    shares.get(j, {}),
                )
            )
        return cand_frame(pl.concat(out)) if out else cand_frame()

    def _finish_group(
        self,
        ctx: MiningContext,
        tool: str,
        res: pl.DataFrame,
        fields: list[Field],
        cands: list[Cand],
        klass_rows: pl.DataFrame,
        shares: dict[tuple[int, int], float],
    ) -> pl.DataFrame:
        """The rules of one spec: `res` its merged verification rows, `klass_rows` its fields' number
        counts per checker (name, checker, n, n_int, n_cent), `shares` its `_count_ok`."""
        need = ctx.params.needed("RELATION")
        # Tolerance class per field per checker.
        name_idx = {f.name: i for i, f in enumerate(fields)}
        klass: dict[int, dict[int, str]] = {}
        for r in klass_rows.iter_rows(named=True):
            kl = "int" if r["n_int"] == r["n"] else "cent" if r["n_cent"] == r["n"] else "rel"
            klass.setdefault(r["checker"], {})[name_idx[r["name"]]] = kl
        rows = []
        by_checker_rows = res.partition_by("checker", as_dict=True, maintain_order=True)
        for (checker,), sub in sorted(by_checker_rows.items()):
            holding: list[Cand] = []
            info = {}
            known_eq: list[tuple[int, int]] = []
            for r in sub.iter_rows(named=True):
                c = cands[r["cand"]]
                tol = _tol_for(c, klass.get(checker, {}))
                viol = {"exact": r["vx"], "cent": r["vc"], "rel": r["vr"]}[tol]
                if viol != 0 or r["q"] == 0:
                    continue
                is_echo = c.form == "linear" and len(c.terms) == 1 and not fields[c.terms[0]].result
                if is_echo and r["varying"]:
                    known_eq.append((c.lhs, c.terms[0]))
                    continue
                if not (r["calls"] >= need and r["tasks"] >= ctx.params.tasks_needed("RELATION")):
                    continue
                if not r["varying"]:
                    continue
                if c.form == "count_of":
                    q = shares.get((r["cand"], checker), 1.0)
                    if q > COUNT_OF_MAX_SHARE or r["tasks"] < COUNT_OF_MIN_TASKS:
                        continue
                elif r["tuples"] < RELATION_MIN_TUPLES:
                    continue
                holding.append(c)
                info[c] = (r, tol)
            for c in _reduce(holding, fields, known_eq):
                r, tol = info[c]
                params: dict[str, object] = {"form": c.form, "tol": tol}
                if c.form == "linear":
                    params["coef"] = list(c.coef)
                paths = [fields[c.lhs].path, *(fields[t].path for t in c.terms)]
                rows.append(
                    {
                        "checker": checker,
                        "tool": tool,
                        "code": "RELATION",
                        "paths": paths,
                        "params": canonical_str(params),
                        "calls": r["calls"],
                        "tasks": r["tasks"],
                        "n": r["calls"],
                        "ex": r["ex"],
                    }
                )
        assert FULL == -1
        if not rows:
            return cand_frame()
        return cand_frame(pl.DataFrame(rows, schema=CAND_SCHEMA))


__all__ = ["RelationMiner"]


#: This folder's miners, in the order the miner runs them.
MINERS = (RelationMiner,)
