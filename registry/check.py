"""`contracts registry check`: where the results of a corpus disagree with the declared outputs.

The results of the corpus's calls with `status == "ok"` (all of them: what a tool actually returned,
labelled faults included) are compared with the declared outputs, from polars aggregates over
`leaves.parquet` (one pass for kinds and counts, one for declared enums, one for declared bounds): a
declared field never seen, a field seen but undeclared, a kind that differs from the declared type, a
declared required field missing from some results, a string outside a declared enum, a number outside
declared bounds, and calls of tools the registry does not declare. Only the topmost of a chain is
reported (an undeclared object's children are not listed again). A float with a whole value (`3.0`)
satisfies `integer`, as JSON Schema says. Keys below a declared map (`additionalProperties` as a schema,
no `properties`) are compared as `~*`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from output_contracts.codes.engine.evaluate import generalize_patterns
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.pointers import MAP_TOKEN, escape_token, unescape_token
from output_contracts.traces.tool_registry import (
    KIND_TO_TYPE,
    Registry,
    declared_maps,
    deref,
    field_schema,
    has_item_schema,
    item_schema,
    map_value_schema,
    object_fields,
    schema_types,
    type_label,
)

# ---------------------------------------------------------------------------------------------------
# check

DISAGREEMENT_KINDS = ("unknown_tool", "undeclared", "never_seen", "type", "missing", "enum", "bound")


@dataclass(frozen=True)
class Disagreement:
    """One place where observed results and a declared output disagree (a finding, never an exception)."""

    tool: str
    kind: str
    path: str
    declared: Any
    observed: Any
    calls: int
    example: str | None
    message: str

    def sort_key(self) -> tuple[Any, ...]:
        return (self.tool, self.path, DISAGREEMENT_KINDS.index(self.kind), self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "kind": self.kind,
            "path": self.path,
            "declared": self.declared,
            "observed": self.observed,
            "calls": self.calls,
            "example": self.example,
            "message": self.message,
        }


@dataclass(frozen=True)
class RegistryCheck:
    """The outcome of `check_registry`."""

    registry: str | None
    corpus: str
    tools_checked: tuple[str, ...]
    tools_without_output: tuple[str, ...]
    tools_unseen: tuple[str, ...]
    disagreements: tuple[Disagreement, ...]

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for d in self.disagreements:
            counts[d.kind] = counts.get(d.kind, 0) + 1
        return {
            "version": 1,
            "registry": self.registry,
            "corpus": self.corpus,
            "tools_checked": list(self.tools_checked),
            "tools_without_output": list(self.tools_without_output),
            "tools_unseen": list(self.tools_unseen),
            "summary": {"disagreements": len(self.disagreements), "by_kind": dict(sorted(counts.items()))},
            "disagreements": [d.to_json() for d in self.disagreements],
        }


@dataclass(frozen=True)
class _Decl:
    """A declared node: its types (None = any), whether undeclared children are allowed, bounds, enum."""

    types: frozenset[str] | None
    open: bool
    required: tuple[str, ...]
    enum: tuple[Any, ...] | None
    bounds: tuple[tuple[str, float], ...]


_MAX_DEPTH = 32


def declared_patterns(output: Any) -> dict[str, _Decl]:
    """Every pattern a declared output schema describes (`""` = the result), as leaves.parquet spells them."""
    root = output
    found: dict[str, _Decl] = {}

    def walk(schema: Any, pattern: str, depth: int) -> None:
        if depth > _MAX_DEPTH or pattern in found:
            return
        s = deref(schema, root)
        types = schema_types(s, root)
        fields = object_fields(s, root)
        req: list[str] = []
        enum = None
        bounds: list[tuple[str, float]] = []
        if isinstance(s, Mapping):
            req = [str(x) for x in s.get("required") or ()]
            if isinstance(s.get("enum"), list):
                enum = tuple(s["enum"])
            for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
                v = s.get(key)
                if isinstance(v, int | float) and not isinstance(v, bool):
                    bounds.append((key, float(v)))
        is_open = fields is None or (
            isinstance(s, Mapping)
            and (s.get("additionalProperties") not in (None, False) or bool(s.get("patternProperties")))
        )
        found[pattern] = _Decl(types, is_open, tuple(req), enum, tuple(bounds))
        for name in fields or ():
            sub = field_schema(s, name, root)
            if sub is not None:
                walk(sub, f"{pattern}/{escape_token(name)}", depth + 1)
        if has_item_schema(s, root):
            walk(item_schema(s, None, root), f"{pattern}/*", depth + 1)
        entries = map_value_schema(s, root)
        if entries is not None:
            walk(entries, f"{pattern}/{MAP_TOKEN}", depth + 1)

    walk(output, "", 0)
    return found


def _kind_ok(kind: str, types: frozenset[str] | None, whole: bool) -> bool:
    if types is None:
        return True
    t = KIND_TO_TYPE[kind]
    if t in types:
        return True
    if kind == "int" and "number" in types:
        return True
    return kind == "float" and whole and "integer" in types


def check_registry(
    registry: Registry, corpus: Corpus, *, progress: Progress = NULL_PROGRESS
) -> RegistryCheck:
    """Compare the corpus's results (status ok) with the registry's declared outputs (see module docstring)."""
    ok = corpus.scan_calls().filter(pl.col("status") == "ok").select("cid", "call_id")
    # leaves name their call by `cid` only (format 2): the example call ids come from calls.parquet
    leaves = (
        corpus.scan_leaves()
        .select(pl.exclude("call_id"))
        .filter(pl.col("side") == "result")
        .join(ok, on="cid")
    )
    # Keys below a declared map (additionalProperties, no properties) are data: compare them as `~*`.
    maps: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for name in registry.names():
        declared = registry.get(name)
        parents = (
            declared_maps(declared.output) if declared is not None and declared.output is not None else []
        )
        if parents:
            maps[name] = (frozenset(), frozenset(parents))
    leaves = generalize_patterns(leaves, maps)
    progress.start("registry check", None)
    stats = (
        leaves.group_by("tool", "pattern", "kind")
        .agg(
            pl.len().alias("n"),
            pl.col("cid").n_unique().alias("calls"),
            pl.col("call_id").min().alias("example"),
            ((pl.col("kind") == "float") & (pl.col("num") != pl.col("num").floor()))
            .sum()
            .alias("fractional"),
        )
        .select(
            pl.col("tool").cast(pl.String),
            pl.col("pattern").cast(pl.String),
            pl.col("kind").cast(pl.String),
            "n",
            "calls",
            "example",
            "fractional",
        )
        .sort("tool", "pattern", "kind")
        .collect()
    )
    per_pattern = (
        leaves.group_by("tool", "pattern")
        .agg(pl.col("cid").n_unique().alias("calls"))
        .select(pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String), "calls")
        .collect()
    )
    pattern_calls = {(t, p): c for t, p, c in per_pattern.iter_rows()}
    progress.advance()
    # Per (tool, pattern): kinds -> (n, calls, example, fractional)
    observed: dict[str, dict[str, dict[str, tuple[int, int, str, int]]]] = {}
    for tool, pattern, kind, n, calls, example, fractional in stats.iter_rows():
        observed.setdefault(tool, {}).setdefault(pattern, {})[kind] = (n, calls, example, fractional)

    found: list[Disagreement] = []
    checked: list[str] = []
    no_output: list[str] = []
    enum_targets: list[tuple[str, str, tuple[Any, ...]]] = []
    bound_targets: list[tuple[str, str, tuple[tuple[str, float], ...]]] = []
    for tool in sorted(observed):
        pats = observed[tool]
        root_calls = pattern_calls.get((tool, ""), 0)
        spec = registry.get(tool)
        if spec is None:
            ex = min(v[2] for v in pats.get("", {}).values()) if pats.get("") else None
            found.append(
                Disagreement(
                    tool,
                    "unknown_tool",
                    "",
                    None,
                    None,
                    root_calls,
                    ex,
                    f"{tool}: {root_calls} ok call(s) of a tool the registry does not declare",
                )
            )
            continue
        if spec.output is None:
            no_output.append(tool)
            continue
        checked.append(tool)
        decl = declared_patterns(spec.output)
        found.extend(_compare(tool, decl, pats, {p: pattern_calls[(tool, p)] for p in pats}))
        for pattern, d in decl.items():
            if d.enum is not None and pattern in pats:
                enum_targets.append((tool, pattern, d.enum))
            if d.bounds and pattern in pats:
                bound_targets.append((tool, pattern, d.bounds))
    found.extend(_check_enums(leaves, enum_targets))
    found.extend(_check_bounds(leaves, bound_targets))
    progress.finish()
    unseen = tuple(t for t in registry.names() if t not in observed)
    return RegistryCheck(
        registry=registry.source,
        corpus=str(corpus.path),
        tools_checked=tuple(checked),
        tools_without_output=tuple(no_output),
        tools_unseen=unseen,
        disagreements=tuple(sorted(found, key=Disagreement.sort_key)),
    )


def _parent(pattern: str) -> str:
    return pattern.rpartition("/")[0]


def _compare(
    tool: str,
    decl: Mapping[str, _Decl],
    pats: Mapping[str, Mapping[str, tuple[int, int, str, int]]],
    calls_at: Mapping[str, int],
) -> Iterable[Disagreement]:
    for pattern in sorted(pats):
        kinds = pats[pattern]
        calls = calls_at[pattern]
        example = min(v[2] for v in kinds.values())
        d = decl.get(pattern)
        if d is None:
            parent = _parent(pattern)
            pd = decl.get(parent) if pattern else None
            if pd is None:
                continue  # the parent is undeclared too (reported there) or is the root
            if pattern.endswith(("/*", "/" + MAP_TOKEN)):
                continue  # array elements without `items`, map entries: not declared, not judged
            if pd.open or (pd.types is not None and not pd.types & {"object"}):
                continue  # open object, or a type disagreement already reported at the parent
            observed_kinds = {k: v[0] for k, v in sorted(kinds.items())}
            yield Disagreement(
                tool,
                "undeclared",
                pattern,
                None,
                observed_kinds,
                calls,
                example,
                f"{tool}: field '{pattern}' is seen in {calls} result(s) but not declared "
                f"(declared{f' in {parent!r}' if parent else ''}: "
                f"{', '.join(_declared_children(decl, parent)) or 'none'})",
            )
            continue
        counts: dict[str, int] = {}
        for k, (n, _c, _ex, fractional) in kinds.items():
            if _kind_ok(k, d.types, whole=fractional == 0):
                continue
            # A float declared integer: only the values with a fractional part disagree.
            counts[k] = fractional if k == "float" and d.types and "integer" in d.types else n
        if counts:
            counts = dict(sorted(counts.items()))
            ex = min(kinds[k][2] for k in counts)
            n_bad = sum(counts.values())
            yield Disagreement(
                tool,
                "type",
                pattern,
                type_label(d.types),
                counts,
                n_bad,
                ex,
                f"{tool}: '{pattern or '/'}' is declared {type_label(d.types)} but {n_bad} value(s) are "
                + ", ".join(f"{k} ({c})" for k, c in sorted(counts.items())),
            )
        # Required children missing from some objects.
        n_objects = kinds.get("object", (0, 0, "", 0))[0]
        for key in d.required:
            child = f"{pattern}/{escape_token(key)}"
            present = sum(v[0] for v in pats.get(child, {}).values())
            if present == 0 and child in decl:
                continue  # reported as never_seen
            if n_objects and present < n_objects:
                yield Disagreement(
                    tool,
                    "missing",
                    child,
                    "required",
                    {"present": present, "objects": n_objects},
                    n_objects - present,
                    kinds["object"][2],
                    f"{tool}: required field '{child}' is missing from {n_objects - present} of {n_objects} "
                    "result object(s)",
                )
    seen = set(pats)
    for pattern in sorted(decl):
        if pattern in seen:
            continue
        parent = _parent(pattern)
        if pattern and parent not in seen:
            continue  # report only the topmost never-seen field
        if pattern.endswith(("/*", "/" + MAP_TOKEN)):
            continue  # an array (a map) that was always empty: nothing to say about its elements
        yield Disagreement(
            tool,
            "never_seen",
            pattern,
            type_label(decl[pattern].types),
            None,
            0,
            None,
            f"{tool}: declared field '{pattern}' never appears in the results",
        )


def _declared_children(decl: Mapping[str, _Decl], parent: str) -> list[str]:
    out = []
    for p in decl:
        if p and _parent(p) == parent and not p.endswith(("/*", "/" + MAP_TOKEN)):
            out.append(unescape_token(p.rpartition("/")[2]))
    return out


def _targets_frame(targets: Sequence[tuple[str, str, Any]]) -> pl.LazyFrame:
    return pl.DataFrame(
        {"tool": [t[0] for t in targets], "pattern": [t[1] for t in targets]},
        schema={"tool": pl.String, "pattern": pl.String},
    ).lazy()


def _check_enums(
    leaves: pl.LazyFrame, targets: Sequence[tuple[str, str, tuple[Any, ...]]]
) -> Iterable[Disagreement]:
    if not targets:
        return []
    values = (
        leaves.filter(pl.col("kind") == "string")
        .with_columns(pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String))
        .join(_targets_frame(targets), on=["tool", "pattern"], how="semi")
        .group_by("tool", "pattern", "str")
        .agg(pl.len().alias("n"), pl.col("call_id").min().alias("example"))
        .sort("tool", "pattern", "str")
        .collect()
    )
    allowed = {(t, p): set(e) for t, p, e in targets}
    bad: dict[tuple[str, str], list[tuple[str, int, str]]] = {}
    for tool, pattern, s, n, ex in values.iter_rows():
        if s not in allowed[(tool, pattern)]:
            bad.setdefault((tool, pattern), []).append((s, n, ex))
    out = []
    for (tool, pattern), items in sorted(bad.items()):
        n = sum(i[1] for i in items)
        shown = ", ".join(repr(i[0]) for i in items[:5]) + (", ..." if len(items) > 5 else "")
        out.append(
            Disagreement(
                tool,
                "enum",
                pattern,
                sorted(allowed[(tool, pattern)], key=str),
                {i[0]: i[1] for i in items},
                n,
                min(i[2] for i in items),
                f"{tool}: '{pattern}' has {n} value(s) outside its declared enum: {shown}",
            )
        )
    return out


#: declared bound keyword -> operator shown in messages.
_OPS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _breaks(key: pl.Expr, bound: pl.Expr) -> pl.Expr:
    """True where `num` breaks the declared bound `key` (one expression for all four keywords)."""
    num = pl.col("num")
    return (
        pl.when(key == "minimum")
        .then(num < bound)
        .when(key == "exclusiveMinimum")
        .then(num <= bound)
        .when(key == "maximum")
        .then(num > bound)
        .otherwise(num >= bound)
    )


def _show_num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


def _check_bounds(
    leaves: pl.LazyFrame, targets: Sequence[tuple[str, str, tuple[tuple[str, float], ...]]]
) -> Iterable[Disagreement]:
    """One pass: every numeric node at a bounded pattern, joined to its bounds, breaches counted."""
    rows = [(t, p, key, v) for t, p, bounds in targets for key, v in bounds]
    if not rows:
        return []
    bounds = pl.DataFrame(
        rows,
        schema={"tool": pl.String, "pattern": pl.String, "key": pl.String, "bound": pl.Float64},
        orient="row",
    ).lazy()
    lower = pl.col("key").is_in(["minimum", "exclusiveMinimum"])
    breaches = (
        leaves.filter(pl.col("kind").is_in(["int", "float"]))
        .with_columns(pl.col("tool").cast(pl.String), pl.col("pattern").cast(pl.String))
        .join(bounds, on=["tool", "pattern"], how="inner")
        .filter(_breaks(pl.col("key"), pl.col("bound")))
        .group_by("tool", "pattern", "key", "bound")
        .agg(
            pl.len().alias("n"),
            pl.col("call_id").min().alias("example"),
            pl.when(lower.first()).then(pl.col("num").min()).otherwise(pl.col("num").max()).alias("worst"),
        )
        .sort("tool", "pattern", "key")
        .collect()
    )
    out = []
    for tool, pattern, key, bound, n, example, worst in breaches.iter_rows():
        op = _OPS[key]
        shown = _show_num(worst)
        out.append(
            Disagreement(
                tool,
                "bound",
                pattern,
                f"{op} {_show_num(bound)}",
                shown,
                int(n),
                example,
                f"{tool}: '{pattern}' is declared {op} {_show_num(bound)} but {n} value(s) are not (worst: {shown})",
            )
        )
    return out
