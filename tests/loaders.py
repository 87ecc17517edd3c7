"""Loaders several test modules share: bench scripts as modules or run as scripts, GitHub YAML as GitHub
reads it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def bench_module(name: str) -> ModuleType:
    """bench/<name>.py as the module `bench_<name>` (bench/ is a script folder, not a package; its
    scripts import their neighbours, so bench/ is on sys.path while one loads)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(REPO / "bench"))


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python bench/<script> ARGS...` from the repository root, its output captured (exit code not
    checked: the caller asserts it)."""
    return subprocess.run(
        [sys.executable, f"bench/{script}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def github_yaml(path: Path) -> dict[str, Any]:
    """A workflow or action file as GitHub reads it: `on` is a key, not YAML 1.1's boolean true."""
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data
