"""Task-level k-fold assignment (DESIGN §3): the checker used on a task never saw that task's traces."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl


def fold_of(task_id: str, seed: int, k: int) -> int:
    """`int(sha256(f"{seed}:{task_id}")[:8], 16) % k` (0 when k == 1)."""
    if k <= 1:
        return 0
    return int(hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()[:8], 16) % k


def fold_table(task_ids: pl.Series, seed: int, k: int) -> pl.DataFrame:
    """`task_id -> fold` for the distinct task ids given (hashing each distinct id once, not each row).
    (polars is imported here: `fold_of` is read by the contract set model, which loads without it.)"""
    import polars as pl

    tasks = task_ids.cast(pl.String).unique().sort()
    return pl.DataFrame(
        {"task_id": tasks, "fold": [fold_of(t, seed, k) for t in tasks.to_list()]},
        schema={"task_id": pl.String, "fold": pl.Int32},
    )
