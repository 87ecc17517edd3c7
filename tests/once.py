"""Work done once per pytest run and shared by its pytest-xdist workers (a folder and a file lock).

A session fixture runs once per worker; when two workers' tests need the same long run (the docs' example
blocks, the injected-fault audit of the sample world), the first worker to ask makes it in the run's
folder, above each worker's own temp folder, and the other reads it after waiting on its lock."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock between the xdist workers of one run (released when the holder dies)."""
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pytest run's temp folder: the workers' common parent under xdist, else the base temp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(root: Path, name: str, make: Callable[[Path], None]) -> Path:
    """`root/name`, made by `make(folder)` once per run, by whichever worker asks first. A folder left by
    a worker that died while making it has no `.done` mark and is made again."""
    folder, done = root / name, root / f"{name}.done"
    with locked(root / f"{name}.lock"):
        if not done.is_file():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
