"""The allocator setting the `contracts` process starts with (`output_contracts.allocator`).

It only counts if it is in the environment before polars loads, and polars appends it after its own
defaults, so the tests run fresh interpreters: the entry point sets it; jemalloc reads it (its own
statistics print the decay it runs with); a user's own value is left alone.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from output_contracts.allocator import ENV_VAR, JEMALLOC_CONF, tune_allocator


def _fresh(code: str, env_var: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    if env_var is not None:
        env[ENV_VAR] = env_var
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=120
    )


def test_sets_the_variable_only_when_nobody_did_and_polars_is_not_loaded() -> None:
    env: dict[str, str] = {}
    assert tune_allocator(env, modules=set()) is True
    assert env == {ENV_VAR: JEMALLOC_CONF}
    mine = {ENV_VAR: ""}  # a user's value, even an empty one, is theirs
    assert tune_allocator(mine, modules=set()) is False
    assert mine == {ENV_VAR: ""}
    late: dict[str, str] = {}
    assert tune_allocator(late, modules={"polars"}) is False  # jemalloc has read its settings already
    assert late == {}


_RUN_MAIN = (
    "import contextlib, io, os, sys\n"
    "sys.argv = ['contracts', '--version']\n"
    "from output_contracts.cli.app import main\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    "    main()\n"
    f"print(os.environ.get({ENV_VAR!r}))\n"
)


def test_the_entry_point_sets_it_and_leaves_a_users_own() -> None:
    assert _fresh(_RUN_MAIN).stdout.strip() == JEMALLOC_CONF
    assert _fresh(_RUN_MAIN, env_var="dirty_decay_ms:0").stdout.strip() == "dirty_decay_ms:0"


def test_jemalloc_runs_with_it_after_polars_appends_its_own() -> None:
    """polars puts its defaults first and ours after: jemalloc keeps the last value of each option."""
    out = _fresh(
        "import os\n"
        "from output_contracts.allocator import ENV_VAR, tune_allocator\n"
        "assert tune_allocator()\n"
        "os.environ[ENV_VAR] += ',stats_print:true'\n"
        "import polars as pl\n"
        "pl.DataFrame({'a': [1, 2]}).sum()\n"
    )
    stats = out.stderr + out.stdout
    if "jemalloc statistics" not in stats:
        pytest.skip("this polars build does not allocate through jemalloc")
    assert "opt.dirty_decay_ms: 5000" in stats
    assert "opt.muzzy_decay_ms: 5000" in stats
