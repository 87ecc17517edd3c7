"""The UNIQUE property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.nodes import Nodes, Operand, index_nodes, resolve
from output_contracts.codes.spec import Code, Paths
from output_contracts.codes.table import register
from output_contracts.codes.unique.items import (
    MAX_FIELDS,
    identities,
    instance_of,
    item_split,
    judged_key,
    list_of,
)
from output_contracts.codes.violation import At, Violation, name
from output_contracts.traces.pointers import unescape_token


@register
class Unique(Code):
    """A list repeats an item (the same id twice) where clean lists never did.

    *Rule*: `paths = [P]` with P = `A/*` (a list of scalars) or `A/*/f` (a field of the list's object
    items), `params` = `{}`. Within one list (the concrete path before the last `*`'s index: each inner list
    of nested lists is judged apart), no two items hold the same string or number at P (numbers by value;
    null and booleans are not judged). *Witness*: path = the second (and each later) occurrence, in index
    order; `expected` = `"unique"`, `observed` = the repeated value; the detail names the earlier item.

    *Composite*: `paths = [A/*/f1, A/*/f2, …]` (2–16 fields of the items of one list). An item's identity is
    the set of (field, value) pairs it holds among those fields (judged values only; an item holding none is
    not judged); no two items of one list have the same identity. *Witness*: path = the later item
    (`/flights/3`), `observed` = the item; the detail names the fields and the earlier item.
    """

    name = "UNIQUE"
    short = "UNIQ"
    summary = "a list repeats an item (the same id twice) where clean lists never did"
    order = 120
    #: one path, or the fields of a composite identity
    shape = Paths(1, MAX_FIELDS)
    min_support = 30
    min_tasks = 300

    def validate(self, rule: Rule) -> None:
        if not rule.paths:
            raise self.bad(rule, "UNIQUE needs a path")
        if len(rule.paths) == 1:
            if item_split(Operand.of(rule.paths[0]).pattern) is None:
                raise self.bad(rule, "UNIQUE needs a path ending in `/*` or `/*/<field>`")
            return
        lists = {list_of(p) for p in rule.paths}
        if (
            len(rule.paths) > MAX_FIELDS
            or len(set(rule.paths)) != len(rule.paths)
            or len(lists) != 1
            or any(item_split(Operand.of(p).pattern) != 1 for p in rule.paths)
        ):
            raise self.bad(
                rule, f"a composite UNIQUE needs 2 to {MAX_FIELDS} distinct fields `A/*/f` of one list A/*"
            )

    def describe(self, rule: Rule) -> str:
        if len(rule.paths) > 1:
            fields = ", ".join(p.rpartition("/")[2] for p in rule.paths)
            return f"{list_of(rule.paths[0])} unique by ({fields}) within its list"
        return f"{rule.paths[0]} unique within its list"

    def witness(self, rule: Rule, at: At) -> Violation:
        if len(at.ops) > 1:
            return self._composite_witness(rule, at)
        after = item_split(at.ops[0].pattern)
        assert after is not None
        inst, idx = instance_of(at.raw, after)
        first = None
        k = judged_key(at.observed)
        doc = at.arguments if at.ops[0].side == "arg" else at.result
        ok, items = resolve(doc, inst)
        field = unescape_token(at.raw.split("/")[-1])
        if ok and isinstance(items, list):
            for i, item in enumerate(items[:idx]):
                v = item if after == 0 else (item.get(field) if isinstance(item, dict) else None)
                if k is not None and judged_key(v) == k:
                    first = i
                    break
        tail = "" if after == 0 else "/" + at.raw.split("/")[-1]
        where = f"{name(inst) if inst else 'the result'}"
        earlier = f"item {first}" if first is not None else "an earlier item"
        return Violation(
            self.name,
            rule.id,
            at.path,
            "unique",
            at.observed,
            True,
            f"{rule.tool} returned item {idx} of {where} with {name(tail) if tail else 'the value'} "
            f"{at.shown}, as {earlier} did; in every one of {rule.support.calls} clean results the "
            f"items of that list were distinct",
        )

    def _composite_witness(self, rule: Rule, at: At) -> Violation:
        nodes: Nodes = {}
        side = at.ops[0].side
        index_nodes(side, at.arguments if side == "arg" else at.result, nodes)
        ids = identities(nodes, at.ops)
        inst, _, tail = at.raw.rpartition("/")
        idx = int(tail)
        mine = ids.get((inst, idx))
        first = min(
            (i for (ins, i), ident in ids.items() if ins == inst and ident == mine and i < idx), default=None
        )
        fields = ", ".join(p.rpartition("/")[2] for p in rule.paths)
        where = name(inst) if inst else "the result"
        earlier = f"item {first}" if first is not None else "an earlier item"
        return Violation(
            self.name,
            rule.id,
            at.path,
            "unique",
            at.observed,
            True,
            f"{rule.tool} returned item {idx} of {where} with the same {fields} as {earlier}; in every one of "
            f"{rule.support.calls} clean results the items of that list were distinct",
        )
