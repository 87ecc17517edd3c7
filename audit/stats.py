"""Rates with honest intervals: task-clustered bootstrap, Wilson score, and the `Rate` value type.

Audit figures (fire rate, spurious receipts, detection, recovery retention) are ratios of counts taken
over calls, but calls of one task are not independent: an agent that misreads one tool in a task tends to
misread it on every call of that task. The unit of resampling is therefore the task, not the call
(a *cluster* bootstrap): each resample draws as many tasks as there are, with replacement, and recomputes
every ratio as (sum of the drawn tasks' numerators) / (sum of their denominators). The interval is the
2.5 / 97.5 percentile of the resampled ratios (resamples with a zero denominator are dropped).

Why not `random.Random`: drawing `tasks x resamples` integers one by one costs seconds at 20k tasks.
Draws come instead from SplitMix64 evaluated as a polars expression over `int_range` (wrapping u64
arithmetic), keyed by the seed: the same seed gives the same draws on every machine, the stream is
reproducible in plain Python (`splitmix64`, used by the tests to check the expression), and 1000
resamples over 300 tasks take a few tens of milliseconds. The draw is `hash % n_tasks`; the modulo bias
is below n_tasks / 2^64 and irrelevant here.

A bootstrap over a ratio that is exactly 0 (or exactly 1) collapses to a zero-width interval, which would
claim certainty the data cannot give (0 fires in 300 calls is compatible with a true rate of 1%). In
those two cases the interval is widened to the Wilson score interval over the denominator, and the
rate's `method` says `bootstrap+wilson`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

from output_contracts.jsonutil import sha256_hex

Z95 = 1.959963984540054
_M64 = 2**64
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


@dataclass(frozen=True)
class Rate:
    """A ratio with its 95% interval and the counts behind it.

    `value`, `low` and `high` are None when the denominator is 0 (nothing to measure). `scale` multiplies
    value and interval for display units (100 for "per 100 episodes"); counts are never scaled.
    """

    value: float | None
    low: float | None
    high: float | None
    numerator: int
    denominator: int
    method: str = "bootstrap"

    def to_json(self) -> dict[str, Any]:
        return {
            "value": round_figure(self.value),
            "low": round_figure(self.low),
            "high": round_figure(self.high),
            "numerator": self.numerator,
            "denominator": self.denominator,
            "method": self.method,
        }

    def scaled(self, factor: float) -> dict[str, float | None]:
        """`{value, low, high}` multiplied by `factor` (for per-100 or per-1000 figures)."""
        return {
            "value": round_figure(None if self.value is None else self.value * factor),
            "low": round_figure(None if self.low is None else self.low * factor),
            "high": round_figure(None if self.high is None else self.high * factor),
        }


def round_figure(x: float | None) -> float | None:
    """Twelve significant digits: enough for any count ratio, and stable across platforms' last bits."""
    if x is None:
        return None
    return float(f"{x:.12g}")


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials (n > 0): better than the normal one near 0 and 1."""
    if n <= 0:
        raise ValueError("wilson interval needs n > 0")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided p-value of `wins` against `losses` under a fair coin (McNemar's exact test on the
    discordant pairs; the sign test on paired differences): min(1, 2 P(X <= min(W, L))), X ~ Bin(W + L,
    1/2). Exact integer arithmetic, so no float underflow at thousands of pairs; 1.0 when W + L = 0."""
    if wins < 0 or losses < 0:
        raise ValueError("counts must be non-negative")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1))
    # an exact ratio first: 2^n overflows a float beyond n = 1023
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def splitmix64(x: int) -> int:
    """One SplitMix64 output for state `x` (the reference the polars expression must equal)."""
    z = (x + _GOLDEN) % _M64
    z = ((z ^ (z >> 30)) * _MIX1) % _M64
    z = ((z ^ (z >> 27)) * _MIX2) % _M64
    return z ^ (z >> 31)


def _u64(v: int) -> pl.Expr:
    return pl.lit(v, dtype=pl.UInt64)


