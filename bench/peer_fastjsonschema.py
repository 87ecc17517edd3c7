#!/usr/bin/env python3
"""The peer of `check`: fastjsonschema validating tool results against the schemas `registry infer` writes.

    python bench/peer_fastjsonschema.py WORLD.jsonl TOOLS.json      # corpus-style: parse + validate all

What a user who wants "does this result still look like the ones before" reaches for first is a JSON
Schema of each tool's output and a fast validator; fastjsonschema is the fastest Python one (it
generates Python code per schema, as our compiled in-loop checker does). The schemas are the ones
`contracts registry infer` proposes from the same mined contract set (REQUIRED -> required, TYPE ->
type, DOMAIN -> enum, NONNEG/POSITIVE -> minimum/exclusiveMinimum: the classes a JSON Schema can
state), so both sides judge the same results against the same evidence.

Which calls: `status == "ok"` with a result, of a tool the registry declares an output for — the calls
`contracts check` holds to a result contract. `load_calls` is shared with our per-call child, so both
loops see the same calls in the same order.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson

Call = tuple[str, Any, Any]  # (tool, arguments, result)


def declared_outputs(registry: Path) -> dict[str, Any]:
    """tool -> its declared `output` schema in a `tools.json` (tools without one are left out)."""
    doc = orjson.loads(registry.read_bytes())
    return {spec["name"]: spec["output"] for spec in doc["tools"] if spec.get("output") is not None}


def validators(registry: Path) -> dict[str, Callable[[Any], Any]]:
    """tool -> fastjsonschema's compiled validator of its declared `output`."""
    return {tool: fastjsonschema.compile(schema) for tool, schema in declared_outputs(registry).items()}


def _checked(rec: dict[str, Any], tools: Any) -> bool:
    return rec.get("status", "ok") == "ok" and rec.get("result") is not None and rec.get("tool") in tools


def load_calls(path: Path, tools: Any, limit: int | None = None) -> list[Call]:
    """The first `limit` checked calls of a flat JSONL file (all when None), parsed, in file order."""
    out: list[Call] = []
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = orjson.loads(line)
            if _checked(rec, tools):
                out.append((rec["tool"], rec.get("arguments") or {}, rec["result"]))
                if limit is not None and len(out) >= limit:
                    break
    return out


def validate_calls(vals: dict[str, Callable[[Any], Any]], calls: list[Call]) -> int:
    """Validate every call's result; the number that fail their schema."""
    bad = 0
    for tool, _args, result in calls:
        try:
            vals[tool](result)
        except fastjsonschema.JsonSchemaValueException:
            bad += 1
    return bad


def validate_file(vals: dict[str, Callable[[Any], Any]], path: Path) -> tuple[int, int]:
    """Parse and validate a flat JSONL file call by call (what `check -` does): (calls checked, failing)."""
    n = bad = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = orjson.loads(line)
            if not _checked(rec, vals):
                continue
            n += 1
            try:
                vals[rec["tool"]](rec["result"])
            except fastjsonschema.JsonSchemaValueException:
                bad += 1
    return n, bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("jsonl", type=Path, help="flat JSONL of tool calls (DESIGN §2.1)")
    ap.add_argument("registry", type=Path, help="tools.json written by `contracts registry infer`")
    ns = ap.parse_args(argv)
    vals = validators(ns.registry)
    t = time.perf_counter()
    n, bad = validate_file(vals, ns.jsonl)
    secs = time.perf_counter() - t
    print(
        f"fastjsonschema: {n:,} results, {bad:,} invalid, {secs:.2f} s ({n / secs:,.0f} results/s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
