"""Exact paired tests and standardized effect sizes for comparing two repair ledgers on the same cases.

- `exact_binomial_two_sided(k, n)` — P(|X − n/2| ≥ |k − n/2|) for X ~ Binomial(n, 1/2), exact (integer
  arithmetic, `math.comb`), the two-sided p of a sign test.
- `mcnemar_exact(a, b)` — McNemar's exact test on paired binary outcomes: only discordant pairs count
  (b01 = this 1 / other 0, b10 = this 0 / other 1), p = the exact two-sided binomial of b01 in b01 + b10.
- `sign_test(x, y)` — the sign test on paired numbers: ties dropped, p as above.
- `cohens_h(p1, p2)` — 2·asin√p1 − 2·asin√p2, the standardized difference of two proportions.
- `paired_d(x, y)` — mean(x − y) / sd(x − y) (sample sd, n − 1); None when sd is 0 or n < 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction


def exact_binomial_two_sided(k: int, n: int) -> float:
    """Two-sided exact p of `k` successes in `n` fair trials (1.0 when n = 0)."""
    if n == 0:
        return 1.0
    lo = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(lo + 1))
    p = Fraction(2 * tail, 2**n)
    return float(min(p, Fraction(1)))


def mcnemar_exact(this: Sequence[bool], other: Sequence[bool]) -> dict[str, float | int]:
    """McNemar's exact test of paired binary outcomes: discordant counts and the two-sided p."""
    b01 = sum(1 for a, b in zip(this, other, strict=True) if a and not b)
    b10 = sum(1 for a, b in zip(this, other, strict=True) if b and not a)
    return {"this_only": b01, "other_only": b10, "p": _sig(exact_binomial_two_sided(b01, b01 + b10))}


def sign_test(this: Sequence[float], other: Sequence[float]) -> dict[str, float | int]:
    """The exact sign test of paired values (ties dropped)."""
    pos = sum(1 for a, b in zip(this, other, strict=True) if a > b)
    neg = sum(1 for a, b in zip(this, other, strict=True) if a < b)
    return {"this_only": pos, "other_only": neg, "p": _sig(exact_binomial_two_sided(pos, pos + neg))}


def cohens_h(p1: float | None, p2: float | None) -> float | None:
    """Cohen's h of two proportions (None when either is undefined)."""
    if p1 is None or p2 is None:
        return None
    return round(2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2)), 6)


def paired_d(this: Sequence[float], other: Sequence[float]) -> float | None:
    """Standardized mean of paired differences (Cohen's d_z); None when undefined."""
    d = [a - b for a, b in zip(this, other, strict=True)]
    n = len(d)
    if n < 2:
        return None
    mean = sum(d) / n
    var = sum((x - mean) ** 2 for x in d) / (n - 1)
    if var == 0:
        return None
    return round(mean / math.sqrt(var), 6)


def _sig(p: float) -> float:
    """`p` to 6 significant digits (a tiny p stays visible, the JSON stays short and stable)."""
    return float(f"{p:.6g}")
