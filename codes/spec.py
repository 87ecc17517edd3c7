"""The spec of a property code: what a code is, whatever evaluates or mines it.

A property code is one folder `codes/<name>/` (docs/design.md, "Adding a property code"):

- `__init__.py` declares the spec, a `Code` subclass registered with `output_contracts.codes.table.register`:
  the name, the position in every list of codes, the params dataclass (each field's JSON Schema in its
  metadata, `param`), the shape of the paths (`Paths`), the default admission thresholds, the one-line
  description and the witness a violation reports. The spec class's docstring is the code's section of
  docs/codes.md.
- `check.py` evaluates it: a subclass of the spec and of `output_contracts.codes.evaluation.Check`, per call,
  vectorised over a corpus, and compiled (`CHECKS`).
- `mine.py` mines it: statistics, admission, the constants of its chance argument (`MINERS`); its module
  docstring is the code's section of docs/rules.md.

Everything that lists codes (the contract-set and receipt schemas' enums and per-code branches,
docs/codes.md, the default thresholds, the tables of `contracts mine` and `contracts codes`) is derived
from the registered specs (`output_contracts.codes.generate` writes the files, a test fails when one is
stale). The spec imports nothing heavy: listing codes loads no polars.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.violation import At, Violation
from output_contracts.errors import CheckError


@dataclass(frozen=True)
class NoParams:
    """The params of a code whose rules carry none (`{}`: REQUIRED, POSITIVE, NONNEG, ECHO)."""


def param(schema: Mapping[str, Any], *, default: Any = dataclasses.MISSING) -> Any:
    """A field of a params dataclass with the JSON Schema of its value: the contract-set schema's branch
    for the code lists it under `params.properties`, and under `required` unless it has a default (a key
    a rule may leave out)."""
    meta = {"schema": dict(schema), "optional": default is not dataclasses.MISSING}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Paths:
    """How many paths a rule of the code has (`low` to `high`), and what the paths array must hold besides
    a pointer pattern each: JSON Schema keywords (`prefixItems`, `items`) of the contract-set schema."""

    low: int = 1
    high: int = 1
    schema: Mapping[str, Any] = field(default_factory=dict)


class Code:
    """The spec of one property code. Subclasses set the class attributes and override what differs."""

    #: the stable code (`REQUIRED`): never changes meaning; a new kind of property gets a new code
    name: ClassVar[str]
    #: the column heading of `contracts mine`'s table (`REQ`)
    short: ClassVar[str]
    #: the line `contracts codes` prints
    summary: ClassVar[str]
    #: the position of the code in every list of codes (documentation order, table columns)
    order: ClassVar[int]
    #: the paths a rule has
    shape: ClassVar[Paths] = Paths()
    #: the params of a rule, as a frozen dataclass whose fields are `param`s
    params_type: ClassVar[type] = NoParams
    #: default admission thresholds: qualifying examples (`--min-support`) and distinct tasks
    min_support: ClassVar[int]
    min_tasks: ClassVar[int] = 1
    #: judged against the earlier calls of the episode (the engine keeps an episode memory), not per call
    per_episode: ClassVar[bool] = False
    #: codes whose rule at the same place (tool, paths, checker) implies this one's: the implied rule could
    #: never fire first, so the miner does not emit it
    subsumed_by: ClassVar[tuple[str, ...]] = ()

    # --- the rule itself

    def bad(self, rule: Rule, msg: str) -> CheckError:
        """The error for a rule this checker cannot evaluate faithfully."""
        return CheckError(f"rule {rule.id} ({rule.tool} {rule.code}): {msg}", code="E_RULE", field=rule.id)

    def params(self, rule: Rule) -> Any:
        """The rule's params as this code's frozen dataclass, validated (a CheckError when they are not
        what the code can evaluate). Codes without params return `NoParams()`."""
        return NoParams()

    def validate(self, rule: Rule) -> None:
        """Refuse a rule this code cannot evaluate (a contract set from a newer miner): CheckError.
        A code with a fixed number of paths is checked here; one with a range checks its own."""
        n = self.shape.low
        if n == self.shape.high and len(rule.paths) != n:
            raise self.bad(rule, "needs exactly one path" if n == 1 else "needs exactly two paths")
        self.params(rule)

    def describe(self, rule: Rule) -> str:
        """A one-line statement of the rule, as people read it (`/total = /subtotal + /tax (cent)`)."""
        raise NotImplementedError

    def describe_params(self, rule: Rule) -> str:
        """What `describe` says after the rule's first path (`= /subtotal + /tax (cent)`)."""
        text = self.describe(rule)
        first = (rule.paths[0] or "(result)") if rule.paths else ""
        return text[len(first) :].strip() if first and text.startswith(first) else text

    def witness(self, rule: Rule, at: At) -> Violation:
        """The violation of `rule` at `at.path`, with its expected and observed witnesses and detail."""
        raise NotImplementedError

    def found(self, observed: str) -> str:
        """How the one-sentence (v1) rendering says what was found at the place (`observed 3`)."""
        return f"observed {observed}"

    # --- what the generated lists read

    @classmethod
    def docs(cls) -> str:
        """The code's reference text, markdown (the spec class's docstring): its section of docs/codes.md."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def schema_branch(cls) -> dict[str, Any]:
        """The contract-set schema's `if`/`then` branch for this code: the paths array's length and
        shape, and the params object's keys (from the params dataclass's fields)."""
        paths: dict[str, Any] = {}
        if cls.shape.low > 1:
            paths["minItems"] = cls.shape.low
        paths["maxItems"] = cls.shape.high
        paths.update(cls.shape.schema)
        fields = dataclasses.fields(cls.params_type)
        params: dict[str, Any]
        if not fields:
            params = {"maxProperties": 0}
        else:
            params = {
                "required": [f.name for f in fields if not f.metadata["optional"]],
                "additionalProperties": False,
                "properties": {f.name: f.metadata["schema"] for f in fields},
            }
        return {
            "if": {"properties": {"code": {"const": cls.name}}},
            "then": {"properties": {"paths": paths, "params": params}},
        }


def modules_of(codes: Sequence[type[Code]]) -> list[str]:
    """The code folders (packages) of some specs, each once, in the specs' order."""
    out: list[str] = []
    for c in codes:
        if c.__module__ not in out:
            out.append(c.__module__)
    return out
