"""JSON Pointer (RFC 6901) and JSON Patch (RFC 6902) on plain JSON values, written for the action mask.

The mask must say *why* a patch cannot be applied (a typed reason, the op index, the pointer), so it
cannot lean on a library that only raises. These helpers parse pointers strictly, test existence without
side effects, and apply one op at a time to a deep copy, raising `PatchFault` with a reason code that the
mask turns into a refusal. JSON equality for `test` follows RFC 6902 §4.6: numbers compare by value,
`true` is not `1`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

OPS = ("add", "remove", "replace", "move", "copy", "test")
#: Ops that change the document; `test` only reads. Budgets count these.
MUTATING_OPS = ("add", "remove", "replace", "move", "copy")
_INDEX = re.compile(r"0|[1-9][0-9]*")


class PatchFault(Exception):
    """One op cannot be applied; `reason` is a mask refusal code (see `output_contracts.repair.mask`)."""

    def __init__(self, reason: str, detail: str, pointer: str = "") -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.pointer = pointer


def parse_pointer(pointer: Any) -> tuple[str, ...]:
    """Tokens of an RFC 6901 pointer; raises `PatchFault("BAD_POINTER")` on anything else.

    `""` is the whole document. `~` must be followed by `0` or `1`.
    """
    if not isinstance(pointer, str):
        raise PatchFault("BAD_POINTER", f"pointer must be a string, got {type(pointer).__name__}")
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise PatchFault("BAD_POINTER", f"pointer {pointer!r} does not start with '/'", pointer)
    tokens = pointer[1:].split("/")
    out = []
    for t in tokens:
        if re.search(r"~(?![01])", t):
            raise PatchFault("BAD_POINTER", f"pointer {pointer!r} has a bad '~' escape", pointer)
        out.append(t.replace("~1", "/").replace("~0", "~"))
    return tuple(out)


def format_pointer(tokens: Sequence[str | int]) -> str:
    """The RFC 6901 text of `tokens`."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def is_prefix(prefix: Sequence[str], tokens: Sequence[str]) -> bool:
    """True when `prefix` equals `tokens` or is an ancestor of it."""
    return len(prefix) <= len(tokens) and tuple(tokens[: len(prefix)]) == tuple(prefix)


def _index(container: list[Any], token: str, pointer: str, *, allow_end: bool) -> int:
    if allow_end and token == "-":
        return len(container)
    if not _INDEX.fullmatch(token):
        raise PatchFault("PATH_NOT_FOUND", f"{pointer!r}: {token!r} is not an array index", pointer)
    i = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if i > limit:
        raise PatchFault("PATH_NOT_FOUND", f"{pointer!r}: index {i} is out of range", pointer)
    return i


def resolve(doc: Any, tokens: Sequence[str]) -> Any:
    """The value at `tokens`; raises `PatchFault("PATH_NOT_FOUND")` when it does not exist."""
    pointer = format_pointer(tokens)
    cur = doc
    for t in tokens:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchFault("PATH_NOT_FOUND", f"{pointer!r} does not exist", pointer)
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, pointer, allow_end=False)]
        else:
            raise PatchFault("PATH_NOT_FOUND", f"{pointer!r} does not exist", pointer)
    return cur


def exists(doc: Any, tokens: Sequence[str]) -> bool:
    """True when a value exists at `tokens`."""
    try:
        resolve(doc, tokens)
    except PatchFault:
        return False
    return True


def json_equal(a: Any, b: Any) -> bool:
    """RFC 6902 §4.6 equality: same JSON type and value; numbers by value; `true` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class Op:
    """One well-formed op: `op`, `path` tokens, `from` tokens (move/copy) and `value` (add/replace/test)."""

    op: str
    path: tuple[str, ...]
    from_: tuple[str, ...] | None = None
    value: Any = None

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op, "path": format_pointer(self.path)}
        if self.from_ is not None:
            d["from"] = format_pointer(self.from_)
        if self.op in ("add", "replace", "test"):
            d["value"] = self.value
        return d


def parse_op(raw: Any) -> Op:
    """Check one op's shape (RFC 6902 §4); raises `PatchFault("MALFORMED_OP")` or `("BAD_POINTER")`."""
    if not isinstance(raw, dict):
        raise PatchFault("MALFORMED_OP", "an op must be a JSON object")
    kind = raw.get("op")
    if kind not in OPS:
        raise PatchFault("MALFORMED_OP", f"unknown op {kind!r} (expected one of {', '.join(OPS)})")
    allowed = {"op", "path"} | ({"from"} if kind in ("move", "copy") else set())
    allowed |= {"value"} if kind in ("add", "replace", "test") else set()
    if "path" not in raw:
        raise PatchFault("MALFORMED_OP", f"{kind} op has no 'path'")
    if kind in ("move", "copy") and "from" not in raw:
        raise PatchFault("MALFORMED_OP", f"{kind} op has no 'from'")
    if kind in ("add", "replace", "test") and "value" not in raw:
        raise PatchFault("MALFORMED_OP", f"{kind} op has no 'value'")
    extra = sorted(set(raw) - allowed)
    if extra:
        raise PatchFault("MALFORMED_OP", f"{kind} op has unexpected member(s) {', '.join(extra)}")
    path = parse_pointer(raw["path"])
    from_ = parse_pointer(raw["from"]) if "from" in raw else None
    return Op(kind, path, from_, copy.deepcopy(raw.get("value")))


