"""JSON pointers over rule-path patterns: where a planted invariant applies inside a result.

Why a few lines here and not the `contracts` package's pointer code: the generator runs from a fresh
clone with only the standard library and orjson, and it stays independent of the miner whose
findings the sample world is used to judge.
"""

from __future__ import annotations

from typing import Any


def instances(doc: Any, pattern: str) -> list[tuple[str, Any]]:
    """Every `(concrete pointer, value)` matching `pattern` (`*` = any array index; `""` = the root)."""
    found: list[tuple[str, Any]] = [("", doc)]
    for tok in pattern.split("/")[1:] if pattern else []:
        nxt: list[tuple[str, Any]] = []
        for ptr, v in found:
            if tok == "*" and isinstance(v, list):
                nxt.extend((f"{ptr}/{i}", x) for i, x in enumerate(v))
            elif tok != "*" and isinstance(v, dict) and tok in v:
                nxt.append((f"{ptr}/{tok}", v[tok]))
        found = nxt
    return found


def get_ptr(doc: Any, ptr: str) -> tuple[bool, Any]:
    """`(present, value)` at a concrete pointer."""
    v = doc
    for tok in ptr.split("/")[1:] if ptr else []:
        if isinstance(v, list) and tok.isdigit() and int(tok) < len(v):
            v = v[int(tok)]
        elif isinstance(v, dict) and tok in v:
            v = v[tok]
        else:
            return False, None
    return True, v


def _parent(doc: Any, ptr: str) -> tuple[Any, str]:
    head, _, last = ptr.rpartition("/")
    ok, parent = get_ptr(doc, head)
    assert ok, ptr
    return parent, last


def set_ptr(doc: Any, ptr: str, value: Any) -> None:
    parent, last = _parent(doc, ptr)
    if isinstance(parent, list):
        parent[int(last)] = value
    else:
        parent[last] = value


def del_ptr(doc: Any, ptr: str) -> None:
    parent, last = _parent(doc, ptr)
    del parent[last]
