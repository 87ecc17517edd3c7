#!/usr/bin/env python3
"""Generate the sample world: a small, seeded retail/operations tool world and its traces.

    python sample_traces/generate.py --out sample_traces [--seed 13]
    python sample_traces/generate.py --check    # exit 1 if the committed files are out of date

The world itself is the package `world/` beside this script (its docstring lists what is written and
why); this file only loads it and runs its command line, so `make sample` and `make demo` need nothing
installed: only the standard library and orjson.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

WORLD_DIR = Path(__file__).resolve().parent / "world"
#: The one name the package is imported under, whoever loads it (this script, bench/, the tests):
#: not `world`, which is too generic a top-level name to claim.
WORLD_MODULE = "sample_world"


def load_world() -> ModuleType:
    """The `world/` package, imported by its path (once per process) as `sample_world`.

    `sample_traces/` is a data folder, not an installed package, and putting the repository on
    `sys.path` would expose its top-level folders under bare names; loading the package from its
    path keeps both out, while its modules still import each other relatively.
    """
    if WORLD_MODULE in sys.modules:
        return sys.modules[WORLD_MODULE]
    spec = importlib.util.spec_from_file_location(
        WORLD_MODULE, WORLD_DIR / "__init__.py", submodule_search_locations=[str(WORLD_DIR)]
    )
    if spec is None or spec.loader is None:  # pragma: no cover - the folder ships with the repo
        raise ImportError(f"cannot load {WORLD_DIR}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[WORLD_MODULE] = mod  # relative imports and dataclasses resolve through sys.modules
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[WORLD_MODULE]
        raise
    return mod


world = load_world()
# For code that loads this script by path rather than the package (tests/traces/test_sample_ingest.py).
build, write = world.build, world.write

if __name__ == "__main__":
    sys.exit(world.main())
