"""The TYPE property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from dataclasses import dataclass

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import kind_of
from output_contracts.codes.spec import Code, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, returned

#: The kinds a rule may name (`number` = int or float).
KINDS = ("null", "bool", "int", "string", "array", "object", "number")


@dataclass(frozen=True)
class TypeParams:
    """`{"kind": K}`: the one JSON kind every node has (`number` = int or float)."""

    kind: str = param({"enum": list(KINDS)})


@register
class Type(Code):
    """A value has another JSON kind than in every clean result.

    *Rule*: `paths = [P]`, `params.kind` ∈ `null bool int string array object number`. Every node at `P`
    has that kind (`number` = int or float; the miner writes `number` whenever a float was seen, so `1.0`
    vs `1` never fires). A result that is not an object fires TYPE at `""` when a `TYPE ""  object` rule
    exists. *Witness*: `expected` = the kind name, `observed` = the offending value (`null` with
    `present: true` for a present null).
    """

    name = "TYPE"
    short = "TYPE"
    summary = "a value has another JSON kind than in every clean result"
    order = 20
    params_type = TypeParams
    min_support = 20

    def params(self, rule: Rule) -> TypeParams:
        kind = rule.params.get("kind")
        if kind not in KINDS:
            raise self.bad(rule, f"TYPE kind {kind!r} is not one of {' '.join(KINDS)}")
        return TypeParams(str(kind))

    def describe(self, rule: Rule) -> str:
        return f"{rule.paths[0] or '(result)'} is {rule.params.get('kind')}"

    def describe_params(self, rule: Rule) -> str:
        return str(rule.params.get("kind", ""))

    def witness(self, rule: Rule, at: At) -> Violation:
        want = self.params(rule).kind
        art = "an" if want[0] in "aeiou" else "a"
        return Violation(
            self.name,
            rule.id,
            at.path,
            want,
            at.observed,
            True,
            f"{rule.tool} returned {returned(at.path, at.shown)} ({kind_of(at.observed)}); "
            f"every one of {rule.support.calls} clean results had {art} {want} there",
        )
