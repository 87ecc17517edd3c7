"""Rules and contract sets (DESIGN §3) as frozen value types, with their JSON form.

A contract set holds every rule mined for every tool; `folds` says which rules make up each fold checker
(with that fold's own support), and `Rule.in_full` marks the rules of the checker mined on all clean
data. `rules_for(fold)` is the one way the checker obtains the rules it may apply.

Rule paths: a result pointer pattern is written as-is (`/items/*/price`, `""` for the whole result); an
argument pattern is prefixed with `$args` (`$args/sku`). Rule ids are stable hashes of
(tool, code, paths, params).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from output_contracts.codes.folds import fold_of
from output_contracts.errors import CheckError
from output_contracts.jsonutil import stable_id, write_json

CONTRACT_SET_VERSION = 1
ARGS_PREFIX = "$args"


def rule_id(tool: str, code: str, paths: tuple[str, ...] | list[str], params: Mapping[str, Any]) -> str:
    """Stable id of a rule: `r-` + 12 hex digits of sha256 over canonical (tool, code, paths, params)."""
    return stable_id("r", tool, code, list(paths), dict(params))


def is_arg_path(p: str) -> bool:
    """True for a rule path into the call's arguments (`$args/...`)."""
    return p == ARGS_PREFIX or p.startswith(ARGS_PREFIX + "/")


def split_side(p: str) -> tuple[str, str]:
    """`("arg", "/sku")` for `$args/sku`, `("result", "/sku")` for `/sku`."""
    if is_arg_path(p):
        return "arg", p[len(ARGS_PREFIX) :]
    return "result", p


@dataclass(frozen=True)
class Support:
    """How much clean evidence a rule stands on: qualifying calls and distinct tasks."""

    calls: int
    tasks: int


@dataclass(frozen=True)
class Rule:
    """One mined or declared invariant of one tool."""

    id: str
    tool: str
    code: str
    paths: tuple[str, ...]
    params: Mapping[str, Any]
    support: Support
    source: tuple[str, ...] = ("mined",)
    examples: tuple[str, ...] = ()
    max_violation_rate: float | None = None
    in_full: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "code": self.code,
            "paths": list(self.paths),
            "params": dict(self.params),
            "support": {"calls": self.support.calls, "tasks": self.support.tasks},
            "source": list(self.source),
            "examples": list(self.examples),
            "max_violation_rate": self.max_violation_rate,
            "in_full": self.in_full,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Rule:
        return cls(
            id=d["id"],
            tool=d["tool"],
            code=d["code"],
            paths=tuple(d["paths"]),
            params=dict(d["params"]),
            support=Support(**d["support"]),
            source=tuple(d.get("source", ["mined"])),
            examples=tuple(d.get("examples", [])),
            max_violation_rate=d.get("max_violation_rate"),
            in_full=d.get("in_full", True),
        )


@dataclass(frozen=True)
class ToolContracts:
    """Everything known about one tool: its rules, its map parents and, from the registry, substitutes
    and immutables.

    `maps`: object patterns (rule-path notation) whose keys are data, not field names (mined, see
    `output_contracts.mining.maps`, or declared with `additionalProperties` in the tool's output schema). The
    checker reads a key below one as `~*`, as the miner did, so `/variants/~*/price` applies to every
    variant, including ones never seen."""

    rules: tuple[Rule, ...] = ()
    substitutes: tuple[str, ...] = ()
    immutable: tuple[str, ...] = ()
    maps: tuple[str, ...] = ()
    #: substitutes proposed from corpus evidence (`contracts registry infer --substitutes`), offered as
    #: recovery tools only when `substitutes` is empty, and flagged as inferred in receipts
    substitutes_inferred: tuple[str, ...] = ()

    def map_parents(self, side: str) -> frozenset[str]:
        """Map parents of one side (`result` or `arg`) as plain patterns (no `$args` prefix)."""
        return frozenset(pat for s, pat in (split_side(m) for m in self.maps) if s == side)


@dataclass(frozen=True)
class FoldChecker:
    """Fold f's checker: the ids of rules mined without fold f's tasks, with their support there."""

    fold: int
    rules: tuple[str, ...]
    support: Mapping[str, Support] = field(default_factory=dict)


