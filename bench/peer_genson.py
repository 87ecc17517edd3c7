#!/usr/bin/env python3
"""The real peer: genson building one JSON Schema per tool from the tool results of a flat JSONL file.

    python bench/peer_genson.py bench/data/world-1000000-13-f50.jsonl [--schemas out.json]

What a user reaches for first to learn "which fields are always there, and of what type" from logged
tool outputs is a schema-inference tool; genson is the common Python one. This script is what such a
user would write: read the JSONL (with orjson, the fastest parser available here, so the peer is not
slowed down by `json`), give every result of a clean call to that tool's `SchemaBuilder.add_object`,
and print the schemas.

Which calls: `status == "ok"` with empty `labels` — the same clean set our miner learns from (it too
leaves labelled-faulty calls out), so the rule counts compare like with like.

Rules genson finds: only two classes. A property listed in `required` of an object node is a REQUIRED
rule at that path; a node with exactly one `type` is a TYPE rule (genson's `integer` and `number` are
distinct types; a node whose type is a list or an `anyOf` is no rule). Paths are RFC 6901 patterns with
`*` for array items, as in our contract sets, so counts are comparable path by path. genson has no notion
of value ranges, domains, echoes, date order or relations: those classes are ours alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from genson import SchemaBuilder


def build_schemas(path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """(tool -> genson schema of its clean ok results, number of results given to genson)."""
    builders: dict[str, SchemaBuilder] = {}
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = orjson.loads(line)
            if rec.get("status", "ok") != "ok" or rec.get("labels") or rec.get("result") is None:
                continue
            b = builders.get(rec["tool"])
            if b is None:
                b = builders[rec["tool"]] = SchemaBuilder()
            b.add_object(rec["result"])
            n += 1
    return {tool: b.to_schema() for tool, b in sorted(builders.items())}, n


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def schema_rules(schema: dict[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(code, path) of every rule a genson schema states: REQUIRED per required property, TYPE per
    node with a single type."""
    out: list[tuple[str, str]] = []
    t = schema.get("type")
    if isinstance(t, str):
        out.append(("TYPE", path))
    for key in schema.get("required", []):
        out.append(("REQUIRED", f"{path}/{_esc(key)}"))
    for key, sub in schema.get("properties", {}).items():
        out += schema_rules(sub, f"{path}/{_esc(key)}")
    items = schema.get("items")
    if isinstance(items, dict):
        out += schema_rules(items, f"{path}/*")
    for sub in schema.get("anyOf", []):
        # a union node states no type of its own; its members' object parts still state fields
        out += [r for r in schema_rules(sub, path) if r != ("TYPE", path)]
    return out


def rule_counts(schemas: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Rules per class over all tools, e.g. {"REQUIRED": 120, "TYPE": 160}."""
    c: Counter[str] = Counter()
    for schema in schemas.values():
        c.update(code for code, _p in set(schema_rules(schema)))
    return dict(sorted(c.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("jsonl", type=Path, help="flat JSONL of tool calls (DESIGN §2.1)")
    ap.add_argument("--schemas", type=Path, help="write the per-tool schemas here as JSON")
    ns = ap.parse_args(argv)
    t = time.perf_counter()
    schemas, n = build_schemas(ns.jsonl)
    secs = time.perf_counter() - t
    if ns.schemas:
        ns.schemas.write_bytes(orjson.dumps(schemas, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    counts = rule_counts(schemas)
    print(
        f"genson: {n:,} results, {len(schemas)} tools in {secs:.2f} s ({n / secs:,.0f} results/s); "
        f"rules {counts}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