def _splitmix_expr(x: pl.Expr) -> pl.Expr:
    z = x + _u64(_GOLDEN)
    z = (z ^ (z // _u64(2**30))) * _u64(_MIX1)
    z = (z ^ (z // _u64(2**27))) * _u64(_MIX2)
    return z ^ (z // _u64(2**31))


def seed_offset(seed: int) -> int:
    """The SplitMix64 starting state for a seed (hashing the seed keeps nearby seeds' streams apart)."""
    return int(sha256_hex(f"contracts-bootstrap:{seed}")[:15], 16)


def draws(n_tasks: int, n_boot: int, seed: int) -> pl.DataFrame:
    """Bootstrap draws as weights: columns `b` (resample, u32), `t` (task index, u32), `w` (times drawn).

    Draw i of resample b is task `splitmix64(offset + b * n_tasks + i) % n_tasks`.
    """
    total = n_tasks * n_boot
    off = seed_offset(seed)
    i = pl.int_range(0, total, dtype=pl.UInt64)
    return (
        pl.select(
            (i // _u64(n_tasks)).cast(pl.UInt32).alias("b"),
            (_splitmix_expr(i + _u64(off)) % _u64(n_tasks)).cast(pl.UInt32).alias("t"),
        )
        .group_by("b", "t")
        .agg(pl.len().cast(pl.Float64).alias("w"))
    )


def point_rates(table: pl.DataFrame) -> dict[str, tuple[float, float]]:
    """`{key: (numerator, denominator)}` summed over tasks, from a `key, task, num, den` table."""
    agg = table.group_by("key").agg(pl.col("num").sum(), pl.col("den").sum())
    return {k: (float(n), float(d)) for k, n, d in agg.iter_rows()}


#: Draws per chunk of `_resample_sums`' exact path (2 MiB of int64 each array).
CACHE_DRAWS = 2**18


def draw_indexes_np(n_tasks: int, b0: int, b1: int, seed: int) -> np.ndarray:
    """Task indexes drawn by resamples b0..b1-1, resample-major, as int64: draw i of resample b is
    `splitmix64(offset + b * n_tasks + i) % n_tasks` (the stream `draws` counts; wrapping u64 arithmetic).
    `tests/audit/test_bootstrap.py` holds it to the same stream spelled in polars.

    Computed in place on one array and one scratch array (a chunk is millions of draws: a temporary
    per step cost more than the arithmetic)."""
    z = np.arange(b0 * n_tasks, b1 * n_tasks, dtype=np.uint64)
    # the two additions folded into one constant: addition modulo 2**64 is associative
    z += np.uint64((seed_offset(seed) + _GOLDEN) % 2**64)
    t = np.empty_like(z)
    with np.errstate(over="ignore"):
        for shift, mix in ((30, _MIX1), (27, _MIX2)):
            np.right_shift(z, np.uint64(shift), out=t)
            z ^= t
            z *= np.uint64(mix)
        np.right_shift(z, np.uint64(31), out=t)
        z ^= t
    z %= np.uint64(n_tasks)
    # every index is below n_tasks < 2**63: the same bits read as int64
    return z.view(np.int64)


def _resample_sums(dense: np.ndarray, n: int, n_boot: int, seed: int, max_rows: int) -> np.ndarray:
    """Sum of each dense column (n task rows) over the drawn tasks of every resample: n_boot rows.

    Each chunk of resamples becomes a matrix of draw counts (resample x task) times the dense columns.
    Counts are integers, and so are the per-task figures of every rate the audit draws (calls, fires,
    bytes, tokens): their sums below 2^53 are exact in any order, so the product equals the sum of the
    gathered draws bit for bit. Columns with a fraction (or sums past 2^53) are summed draw by draw in
    draw order instead, as before (`tests/audit/test_report_model.py` holds the two to each other)."""
    exact = (
        bool(np.all(dense == np.round(dense))) and float(np.abs(dense).sum(axis=0).max(initial=0)) * n < 2**53
    )
    # The exact path works in chunks of about CACHE_DRAWS draws: its arrays then stay in the CPU's cache
    # (at 30k tasks, 1,000 resamples: 0.55 CPU-s against 1.55 in chunks of `max_rows`).
    per_chunk = max(1, (min(max_rows, CACHE_DRAWS) if exact else max_rows) // n)
    out: list[np.ndarray] = []
    for b0 in range(0, n_boot, per_chunk):
        b1 = min(n_boot, b0 + per_chunk)
        idx = draw_indexes_np(n, b0, b1, seed)
        if exact:
            # resample r's draws counted in row r: its indexes offset by r * n, in place
            grid = idx.reshape(b1 - b0, n)
            grid += (np.arange(b1 - b0, dtype=np.int64) * n)[:, None]
            counts = np.bincount(idx, minlength=(b1 - b0) * n).reshape(b1 - b0, n)
            out.append(counts.astype(np.float64) @ dense)
        else:
            frame = pl.DataFrame(dense, orient="row")
            gathered = frame.select(pl.all().gather(pl.Series(idx)).reshape((b1 - b0, n)).arr.sum())
            out.append(gathered.to_numpy())
    return np.concatenate(out)


def bootstrap_intervals(
    table: pl.DataFrame,
    tasks: list[str],
    *,
    n_boot: int,
    seed: int,
    level: float = 0.95,
    max_rows: int = 4_000_000,
) -> dict[str, tuple[float | None, float | None]]:
    """Task-clustered percentile intervals of sum(num)/sum(den), for every key of `table` at once.

    `table` has columns `key` (str), `task` (str), `num`, `den` (numbers): one row per (key, task) with
    that task's counts. `task` may instead be an integer index into `tasks`, which must then be sorted
    and distinct (the same task order as names give; a compact key when there are many tasks). `tasks` is the whole population of tasks resampled (including tasks that have no
    row for some key: drawing them changes nothing for that key but they count as draws). All keys share
    the same resamples, so intervals of related figures are consistent with each other.

    How it stays fast: the per-task counts are laid out as dense columns (one per key and side, indexed
    by task), each resample's drawn task indexes gather from them (no joins), and resamples are
    processed in chunks of at most `max_rows` draws, so memory stays bounded at any number of tasks.
    """
    if n_boot <= 0 or not tasks or table.is_empty():
        return {}
    if table.schema["task"].is_integer():
        # already indexes: row i of `tasks` (sorted, distinct) is task index i
        n = len(tasks)
        indexed = (
            table.rename({"task": "t"}).filter(pl.col("t") < n).with_columns(pl.col("t").cast(pl.UInt32))
        )
    else:
        order = sorted(set(tasks))
        n = len(order)
        index = pl.DataFrame({"task": order, "t": pl.Series(range(n), dtype=pl.UInt32)})
        indexed = table.join(index, on="task", how="inner")
    keyed = indexed.group_by("key", "t").agg(
        pl.col("num").cast(pl.Float64).sum(), pl.col("den").cast(pl.Float64).sum()
    )
    keys = sorted(set(keyed.get_column("key").to_list()))
    # dense columns (one per key and side, indexed by task), each distinct one once: many keys share a
    # denominator (every per-code fire rate divides by the same organic calls per task), and an
    # all-zero numerator needs no resampling; a signed one (a paired difference) can sum to 0 without
    # being all zero, so the test is on every value, not on the sum
    kpos = {k: i for i, k in enumerate(keys)}
    num_m = np.zeros((n, len(keys)))
    den_m = np.zeros((n, len(keys)))
    kk = (
        keyed.get_column("key")
        .replace_strict(keys, pl.Series(range(len(keys)), dtype=pl.Int64), return_dtype=pl.Int64)
        .to_numpy()
    )
    tt = keyed.get_column("t").to_numpy().astype(np.int64)
    num_m[tt, kk] = keyed.get_column("num").fill_null(0.0).to_numpy()
    den_m[tt, kk] = keyed.get_column("den").fill_null(0.0).to_numpy()
    cols: dict[str, np.ndarray] = {}
    seen: dict[tuple[str, bytes], str] = {}
    ref: dict[str, tuple[str | None, str]] = {}

    def intern(col: np.ndarray, prefix: str) -> str:
        name = seen.setdefault((prefix, col.tobytes()), f"{prefix}{len(cols)}")
        cols.setdefault(name, col)
        return name

    for key in keys:
        num_c = np.ascontiguousarray(num_m[:, kpos[key]])
        den_c = np.ascontiguousarray(den_m[:, kpos[key]])
        ref[key] = (None if not num_c.any() else intern(num_c, "n"), intern(den_c, "d"))
    dense = np.column_stack(list(cols.values()))
    per_b = pl.DataFrame(_resample_sums(dense, n, n_boot, seed, max_rows), schema=list(cols), orient="row")
    alpha = (1 - level) / 2
    # every key's quantiles in one query: resamples with a zero denominator are null, which the
    # quantile leaves out as the filter did (all null: no interval)
    exprs = []
    for i, key in enumerate(keys):
        nc, dc = ref[key]
        num_e = pl.lit(0.0) if nc is None else pl.col(nc)
        r = pl.when(pl.col(dc) > 0).then(num_e / pl.col(dc))
        exprs.append(r.quantile(alpha, interpolation="linear").alias(f"lo{i}"))
        exprs.append(r.quantile(1 - alpha, interpolation="linear").alias(f"hi{i}"))
    q = per_b.select(exprs).row(0)
    return {key: (q[2 * i], q[2 * i + 1]) for i, key in enumerate(keys)}


def make_rate(
    numerator: float,
    denominator: float,
    interval: tuple[float | None, float | None] | None,
    *,
    proportion: bool = True,
) -> Rate:
    """A `Rate` from counts and a bootstrap interval, widened by Wilson when the bootstrap collapses.

    `proportion=False` is for ratios that are not shares (receipts per episode can exceed 1); Wilson is
    then applied only at 0, on the count of episodes.
    """
    num, den = round(numerator), round(denominator)
    if den <= 0:
        return Rate(None, None, None, num, den, "none")
    value = numerator / denominator
    lo, hi = interval if interval is not None else (None, None)
    method = "bootstrap"
    if lo is None or hi is None:
        lo, hi = value, value
        method = "point"
    degenerate = num == 0 or (proportion and num == den)
    if degenerate or method == "point":
        wl, wh = wilson(min(num, den), den)
        if not proportion and num > den:
            wl, wh = lo, hi
        lo, hi = min(lo, wl), max(hi, wh)
        method = "bootstrap+wilson" if method == "bootstrap" else "wilson"
    lo, hi = min(lo, value), max(hi, value)
    return Rate(value, lo, hi, num, den, method)


def rates(
    table: pl.DataFrame,
    tasks: list[str],
    *,
    n_boot: int,
    seed: int,
    proportion: Mapping[str, bool] | None = None,
) -> dict[str, Rate]:
    """Every key's `Rate` from a `key, task, num, den` table (see `bootstrap_intervals`)."""
    points = point_rates(table) if not table.is_empty() else {}
    intervals = bootstrap_intervals(table, tasks, n_boot=n_boot, seed=seed)
    prop = proportion or {}
    return {
        k: make_rate(n, d, intervals.get(k), proportion=prop.get(k, True))
        for k, (n, d) in sorted(points.items())
    }
