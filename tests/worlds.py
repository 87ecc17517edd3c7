"""A random small tool world for property tests: every rule class, with knobs that break each one."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def world(seed: int, n_calls: int, n_tasks: int, breakage: float) -> list[dict[str, Any]]:
    """Flat call records of two tools; `breakage` is the chance that a call breaks some invariant."""
    r = random.Random(seed)
    colors = ["red", "green", "blue", "teal"][: r.randint(2, 4)]
    out: list[dict[str, Any]] = []
    for i in range(n_calls):
        task = f"task-{r.randrange(n_tasks):02d}"
        broken = r.random() < breakage
        what = r.randrange(6) if broken else -1
        oid = f"o-{r.randrange(40)}"
        x, y = r.randint(0, 50), r.randint(0, 50)
        start = T0 + dt.timedelta(hours=r.randint(0, 5000))
        end = start + dt.timedelta(hours=r.randint(1, 90))
        items = []
        for _ in range(r.randint(0, 3)):
            p, q = round(r.uniform(1, 30), 2), r.randint(1, 4)
            items.append({"p": p, "q": q, "t": round(p * q, 2)})
        res: dict[str, Any] = {
            "id": oid if what != 0 else "stale",
            "n": r.randint(0 if what != 1 else -3, 9),
            "s": r.choice(colors) if what != 2 else f"rare-{i}",
            "x": x,
            "y": y,
            "z": x + y + (1 if what == 3 else 0),
            "start": start.isoformat(),
            "end": end.isoformat() if what != 4 else (start - dt.timedelta(hours=1)).isoformat(),
            "items": items,
            "note": None if r.random() < 0.5 else "n",
        }
        if what == 5:
            del res["x"]
        if r.random() < 0.3:
            res["opt"] = r.randint(1, 3)
        tool = "a" if r.random() < 0.7 else "b"
        out.append(
            {
                "trace_id": f"ep-{i:04d}",
                "task_id": task,
                "tool": tool,
                "arguments": {"id": oid},
                "result": res,
            }
        )
    return out
