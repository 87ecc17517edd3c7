"""Rules derived from a registry's declared `output` JSON Schema (`source: ["schema"]`).

The declaration is taken at its word where it can be checked against our rule codes:
`required` -> REQUIRED, `type` -> TYPE (integer -> int, number -> number, boolean -> bool, a list of
types -> nothing), `minimum: 0` -> NONNEG, `exclusiveMinimum: 0` or `minimum > 0` -> POSITIVE, a
string `enum` -> DOMAIN, `format: date-time` / `date` -> TYPE string. `properties` descend into keys,
`items` into `*`, and the `additionalProperties` schema of an object without `properties` (a map) into
`~*`; such a map is also a map parent of the tool's contracts (`output_contracts.traces.tool_registry.declared_maps`). Schema rules need no support. A declared rule that the clean data of a checker
contradicts is left out of that checker: every emitted rule must hold on the data it ships with, and a
declaration the tool itself does not honour is a finding about the declaration, not a contract.
Support recorded for a schema rule is what the checker's data shows for it (0 when unobserved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from output_contracts.codes.domain.mine import merge_string_values, string_values
from output_contracts.codes.mining_context import MiningContext
from output_contracts.codes.mining_frames import (
    CLS_NUM,
    CLS_OBJ,
    CLS_STR,
    FULL,
    Leaves,
    cand_frame,
    checker_frame,
    parent_expr,
)
from output_contracts.jsonutil import canonical_str

_TYPES = {
    "integer": "int",
    "number": "number",
    "string": "string",
    "boolean": "bool",
    "array": "array",
    "object": "object",
    "null": "null",
}


def declared(schema: Any, prefix: str = "") -> list[tuple[str, str, dict[str, Any]]]:
    """(code, pattern, params) for every property of `schema` our codes can express, in schema order."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    if not isinstance(schema, Mapping):
        return out
    t = schema.get("type")
    if isinstance(t, str) and t in _TYPES:
        out.append(("TYPE", prefix, {"kind": _TYPES[t]}))
    elif t is None and schema.get("format") in ("date-time", "date"):
        out.append(("TYPE", prefix, {"kind": "string"}))
    mn, xmn = schema.get("minimum"), schema.get("exclusiveMinimum")
    num = (int, float)
    if (isinstance(xmn, num) and not isinstance(xmn, bool) and xmn >= 0) or (
        isinstance(mn, num) and not isinstance(mn, bool) and mn > 0
    ):
        out.append(("POSITIVE", prefix, {}))
    elif isinstance(mn, num) and not isinstance(mn, bool) and mn == 0:
        out.append(("NONNEG", prefix, {}))
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        out.append(("DOMAIN", prefix, {"values": sorted(set(enum))}))
    props = schema.get("properties")
    if isinstance(props, Mapping):
        req = schema.get("required")
        for key in req if isinstance(req, list) else []:
            if isinstance(key, str):
                out.append(("REQUIRED", prefix + "/" + _esc(key), {}))
        for key, sub in props.items():
            out.extend(declared(sub, prefix + "/" + _esc(str(key))))
    items = schema.get("items")
    if isinstance(items, Mapping):
        out.extend(declared(items, prefix + "/*"))
    entries = schema.get("additionalProperties")
    if isinstance(entries, Mapping) and not isinstance(props, Mapping):
        out.extend(declared(entries, prefix + "/~*"))  # a map: its keys are data (traces.tool_registry)
    return out


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class SchemaRules:
    """Declared rules of `tools` per checker, with observed support, minus those the data contradicts.

    A rule class like the mined ones (plan, scan, finish): the declared enums are counted part by part."""

    codes = ("REQUIRED", "TYPE", "POSITIVE", "NONNEG", "DOMAIN")

    def __init__(self, tools: list[str]) -> None:
        self.tools = tools

    def plan(self, ctx: MiningContext) -> tuple[pl.DataFrame, list[int]] | None:
        d = _declared_frame(ctx, self.tools)
        if d is None:
            return None
        enum_paths = d.filter(pl.col("code") == "DOMAIN").select("tool", "pattern").unique()
        return d, ctx.data.pids(enum_paths) if enum_paths.height else []

    def scan(self, ctx: MiningContext, part: Leaves, plan: Any) -> pl.DataFrame | None:
        if plan is None or not plan[1]:
            return None
        return string_values(part, plan[1])

    def finish(self, ctx: MiningContext, plan: Any, rows: Sequence[pl.DataFrame]) -> pl.DataFrame:
        if plan is None:
            return cand_frame()
        return _finish(ctx, plan[0], rows)


