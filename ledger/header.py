"""`ledger.json`: what a ledger is bound to (config, code revision, inputs, seed) and, once frozen, its end.

Fields (JSON Schema `output_contracts/schemas/ledger-header.schema.json`):
`format` ("contracts.ledger"), `version` (2), `created_at` (UTC, seconds, the one timestamp in a ledger),
`config` and `config_sha256` (SHA-256 of the config's canonical JSON), `source_revision`, `inputs`
(`[{path, sha256, bytes}]` sorted by path), `seed`, `genesis`, `hash` (how entry hashes are made),
`frozen`, and, null until frozen: `entries` (count), `head` (last entry hash, or the genesis for an empty
ledger), `root` (RFC 6962 Merkle root of the entry hashes).

The header is bound to the chain (version 2): `genesis` is the SHA-256 of the canonical JSON of the
fields that fix what was run (`BOUND_FIELDS`: format, version, config and its hash, inputs, seed, hash
rule), and it is entry 0's `prev`. So the head hash and the Merkle root commit to them: an edited header
either no longer hashes to its genesis, or (genesis recomputed) no longer links to entry 0, or (entries
rewritten too) yields another head and root than the anchors recorded elsewhere. `created_at` and
`source_revision` say when and from which checkout it ran; they are not bound, so that the same inputs,
config and seed give the same head and root on any machine, at any time, from any commit (binding the
wall clock would make every anchor unreproducible); the manifest covers them. Version 1 ledgers (genesis
64 zeros) still verify, but their anchors cover the entries only.
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from output_contracts import __version__
from output_contracts.errors import LedgerError
from output_contracts.jsonutil import canonical_json, file_sha256, json_sha256, loads, write_json
from output_contracts.ledger.entry import GENESIS, is_hash

HEADER_NAME = "ledger.json"
ENTRIES_NAME = "ledger.jsonl"
FORMAT = "contracts.ledger"
VERSION = 2
#: The header fields fixed at creation that `genesis` (entry 0's `prev`) commits to.
BOUND_FIELDS = ("format", "version", "config", "config_sha256", "inputs", "seed", "hash")
HASH_RULE = "sha256(canonical_json(entry without 'hash'))"


def source_revision() -> str:
    """The git commit of the checkout this package runs from (`git rev-parse HEAD`), else the version.

    Only a local `git` call in the package's own folder, never the network; any failure (no git, not a
    checkout, an installed wheel) falls back to `contracts <version>`.
    """
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        done = None
    rev = done.stdout.strip() if done is not None and done.returncode == 0 else ""
    if len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev):
        return f"git:{rev}"
    return f"contracts {__version__}"


def input_records(inputs: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """`[{path, sha256, bytes}]` for every input file; a folder stands for every file below it.

    Paths are recorded as given (POSIX form; pass relative paths for output that does not depend on where
    the run happened), sorted, each file once.
    """
    seen: dict[str, dict[str, Any]] = {}
    for raw in inputs:
        p = Path(raw)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file())
        elif p.is_file():
            files = [p]
        else:
            raise LedgerError("input file does not exist", source=str(p), field="inputs")
        for f in files:
            key = f.as_posix()
            if key not in seen:
                seen[key] = {"path": key, "sha256": file_sha256(f), "bytes": f.stat().st_size}
    return [seen[k] for k in sorted(seen)]


def binding(header: dict[str, Any]) -> str:
    """The genesis a version-2 header must carry: SHA-256 of the canonical JSON of its BOUND_FIELDS
    (an absent field counts as null, so a removed field changes it too)."""
    return json_sha256({k: header.get(k) for k in BOUND_FIELDS})


def genesis_of(directory: Path) -> str:
    """Entry 0's `prev` for the ledger in `directory`: its header's `genesis` when that is a hex
    SHA-256, else the version-1 value (64 zeros) — a damaged header is `verify`'s to report."""
    try:
        g = read_header(directory).get("genesis")
    except LedgerError:
        return GENESIS
    return g if is_hash(g) else GENESIS


def new_header(
    config: dict[str, Any],
    seed: int,
    revision: str | None,
    inputs: Sequence[str | os.PathLike[str]],
    created_at: str | None = None,
) -> dict[str, Any]:
    """A fresh, unfrozen header. Raises LedgerError when config is not JSON or seed not an integer."""
    if not isinstance(config, dict):
        raise LedgerError(f"config must be a JSON object, not {type(config).__name__}", field="config")
    try:
        canonical_json(config)
    except (TypeError, ValueError) as e:
        raise LedgerError(f"config is not JSON: {e}", field="config") from None
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise LedgerError(f"seed must be an integer, not {seed!r}", field="seed")
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "created_at": created_at or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "config": loads(canonical_json(config)),
        "config_sha256": json_sha256(config),
        "source_revision": revision if revision is not None else source_revision(),
        "inputs": input_records(inputs),
        "seed": seed,
        "genesis": GENESIS,
        "hash": HASH_RULE,
        "frozen": False,
        "entries": None,
        "head": None,
        "root": None,
    }
    header["genesis"] = binding(header)
    return header


def read_header(directory: Path) -> dict[str, Any]:
    """Parse `ledger.json`; LedgerError naming the file when it is absent or not a JSON object."""
    path = directory / HEADER_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise LedgerError("not a ledger: ledger.json is missing", source=str(directory)) from None
    try:
        header = loads(data)
    except ValueError as e:
        raise LedgerError(f"ledger.json is not JSON: {e}", source=str(path)) from None
    if not isinstance(header, dict):
        raise LedgerError("ledger.json is not a JSON object", source=str(path))
    return header


def write_header(directory: Path, header: dict[str, Any]) -> None:
    """Atomically replace `ledger.json` (temp file, fsync, rename)."""
    write_json(directory / HEADER_NAME, header)
