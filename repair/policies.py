"""Repair policies: `precomputed`, `heuristic` and `command` (DESIGN §6, docs/repair.md).

A policy maps a `State` to an `Action`. Policies never see targets. They are deterministic given the
state (the `command` policy is as deterministic as the program it runs).

- `precomputed` replays a file of actions keyed by (case id, attempt): the mechanism replay. A missing
  entry is an abstention.
- `heuristic` is a transparent baseline that reads only the verifier report, schema and history (see
  `HeuristicPolicy`).
- `command` runs an external program per step with the state as JSON on stdin and reads one JSON action
  from stdout. The program is started from an argument list without a shell, with a timeout; nothing
  from a case or trace is ever placed on its command line.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import orjson

from output_contracts.choices import PolicyName as PolicyName
from output_contracts.errors import RepairError
from output_contracts.jsonutil import canonical_json
from output_contracts.repair.cases import near_miss, read_actions
from output_contracts.repair.command import run_command
from output_contracts.repair.patch import PatchFault, format_pointer, parse_pointer, resolve
from output_contracts.repair.state import Action, State, usage_problem
from output_contracts.repair.validator import VerifierError, verify

POLICIES = tuple(p.value for p in PolicyName)
POLICY_ERRORS = ("POLICY_TIMEOUT", "POLICY_FAILED", "POLICY_OUTPUT")


class Policy(Protocol):
    """Anything with a `name`, a JSON-ready `describe()` and `act(state) -> Action`."""

    name: str

    def describe(self) -> dict[str, Any]: ...

    def act(self, state: State) -> Action: ...


# ---------------------------------------------------------------------------------------- precomputed


@dataclass
class PrecomputedPolicy:
    """Actions from a `--patches` file (`repair-action` lines)."""

    actions: Mapping[tuple[str, int], Mapping[str, Any]]
    source: str = ""
    name: str = "precomputed"

    @classmethod
    def from_file(cls, path: str | Path) -> PrecomputedPolicy:
        return cls(read_actions(path), Path(path).name)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "patches": self.source, "actions": len(self.actions)}

    def act(self, state: State) -> Action:
        rec = self.actions.get((state.case.case_id, state.attempt))
        if rec is None:
            return Action.abstain("no precomputed action for this case and attempt")
        conf = rec.get("confidence")
        if rec["action"] == "abstain":
            return Action.abstain("precomputed abstention", conf)
        return Action(rec["action"], conf)


# ------------------------------------------------------------------------------------------ heuristic

_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_NUM = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def subschema_at(schema: Any, tokens: Sequence[str]) -> Mapping[str, Any] | None:
    """The schema that governs the value at `tokens`, following `properties`, `prefixItems` and `items`.

    Returns None where it cannot tell (combinators, `$ref`, a missing property): the heuristic abstains
    rather than guess.
    """
    cur = schema
    for t in tokens:
        if not isinstance(cur, Mapping):
            return None
        props = cur.get("properties")
        if isinstance(props, Mapping) and t in props:
            cur = props[t]
        elif t.isdigit() and isinstance(cur.get("prefixItems"), list) and int(t) < len(cur["prefixItems"]):
            cur = cur["prefixItems"][int(t)]
        elif t.isdigit() and isinstance(cur.get("items"), Mapping):
            cur = cur["items"]
        else:
            return None
    return cur if isinstance(cur, Mapping) else None


def _types(sub: Mapping[str, Any]) -> list[str]:
    t = sub.get("type")
    return [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []


def lossless_coercion(value: Any, sub: Mapping[str, Any]) -> tuple[bool, Any]:
    """(ok, coerced) when `value` has exactly one reading of a type `sub` allows, with nothing lost.

    Lossless means the coerced value renders back to the same text: `"5"` → 5, `"2.5"` → 2.5,
    `"true"` → true, `"null"` → null, `5` → `"5"`, a one-element array → its element, and the JSON
    text of an array or object → that container. `"05"`, `"1e3"` for an integer, `"yes"` are refused.
    The coerced value must also pass `sub`.
    """
    candidates: list[Any] = []
    for t in _types(sub):
        if isinstance(value, str):
            s = value
            if t == "integer" and _INT.fullmatch(s):
                candidates.append(int(s))
            elif t == "number" and _NUM.fullmatch(s):
                n: Any = int(s) if _INT.fullmatch(s) else float(s)
                if isinstance(n, int) or (math.isfinite(n) and orjson.dumps(n).decode() == s):
                    candidates.append(n)
            elif t == "boolean" and s in ("true", "false"):
                candidates.append(s == "true")
            elif t == "null" and s == "null":
                candidates.append(None)
            elif t in ("array", "object") and s[:1] in "[{":
                try:
                    parsed = orjson.loads(s)
                except orjson.JSONDecodeError:
                    continue
                if (t == "array") == isinstance(parsed, list) and canonical_json(parsed).decode() == s:
                    candidates.append(parsed)
        elif t == "string" and (isinstance(value, int | float) or value is None or isinstance(value, bool)):
            candidates.append(orjson.dumps(value).decode())
        elif isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list):
            candidates.append(value[0])
    good = [c for c in candidates if not verify(c, sub)]
    unique = {canonical_json(c) for c in good}
    if len(unique) != 1:
        return False, None
    return True, good[0]


@dataclass
class HeuristicPolicy:
    """A deterministic baseline that reads the verifier report, the schema and the history.

    Rules, in order (each with a confidence; the patch's confidence is the lowest used):

    1. After a refused or failed attempt whose reason was `IMMUTABLE_PATH`, or when the previous attempt
       proposed the same patch it would propose now, abstain (never repeat a refused action).
    2. Rollback (0.9): when the last history patch added a path that now has an error, remove it.
    3. Per error, all must be fixable or the policy abstains:
       - `E_REQUIRED` at P: move a sibling unexpected property whose name is a near miss of P's name and
         whose value passes P's schema (0.8); else add P's schema `default` if it passes (0.6); else its
         first `enum` value (0.3).
       - `E_TYPE` at P: a lossless coercion (`lossless_coercion`, 0.9).
       - `E_EXTRA` at P, consumed by a move above; otherwise unfixable.
       - anything else: unfixable.
    4. More ops than the op budget left: abstain.
    """

    name: str = "heuristic"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "version": 2}

    def act(self, state: State) -> Action:
        """The action, with `usage` counted as JSON lexical tokens of the state read and the answer
        written (a deterministic stand-in for a model's token counts; see `json_tokens`)."""
        a = self._act(state)
        answer = "abstain" if a.patch is None else a.patch
        usage = {"input_tokens": json_tokens(state.as_json()), "output_tokens": json_tokens(answer)}
        return replace(a, usage=usage)

    def _act(self, state: State) -> Action:
        last_step = next((h for h in reversed(state.history) if "mask" in h), None)
        if last_step is not None and (last_step.get("mask") or {}).get("reason") == "IMMUTABLE_PATH":
            return Action.abstain("the fault is at an immutable path", 1.0)
        ops, conf, why = self._propose(state)
        if ops is None:
            return Action.abstain(why, None)
        if last_step is not None and canonical_json(last_step.get("action")) == canonical_json(ops):
            return Action.abstain("the same patch was already tried", None)
        if sum(1 for o in ops if o["op"] != "test") > state.ops_left:
            return Action.abstain("the repair needs more ops than the budget leaves", None)
        return Action(ops, conf)

    def _propose(self, state: State) -> tuple[list[dict[str, Any]] | None, float, str]:
        schema, doc = state.case.schema, state.candidate
        errors = [_infer_code(e, schema, doc) for e in state.report]
        pick = state.sample["index"] if state.sample else 0
        if not errors:
            return None, 0.0, "nothing to repair"
        if any(e.code == "E_VALIDATOR" for e in errors):
            return None, 0.0, "the validator itself failed"
        prior = [h for h in state.history if "patch" in h and isinstance(h.get("patch"), list)]
        if prior:
            added = [
                o.get("path") for o in prior[-1]["patch"] if isinstance(o, Mapping) and o.get("op") == "add"
            ]
            if added and all(
                any(e.pointer == p or e.pointer.startswith(f"{p}/") for p in added) for e in errors
            ):
                return [{"op": "remove", "path": p} for p in added], 0.9, ""
        ops: list[dict[str, Any]] = []
        conf = 1.0
        extras = {e.pointer for e in errors if e.code == "E_EXTRA"}
        typed = {e.pointer for e in errors if e.code == "E_TYPE"}
        consumed: set[str] = set()
        for e in errors:
            if e.code == "E_EXTRA" or (e.pointer in typed and e.code != "E_TYPE"):
                # A wrong type also fails enum/range/... at the same pointer; the coercion decides those.
                continue
            try:
                tokens = parse_pointer(e.pointer)
            except PatchFault:
                return None, 0.0, f"bad pointer {e.pointer!r} in the report"
            sub = subschema_at(schema, tokens)
            if sub is None:
                return None, 0.0, f"no schema for {e.pointer}"
            if e.code == "E_REQUIRED" and tokens:
                parent = tokens[:-1]
                siblings = {format_pointer([*parent, k]) for k in _siblings(doc, parent) if k != tokens[-1]}
                near = near_miss(tokens[-1], [])
                moves = [
                    p
                    for p in sorted(extras & siblings)
                    if p not in consumed
                    and _is_near(parse_pointer(p)[-1], tokens[-1], near)
                    and not verify(resolve(doc, parse_pointer(p)), sub)
                ]
                # The fills in order of preference; sample k of a `--samples` group takes the k-th.
                fills: list[tuple[dict[str, Any], float]] = []
                if len(moves) == 1:
                    fills.append(({"op": "move", "from": moves[0], "path": e.pointer}, 0.8))
                if "default" in sub and not verify(sub["default"], sub):
                    fills.append(({"op": "add", "path": e.pointer, "value": sub["default"]}, 0.6))
                enum = sub.get("enum")
                for v in enum if isinstance(enum, list) else []:
                    if not verify(v, sub):
                        fills.append(({"op": "add", "path": e.pointer, "value": v}, 0.3))
                if not fills:
                    return None, 0.0, f"no default or enum value for missing {e.pointer}"
                op, c = fills[pick % len(fills)]
                if op["op"] == "move":
                    consumed.add(op["from"])
                ops.append(op)
                conf = min(conf, c)
            elif e.code == "E_TYPE":
                try:
                    value = resolve(doc, tokens)
                except PatchFault:
                    return None, 0.0, f"{e.pointer} does not exist"
                ok, coerced = lossless_coercion(value, sub)
                if not ok:
                    return None, 0.0, f"no lossless coercion at {e.pointer}"
                ops.append({"op": "replace", "path": e.pointer, "value": coerced})
                conf = min(conf, 0.9)
            else:
                return None, 0.0, f"cannot repair {e.code} at {e.pointer}"
        if extras - consumed:
            return None, 0.0, f"unexpected {', '.join(sorted(extras - consumed))}"
        return ops, conf, ""


_JSON_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[{}\[\]:,]'
)


def json_tokens(value: Any) -> int:
    """The number of JSON lexical tokens (strings, numbers, literals, punctuation) of `value`'s canonical
    JSON: the heuristic's stand-in for token usage, deterministic and model-free."""
    return len(_JSON_TOKEN.findall(canonical_json(value).decode()))


def _infer_code(e: VerifierError, schema: Any, doc: Any) -> VerifierError:
    """Under the `pointer-only` view an error has a pointer but no code: read the code off the schema and
    the candidate (missing → E_REQUIRED, present but not of the schema's type → E_TYPE, no schema for a
    present member of a closed object → E_EXTRA). Other errors are returned unchanged."""
    if e.code or not e.pointer:
        return e
    try:
        tokens = parse_pointer(e.pointer)
        value = resolve(doc, tokens)
    except PatchFault:
        return VerifierError(e.pointer, "E_REQUIRED", e.detail)
    sub = subschema_at(schema, tokens)
    if sub is None:
        parent = subschema_at(schema, tokens[:-1])
        if parent is not None and parent.get("additionalProperties") is False:
            return VerifierError(e.pointer, "E_EXTRA", e.detail)
        return e
    if _types(sub) and verify(value, {"type": sub["type"]}):
        return VerifierError(e.pointer, "E_TYPE", e.detail)
    return e


def _siblings(doc: Any, parent: Sequence[str]) -> list[str]:
    try:
        container = resolve(doc, parent)
    except PatchFault:
        return []
    return sorted(container) if isinstance(container, dict) else []


def _is_near(candidate: str, key: str, near: str | None) -> bool:
    """True when `candidate` is a plausible misspelling of `key` (see `cases.near_miss`)."""
    return candidate == near or candidate.lower() == key.lower() or candidate.rstrip("_s") == key.rstrip("_s")


# -------------------------------------------------------------------------------------------- command


@dataclass
class CommandPolicy:
    """Run `argv` once per step: state JSON on stdin, one JSON action on stdout, within `timeout` s.

    The action is `{"action": "abstain" | [ops...], "confidence": c?}`, or a bare `"abstain"` or op list.
    A timeout, a non-zero exit or unreadable output is a typed policy failure (`POLICY_TIMEOUT`,
    `POLICY_FAILED`, `POLICY_OUTPUT`) that uses an attempt. No shell is involved: `argv` is executed
    directly, so nothing in a state can become a command.
    """

    argv: tuple[str, ...]
    timeout: float = 10.0
    name: str = "command"

    @classmethod
    def from_string(cls, command: str, timeout: float = 10.0) -> CommandPolicy:
        argv = tuple(shlex.split(command))
        if not argv:
            raise RepairError("command is empty", field="command")
        return cls(argv, timeout)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "argv": list(self.argv), "timeout": self.timeout}

    def act(self, state: State) -> Action:
        proc = run_command(self.argv, canonical_json(state.as_json()), self.timeout)
        if isinstance(proc, tuple):
            return Action(error=f"POLICY_{proc[0]}", detail=proc[1])
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return Action(error="POLICY_FAILED", detail=f"exit {proc.returncode}: {tail[0][:200]}")
        return parse_action(proc.stdout)


