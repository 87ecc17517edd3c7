"""A broken rule at one place of one call (`Violation`), and the pieces its witness is rendered from:
where it is (`At`) and how a detail sentence names a place (`name`, `returned`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from output_contracts.codes.nodes import Operand
from output_contracts.jsonutil import canonical_str


@dataclass(frozen=True)
class Violation:
    """One broken rule at one concrete place of one call.

    `observed` is the JSON value found; for a missing field it is None with `present=False`, which
    keeps "absent" distinct from "present and null" (`observed=None, present=True`).
    """

    code: str
    rule: str
    path: str
    expected: Any
    observed: Any
    present: bool
    detail: str
    #: the call id of the earlier call a cross-call violation (CONSISTENT) disagrees with
    refers: str | None = None

    def sort_key(self) -> tuple[str, str]:
        """Order inside a receipt: by rule id, then concrete path (the order `check_corpus` uses)."""
        return (self.rule, self.path)


def name(path: str) -> str:
    """How a detail sentence names a place: the pointer without its leading slash (`items/2/price`)."""
    return path[1:] if path.startswith("/") else (path or "the whole result")


def returned(path: str, shown: str) -> str:
    """`available=-3`, or `[1,2] as the whole result` for the root."""
    return f"{shown} as the whole result" if path == "" else f"{name(path)}={shown}"


@dataclass(frozen=True)
class At:
    """Where a witness is rendered: the call, the concrete path (rule notation) and what is there."""

    arguments: Any
    result: Any
    path: str  # rule notation (`$args/...` on the argument side)
    raw: str  # the same path without its side prefix
    observed: Any  # the value at `path` (None when absent)
    ops: tuple[Operand, ...]  # the rule's paths as operands (no implied operands)

    @property
    def shown(self) -> str:
        return canonical_str(self.observed)
