"""Fixtures for the sample world's tests: the generator module, one fresh build, and its records.

`build()` is pure (returns every output file as bytes), so the tests compare a fresh in-memory build
with the committed files and read the records from it: one build (about a second) serves every test.
"""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces"


def load_generator() -> ModuleType:
    """The world package `sample_traces/world/`, loaded through the script that imports it by path."""
    spec = importlib.util.spec_from_file_location("sample_generate", SAMPLE / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.world


def read_jsonl(data: bytes) -> list[dict[str, Any]]:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def gen() -> ModuleType:
    return load_generator()


@pytest.fixture(scope="session")
def built(gen: ModuleType) -> dict[str, bytes]:
    return gen.build(gen.DEFAULT_SEED)


@pytest.fixture(scope="session")
def planted(built: dict[str, bytes]) -> dict[str, Any]:
    return orjson.loads(built["planted.json"])


@pytest.fixture(scope="session")
def clean(built: dict[str, bytes]) -> list[dict[str, Any]]:
    return [r for name in sorted(built) if name.startswith("clean/") for r in read_jsonl(built[name])]


@pytest.fixture(scope="session")
def faulty(built: dict[str, bytes]) -> list[dict[str, Any]]:
    return [r for name in sorted(built) if name.startswith("faulty/") for r in read_jsonl(built[name])]
