"""Every output file as bytes (`build`), writing them (`write`), and comparing a folder with them.

Why `build` is pure (path -> bytes, nothing written): the tests compare one in-memory build with the
committed files, `--check` compares it with a folder, and `write` is the only place that touches
the disk. Determinism: dicts keep insertion order, JSON is written by orjson with fixed options and
gzip members carry mtime 0 and no file name, so the same seed gives the same bytes.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from .catalog import build_world
from .episodes import EPISODES_PER_CLEAN_TASK, N_CLEAN_TASKS, clean_episodes
from .faults import faulty_episodes
from .formats import format_files
from .planted import NOTATION, noise_fields, planted_rules
from .readme import readme
from .registry import registry
from .vocab import DEFAULT_SEED

#: `planted.json`'s format version.
FORMAT_VERSION = 1

PACKAGE = Path(__file__).resolve().parent
#: Files of the sample folder written by hand, not by `build`, relative to it: the script, the
#: configuration, and this package's code and data (`__pycache__` aside). `--check` leaves them alone.
HAND_WRITTEN = (
    "generate.py",
    "contracts.toml",
    *sorted(
        p.relative_to(PACKAGE.parent).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ),
)


def jsonl_gz(records: Iterable[dict[str, Any]]) -> bytes:
    """JSON Lines, gzip-compressed with mtime 0 and no file name in the header (deterministic bytes)."""
    raw = b"".join(orjson.dumps(r) + b"\n" for r in records)
    return gzip.compress(raw, compresslevel=9, mtime=0)


def set_counts(episodes: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The figures of one set of episodes that `planted.json` and the README report."""
    recs = [r for ep in episodes for r in ep]
    return {
        "tasks": len({r["task_id"] for r in recs}),
        "episodes": len(episodes),
        "calls": len(recs),
        "ok_calls": sum(r["status"] == "ok" for r in recs),
        "error_calls": sum(r["status"] == "error" for r in recs),
        "by_tool": dict(sorted(Counter(r["tool"] for r in recs).items())),
    }


def build(seed: int = DEFAULT_SEED) -> dict[str, bytes]:
    """Every output file, by path relative to OUT, as bytes. Pure: writes nothing."""
    world = build_world(seed)
    rules = planted_rules()
    noise = noise_fields()
    clean = clean_episodes(world)
    faulty, _originals = faulty_episodes(world, rules)
    fmts = format_files(world)
    half = N_CLEAN_TASKS // 2 * EPISODES_PER_CLEAN_TASK
    files: dict[str, bytes] = {
        "clean/part-1.jsonl.gz": jsonl_gz(r for ep in clean[:half] for r in ep),
        "clean/part-2.jsonl.gz": jsonl_gz(r for ep in clean[half:] for r in ep),
        "faulty/part-1.jsonl.gz": jsonl_gz(r for ep in faulty for r in ep),
    }
    for name, (data, _c) in fmts.items():
        files[f"formats/{name}"] = data
    faulted = [r for ep in faulty for r in ep if r["labels"]]
    fc = set_counts(faulty)
    fc["faulted_calls"] = len(faulted)
    fc["faults_by_kind"] = dict(sorted(Counter(r["labels"]["fault"] for r in faulted).items()))
    counts = {
        "clean": set_counts(clean),
        "faulty": fc,
        "formats": {name: c for name, (_d, c) in fmts.items()},
    }
    counts["all_calls"] = (
        counts["clean"]["calls"] + fc["calls"] + sum(c["calls"] for c in counts["formats"].values())
    )
    planted = {
        "version": FORMAT_VERSION,
        "seed": seed,
        "notation": NOTATION,
        "counts": counts,
        "planted": rules,
        "noise": noise,
    }
    files["planted.json"] = orjson.dumps(planted, option=orjson.OPT_INDENT_2) + b"\n"
    files["tools.json"] = orjson.dumps(registry(), option=orjson.OPT_INDENT_2) + b"\n"
    files["README.md"] = readme(seed, counts, rules, noise).encode()
    return files


def write(out: Path, files: dict[str, bytes]) -> None:
    """Write each file atomically (temp file + rename), so an interrupted run leaves no half file."""
    for rel, data in sorted(files.items()):
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(p)


def payload(data: bytes) -> bytes:
    """What a file means: the content of a gzip member, else the bytes. Compressed bytes may differ
    between zlib builds; the content depends only on the generator."""
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def differences(out: Path, files: dict[str, bytes]) -> list[str]:
    """How the folder `out` differs from `files`: missing, changed and stale (unexpected) files.

    HAND_WRITTEN files, hidden folders (`.contracts/`, outputs of a configured run) and `__pycache__`
    are not compared."""
    present = {
        rel.as_posix()
        for rel in (p.relative_to(out) for p in out.rglob("*") if p.is_file())
        if rel.as_posix() not in HAND_WRITTEN
        and not any(part == "__pycache__" or part.startswith(".") for part in rel.parts)
    }
    problems = [f"missing {name}" for name in sorted(set(files) - present)]
    problems += [
        f"changed {name}"
        for name in sorted(set(files) & present)
        if payload((out / name).read_bytes()) != payload(files[name])
    ]
    problems += [f"stale {name}" for name in sorted(present - set(files))]
    return problems
