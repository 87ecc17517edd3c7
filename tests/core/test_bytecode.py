"""`make bytecode` compiles the files the package is imported through.

The package is installed editable: Python imports it through a link tree (build/__editable__.*, one
symlink a module) and looks for a module's compiled file beside the path it imported it by, not beside
the symlink's target. Where PYTHONDONTWRITEBYTECODE is set (this project's machines set it), a module
without one is compiled again by every process: `make bytecode` compiled only the source folders, so
every `contracts` process compiled the modules it imports again (cachegrind: 1.14G of the 5.72G
instructions of a `contracts mine` of 3,000 calls)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _fresh(py: Path) -> bool:
    """Whether the compiled file Python looks for beside `py` exists and matches its source (the
    timestamp header: flags 0, the source's mtime and size)."""
    pyc = Path(importlib.util.cache_from_source(str(py)))
    if not pyc.is_file():
        return False
    head = pyc.read_bytes()[:16]
    st = py.stat()
    return (
        int.from_bytes(head[4:8], "little") == 0
        and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF
    )


def test_make_bytecode_compiles_the_modules_imports_read(tmp_path: Path) -> None:
    trees = sorted(REPO.glob("build/__editable__.output_contracts-*/output_contracts"))
    if not trees or shutil.which("make") is None:
        pytest.skip("not the editable install `make install` sets up (a wheel is compiled by pip)")
    tree = trees[-1]
    # outside the repository (as `contracts` runs), the package is the link tree's
    where = subprocess.run(
        [sys.executable, "-c", "import output_contracts; print(output_contracts.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(where).parent == tree
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run(["make", "bytecode"], cwd=REPO, env=env, check=True, capture_output=True, timeout=300)
    modules = sorted(tree.rglob("*.py"))
    assert len(modules) > 150
    stale = [str(m.relative_to(tree)) for m in modules if not _fresh(m)]
    assert stale == []
