"""RELATION's candidate sampling, generation and refutation as they were before they were batched across
search spaces: one search space at a time (`codes/relation/mine.py` as it was then). The
reference `tests/codes/relation/test_mine_batch.py` holds the batched code to, on random sample rows."""

from __future__ import annotations

import polars as pl

from output_contracts.codes.relation.mine import (
    CAND_COLS,
    COUNT_OF,
    GEN_ROWS,
    LINEAR,
    NO_TERM,
    PRODUCT,
    SAMPLE_PER_COLUMN,
    SAMPLE_ROWS,
    SUM_OVER,
    WINDOW,
    Field,
    _close,
    _keyed,
)


def long_rows(rows: pl.DataFrame, fields: list[Field]) -> pl.DataFrame:
    """(r, j, v): every present value of the sample rows, field j by index."""
    idx = {f.name: i for i, f in enumerate(fields)}
    return (
        rows.select("_r", *[pl.col(f.name).cast(pl.Float64) for f in fields])
        .unpivot(index="_r", variable_name="name", value_name="v")
        .drop_nulls("v")
        .filter(pl.col("v").abs() < 1e15)
        .with_columns(pl.col("name").replace_strict(idx, return_dtype=pl.Int64).alias("j"))
        .select(pl.col("_r").alias("r"), "j", "v")
    )


