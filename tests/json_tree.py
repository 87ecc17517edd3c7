"""Walks over a decoded JSON document for the schema tests that mutate real artifacts."""

from __future__ import annotations

from typing import Any


def subtrees(v: Any) -> list[Any]:
    """Every value in `v`, `v` itself first, depth first."""
    out = [v]
    if isinstance(v, dict):
        for x in v.values():
            out.extend(subtrees(x))
    elif isinstance(v, list):
        for x in v:
            out.extend(subtrees(x))
    return out


def locations(v: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `v` as a key path, `v` itself (the empty path) first."""
    out = [at]
    if isinstance(v, dict):
        for k, x in v.items():
            out.extend(locations(x, (*at, k)))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out.extend(locations(x, (*at, i)))
    return out
