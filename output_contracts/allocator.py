"""How long the `contracts` process keeps the memory it frees before giving it back to the system.

polars allocates through jemalloc and, when it is imported, sets `_RJEM_MALLOC_CONF` so that freed pages
go back to the system after 0.5 s (dirty) and 1 s (muzzy), then appends what the variable held before.
Mining, checking and auditing read a corpus part after part and build frames of about the same sizes
each time. With polars' settings the kernel zero-fills, part after part, pages it took back moments
earlier. At 1M calls, `mine --folds 5` took 1.9M minor page faults and 5-6 CPU-s of system time (an
eighth of its CPU). With 5 s it took 0.6M and 2 CPU-s, for 5-9% more peak RSS (docs/performance.md,
"Fourteenth round").

The setting must be in the environment before polars is first imported: jemalloc reads it once, when
polars' library loads. So the `contracts` entry point sets it first thing. A user's own
`_RJEM_MALLOC_CONF` is left as it is, even an empty one. A program that uses the library sets the
variable itself before importing polars, if it wants the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Container, MutableMapping

#: jemalloc's variable as polars' build names it (symbols prefixed `_rjem_`).
ENV_VAR = "_RJEM_MALLOC_CONF"
#: Keep freed pages for 5 s before they are returned (polars: 0.5 s and 1 s).
JEMALLOC_CONF = "dirty_decay_ms:5000,muzzy_decay_ms:5000"


def tune_allocator(
    environ: MutableMapping[str, str] | None = None, modules: Container[str] | None = None
) -> bool:
    """Set ENV_VAR to JEMALLOC_CONF, unless the user set it or polars is already loaded (too late to
    matter). True when it was set."""
    env = os.environ if environ is None else environ
    loaded = sys.modules if modules is None else modules
    if ENV_VAR in env or "polars" in loaded:
        return False
    env[ENV_VAR] = JEMALLOC_CONF
    return True