def _parent(doc: Any, tokens: tuple[str, ...], pointer: str) -> Any:
    try:
        parent = resolve(doc, tokens[:-1])
    except PatchFault:
        raise PatchFault("PARENT_NOT_FOUND", f"the parent of {pointer!r} does not exist", pointer) from None
    if not isinstance(parent, dict | list):
        raise PatchFault("PARENT_NOT_FOUND", f"the parent of {pointer!r} is not a container", pointer)
    return parent


def _add(doc: Any, tokens: tuple[str, ...], value: Any) -> Any:
    if not tokens:
        return value
    pointer = format_pointer(tokens)
    parent = _parent(doc, tokens, pointer)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    else:
        parent.insert(_index(parent, tokens[-1], pointer, allow_end=True), value)
    return doc


def _remove(doc: Any, tokens: tuple[str, ...]) -> tuple[Any, Any]:
    pointer = format_pointer(tokens)
    if not tokens:
        # Removing the whole document leaves nothing to validate: RFC 6902 allows it, we do not.
        raise PatchFault("PATH_NOT_FOUND", "cannot remove the whole document", pointer)
    old = resolve(doc, tokens)
    parent = resolve(doc, tokens[:-1])
    if isinstance(parent, dict):
        del parent[tokens[-1]]
    else:
        del parent[_index(parent, tokens[-1], pointer, allow_end=False)]
    return doc, old


def apply_op(doc: Any, op: Op) -> Any:
    """Apply one op in place where possible and return the new document.

    Raises `PatchFault` with `PATH_NOT_FOUND` (remove/replace/test target missing), `PARENT_NOT_FOUND`
    (add), `FROM_NOT_FOUND` (move/copy source missing), `MOVE_INTO_CHILD`, or `TEST_FAILED`.
    """
    if op.op == "add":
        return _add(doc, op.path, copy.deepcopy(op.value))
    if op.op == "remove":
        return _remove(doc, op.path)[0]
    if op.op == "replace":
        resolve(doc, op.path)
        if not op.path:
            return copy.deepcopy(op.value)
        doc, _ = _remove(doc, op.path)
        return _add(doc, op.path, copy.deepcopy(op.value))
    if op.op == "test":
        if not json_equal(resolve(doc, op.path), op.value):
            raise PatchFault(
                "TEST_FAILED", f"test at {format_pointer(op.path)!r} failed", format_pointer(op.path)
            )
        return doc
    assert op.from_ is not None
    src = format_pointer(op.from_)
    try:
        value = resolve(doc, op.from_)
    except PatchFault:
        raise PatchFault("FROM_NOT_FOUND", f"'from' location {src!r} does not exist", src) from None
    if op.op == "copy":
        return _add(doc, op.path, copy.deepcopy(value))
    if op.from_ != op.path and is_prefix(op.from_, op.path):
        raise PatchFault(
            "MOVE_INTO_CHILD", f"cannot move {src!r} into its own child {format_pointer(op.path)!r}", src
        )
    if op.from_ == op.path:
        return doc
    if not op.from_:
        raise PatchFault("MOVE_INTO_CHILD", "cannot move the whole document", src)
    doc, value = _remove(doc, op.from_)
    return _add(doc, op.path, value)


def apply_patch(doc: Any, ops: Sequence[Op]) -> Any:
    """Apply every op to a deep copy of `doc`; the input is never changed."""
    out = copy.deepcopy(doc)
    for op in ops:
        out = apply_op(out, op)
    return out


def leaf_paths(doc: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every scalar leaf (and every empty container) of `doc`, keyed by its pointer tokens."""
    if isinstance(doc, dict) and doc:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in doc.items():
            out.update(leaf_paths(v, (*prefix, k)))
        return out
    if isinstance(doc, list) and doc:
        out = {}
        for i, v in enumerate(doc):
            out.update(leaf_paths(v, (*prefix, str(i))))
        return out
    return {prefix: doc}


def changed_leaf_paths(before: Any, after: Any) -> list[tuple[str, ...]]:
    """Leaf paths whose value differs (or which exist on one side only), sorted."""
    a, b = leaf_paths(before), leaf_paths(after)
    keys = set(a) | set(b)
    return sorted(k for k in keys if k not in a or k not in b or not json_equal(a[k], b[k]))