def parse_action(raw: bytes) -> Action:
    """Read a command policy's stdout into an `Action` (or a `POLICY_OUTPUT` failure)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return Action(error="POLICY_OUTPUT", detail=f"stdout is not one JSON value: {e}")
    conf: Any = None
    usage: Any = None
    if isinstance(data, dict):
        if "action" not in data:
            return Action(error="POLICY_OUTPUT", detail="JSON object without 'action'")
        conf = data.get("confidence")
        usage = data.get("usage")
        data = data["action"]
    bad = usage_problem(usage)
    if bad:
        return Action(error="POLICY_OUTPUT", detail=bad)
    if conf is not None and (
        isinstance(conf, bool) or not isinstance(conf, int | float) or not 0 <= conf <= 1
    ):
        return Action(error="POLICY_OUTPUT", detail=f"confidence must be a number in [0, 1], got {conf!r}")
    if data == "abstain":
        return Action.abstain("policy abstained", conf, usage)
    if not isinstance(data, list):
        return Action(error="POLICY_OUTPUT", detail='action must be "abstain" or a JSON array of ops')
    return Action(data, None if conf is None else float(conf), usage=usage)


def make_policy(
    name: str, *, patches: str | Path | None = None, command: str | None = None, timeout: float = 10.0
) -> Policy:
    """Build a policy by name; usage errors name the missing option."""
    if name == "precomputed":
        if patches is None:
            raise RepairError(
                "patches is required with the precomputed policy (a file of precomputed patches)",
                code="E_USAGE",
                field="patches",
            )
        return PrecomputedPolicy.from_file(patches)
    if name == "heuristic":
        return HeuristicPolicy()
    if name == "command":
        if not command:
            raise RepairError(
                "--policy command needs --command 'PROGRAM ARGS'", code="E_USAGE", field="command"
            )
        return CommandPolicy.from_string(command, timeout)
    raise RepairError(
        f"unknown policy {name!r} (known: {', '.join(POLICIES)})", code="E_USAGE", field="policy"
    )