@dataclass(frozen=True)
class ContractSet:
    """A whole contract set (`contracts.json`)."""

    params: Mapping[str, Any]
    corpus: Mapping[str, Any]
    tools: Mapping[str, ToolContracts]
    folds: tuple[FoldChecker, ...] = ()
    version: int = CONTRACT_SET_VERSION

    @property
    def k(self) -> int:
        return int(self.params.get("k", 1))

    @property
    def seed(self) -> int:
        return int(self.params.get("seed", 13))

    def fold_of(self, task_id: str) -> int:
        """The fold a task belongs to under this set's k and seed."""
        return fold_of(task_id, self.seed, self.k)

    def all_rules(self) -> list[Rule]:
        return [r for name in sorted(self.tools) for r in self.tools[name].rules]

    def rules_for(self, fold: int | None = None) -> list[Rule]:
        """Rules of the full checker (`fold=None`) or of fold checker `fold`, with that fold's support."""
        if fold is None:
            return [r for r in self.all_rules() if r.in_full]
        for fc in self.folds:
            if fc.fold == fold:
                by_id = {r.id: r for r in self.all_rules()}
                return [replace(by_id[i], support=fc.support.get(i, by_id[i].support)) for i in fc.rules]
        raise CheckError(f"contract set has no fold {fold} (k = {self.k})", code="E_FOLD")

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "params": dict(self.params),
            "corpus": dict(self.corpus),
            "tools": {
                name: {
                    "substitutes": list(tc.substitutes),
                    "immutable": list(tc.immutable),
                    "maps": list(tc.maps),
                    "rules": [r.to_json() for r in tc.rules],
                    # only when there are any, so sets mined without them keep their bytes
                    **(
                        {"substitutes_inferred": list(tc.substitutes_inferred)}
                        if tc.substitutes_inferred
                        else {}
                    ),
                }
                for name, tc in sorted(self.tools.items())
            },
            "folds": [
                {
                    "fold": fc.fold,
                    "rules": list(fc.rules),
                    "support": {
                        i: {"calls": s.calls, "tasks": s.tasks} for i, s in sorted(fc.support.items())
                    },
                }
                for fc in self.folds
            ],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ContractSet:
        tools = {
            name: ToolContracts(
                rules=tuple(Rule.from_json(r) for r in t.get("rules", [])),
                substitutes=tuple(t.get("substitutes", [])),
                immutable=tuple(t.get("immutable", [])),
                maps=tuple(t.get("maps", [])),
                substitutes_inferred=tuple(t.get("substitutes_inferred", [])),
            )
            for name, t in d["tools"].items()
        }
        folds = tuple(
            FoldChecker(
                fold=f["fold"],
                rules=tuple(f["rules"]),
                support={i: Support(**s) for i, s in f.get("support", {}).items()},
            )
            for f in d.get("folds", [])
        )
        return cls(
            params=d.get("params", {}),
            corpus=d.get("corpus", {}),
            tools=tools,
            folds=folds,
            version=d["version"],
        )

    def save(self, path: str | Path) -> None:
        """Write atomically as pretty, sorted, deterministic JSON."""
        write_json(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> ContractSet:
        """Read and validate a contract set file; errors name the file and field."""
        from output_contracts.schemas import validate

        p = Path(path)
        try:
            data = orjson.loads(p.read_bytes())
        except FileNotFoundError as e:
            raise CheckError("contract set file not found", source=str(p), code="E_INPUT") from e
        except orjson.JSONDecodeError as e:
            raise CheckError(f"contract set is not valid JSON: {e}", source=str(p), code="E_INPUT") from e
        if not isinstance(data, dict) or data.get("version") != CONTRACT_SET_VERSION:
            got = data.get("version") if isinstance(data, dict) else type(data).__name__
            raise CheckError(
                f"unsupported contract set version {got!r} (expected {CONTRACT_SET_VERSION})",
                source=str(p),
                field="version",
                code="E_VERSION",
            )
        # the schema's fast exact test first (`output_contracts.schema_fast`); jsonschema only for a set it
        # refuses, to find and word the error
        validate(data, "contract-set", source=str(p))
        return cls.from_json(data)
