"""`make bytecode` compiles the files the package is imported through.

Python looks for a module's compiled file beside the path it imported it by. The package is imported as
output_contracts/F/m.py through the folder links (the one package rule), whose `__pycache__` is F's own.
Where PYTHONDONTWRITEBYTECODE is set (this project's machines set it), a module without a compiled file is
compiled again by every process (cachegrind once measured 1.14G of the 5.72G instructions of a `contracts
mine` of 3,000 calls spent so), so this test runs `make bytecode` and checks every module as imported."""

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
    if shutil.which("make") is None or not (REPO / ".venv").is_dir():
        pytest.skip("not the checkout `make install` sets up (a wheel is compiled by pip)")
    # outside the repository (as `contracts` runs), the package is the checkout's
    where = subprocess.run(
        [sys.executable, "-c", "import output_contracts; print(output_contracts.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = REPO / "output_contracts"
    assert Path(where).parent == tree
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run(["make", "bytecode"], cwd=REPO, env=env, check=True, capture_output=True, timeout=300)
    # every module as Python imports it: through the links into the top-level folders
    modules = sorted(
        m for d in [tree, *(p for p in tree.iterdir() if p.is_symlink())] for m in d.rglob("*.py")
    )
    assert len(modules) > 150
    stale = [str(m.relative_to(tree)) for m in modules if not _fresh(m)]
    assert stale == []
