"""Generate the sample world: a small, seeded retail/operations tool world and its traces.

The command line of `sample_traces/generate.py`: write the world to OUT, or with `--check` compare
OUT with a fresh build without writing (`make demo` runs it, so stale committed files fail early).
Messages go to stderr; stdout stays empty.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from .vocab import DEFAULT_SEED
from .writers import PACKAGE, build, differences, write


def main(argv: list[str] | None = None) -> int:
    """Write the world (exit 0), or with `--check` compare it with OUT (exit 1 on any difference)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=PACKAGE.parent, help="output folder")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if OUT differs from what the generator makes (a CI freshness check)",
    )
    ns = ap.parse_args(argv)
    if ns.check and not ns.out.is_dir():
        print(f"{ns.out}: missing folder; run `make sample`", file=sys.stderr)
        return 1
    files = build(ns.seed)
    c = orjson.loads(files["planted.json"])["counts"]
    summary = (
        f"clean {c['clean']['calls']} calls / {c['clean']['episodes']} episodes / {c['clean']['tasks']} "
        f"tasks; faulty {c['faulty']['calls']} calls ({c['faulty']['faulted_calls']} faulted); formats "
        f"{sum(f['calls'] for f in c['formats'].values())} calls"
    )
    if ns.check:
        problems = differences(ns.out, files)
        for p in problems:
            print(f"{ns.out}: {p}", file=sys.stderr)
        if problems:
            print(f"{ns.out} is out of date: run `make sample`", file=sys.stderr)
            return 1
        print(f"{ns.out} is up to date ({len(files)} files; {summary})", file=sys.stderr)
        return 0
    write(ns.out, files)
    print(f"wrote {len(files)} files to {ns.out}: {summary}", file=sys.stderr)
    return 0
