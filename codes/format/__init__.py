"""The FORMAT property code: its spec (the class docstring is its reference text in docs/codes.md)."""

from __future__ import annotations

from dataclasses import dataclass

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.format.shapes import merge_parts, shape, shown
from output_contracts.codes.spec import Code, param
from output_contracts.codes.table import register
from output_contracts.codes.violation import At, Violation, returned

#: The levels a rule's shapes are read at (`output_contracts.codes.format.shapes`).
LEVELS = ("exact", "loose", "charset")


@dataclass(frozen=True)
class FormatParams:
    """`{"level": ..., "shapes": [...]}`: the allowed shapes at one level, sorted."""

    level: str = param({"enum": list(LEVELS)})
    shapes: tuple[str, ...] = param(
        {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}}
    )


def listed(p: FormatParams) -> str:
    """A rule's shapes as people read them (charset parts merged per length: `[9A]{6}`)."""
    shapes = merge_parts(p.shapes) if p.level == "charset" else p.shapes
    return ", ".join(shown(s, p.level) for s in shapes)


@register
class Format(Code):
    """A string whose shape (character classes, length, case, padding) was never seen in clean results.

    *Rule*: `paths = [P]`, `params.level` ∈ `exact | loose | charset`, `params.shapes` = the sorted allowed shapes.
    A string's shape maps each ASCII capital to `A`, small letter to `a`, digit to `9`, any non-ASCII
    character to `¤`, and keeps every other character (punctuation, spaces); `exact` keeps the length
    (`#W0174651` → `#A9999999`), `loose` collapses each run of one class to one character (`Yusuf Rossi` →
    `Aa Aa`), `charset` lists *parts*, a length with one class each (`4WQ150` → `6:9` and `6:A`), and allows a
    string when every part of it is allowed (any mix of the classes at that length: random identifiers). A
    string of more than 64 characters has the shape `…`. Every **string** node at `P` has an
    allowed shape (other kinds are TYPE's business). `contracts rules` shows exact shapes with runs counted
    (`#A9{7}`), loose ones with `+` (`A+a+ A+a+`) and charset parts merged per length (`[9A]{6}`). *Witness*: `expected` = the shapes, `observed` = the
    string; the detail names its shape.
    """

    name = "FORMAT"
    short = "FMT"
    summary = (
        "a string whose shape (character classes, length, case, padding) was never seen in clean results"
    )
    order = 90
    params_type = FormatParams
    min_support = 50
    min_tasks = 2
    #: an allowed value has an allowed shape: where DOMAIN holds, FORMAT could never fire first
    subsumed_by = ("DOMAIN",)

    def params(self, rule: Rule) -> FormatParams:
        level = rule.params.get("level")
        shapes = rule.params.get("shapes")
        if level not in LEVELS:
            raise self.bad(rule, f"FORMAT needs params.level, one of {', '.join(LEVELS)}")
        if not (isinstance(shapes, list) and shapes and all(isinstance(v, str) for v in shapes)):
            raise self.bad(rule, "FORMAT needs params.shapes, a non-empty list of strings")
        return FormatParams(str(level), tuple(shapes))

    def describe(self, rule: Rule) -> str:
        p = self.params(rule)
        return f"{rule.paths[0] or '(result)'} shaped {{{listed(p)}}} ({p.level})"

    def witness(self, rule: Rule, at: At) -> Violation:
        p = self.params(rule)
        seen = shape(at.observed, p.level) if isinstance(at.observed, str) else "?"
        return Violation(
            self.name,
            rule.id,
            at.path,
            list(p.shapes),
            at.observed,
            True,
            f"{rule.tool} returned {returned(at.path, at.shown)}, shaped {shown(seen, p.level)}; every one "
            f"of {rule.support.calls} clean results was shaped {listed(p)}",
        )
