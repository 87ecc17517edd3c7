"""`contracts registry infer`: propose declared outputs from mined contracts (rules with source "mined";
rules that only restate a registry's schema are ignored), for a person to review.

`REQUIRED` -> `required`, `TYPE` -> `type`, `DOMAIN` -> `enum` (only where the field's type is string,
since an enum would otherwise forbid the field's other kinds), `NONNEG` -> `minimum: 0`, `POSITIVE` ->
`exclusiveMinimum: 0`, nested as deep as the rule paths go (`/items/*/price` ->
`properties.items.items.properties.price`; a map's entries, `/variants/~*/price`, ->
`properties.variants.additionalProperties.properties.price`). Rules on `$args/...` paths propose
`parameters` the same way. Every field observed in the corpus's clean results is declared (in order of
first appearance), with whatever the rules say about it, so that `registry check` of the proposal
against the same corpus is clean. `ECHO`, `DATE_ORDER` and `RELATION` have no JSON Schema form; they stay
in `contracts.json`. With a base registry, the base wins: its descriptions, parameters, substitutes,
immutables and every keyword it already declares are kept, and inferred fields and keywords are only
added where missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from output_contracts.codes.contract_set import ContractSet, Rule, split_side
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.pointers import MAP_TOKEN, generalize, unescape_token
from output_contracts.traces.tool_registry import (
    KIND_TO_TYPE,
    MAX_TOOL_NAME,
    Registry,
    ToolSpec,
    registry_from_json,
)

# ---------------------------------------------------------------------------------------------------
# infer


@dataclass
class _Node:
    """A schema under construction."""

    props: dict[str, _Node] = field(default_factory=dict)
    items: _Node | None = None
    values: _Node | None = None  # a map's entries (`~*`: additionalProperties)
    type: str | None = None
    required: list[str] = field(default_factory=list)
    enum: list[str] | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None

    def child(self, token: str) -> _Node:
        if token == "*":
            if self.items is None:
                self.items = _Node()
            return self.items
        if token == MAP_TOKEN:
            if self.values is None:
                self.values = _Node()
            return self.values
        key = unescape_token(token)
        if key not in self.props:
            self.props[key] = _Node()
        return self.props[key]

    def at(self, pattern: str) -> _Node:
        node = self
        for tok in _tokens(pattern):
            node = node.child(tok)
        return node

    def to_schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {}
        if self.type is not None:
            s["type"] = self.type
        if self.enum is not None and self.type == "string":
            s["enum"] = list(self.enum)
        if self.exclusive_minimum is not None:
            s["exclusiveMinimum"] = self.exclusive_minimum
        elif self.minimum is not None:
            s["minimum"] = self.minimum
        if self.props:
            s["properties"] = {k: v.to_schema() for k, v in self.props.items()}
        if self.required:
            s["required"] = [k for k in self.props if k in self.required] + [
                k for k in self.required if k not in self.props
            ]
        if self.items is not None:
            s["items"] = self.items.to_schema()
        if self.values is not None and not self.props:
            s["additionalProperties"] = self.values.to_schema()
        return s


def _tokens(pattern: str) -> list[str]:
    return pattern.split("/")[1:] if pattern else []


_TYPE_OF_KIND = {**KIND_TO_TYPE, "number": "number"}


@dataclass(frozen=True)
class InferStats:
    """What was proposed for one tool (counts of declared fields and keywords)."""

    tool: str
    fields: int
    required: int
    typed: int
    enums: int
    bounds: int

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "fields": self.fields,
            "required": self.required,
            "typed": self.typed,
            "enums": self.enums,
            "bounds": self.bounds,
        }


@dataclass(frozen=True)
class InferResult:
    """The proposed registry and per-tool counts."""

    registry: Registry
    stats: tuple[InferStats, ...]
    #: (tool, reason) of tools left out because the registry format cannot declare them (a name longer
    #: than the schema's 128 characters): the loader would reject the whole file otherwise.
    skipped: tuple[tuple[str, str], ...] = ()


def observed_patterns(corpus: Corpus) -> pl.DataFrame:
    """(tool, side, pattern) of every node in clean calls, in order of first appearance.

    Clean as mining means it: status ok, no `fault` label, from an episode not labelled faulty.
    "First" is by call in `calls.parquet` (ingest order), then by node within the call: leaves are
    ordered by task, not by call, but a call's nodes stay together and in document order.
    """
    clean_traces = corpus.scan_episodes().filter(~pl.col("faulty").fill_null(False)).select("trace_id")
    ok = (
        corpus.scan_calls()
        .with_row_index("crow")
        .filter((pl.col("status") == "ok") & pl.col("fault").is_null())
        .join(clean_traces, on="trace_id", how="semi")
        .select("cid", "crow")
    )
    return (
        corpus.scan_leaves()
        .select("cid", "tool", "side", "pattern")
        .with_row_index("row")  # before the join: a join need not keep row order
        .join(ok, on="cid")
        .group_by("tool", "side", "pattern")
        .agg(
            (pl.col("crow").cast(pl.UInt64) * (1 << 32) + pl.col("row").cast(pl.UInt64)).min().alias("first")
        )
        .sort("first")
        .select(
            pl.col("tool").cast(pl.String),
            pl.col("side").cast(pl.String),
            pl.col("pattern").cast(pl.String),
        )
        .collect()
    )


def _apply(root: _Node, rule: Rule, pattern: str) -> None:
    if rule.code == "REQUIRED":
        toks = _tokens(pattern)
        if not toks or toks[-1] in ("*", MAP_TOKEN):
            return
        parent = root.at("/".join(["", *toks[:-1]]) if len(toks) > 1 else "")
        key = unescape_token(toks[-1])
        parent.child(toks[-1])
        if key not in parent.required:
            parent.required.append(key)
    elif rule.code == "TYPE":
        kind = str(rule.params.get("kind", ""))
        if kind in _TYPE_OF_KIND:
            root.at(pattern).type = _TYPE_OF_KIND[kind]
    elif rule.code == "DOMAIN":
        values = rule.params.get("values")
        if isinstance(values, list):
            root.at(pattern).enum = sorted(str(v) for v in values)
    elif rule.code == "NONNEG":
        root.at(pattern).minimum = 0
    elif rule.code == "POSITIVE":
        root.at(pattern).exclusive_minimum = 0


def infer_registry(
    contracts: ContractSet,
    corpus: Corpus | None = None,
    *,
    base: Registry | None = None,
    progress: Progress = NULL_PROGRESS,
) -> InferResult:
    """Propose a registry from the full checker's rules (and the fields observed in `corpus`)."""
    # Only mined evidence: rules derived from a registry's own `output` (source "schema" alone) would
    # just echo that registry back.
    rules = [r for r in contracts.rules_for(None) if "mined" in r.source]
    outputs: dict[str, _Node] = {}
    params: dict[str, _Node] = {}
    tool_order: list[str] = []

    def tool_nodes(tool: str) -> tuple[_Node, _Node]:
        if tool not in outputs:
            outputs[tool] = _Node()
            params[tool] = _Node()
            tool_order.append(tool)
        return outputs[tool], params[tool]

    progress.start("infer", None)
    if corpus is not None:
        for tool, side, pattern in observed_patterns(corpus).iter_rows():
            out, arg = tool_nodes(tool)
            tc = contracts.tools.get(tool)
            maps = tc.map_parents(side) if tc is not None else frozenset()
            (out if side == "result" else arg).at(generalize(pattern, maps))
    for name in sorted(contracts.tools):
        tool_nodes(name)
    for rule in sorted(rules, key=lambda r: (r.tool, r.code, list(r.paths))):
        if len(rule.paths) != 1:
            continue
        side, pattern = split_side(rule.paths[0])
        out, arg = tool_nodes(rule.tool)
        _apply(out if side == "result" else arg, rule, pattern)
    progress.finish()

    # Tools in the base first (declaration order), then new ones by name; names the registry format
    # cannot hold are left out and reported, so the file written always loads.
    names = list(base.tools) if base is not None else []
    names += sorted(t for t in tool_order if t not in names)
    skipped = tuple(
        (n, f"name longer than {MAX_TOOL_NAME} characters") for n in names if len(n) > MAX_TOOL_NAME
    )
    names = [n for n in names if len(n) <= MAX_TOOL_NAME]
    specs: dict[str, ToolSpec] = {}
    stats = []
    for name in names:
        b = base.get(name) if base is not None else None
        out_node = outputs.get(name)
        arg_node = params.get(name)
        proposed_out = out_node.to_schema() if out_node is not None else None
        proposed_par = arg_node.to_schema() if arg_node is not None else None
        if proposed_par is not None:
            proposed_par = {"type": "object", **proposed_par}
            if "additionalProperties" not in proposed_par:  # arguments that are a map stay one
                proposed_par.setdefault("properties", {})
        if b is None:
            spec = ToolSpec(name=name, parameters=proposed_par or {}, output=proposed_out)
        else:
            spec = ToolSpec(
                name=name,
                description=b.description,
                parameters=_merge(b.parameters, proposed_par) if b.parameters else (proposed_par or {}),
                output=_merge(b.output, proposed_out) if b.output is not None else proposed_out,
                substitutes=b.substitutes,
                immutable=b.immutable,
                extra=b.extra,
            )
        specs[name] = spec
        stats.append(_stats(name, out_node))
    reg = Registry(tools=specs, source=None)
    # Fail closed: what infer proposes must be what `load_registry` accepts.
    registry_from_json(reg.to_json(), source="(inferred registry)")
    return InferResult(reg, tuple(stats), skipped)


