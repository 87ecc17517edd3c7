"""The canonical trace model (DESIGN §2.1): one tool call, one episode, as frozen value types.

Every adapter turns its format into `ToolCall`s; everything downstream (corpus, mining, checking) sees
only this shape. `labels` is ground truth for scoring: it never influences checking, and mining uses it
only to leave labelled-faulty calls out of the clean set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from output_contracts.jsonutil import sha256_hex


def make_call_id(source_sha256: str, line: int, index: int) -> str:
    """Stable call id: first 16 hex digits of sha256(source file hash : line : index within the line)."""
    return sha256_hex(f"{source_sha256}:{line}:{index}")[:16]


@dataclass(frozen=True)
class ToolCall:
    """One tool call and its result.

    `line` is the 1-based line (or record) number in `source` the call came from; `index` numbers calls
    within that line (episode formats hold many calls a line). `meta` keeps adapter facts that are not
    part of the model (e.g. τ²-bench's `requestor`), never used for checking.
    """

    trace_id: str
    tool: str
    arguments: dict[str, Any]
    result: Any = None
    status: str = "ok"
    error: str | None = None
    task_id: str | None = None
    step: int | None = None
    started_at: str | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    source: str = "-"
    line: int = 0
    index: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def task(self) -> str:
        """`task_id`, defaulting to `trace_id` (DESIGN §2.1)."""
        return self.task_id if self.task_id is not None else self.trace_id

    @property
    def fault(self) -> str | None:
        """The injected or labelled fault kind, if any."""
        f = self.labels.get("fault")
        return str(f) if f is not None else None


@dataclass(frozen=True)
class Episode:
    """One trace (episode): its task, reward (None when the format has none), labels and visible tools.

    `tools` is the tool set the agent could see in this episode, when the format records it; recovery
    tools in receipts are restricted to it. `trial` (the repeat number of the task), `agent_cost` and
    `user_cost` (money spent by the agent's and the simulated user's models) are run facts that benchmark
    result files record (τ-bench, τ²-bench): `contracts compare` pairs trials and averages cost with them.
    """

    trace_id: str
    task_id: str
    reward: float | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    tools: tuple[str, ...] | None = None
    trial: int | None = None
    agent_cost: float | None = None
    user_cost: float | None = None
