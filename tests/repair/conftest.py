"""Small hand-made schemas, cases and a BFCL-shaped pair of files for the repair tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.repair.cases import Case

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "sku": {"type": "string"},
        "qty": {"type": "integer", "minimum": 1},
        "unit": {"type": "string", "enum": ["each", "box"], "default": "each"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": "string"},
    },
    "required": ["sku", "qty", "unit"],
    "additionalProperties": False,
}
GOOD: dict[str, Any] = {"sku": "A-1", "qty": 3, "unit": "box", "tags": ["x", "y"]}


def make_case(
    candidate: Any, *, immutable: tuple[str, ...] = (), case_id: str = "rc-test", **kw: Any
) -> Case:
    return Case(case_id=case_id, tool="order", schema=SCHEMA, candidate=candidate, immutable=immutable, **kw)


BFCL_QUESTIONS = [
    {
        "id": "simple_0",
        "question": [[{"role": "user", "content": "area"}]],
        "function": [
            {
                "name": "calc.area",
                "description": "Area.",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "base": {"type": "integer"},
                        "height": {"type": "float"},
                        "unit": {"type": "string", "optional": True},
                        "point": {"type": "tuple", "items": {"type": "float"}},
                        "opts": {"type": "dict", "properties": {"fast": {"type": "boolean"}}},
                        "blob": {"type": "any"},
                    },
                    "required": ["base", "height"],
                    "optional": [],
                },
            }
        ],
    },
    {
        "id": "simple_1",
        "question": [[{"role": "user", "content": "fact"}]],
        "function": [
            {
                "name": "math.factorial",
                "parameters": {
                    "type": "dict",
                    "properties": {"number": {"type": "integer"}},
                    "required": ["number"],
                },
            }
        ],
    },
]
BFCL_ANSWERS = [
    {
        "id": "simple_0",
        "ground_truth": [
            {
                "calc.area": {
                    "base": [10],
                    "height": [5.5, 5],
                    "unit": ["", "cm"],
                    "point": [[1.0, 2.0]],
                    "opts": [{"fast": [True]}],
                }
            }
        ],
    },
    {"id": "simple_1", "ground_truth": [{"math.factorial": {"number": [5]}}]},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


@pytest.fixture
def bfcl_files(tmp_path: Path) -> tuple[Path, Path]:
    return (
        write_jsonl(tmp_path / "q.json", BFCL_QUESTIONS),
        write_jsonl(tmp_path / "a.json", BFCL_ANSWERS),
    )