def _stats(tool: str, node: _Node | None) -> InferStats:
    counts = {"fields": 0, "required": 0, "typed": 0, "enums": 0, "bounds": 0}

    def walk(n: _Node, is_field: bool) -> None:
        counts["fields"] += is_field
        counts["required"] += len(n.required)
        counts["typed"] += n.type is not None and is_field
        counts["enums"] += n.enum is not None and n.type == "string"
        counts["bounds"] += n.minimum is not None or n.exclusive_minimum is not None
        for c in n.props.values():
            walk(c, True)
        if n.items is not None:
            walk(n.items, False)  # array elements are not fields of their own
        if n.values is not None:
            walk(n.values, False)  # nor are a map's entries

    if node is not None:
        walk(node, False)
    return InferStats(tool=tool, **counts)


def _merge(base: Any, proposed: Any) -> Any:
    """Deep merge where `base` wins: keys of `proposed` are only added where `base` lacks them."""
    if not isinstance(base, Mapping) or not isinstance(proposed, Mapping):
        return base
    out = dict(base)
    for k, v in proposed.items():
        if k not in out:
            out[k] = v
        elif k == "properties" and isinstance(out[k], Mapping) and isinstance(v, Mapping):
            props = {pk: _merge(pv, v.get(pk)) if pk in v else pv for pk, pv in out[k].items()}
            for pk, pv in v.items():
                props.setdefault(pk, pv)
            out[k] = props
        elif k in ("items", "additionalProperties"):
            out[k] = _merge(out[k], v)
        elif k == "required" and isinstance(out[k], list) and isinstance(v, list):
            out[k] = [*out[k], *[x for x in v if x not in out[k]]]
    return out
