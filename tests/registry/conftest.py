"""Fixtures of the registry tests: the example world in docs/examples/plan-world and small registries (the
tool registry loader's tests in tests/traces/ read them too)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

REPO = Path(__file__).resolve().parents[2]
WORLD = REPO / "docs" / "examples" / "plan-world"

#: The acceptance registry of plan-check: temporal_reachability declares rows, rows_total, truncated, cursor.
TEMPORAL: dict[str, Any] = {
    "tools": [
        {
            "name": "temporal_reachability",
            "parameters": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["source"],
                "additionalProperties": False,
            },
            "output": {
                "type": "object",
                "properties": {
                    "rows": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"node": {"type": "string"}, "time": {"type": "number"}},
                        },
                    },
                    "rows_total": {"type": "integer", "minimum": 0},
                    "truncated": {"type": "boolean"},
                    "cursor": {"type": ["string", "null"]},
                },
            },
        },
        {
            "name": "summarize",
            "parameters": {
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "text": {"type": "string"},
                    "mode": {"enum": ["short", "long"]},
                },
                "required": ["count"],
            },
            "output": {"type": "object", "properties": {"summary": {"type": "string"}}},
        },
    ]
}


def write_json(path: Path, value: Any) -> Path:
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    return path


@pytest.fixture()
def world() -> Path:
    return WORLD


@pytest.fixture()
def temporal_registry(tmp_path: Path) -> Path:
    return write_json(tmp_path / "tools.json", TEMPORAL)


@pytest.fixture()
def temporal() -> dict[str, Any]:
    """A fresh copy of the acceptance registry."""
    return copy.deepcopy(TEMPORAL)


@pytest.fixture()
def write(tmp_path: Path) -> Callable[[str, Any], Path]:
    """`write(name, value)`: dump JSON into tmp_path (a bytes value is written as is)."""

    def _write(name: str, value: Any) -> Path:
        p = tmp_path / name
        p.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value, option=orjson.OPT_INDENT_2))
        return p

    return _write
