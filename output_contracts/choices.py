"""The choices and limits the CLI's options name (enums, defaults, caps), in one module that imports nothing.

Every `contracts` process, `--help` included, builds the options of every command at start-up, so each
enum and default an option shows must be importable without the library that does the work: those
modules import polars, pyarrow and numpy, about 0.8 CPU-s on every start. The CLI imports these names
from here; each is also re-exported by the module that owns its meaning (`EncoderName` by
`checks.receipts`, `PairBy` by `audit.compare`, `Clean` by `mining.params`, ...), which library code
imports it from. `tests/cli/test_import_cost.py` holds `--help` to it.
"""

from __future__ import annotations

from enum import StrEnum


class Clean(StrEnum):
    """Which calls are clean evidence: `ok` every ok call of an episode without a labelled fault;
    `reward` also only from episodes with full reward where rewards exist."""

    ok = "ok"
    reward = "reward"


class RuleSource(StrEnum):
    """Where rules may come from: `all` mined and declared (schema) rules; `mined` only what the
    clean traces show; `schema` only what the registry's output schemas declare — the schema-only
    detector a mined contract set is compared with."""

    all = "all"
    mined = "mined"
    schema = "schema"


class EncoderName(StrEnum):
    """The receipt encoders (`--encoder`): `v1` one sentence a violation, `v2` explicit witnesses;
    for ablations, `v2-no-recovery` (v2 without recovery tools) and `generic` (a fixed warning)."""

    v1 = "v1"
    v2 = "v2"
    v2_no_recovery = "v2-no-recovery"
    generic = "generic"


#: Where the proxy puts a receipt in a tool result (`--receipt-in`): a text block, `_meta`, or both.
RECEIPT_PLACES = ("text", "meta")

#: The names that stand for several fault kinds in `--kinds` (`audit.inject.KIND_GROUPS` maps each).
FAULT_GROUPS = ("all", "basic", "incidents")


class PairBy(StrEnum):
    """How episodes of the two arms are paired (`--pair-by`)."""

    auto = "auto"
    trial = "trial"
    task = "task"


DEFAULT_STRATA = (0.16, 0.65)
"""Cut points of baseline per-task completion: the Outcome Monitors paper's strata (gains where the
baseline completes <= 16% of a task's trials; rescues and harms cancel at >= 65%)."""


class PolicyName(StrEnum):
    """The repair policies `--policy` takes."""

    precomputed = "precomputed"
    heuristic = "heuristic"
    command = "command"


class FeedbackView(StrEnum):
    """The `--feedback` choices (see `repair.state.FEEDBACK_VIEWS`)."""

    full = "full"
    pointer_only = "pointer-only"
    code_only = "code-only"
    text = "text"
    context_only = "context-only"


#: Calls per Parquet part `ingest` writes (`--chunk-rows`; bounds memory).
DEFAULT_CHUNK_ROWS = 50_000
#: The file names a folder walk of `ingest` reads (`traces.ingest.sources`); `ingest --help` lists them.
SOURCE_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".traj", ".eval")

#: GitHub code scanning accepts at most 25,000 results per SARIF run; more are refused, not truncated.
MAX_SARIF_RESULTS = 25_000
#: GitHub shows at most 10 error and 10 warning annotations per step; the rest of a step's are dropped.
MAX_ANNOTATIONS = 10
