"""The sample world: a small, seeded retail/operations tool world and its traces.

`sample_traces/generate.py` runs it (`python sample_traces/generate.py --out sample_traces`), writing:

- `clean/part-1.jsonl.gz`, `clean/part-2.jsonl.gz` — the clean set, flat format (DESIGN §2.1);
- `faulty/part-1.jsonl.gz` — episodes of separate tasks (`retail-900`…`retail-999`) in which about a
  fifth of the calls carry one injected fault, recorded ONLY in `labels`;
- `formats/*` — a few more clean episodes of the same world in each non-flat adapter format;
- `tools.json` — the tool registry (DESIGN §2.4), from the data file `registry.json`;
- `planted.json` — the invariants the generator planted (what mining must find), the noise fields
  (what mining must NOT turn into rules), and the exact counts of everything written;
- `README.md` — the human description, `readme_template.md` filled with the same counts.

Why a generator and not hand-written files: every planted invariant must hold by construction and be
supported comfortably above the miner's thresholds, and the noise must be spread over many tasks so
it never becomes a rule by chance. Both are easier to guarantee, and to re-check (tests/sample_traces/),
from code.

Modules, in dependency order: `vocab` (the fixed vocabulary, value helpers), `catalog` (products,
customers), `tasks` (requests and their orders), `tools` (what each tool returns), `episodes` (calls
of one attempt at a task), `pointers`, `planted` (invariants and noise), `faults` (the faulty set),
`registry`, `formats` (non-flat adapter formats), `readme`, `writers` (files as bytes, `--check`),
`cli`.

Why a package imported by path: `sample_traces/` is a data folder, not an installed package, and
`make sample` must work from a fresh clone with only the standard library and orjson. The script,
`bench/generate.py` and the tests load this folder under one module name, `sample_world`, and the
modules import each other relatively, so no `sys.path` entry is added and no top-level name is taken.

Determinism: every episode draws from its own `random.Random(f"{seed}:{trace_id}")` (string seeds are
hashed with SHA-512 by `random`, independent of PYTHONHASHSEED), dicts keep insertion order, JSON is
written by orjson with fixed options, and gzip members carry mtime 0 and no file name. Same seed, same
bytes.
"""

from __future__ import annotations

from .catalog import build_world
from .cli import main
from .episodes import episode_start, make_episode
from .faults import faulty_episodes, inject
from .formats import FORMAT_FILES, format_episodes, ingested_trace_id
from .planted import planted_rules
from .registry import registry
from .tasks import make_task
from .vocab import DEFAULT_SEED
from .writers import HAND_WRITTEN, build, differences, payload, write

__all__ = [
    "DEFAULT_SEED",
    "FORMAT_FILES",
    "HAND_WRITTEN",
    "build",
    "build_world",
    "differences",
    "episode_start",
    "faulty_episodes",
    "format_episodes",
    "ingested_trace_id",
    "inject",
    "main",
    "make_episode",
    "make_task",
    "payload",
    "planted_rules",
    "registry",
    "write",
]
