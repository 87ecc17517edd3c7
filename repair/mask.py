"""The action mask: refuse a proposed patch before anything is applied, with a typed reason.

The mask is the safety layer of the repair MDP (DESIGN §6). It simulates the whole patch, op by op, on a
private copy of the candidate, in RFC 6902 order (each op sees the document the previous ops left), and
refuses at the first problem. A refused action uses an attempt and returns a `MaskVerdict` with the
reason; it never reaches the validator, and the candidate is unchanged.

Refusal reasons (stable codes, each with a test):

- `MALFORMED_PATCH` — the action is neither `"abstain"` nor a JSON array of ops (or the array is empty).
- `MALFORMED_OP` — an op is not an object, names an unknown op, misses `path`/`from`/`value`, or has
  unexpected members.
- `BAD_POINTER` — a `path` or `from` is not an RFC 6901 pointer.
- `PATH_NOT_FOUND` — remove/replace/test target does not exist (or a bad array index).
- `PARENT_NOT_FOUND` — an add whose parent does not exist or is not a container.
- `FROM_NOT_FOUND` — a move/copy source does not exist.
- `MOVE_INTO_CHILD` — a move into its own descendant.
- `IMMUTABLE_PATH` — an op that changes an immutable path, one of its descendants or ancestors, or shifts
  its array index (an add/remove earlier in the same array). `test` and a copy's `from` only read and are
  allowed.
- `OVER_BUDGET` — the patch has more mutating ops than the remaining op budget (`test` ops are free).
- `TEST_FAILED` — a `test` op did not hold; RFC 6902 says the whole patch then fails.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from output_contracts.repair.patch import (
    MUTATING_OPS,
    Op,
    PatchFault,
    apply_op,
    format_pointer,
    is_prefix,
    parse_op,
    parse_pointer,
    resolve,
)

REASONS = (
    "MALFORMED_PATCH",
    "MALFORMED_OP",
    "BAD_POINTER",
    "PATH_NOT_FOUND",
    "PARENT_NOT_FOUND",
    "FROM_NOT_FOUND",
    "MOVE_INTO_CHILD",
    "IMMUTABLE_PATH",
    "OVER_BUDGET",
    "TEST_FAILED",
)


@dataclass(frozen=True)
class MaskVerdict:
    """`ok` with the parsed ops and the patched document, or a refusal `reason` at op `op_index`."""

    ok: bool
    reason: str | None = None
    detail: str = ""
    op_index: int | None = None
    ops: tuple[Op, ...] = ()
    result: Any = None
    mutating_ops: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The verdict as stored in the ledger (without the patched document)."""
        return {"ok": self.ok, "reason": self.reason, "detail": self.detail, "op_index": self.op_index}


def _refuse(reason: str, detail: str, op_index: int | None = None) -> MaskVerdict:
    return MaskVerdict(False, reason, detail, op_index)


def touches_immutable(op: Op, doc: Any, immutable: Sequence[tuple[str, ...]]) -> str | None:
    """The immutable pointer `op` would change in `doc`, or None.

    Changed locations: `path` for add/remove/replace/copy, and both `from` and `path` for move. A change
    at an ancestor rewrites the immutable value; a change at a descendant rewrites part of it; an add or
    remove at index i of an array shifts every element at index >= i.
    """
    if op.op == "test":
        return None
    written = [op.path] + ([op.from_] if op.op == "move" and op.from_ is not None else [])
    for w in written:
        for imm in immutable:
            if is_prefix(w, imm) or is_prefix(imm, w):
                return format_pointer(imm)
            if op.op in ("add", "remove", "move", "copy") and w and len(imm) >= len(w):
                parent = w[:-1]
                if tuple(imm[: len(parent)]) != tuple(parent):
                    continue
                try:
                    container = resolve(doc, parent)
                except PatchFault:
                    continue
                if isinstance(container, list):
                    tok = imm[len(parent)]
                    idx = len(container) if w[-1] == "-" else (int(w[-1]) if w[-1].isdigit() else None)
                    if idx is not None and tok.isdigit() and int(tok) >= idx:
                        return format_pointer(imm)
    return None


def check(
    action: Any,
    doc: Any,
    *,
    immutable: Sequence[str] = (),
    ops_left: int,
) -> MaskVerdict:
    """Mask one proposed patch against `doc`; on success `result` is the patched copy.

    `action` is the raw JSON the policy proposed (a list of ops). Abstention is decided by the loop
    before the mask is consulted.
    """
    if not isinstance(action, list) or not action:
        return _refuse("MALFORMED_PATCH", "a patch must be a non-empty JSON array of ops")
    ops: list[Op] = []
    for i, raw in enumerate(action):
        try:
            ops.append(parse_op(raw))
        except PatchFault as e:
            return _refuse(e.reason, f"op {i}: {e.detail}", i)
    mutating = sum(1 for o in ops if o.op in MUTATING_OPS)
    if mutating > ops_left:
        return _refuse(
            "OVER_BUDGET", f"patch has {mutating} mutating op(s); {ops_left} left in the op budget"
        )
    imm = [parse_pointer(p) for p in immutable]
    cur = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        hit = touches_immutable(op, cur, imm)
        if hit is not None:
            return _refuse(
                "IMMUTABLE_PATH", f"op {i} ({op.op} {format_pointer(op.path)}) changes immutable {hit}", i
            )
        try:
            cur = apply_op(cur, op)
        except PatchFault as e:
            return _refuse(e.reason, f"op {i}: {e.detail}", i)
    return MaskVerdict(True, ops=tuple(ops), result=cur, mutating_ops=mutating)


def _nodes(doc: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k in sorted(doc):
            out += _nodes(doc[k], (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _nodes(v, (*prefix, str(i)))
    return out


def allowed_actions(doc: Any, *, immutable: Sequence[str] = (), ops_left: int) -> dict[str, Any]:
    """The action set the mask accepts from `doc`, sent with the state (`--send-allowed`).

    `writable`: existing pointers (`""`, the whole document, included) a replace may target (remove refuses `""`) (no immutable pointer at, above or below
    them); `add_parents`: objects and arrays an `add` may write into (not at or under an immutable
    pointer; an array whose index shift would move an immutable element is left out; adding an
    immutable member itself is still refused);
    `immutable`: the case's immutable pointers; `ops`: the op names; `ops_left`: the mutating op budget.
    It is a summary: the mask still checks each patch, op by op, on the document the earlier ops leave.
    """
    imm = [parse_pointer(p) for p in immutable]
    writable, parents = [], []
    for node in _nodes(doc):
        blocked = any(is_prefix(node, i) or is_prefix(i, node) for i in imm)
        if not blocked:
            writable.append(format_pointer(node))
        try:
            container = resolve(doc, node)
        except PatchFault:  # pragma: no cover - every listed node exists
            continue
        shifts = isinstance(container, list) and any(
            len(i) > len(node) and i[: len(node)] == node for i in imm
        )
        inside = any(is_prefix(i, node) for i in imm)
        if isinstance(container, dict | list) and not inside and not shifts:
            parents.append(format_pointer(node))
    return {
        "ops": ["add", "remove", "replace", "move", "copy", "test"],
        "ops_left": ops_left,
        "immutable": list(immutable),
        "writable": writable,
        "add_parents": parents,
    }
