"""The checker: check tool calls against a contract set, and turn what breaks into receipts.

The evaluation itself is the engine of `output_contracts.codes.engine.evaluate`, a driver over one module per property
code (`output_contracts.codes`); this module is what a user of the checker calls:

* `check_call` — one call in plain Python, for use inside an agent loop: a `Receipt`, or None. It runs the
  compiled checker (`output_contracts.codes.engine.compiled`: one generated function per tool, cached per
  contract set), which finds what `call_violations` finds, rendered the same way.
* `check_corpus` — every call of a Parquet corpus, vectorised: one row per violation with its witness
  (expected, observed, detail) rendered exactly as `check_call` renders it (a test compares them over
  the sample world and on random corpora).
* `receipts_from_frame`, `corpus_counts`, `check_lines` (a stream of trace lines), `load_contracts`.

Calls checked in a corpus: those with `status == "ok"` (a failed call has no result to hold to a result
contract). Calls of a tool the contract set does not know are never violations; they are counted apart
(`CheckCounts.unknown_tool_calls`).
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson
import polars as pl

from output_contracts.checks.receipts import Receipt, planned_receipt
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.engine.compiled import compiled_memory, compiled_violations
from output_contracts.codes.engine.evaluate import (
    BATCH_CALLS,
    Fold,
    checked_calls,
    code,
    episode_witnesses,
    find_violations,
    witness,
)
from output_contracts.codes.engine.evaluate import (
    call_violations as call_violations,  # re-exported: the generic engine, which tests hold the compiled one to
)
from output_contracts.codes.evaluation import EpisodeMemory
from output_contracts.codes.hits import RuleEntry
from output_contracts.codes.violation import Violation
from output_contracts.errors import CheckError, ContractsError
from output_contracts.jsonutil import canonical_str, sha256_hex
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.call_texts import CallTexts
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.formats.adapter import decode_result, tool_names
from output_contracts.traces.records import ToolCall

#: Columns and types of the frame `check_corpus` returns (one row per violation).
VIOLATION_SCHEMA: dict[str, pl.DataType] = {
    "cid": pl.UInt64(),
    "call_id": pl.String(),
    "trace_id": pl.String(),
    "task_id": pl.String(),
    "tool": pl.String(),
    "fold": pl.Int32(),
    "rule": pl.String(),
    "code": pl.String(),
    "path": pl.String(),
    "expected": pl.String(),
    "observed": pl.String(),
    "present": pl.Boolean(),
    "detail": pl.String(),
    "refers": pl.String(),
    "source": pl.String(),
    "line": pl.Int64(),
}
SORT_KEYS = ["source", "line", "cid", "rule", "path"]


def check_call(
    contracts: ContractSet,
    tool: str,
    arguments: dict[str, Any],
    result: Any,
    *,
    fold: int | None = None,
    visible_tools: Sequence[str] | None = None,
    encoder: str = "v2",
    memory: EpisodeMemory | None = None,
    call_id: str = "",
) -> Receipt | None:
    """Check one call with checker `fold` (None = the full checker); a receipt, or None when it holds.

    For use inside an agent loop: append `encode(receipt)` beside the unchanged result. A tool the
    contract set has never seen gives None (nothing to hold it to). `memory`: one per episode
    (`episode_memory(contracts, fold)`), passed to every call of it in order, so that CONSISTENT rules
    compare the call with the episode's earlier calls (named by their `call_id`); without it they are
    not judged.
    """
    vs = compiled_violations(contracts, tool, arguments, result, fold=fold, memory=memory, call_id=call_id)
    if not vs:
        return None
    return planned_receipt(contracts, tool, result, vs, visible_tools, encoder=encoder)


def check_corpus(
    contracts: ContractSet,
    corpus: Corpus,
    *,
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    clean_only: bool = False,
    batch_calls: int = BATCH_CALLS,
    progress: Progress = NULL_PROGRESS,
) -> pl.DataFrame:
    """One row per violation in the corpus (columns `VIOLATION_SCHEMA`), sorted by `SORT_KEYS`.

    `fold`: None = the full checker on every call; an int = that fold's checker on every call;
    `"cross"` = each call checked by the checker of its own task's fold (the cross-fitted replay).
    `tools` / `codes` restrict the calls / rules checked; `clean_only` keeps only calls the miner
    counts as clean (status ok, no fault label, episode not labelled faulty). `batch_calls` bounds
    memory (the output does not depend on it); `progress` hears of each batch (in calls).
    """
    found, entries, calls = find_violations(
        contracts,
        corpus,
        fold=fold,
        tools=tools,
        codes=codes,
        clean_only=clean_only,
        batch_calls=batch_calls,
        progress=progress,
    )
    return violation_frame(corpus, found, entries, calls)


def violation_frame(
    corpus: Corpus,
    found: pl.DataFrame,
    entries: Sequence[RuleEntry],
    calls: pl.LazyFrame,
    texts: CallTexts | None = None,
) -> pl.DataFrame:
    """`check_corpus`'s frame from a vectorised pass (`find_violations`' found, entries and calls):
    each violation with its witness, rendered as `check_call` renders it. Apart so that a caller with
    the pass in hand (`audit` derives the cross-fitted replay's from its flat pass) renders the same.
    `texts`: the fired calls' stored texts read already (`CallTexts`), else read here."""
    if found.height == 0:
        return pl.DataFrame(schema=VIOLATION_SCHEMA)
    cids = found.get_column("cid").unique()
    if texts is not None and texts.has_calls(cids):
        stored = texts.frame.lazy()
    else:
        stored = corpus.scan_calls()
    meta = (
        calls.filter(pl.col("cid").is_in(cids.implode()))
        .join(
            stored.select("cid", "arguments", "result").filter(pl.col("cid").is_in(cids.implode())),
            on="cid",
        )
        .collect()
    )
    rows = found.join(meta, on="cid").sort(["source", "line", "cid", "ridx", "path"])
    by_idx = {e.ridx: e for e in entries}
    episodic = episode_witnesses(entries, corpus, found, texts)
    docs: dict[int, tuple[Any, Any]] = {}
    expected: list[str] = []
    observed: list[str] = []
    detail: list[str] = []
    refers: list[str | None] = []
    rule_ids: list[str] = []
    code_col: list[str] = []
    for cid, ridx, path, args_txt, res_txt in rows.select(
        "cid", "ridx", "path", "arguments", "result"
    ).iter_rows():
        if cid not in docs:
            docs[cid] = (orjson.loads(args_txt), orjson.loads(res_txt) if res_txt is not None else None)
        args, res = docs[cid]
        rule = by_idx[ridx].rule
        v = episodic[(cid, ridx)] if (cid, ridx) in episodic else witness(rule, path, args, res)
        expected.append(canonical_str(v.expected))
        observed.append(canonical_str(v.observed))
        detail.append(v.detail)
        refers.append(v.refers)
        rule_ids.append(rule.id)
        code_col.append(rule.code)
    out = rows.with_columns(
        pl.Series("rule", rule_ids, pl.String),
        pl.Series("code", code_col, pl.String),
        pl.Series("expected", expected, pl.String),
        pl.Series("observed", observed, pl.String),
        pl.Series("detail", detail, pl.String),
        pl.Series("refers", refers, pl.String),
    )
    return out.select(list(VIOLATION_SCHEMA)).cast(VIOLATION_SCHEMA).sort(SORT_KEYS)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------
# Turning a violation frame into receipts, and counting what was checked.


@dataclass(frozen=True)
class CheckCounts:
    """How many calls a check looked at, and how many it could not judge (tool unknown to the set)."""

    calls_checked: int
    unknown_tool_calls: int
    calls_by_tool: Mapping[str, int]
    skipped_calls: int = 0


def corpus_counts(
    contracts: ContractSet,
    corpus: Corpus,
    *,
    tools: Sequence[str] | None = None,
    clean_only: bool = False,
) -> CheckCounts:
    """Calls checked per tool (status ok, after filters), those whose tool the set does not know, and
    those skipped because their status is `error`."""
    lf = checked_calls(contracts, corpus, None, tools, clean_only)
    per = lf.group_by("tool").agg(pl.len().alias("n")).collect().sort("tool")
    by_tool = dict(zip(per.get_column("tool").to_list(), per.get_column("n").to_list(), strict=True))
    unknown = sum(n for t, n in by_tool.items() if t not in contracts.tools)
    everything = corpus.scan_calls()
    if tools is not None:
        everything = everything.filter(pl.col("tool").cast(pl.String).is_in(list(tools)))
    skipped = everything.filter(pl.col("status") != "ok").select(pl.len()).collect().item()
    return CheckCounts(sum(by_tool.values()), unknown, by_tool, int(skipped))


def receipts_from_frame(
    contracts: ContractSet,
    corpus: Corpus,
    violations: pl.DataFrame,
    *,
    encoder: str = "v2",
    include_all: bool = False,
    tools: Sequence[str] | None = None,
    clean_only: bool = False,
    batch: int = 50_000,
) -> Iterator[Receipt]:
    """Receipts for the calls of a `check_corpus` frame, in (source, line) order.

    With `include_all`, every checked call gets a receipt (violations empty when it holds). Results are
    read `batch` calls at a time, so memory stays bounded by the batch, not the corpus. Recovery tools use each episode's visible tool set
    (episodes.parquet `tools`; null = unknown = every declared substitute).
    """
    visible = {
        t: (None if js is None else tuple(orjson.loads(js)))
        for t, js in corpus.scan_episodes().select("trace_id", "tools").collect().iter_rows()
    }
    grouped: dict[int, list[Violation]] = {}
    for row in violations.iter_rows(named=True):
        grouped.setdefault(row["cid"], []).append(
            Violation(
                row["code"],
                row["rule"],
                row["path"],
                orjson.loads(row["expected"]),
                orjson.loads(row["observed"]),
                row["present"],
                row["detail"],
                row.get("refers"),
            )
        )
    lf = checked_calls(contracts, corpus, None, tools, clean_only).select("cid", "source", "line")
    if not include_all:
        lf = lf.filter(pl.col("cid").is_in(pl.Series(list(grouped), dtype=pl.UInt64).implode()))
    order = lf.sort(["source", "line", "cid"]).collect()  # three small columns, in output order
    for keys in order.iter_slices(batch):
        # Only this slice's results are in memory at a time.
        rows = keys.join(
            corpus.scan_calls()
            .select("cid", "call_id", "trace_id", pl.col("tool").cast(pl.String), "result")
            .filter(pl.col("cid").is_in(keys.get_column("cid").implode()))
            .collect(),
            on="cid",
            how="left",
            maintain_order="left",
        )
        for cid, source, line, call_id, trace_id, tool, res in rows.iter_rows():
            vs = grouped.get(cid, [])
            yield planned_receipt(
                contracts,
                tool,
                orjson.loads(res) if res is not None else None,
                sorted(vs, key=Violation.sort_key),
                visible.get(trace_id),
                encoder=encoder,
                call_id=call_id,
                source=source,
                line=line,
            )


# ----------------------------------------------------------------------------------------------------
# Loading a contract set for checking, and checking a stream of trace lines.


def load_contracts(path: str | Path) -> ContractSet:
    """`ContractSet.load` plus the checks the checker needs, all as `ContractsError`s naming the file.

    A wrong version or a schema-invalid file is refused by `ContractSet.load`; a file whose shape is
    wrong in ways the schema does not catch (missing keys, a rule this checker cannot evaluate, a fold
    naming an unknown rule) is refused here rather than failing half-way through a check.
    """
    src = str(path)
    try:
        cs = ContractSet.load(path)
    except ContractsError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckError(
            f"contract set does not have the expected shape ({type(e).__name__}: {e})",
            source=src,
            code="E_SCHEMA_INVALID",
        ) from None
    ids = {r.id for r in cs.all_rules()}
    for name, tc in cs.tools.items():
        for r in tc.rules:
            if r.tool != name:
                raise CheckError(
                    f"rule {r.id} is listed under tool '{name}' but names tool '{r.tool}'",
                    source=src,
                    field=f"tools.{name}.rules",
                    code="E_SCHEMA_INVALID",
                )
            try:
                code(r)
            except CheckError as e:
                raise CheckError(e.message, source=src, field=e.field, code=e.code) from None
    for fc in cs.folds:
        unknown = [i for i in fc.rules if i not in ids]
        if unknown:
            raise CheckError(
                f"fold {fc.fold} names unknown rule {unknown[0]}",
                source=src,
                field=f"folds[{fc.fold}].rules",
                code="E_SCHEMA_INVALID",
            )
    return cs


@dataclass(frozen=True, init=False)
class StreamItem:
    """One event of `check_lines`: a checked call (`receipt` None when it holds and not
    `include_all`), a call not checked (`skipped`: status error), or an unreadable line (`rejected`,
    with the reason). Calls filtered out by `tools` yield nothing.

    One is made per call, so `__init__` is written out: it fills the instance dict in one step, a
    quarter of the cost of the generated frozen `__init__` (one `object.__setattr__` a field); the
    class is otherwise the frozen dataclass it was (fields, equality, repr, `replace`)."""

    kind: Literal["call", "skipped", "rejected"]
    tool: str | None = None
    receipt: Receipt | None = None
    line: int = 0
    reason: str | None = None

    def __init__(
        self,
        kind: Literal["call", "skipped", "rejected"],
        tool: str | None = None,
        receipt: Receipt | None = None,
        line: int = 0,
        reason: str | None = None,
    ) -> None:
        _set_dict(
            self, "__dict__", {"kind": kind, "tool": tool, "receipt": receipt, "line": line, "reason": reason}
        )


_set_dict = object.__setattr__


def _flat_parse(rec: Any, source: str, line: int) -> tuple[list[ToolCall], dict[str, tuple[str, ...] | None]]:
    """Fallback parser (flat records) used when the ingest adapters are unavailable."""
    if not isinstance(rec, dict):
        raise ValueError("record is not a JSON object")
    for key in ("trace_id", "tool"):
        if not isinstance(rec.get(key), str):
            raise ValueError(f"missing or non-string '{key}'")
    if not isinstance(rec.get("arguments"), dict):
        raise ValueError("'arguments' is not an object")
    status = rec.get("status") or "ok"
    if status == "ok" and "result" not in rec:
        raise ValueError("missing 'result' (required unless status is 'error')")
    call = ToolCall(
        trace_id=rec["trace_id"],
        tool=rec["tool"],
        arguments=rec["arguments"],
        result=rec.get("result"),
        status=status,
        task_id=rec.get("task_id"),
        source=source,
        line=line,
    )
    tools = rec.get("tools")
    vis = tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else None
    return [call], {call.trace_id: vis}


class _LineParser:
    """Parse one line of any supported trace format into calls and visible tool sets.

    The format is fixed by `format`, or detected from the first line that some adapter claims; the
    ingest adapters (`output_contracts.traces.formats`) do the mapping, so `check -` reads what `ingest` reads.
    `flat` is set once the adapter is the flat one: `check_lines` then calls its `parse` directly (one
    call a line, no episode list to walk), the same adapter and so the same calls and errors.
    """

    def __init__(self, source: str, format: str) -> None:
        self.source = source
        self.format = format
        self.sha = sha256_hex(source)
        self.adapter: Any = None
        self.flat: Any = None  # the adapter's bound `parse` when it is the flat adapter
        self.dropped: list[str] = []  # calls the adapter left out of a kept episode (since last read)
        try:
            self.detect: Any = importlib.import_module("output_contracts.traces.formats.detect")
            base = importlib.import_module("output_contracts.traces.formats.adapter")
            flat = importlib.import_module("output_contracts.traces.formats.flat")
        except ImportError:  # pragma: no cover - adapters are part of the package
            self.detect = None
        else:
            self.context: Any = base.RecordContext
            self.flat_type: Any = flat.FlatAdapter
        if format != "auto" and self.detect is not None:
            self._use(self.detect.get_adapter(format))

    def _use(self, adapter: Any) -> None:
        # a reader of its own: session formats keep per-stream state (calls waiting for their results),
        # and `get_adapter` hands every caller the same registered instance
        adapter = adapter.begin()
        self.adapter = adapter
        if type(adapter) is self.flat_type:
            self.flat = adapter.parse

    def parse(self, rec: Any, line: int) -> tuple[list[ToolCall], dict[str, tuple[str, ...] | None]]:
        if self.detect is None:
            return _flat_parse(rec, self.source, line)
        if self.adapter is None:
            name, score = self.detect.best_match(rec)
            if name is None or score == 0:
                raise ValueError("record does not look like any supported trace format")
            self._use(self.detect.get_adapter(name))
        records = self.adapter.records(rec) if self.adapter.whole_file and isinstance(rec, list) else [rec]
        calls: list[ToolCall] = []
        visible: dict[str, tuple[str, ...] | None] = {}
        for r in records:
            parsed = self.adapter.parse(r, self.context(self.source, self.sha, line))
            calls.extend(parsed.calls)
            for ep in parsed.episodes:
                visible[ep.trace_id] = ep.tools
            self.dropped.extend(d.reason for d in parsed.dropped)
        return calls, visible


class _CallIds:
    """`make_call_id(sha, line, index)` for one source, cheaper: the hash state of the constant
    `"{sha}:"` prefix is computed once and copied per call (the same digest, one block less to hash)."""

    def __init__(self, source_sha256: str) -> None:
        self._prefix = hashlib.sha256(f"{source_sha256}:".encode())

    def __call__(self, line: int, index: int) -> str:
        h = self._prefix.copy()
        h.update(f"{line}:{index}".encode())
        return h.hexdigest()[:16]


#: Keys of a flat record that declare its episode (`reward`, `tools` and the run facts, as the flat
#: adapter reads them): a line without any of them leaves the episode's visible tool set as it was.
_RUN_FACTS = frozenset(("trial", "agent_cost", "user_cost"))
_INT64_MAX = 2**63 - 1


def _flat_fields(rec: Any, seen: list[Any]) -> tuple[Any, ...] | None:
    """What `check -` needs of one well-typed flat record, without building its `ToolCall`/`Episode`.

    `(trace_id, tool, arguments, result, status, task, declares, tools)`, where `declares` says whether
    the line declares its episode and `tools` is then its visible tool set. The flat adapter's own
    tests, taken in the same order, decide what is well-typed; anything missing, mistyped or unusual
    (an integer id, a non-string error, a `tools` list holding objects, a bad reward...) gives None
    and the caller hands the record to the adapter, which parses it or raises its own error, so a line
    is accepted, refused and worded exactly as the adapter does (`tests/checks/test_stream.py`
    compares the two on random records). `seen`: `[tools list, names]` of the last plain-name list.
    """
    if type(rec) is not dict:
        return None
    get = rec.get
    trace_id = get("trace_id")
    tool = get("tool")
    args = get("arguments")
    if (
        type(trace_id) is not str
        or not trace_id
        or type(tool) is not str
        or not tool
        or type(args) is not dict
    ):
        return None
    status = get("status") or "ok"
    if status == "ok":
        if "result" not in rec:
            return None
    elif status != "error":
        return None
    step = get("step")
    if step is not None and (type(step) is not int or step < 0 or step > _INT64_MAX):
        return None
    v = get("labels")
    if v is not None and type(v) is not dict:
        return None
    task_id = get("task_id")
    if task_id is not None and type(task_id) is not str:
        return None
    v = get("error")
    if v is not None and type(v) is not str:
        return None
    v = get("started_at")
    if v is not None and type(v) is not str:
        return None
    result = get("result")
    if type(result) is str:
        result = decode_result(result)
    task = task_id if task_id is not None else trace_id
    tools_v = get("tools")
    reward = get("reward")
    if tools_v is None and reward is None and not _RUN_FACTS.intersection(rec):
        return trace_id, tool, args, result, status, task, False, None
    if reward is not None and not (type(reward) is int or (type(reward) is float and math.isfinite(reward))):
        return None
    if tools_v is None:
        tools = None
    elif seen and seen[0] == tools_v:
        tools = seen[1]
    else:
        tools = tool_names(tools_v)
        if tools is None:
            return None
        if all(type(t) is str for t in tools_v):
            seen[:] = [list(tools_v), tools]
    return trace_id, tool, args, result, status, task, True, tools


def check_lines(
    contracts: ContractSet,
    lines: Iterable[bytes],
    *,
    source: str = "-",
    format: str = "auto",
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    encoder: str = "v2",
    include_all: bool = False,
) -> Iterator[StreamItem]:
    """Check trace lines as they arrive (`contracts check -`): one `StreamItem` per call or bad line.

    Memory stays flat: each line is parsed, checked with `compiled_violations` and forgotten; only the
    visible tool sets of episodes seen so far are kept (one small tuple per trace), and, for contract sets
    with CONSISTENT rules, each episode's `EpisodeMemory` (the latest value per entity and tracked place). Call ids hash the
    source *name* (the stream has no file digest), the line and the call's index within the line.

    Flat records (once the format is known to be flat) take `_flat_fields`: the fields are read from
    the decoded line, no `ToolCall` or `Episode` is built; a record it does not vouch for goes to the
    flat adapter, every other format to `_LineParser.parse`. Each line's items are given before the
    next line is read (`check_batches` is the same check, a batch of lines at a time).
    """
    batches = ((raw,) for raw in lines)  # one line at a time: its items before the next line is read
    for batch in _stream(contracts, batches, source, format, fold, tools, codes, encoder, include_all, True):
        yield from batch.items


@dataclass(frozen=True)
class StreamBatch:
    """What `check_batches` gives per batch of lines: `items`, the calls with a receipt, the calls not
    checked (`skipped`) and the unreadable lines (`rejected`), in input order; `checked`, how many calls
    of each tool were checked (those with a receipt included). A call that holds is only counted."""

    items: list[StreamItem]
    checked: dict[str, int]


def check_batches(
    contracts: ContractSet,
    batches: Iterable[Sequence[bytes]],
    *,
    source: str = "-",
    format: str = "auto",
    fold: Fold = None,
    tools: Sequence[str] | None = None,
    codes: Sequence[str] | None = None,
    encoder: str = "v2",
    include_all: bool = False,
) -> Iterator[StreamBatch]:
    """`check_lines` a batch of lines at a time (`contracts check -`: what one read of stdin holds):
    one `StreamBatch` per batch, given before the next batch is asked for, so a reader that waits for
    input has answered every line it read. The same calls, receipts and order as `check_lines`, without
    an item per call that holds. When a batch fails part way (an error that stops the stream), the
    items of the lines before the failure are given first, as `check_lines` gives them."""
    return _stream(contracts, batches, source, format, fold, tools, codes, encoder, include_all, False)


#: What `_stream`'s per-call check returns besides a receipt: a call that holds, one not checked.
_HOLDS: Any = object()
_SKIPPED: Any = object()


def _stream(
    contracts: ContractSet,
    batches: Iterable[Sequence[bytes]],
    source: str,
    format: str,
    fold: Fold,
    tools: Sequence[str] | None,
    codes: Sequence[str] | None,
    encoder: str,
    include_all: bool,
    every: bool,
) -> Iterator[StreamBatch]:
    """The engine of `check_lines` (`every`: an item for every checked call) and `check_batches`."""
    parser = _LineParser(source, format)
    call_ids = _CallIds(parser.sha)
    visible: dict[str, tuple[str, ...] | None] = {}
    # per trace: what CONSISTENT compares later calls with (None: the checker tracks no place)
    memories: dict[str, EpisodeMemory | None] = {}
    blanks: dict[int | None, EpisodeMemory | None] = {}  # per checker: an empty memory, copied per trace
    code_key = tuple(codes) if codes is not None else None  # a tuple: the compiled program's cache key as is
    tool_set = frozenset(tools) if tools is not None else None
    loads = orjson.loads
    seen: list[Any] = []

    def blank(f: int | None) -> EpisodeMemory | None:
        """An episode's empty memory for checker `f`, or None when it tracks no place: a memory without
        places remembers nothing and finds nothing, so the call is checked as without one."""
        if f not in blanks:
            m = compiled_memory(contracts, f)
            blanks[f] = m if m.pairs else None
        b = blanks[f]
        return None if b is None else b.blank()

    def one(
        trace_id: str,
        tool: str,
        args: dict[str, Any],
        result: Any,
        status: str,
        task: str,
        line: int,
        index: int,
    ) -> Any:
        """Check one call (`line`: the call's own line, for its id and receipt): its `Receipt`, `_HOLDS`,
        `_SKIPPED` (status error), or None (a tool filtered out). Its id is hashed only when something
        needs it: a receipt, or a sighting its episode keeps."""
        f = contracts.fold_of(task) if fold == "cross" else fold
        if trace_id in memories:
            memory = memories[trace_id]
        else:
            memory = memories[trace_id] = blank(f)
        lazy_id = lambda: call_ids(line, index)  # noqa: E731 - a closure per call, cheaper than a hash
        if tool_set is not None and tool not in tool_set:
            # not checked, but an earlier call (or a touch) for those that are
            if memory is not None:
                memory.record(tool, args, result, lazy_id, ok=status == "ok")
            return None
        if status != "ok":
            if memory is not None:
                memory.record(tool, args, None, lazy_id, ok=False)
            return _SKIPPED
        vs = compiled_violations(
            contracts, tool, args, result, fold=f, codes=code_key, memory=memory, call_id=lazy_id
        )
        if not vs and not include_all:
            return _HOLDS
        return planned_receipt(
            contracts,
            tool,
            result,
            vs,
            visible.get(trace_id),
            encoder=encoder,
            call_id=call_ids(line, index),
            source=source,
            line=line,
        )

    def put(items: list[StreamItem], checked: dict[str, int], tool: str, got: Any, n: int) -> None:
        """The item of one call's answer (or its count alone)."""
        if got is None:
            return
        if got is _SKIPPED:
            items.append(StreamItem("skipped", tool, None, n))
            return
        if every:
            items.append(StreamItem("call", tool, None if got is _HOLDS else got, n))
            return
        checked[tool] = checked.get(tool, 0) + 1
        if got is not _HOLDS:
            items.append(StreamItem("call", tool, got, n))

    n = 0
    for batch in batches:
        items: list[StreamItem] = []
        checked: dict[str, int] = {}
        add = items.append

        try:
            for raw in batch:
                n += 1
                if raw[:1] != b"{" and not raw.strip():
                    continue
                flat = parser.flat
                fields = None
                try:
                    rec = loads(raw)
                    if flat is not None:  # the flat adapter's format: one call a line
                        fields = _flat_fields(rec, seen)
                        if fields is None:
                            parsed = flat(rec, parser.context(source, parser.sha, n))
                    else:
                        calls, vis = parser.parse(rec, n)
                except ContractsError:
                    raise
                except Exception as e:  # RecordError, JSON errors, shape errors: the line is rejected
                    add(StreamItem("rejected", line=n, reason=str(getattr(e, "reason", e))))
                    continue
                if fields is not None:
                    trace_id, tool, args, result, status, task, declares, vis_tools = fields
                    if declares:
                        visible[trace_id] = vis_tools
                    got = one(trace_id, tool, args, result, status, task, n, 0)
                    if got is _HOLDS and not every:  # the usual case, counted in line
                        checked[tool] = checked.get(tool, 0) + 1
                    else:
                        put(items, checked, tool, got, n)
                    continue
                if flat is not None:
                    calls = parsed.calls
                    for ep in parsed.episodes:
                        visible[ep.trace_id] = ep.tools
                    if parsed.dropped:
                        parser.dropped.extend(d.reason for d in parsed.dropped)
                else:
                    visible.update(vis)
                if parser.dropped:  # as ingest does: a call left out of its episode is a reject
                    for reason in parser.dropped:
                        add(StreamItem("rejected", line=n, reason=reason))
                    parser.dropped.clear()
                for call in calls:
                    got = one(
                        call.trace_id,
                        call.tool,
                        call.arguments,
                        call.result,
                        call.status,
                        call.task,
                        call.line or n,
                        call.index,
                    )
                    put(items, checked, call.tool, got, n)
        except BaseException:
            if items or checked:  # what the lines before the failure gave, then the failure
                yield StreamBatch(items, checked)
            raise
        yield StreamBatch(items, checked)