def _declared_frame(ctx: MiningContext, tools: list[str]) -> pl.DataFrame | None:
    if ctx.registry is None:
        return None
    decl = []
    for name in tools:
        spec = ctx.registry.get(name)
        if spec is None or not spec.output:
            continue
        for code, pattern, params in declared(spec.output):
            decl.append(
                (name, code, pattern, canonical_str(params), params.get("kind"), params.get("values"))
            )
    if not decl:
        return None
    return pl.DataFrame(
        decl,
        schema={
            "tool": pl.String,
            "code": pl.String,
            "pattern": pl.String,
            "params": pl.String,
            "kind": pl.String,
            "values": pl.List(pl.String),
        },
        orient="row",
    ).unique(["tool", "code", "pattern", "params"], maintain_order=True)


def _finish(ctx: MiningContext, d: pl.DataFrame, counted: Sequence[pl.DataFrame]) -> pl.DataFrame:
    d = d.join(checker_frame(ctx.data.k), how="cross")
    s = ctx.stats
    keys = ["tool", "pattern", "checker"]
    # Every class present at the pattern, with counts: the basis of each code's "holds" test.
    at = s.group_by(keys).agg(
        pl.col("n").sum().alias("n_all"),
        pl.col("calls").max().alias("calls_any"),
        pl.col("tasks").max().alias("tasks_any"),
        pl.col("ex").first().alias("ex_any"),
        pl.col("n_int").filter(pl.col("cls") == CLS_NUM).sum().alias("n_kind_int"),
        *[
            pl.col("n").filter(pl.col("cls") == c).sum().alias(f"n_kind_{name}")
            for name, c in _CLS_OF.items()
        ],
        pl.col("min").min().alias("min"),
    )
    obj = s.filter(pl.col("cls") == CLS_OBJ).select(
        "tool",
        pl.col("pattern").alias("parent"),
        "checker",
        pl.col("n").alias("n_obj"),
        pl.col("calls").alias("calls_obj"),
        pl.col("tasks").alias("tasks_obj"),
        pl.col("ex").alias("ex_obj"),
    )
    strs = s.filter(pl.col("cls") == CLS_STR).select(*keys, pl.col("n").alias("n_str"))
    x = (
        d.join(at, on=keys, how="left")
        .with_columns(parent_expr().alias("parent"))
        .join(obj, on=["tool", "parent", "checker"], how="left")
        .join(strs, on=keys, how="left")
    )
    enum_paths = x.filter(pl.col("code") == "DOMAIN").select("tool", "pattern").unique()
    bad_enum = pl.DataFrame(
        schema={"tool": pl.String, "pattern": pl.String, "params": pl.String, "checker": pl.Int32}
    )
    if enum_paths.height and counted:
        vc = merge_string_values(ctx, counted)
        dom = x.filter(pl.col("code") == "DOMAIN").select("tool", "pattern", "params", "values", "checker")
        bad_enum = (
            dom.join(vc, on=["tool", "pattern", "checker"], how="inner")
            .filter(~pl.col("str").is_in(pl.col("values")))
            .select("tool", "pattern", "params", "checker")
            .unique()
        )
    kind_n = pl.lit(0, pl.UInt32)
    for name in ("int", *_CLS_OF):
        kind_n = pl.when(pl.col("kind") == name).then(pl.col(f"n_kind_{name}")).otherwise(kind_n)
    kind_ok = pl.col("n_all").is_null() | (pl.col("n_all") == kind_n)
    holds = (
        pl.when(pl.col("code") == "REQUIRED")
        .then(pl.col("n_obj").is_null() | (pl.col("n_all").fill_null(0) == pl.col("n_obj")))
        .when(pl.col("code") == "TYPE")
        .then(kind_ok)
        .when(pl.col("code") == "POSITIVE")
        .then(pl.col("min").is_null() | (pl.col("min") > 0))
        .when(pl.col("code") == "NONNEG")
        .then(pl.col("min").is_null() | (pl.col("min") >= 0))
        .otherwise(True)
    )
    x = x.filter(holds).join(bad_enum, on=["tool", "pattern", "params", "checker"], how="anti")
    is_req = pl.col("code") == "REQUIRED"
    rows = x.with_columns(
        pl.concat_list(pl.col("pattern")).alias("paths"),
        pl.when(is_req).then(pl.col("calls_obj")).otherwise(pl.col("calls_any")).fill_null(0).alias("calls"),
        pl.when(is_req).then(pl.col("tasks_obj")).otherwise(pl.col("tasks_any")).fill_null(0).alias("tasks"),
        pl.when(is_req)
        .then(pl.col("calls_obj"))
        .when(pl.col("code").is_in(["POSITIVE", "NONNEG"]))
        .then(pl.col("n_kind_number"))
        .when(pl.col("code") == "DOMAIN")
        .then(pl.col("n_str"))
        .otherwise(pl.col("calls_any"))
        .fill_null(0)
        .alias("n"),
        pl.when(is_req).then(pl.col("ex_obj")).otherwise(pl.col("ex_any")).fill_null([]).alias("ex"),
    )
    assert FULL == -1
    return cand_frame(rows)


_CLS_OF = {"null": 0, "bool": 1, "number": CLS_NUM, "string": CLS_STR, "array": 5, "object": CLS_OBJ}
