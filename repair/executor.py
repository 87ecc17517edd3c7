"""The semantic executor hook of `repair-score --executor CMD`: after the ledger is verified frozen and the
targets are joined, run a program per dispatched case and record whether the call does what the target
call does (semantic success), beside the syntactic M_object.

Protocol (one run per case, no shell, `shlex.split` then `execve`, a timeout): stdin is canonical JSON
`{"protocol": 1, "case_id", "tool", "family", "final", "target"}`; stdout is one JSON object
`{"success": true|false, "detail"?: "..."}`. A timeout, a non-zero exit or unreadable output is an
executor error: the case counts as not semantically successful and the error is counted and named. The
executor runs only after the freeze, so it may read the target; nothing it says can reach a policy.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from output_contracts.errors import RepairError
from output_contracts.jsonutil import canonical_json
from output_contracts.repair.command import run_command


@dataclass(frozen=True)
class Verdict:
    """The executor's answer for one case: `success`, or `error` (a typed reason) with a detail."""

    success: bool
    error: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class Executor:
    """A program run once per case (see the module docstring)."""

    argv: tuple[str, ...]
    timeout: float = 10.0

    @classmethod
    def from_string(cls, command: str, timeout: float = 10.0) -> Executor:
        argv = tuple(shlex.split(command))
        if not argv:
            raise RepairError("executor command is empty", code="E_USAGE", field="executor")
        return cls(argv, timeout)

    def describe(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "timeout": self.timeout}

    def run(self, payload: Mapping[str, Any]) -> Verdict:
        proc = run_command(self.argv, canonical_json({"protocol": 1, **payload}), self.timeout)
        if isinstance(proc, tuple):
            return Verdict(False, f"EXECUTOR_{proc[0]}", proc[1])
        if proc.returncode != 0:
            return Verdict(False, "EXECUTOR_FAILED", f"exit {proc.returncode}")
        try:
            data = orjson.loads(proc.stdout)
        except orjson.JSONDecodeError:
            return Verdict(False, "EXECUTOR_OUTPUT", "stdout is not one JSON value")
        if not isinstance(data, dict) or not isinstance(data.get("success"), bool):
            return Verdict(False, "EXECUTOR_OUTPUT", 'expected {"success": true|false}')
        detail = data.get("detail")
        return Verdict(data["success"], None, detail if isinstance(detail, str) else "")