def generate(gen: pl.DataFrame, fields: list[Field], ternary: bool) -> pl.DataFrame:
    """Candidates matching on at least one generation row where all their operands are present.

    Rows (form, a, t0, t1, t2, c0, c1, c2): LINEAR (unused terms = NO_TERM, coef 0), PRODUCT,
    SUM_OVER. Three-term sums are found by meeting in the middle: A − d·D = b·B + c·C, joined on a
    rounded key, so the cost is (fields² per row), not fields⁴.
    """
    long = long_rows(gen, fields)
    res = {i for i, f in enumerate(fields) if f.result and not f.is_sum and not f.is_len}
    sums = {i for i, f in enumerate(fields) if f.is_sum}
    lens = {i for i, f in enumerate(fields) if f.is_len}
    lhs = long.filter(pl.col("j").is_in(sorted(res))).rename({"j": "a", "v": "va"})
    ops = long.filter(~pl.col("j").is_in(sorted(sums | lens)))
    sm = long.filter(pl.col("j").is_in(sorted(sums))).rename({"j": "w", "v": "vw"})
    ln = long.filter(pl.col("j").is_in(sorted(lens))).rename({"j": "w", "v": "vw"})
    out: list[pl.DataFrame] = []
    n1, z = pl.lit(NO_TERM, pl.Int64), pl.lit(0, pl.Int64)

    def emit(df: pl.DataFrame, form: int, t: list[pl.Expr], c: list[pl.Expr]) -> None:
        out.append(
            df.select(
                pl.lit(form, pl.Int64).alias("form"),
                pl.col("a").cast(pl.Int64),
                *[x.cast(pl.Int64).alias(f"t{i}") for i, x in enumerate(t)],
                *[x.cast(pl.Int64).alias(f"c{i}") for i, x in enumerate(c)],
            )
        )

    one = lhs.join(ops.rename({"j": "b", "v": "vb"}), on="r").filter(
        (pl.col("a") != pl.col("b")) & _close("va", "vb")
    )
    emit(one, LINEAR, [pl.col("b"), n1, n1], [pl.lit(1), z, z])
    if sm.height:
        so = lhs.join(sm, on="r").filter(_close("va", "vw"))
        emit(so, SUM_OVER, [pl.col("w"), n1, n1], [z, z, z])
    if ln.height:
        co = lhs.join(ln, on="r").filter(pl.col("va") == pl.col("vw"))
        emit(co, COUNT_OF, [pl.col("w"), n1, n1], [z, z, z])
    pairs = (
        ops.rename({"j": "b", "v": "vb"})
        .join(ops.rename({"j": "c", "v": "vc"}), on="r")
        .filter(pl.col("b") < pl.col("c"))
    )
    if pairs.height == 0:
        return pl.concat(out).unique() if out else pl.DataFrame()
    variants = pl.concat(
        [
            pairs.select(
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
    two = lk.join(vk.filter((pl.col("sb") == 1) | (pl.col("sc") == 1)), on=["r", "key"]).filter(
        (pl.col("a") != pl.col("b")) & (pl.col("a") != pl.col("c")) & _close("va", "u")
    )
    emit(two, LINEAR, [pl.col("b"), pl.col("c"), n1], [pl.col("sb"), pl.col("sc"), z])
    prod = _keyed(pairs.with_columns((pl.col("vb") * pl.col("vc")).alias("u")), "u")
    pr = lk.join(prod, on=["r", "key"]).filter(
        (pl.col("a") != pl.col("b")) & (pl.col("a") != pl.col("c")) & _close("va", "u")
    )
    emit(pr, PRODUCT, [pl.col("b"), pl.col("c"), n1], [z, z, z])
    if ternary:
        part = pl.concat(
            [
                lhs.join(ops.rename({"j": "d", "v": "vd"}), on="r")
                .filter(pl.col("a") != pl.col("d"))
                .select("r", "a", "d", pl.lit(sd).alias("sd"), (pl.col("va") - sd * pl.col("vd")).alias("u"))
                for sd in (1, -1)
            ]
        )
        pk = part.with_columns((pl.col("u") * 100).round().cast(pl.Int64).alias("key")).rename({"u": "ul"})
        three = (
            pk.join(vk, on=["r", "key"])
            .filter(
                (pl.col("d") != pl.col("b"))
                & (pl.col("d") != pl.col("c"))
                & (pl.col("a") != pl.col("b"))
                & (pl.col("a") != pl.col("c"))
                & ((pl.col("sb") == 1) | (pl.col("sc") == 1) | (pl.col("sd") == 1))
                & _close("ul", "u")
            )
            .select("a", "b", "c", "d", "sb", "sc", "sd")
            .unique()
        )
        # Canonical term order: positive terms first, then by field index.
        canon = []
        for a, b, c, d, sb, sc, sd in three.iter_rows():
            terms = sorted(((b, sb), (c, sc), (d, sd)), key=lambda t: (-t[1], t[0]))
            canon.append(
                (LINEAR, a, terms[0][0], terms[1][0], terms[2][0], terms[0][1], terms[1][1], terms[2][1])
            )
        if canon:
            out.append(pl.DataFrame(canon, schema=CAND_COLS, orient="row"))
    frames = [f for f in out if f.height]
    if not frames:
        return pl.DataFrame(schema=CAND_COLS)
    allc = pl.concat([f.select(list(CAND_COLS)).cast(CAND_COLS) for f in frames]).unique()  # type: ignore[arg-type]
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
    return allc.unique().sort(list(CAND_COLS))


def refute(cands: pl.DataFrame, ref: pl.DataFrame, fields: list[Field], k: int) -> pl.DataFrame:
    """Drop candidates refuted on the refutation rows of two or more folds (of one fold when k == 1).

    Vectorised as one cross join of candidates with the rows' value lists (`list.get` by field index;
    the extra last element is the 0 of unused terms)."""
    if cands.height == 0 or ref.height == 0:
        return cands
    allowed = 1 if k > 1 else 0
    m = len(fields)
    rows = ref.select(
        "fold",
        pl.concat_list([*[pl.col(f.name).cast(pl.Float64) for f in fields], pl.lit(0.0)]).alias("vals"),
    )
    idx = cands.with_row_index("_c").with_columns(
        [pl.col(c).replace(NO_TERM, m).alias(f"_{c}") for c in ("a", "t0", "t1", "t2")]
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
        idx.join(rows, how="cross")
        .with_columns(v["a"].alias("_lhs"), rhs.alias("_rhs"))
        .filter(pl.col("_lhs").is_not_null() & pl.col("_rhs").is_not_null() & ~_close("_lhs", "_rhs"))
        .group_by("_c")
        .agg(pl.col("fold").n_unique().alias("_folds"))
        .filter(pl.col("_folds") > allowed)
    )
    return idx.join(bad, on="_c", how="anti").select(list(CAND_COLS))


def sample_rows(wide: pl.DataFrame, fields: list[Field]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(generation rows, refutation rows) of every fold of one space's wide frame, with a row id `_r`:
    `relation._sample_all` one space at a time, as it was before the spaces were batched."""
    w = wide.with_row_index("_r").group_by("fold", maintain_order=True).head(WINDOW)
    score = pl.sum_horizontal(
        [(pl.col(f.name).is_not_null() & (pl.col(f.name) != 0)).cast(pl.Int32) for f in fields]
    )
    scored = w.with_columns(score.alias("_score"))
    gen_picks = [
        scored.sort(["fold", "_score", "_r"], descending=[False, True, False])
        .group_by("fold", maintain_order=True)
        .head(GEN_ROWS)
        .select("_r")
    ]
    ref_picks = [w.group_by("fold", maintain_order=True).head(SAMPLE_ROWS).select("_r")]
    # per field and fold, the rank of each row where the field is present (every field at once)
    present = (
        w.select("_r", "fold", *[pl.col(f.name).is_not_null() for f in fields])
        .unpivot(index=["_r", "fold"])
        .filter(pl.col("value"))
        .select("_r", pl.col("_r").rank("ordinal").over("fold", "variable").alias("_rank"))
    )
    gen_picks.append(present.filter(pl.col("_rank") == 1).select("_r"))
    ref_picks.append(present.filter(pl.col("_rank") <= SAMPLE_PER_COLUMN).select("_r"))
    gen = w.join(pl.concat(gen_picks).unique(), on="_r", how="semi").sort("_r")
    ref = w.join(pl.concat(ref_picks).unique(), on="_r", how="semi").sort("_r")
    return gen, ref
