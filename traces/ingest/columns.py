"""Ingest step 3, columns: tool calls -> the column frames of `calls`, `leaves` and `episodes` Parquet.

Why a module of its own: this is the hot path of a large ingest (every JSON node of every argument and
result becomes a leaf row), and it is pure — no files, no formats — so it can be measured and tested
alone (`tests/traces/test_ingest_speed.py`, `test_leaves_property.py`). `Columns` holds one chunk of
calls in flat Python lists and turns it into polars frames; `stage_calls` adds a parsed record's calls
all or nothing; `truncate` undoes a half-added record; `episode_row` makes an episode's row (merged into
`episodes.parquet` at commit by `episodes`). Writing the frames (chunk parts, the final files) is the
run's and the commit's business (`run`, `commit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from hashlib import blake2b
from typing import Any

import numpy as np
import orjson
import polars as pl

from output_contracts.jsonutil import canonical_json
from output_contracts.traces.corpus import CALL_SCHEMA, LATE_EPISODE_COLUMNS
from output_contracts.traces.formats.adapter import Parsed, RecordError
from output_contracts.traces.leaves import KIND_DTYPE, LEAF_SCHEMA, SIDE_DTYPE, SIDES
from output_contracts.traces.pointers import KINDS
from output_contracts.traces.records import Episode, ToolCall, make_call_id


def canon(value: Any) -> str:
    """Canonical JSON text (sorted keys): orjson, or `canonical_json` for what orjson cannot encode."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return canonical_json(value).decode()


#: See `Columns._lookups`.
CACHE_PROBE = 1000
CACHE_MIN_HITS = 0.5


def _text_key(value: Any) -> bytes | None:
    """The `Columns._results` key of `value`: a 128-bit BLAKE2b digest of orjson's text of it (keys in
    their given order), or None when orjson cannot encode it (nested deeper than its limit): then the
    value is walked as usual. A digest, not the text: holding every distinct result's text for a chunk
    raised peak RSS by 140 MiB at 300k calls (heap fragmentation); a collision is as likely as two
    random 128-bit strings being equal (call ids already rest on 64 bits of sha256)."""
    try:
        return blake2b(orjson.dumps(value), digest_size=16).digest()
    except TypeError:
        return None


#: CALL_SCHEMA with plain strings for categorical/enum columns: values go in as text, then one cast.
_CALL_ROW_SCHEMA: dict[str, pl.DataType] = {
    k: (pl.String() if isinstance(v, pl.Categorical | pl.Enum) else v) for k, v in CALL_SCHEMA.items()
}
#: The leaf columns the walk produces, in the order of its row tuples (`leaves.Leaf`).
_LEAF_ROW_SCHEMA: dict[str, pl.DataType] = {
    "path": pl.String(),
    "pattern": pl.String(),
    "kind": pl.UInt8(),  # the index in KINDS: a small int per node, not a string (cheaper to build)
    "num": pl.Float64(),
    "str": pl.String(),
    "len": pl.Int64(),
}
#: The kinds as an Enum series: the walk writes a kind as its index here (0 null, 1 bool, 2 int,
#: 3 float, 4 string, 5 array, 6 object), which one gather turns into the column.
_KIND_ENUM = pl.Series("kind", KINDS, dtype=KIND_DTYPE)
#: The sides as an Enum series, gathered by a segment's side code (0 arguments, 1 result).
_SIDE_ENUM = pl.Series("side", SIDES, dtype=SIDE_DTYPE)
assert KINDS == ("null", "bool", "int", "float", "string", "array", "object"), "the walk's kind codes"
_CALL_W = len(_CALL_ROW_SCHEMA)
_LEAF_W = len(_LEAF_ROW_SCHEMA)


def _strided_frame(flat: list[Any], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """The frame of rows laid end to end in `flat` (row-major, `len(schema)` values a row).

    Each column is a strided slice (a C-level copy of pointers) handed to polars as one list: several
    times cheaper than building the frame from row tuples, and no tuple per row is kept alive.
    """
    w = len(schema)
    return pl.DataFrame(
        [pl.Series(name, flat[i::w], dtype=dtype) for i, (name, dtype) in enumerate(schema.items())]
    )


class Columns:
    """Column values of one chunk of calls, and the leaf rows of their arguments and results.

    This is the hot path. The walk writes each JSON node's six values with one C-level `extend` of a
    short-lived tuple onto one flat list (six appends per node measured slower), inlines scalar children,
    which are most nodes, reuses the path string as the pattern while no array is crossed (there they
    are equal), and caches the children's paths per object shape and place (a quarter of the walk on the
    sample world). Polars takes each column as a strided slice of that list once per chunk (`frames`); the
    call rows are laid out the same way. The call-level columns of leaves (`cid`, `tool`, `task_id`) are not
    repeated per node in Python but gathered by polars from one (call, side, count) segment per side;
    leaves join calls by `cid` (no per-leaf `call_id` string: nothing reads one).
    """

    def __init__(self) -> None:
        self.call_flat: list[Any] = []  # `_CALL_W` values per call, in CALL_SCHEMA order
        self.n = 0
        self.seg_call: list[int] = []
        self.seg_side: list[int] = []  # 0 arguments, 1 result (the index in SIDES)
        self.seg_n: list[int] = []
        #: the segment's first row in `flat` (row number, not list index): a repeated result's segment
        #: points at the rows of its first occurrence, which `frames` gathers again (no copy in Python)
        self.seg_start: list[int] = []
        self.flat: list[Any] = []  # `_LEAF_W` values per leaf row: path, pattern, kind, num, str, len
        self._walk = self._make_walker()
        #: A container result's JSON text (orjson, keys in their given order; as a digest, `_text_key`)
        #: -> its first row in `flat`, its rows and its canonical text: real tools answer the same
        #: lookup again and again (τ-bench: 74-90% of result nodes are in a result seen before in the
        #: chunk, the sample world 30%), and a repeat's rows are the first one's, gathered again by
        #: `frames`. Only for values straight from `orjson.loads` (`add_fields(plain=True)`), whose
        #: text determines every row (finite floats, str/int/float/bool/None/list/dict exactly; int
        #: and float texts differ); cleared whenever rows are removed.
        self._results: dict[bytes, tuple[int, int, str]] = {}
        #: lookups and hits of `_results` in this chunk: after `CACHE_PROBE` lookups with fewer than
        #: `CACHE_MIN_HITS` of them hits, the chunk stops looking (the key costs about as much as a
        #: hit saves when most results are new, as in the generated world: 31% repeats)
        self._lookups = 0
        self._hits = 0

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        """The rows the walk wrote, as tuples (path, pattern, kind, num, str, len): for tests, not the
        hot path (a repeated result's rows are written once: `leaf_rows` has every call's)."""
        f = self.flat
        kinds = [KINDS[k] for k in f[2::_LEAF_W]]
        return list(
            zip(f[0::_LEAF_W], f[1::_LEAF_W], kinds, *(f[i::_LEAF_W] for i in range(3, _LEAF_W)), strict=True)
        )

    @property
    def leaf_rows(self) -> list[tuple[Any, ...]]:
        """Every call's leaf rows in call order, repeats included (`rows` through the segments): for
        tests."""
        rows = self.rows
        return [r for s, n in zip(self.seg_start, self.seg_n, strict=True) for r in rows[s : s + n]]

    def _make_walker(self) -> Callable[[Any, str, str], None]:
        R = self.flat.extend

        # (path, pattern, keys) -> the (path, pattern) of each child: objects of one shape at one place
        # (every result of a tool) come back all the time; a hit saves the escaping and the string
        # concatenations, and hands out the same path strings again. Lives as long as the chunk.
        shapes: dict[tuple[str, str, tuple[str, ...]], list[tuple[str, str]]] = {}

        def child_paths(v: dict[str, Any], path: str, pat: str, key: Any) -> list[tuple[str, str]]:
            same = path is pat  # no array above: the pattern is the path itself
            out = []
            for k in v:
                if "~" in k or "/" in k:
                    k = k.replace("~", "~0").replace("/", "~1")
                p = path + "/" + k
                out.append((p, p if same else pat + "/" + k))
            shapes[key] = out
            return out

        def walk(v: Any, path: str, pat: str) -> None:
            t = type(v)
            if t is dict:
                R((path, pat, 6, None, None, len(v)))
                key = (path, pat, tuple(v))
                paths = shapes.get(key)
                if paths is None:
                    paths = child_paths(v, path, pat, key)
                for (p, q), c in zip(paths, v.values()):  # noqa: B905 (same length: the key holds the keys)
                    ct = type(c)
                    if ct is str:
                        R((p, q, 4, None, c, len(c)))
                    elif ct is int:
                        R((p, q, 2, float(c), None, None))
                    elif ct is float:
                        R((p, q, 3, c, None, None))
                    elif ct is bool:
                        R((p, q, 1, 1.0 if c else 0.0, None, None))
                    elif c is None:
                        R((p, q, 0, None, None, None))
                    else:
                        walk(c, p, q)
            elif t is list:
                R((path, pat, 5, None, None, len(v)))
                q = pat + "/*"
                for i, c in enumerate(v):
                    walk(c, f"{path}/{i}", q)
            elif t is str:
                R((path, pat, 4, None, v, len(v)))
            elif t is bool:
                R((path, pat, 1, 1.0 if v else 0.0, None, None))
            elif t is int:
                R((path, pat, 2, float(v), None, None))
            elif t is float:
                R((path, pat, 3, v, None, None))
            elif v is None:
                R((path, pat, 0, None, None, None))
            else:
                raise TypeError(f"not a JSON value at '{path}': {t.__name__}")

        return walk

    def add(self, c: ToolCall, call_id: str, step: int) -> None:
        """Append one call and its leaves (arguments, and the result unless it is an error without one)."""
        self.add_fields(
            call_id,
            c.trace_id,
            c.task,
            step,
            c.tool,
            c.status,
            c.error,
            c.arguments,
            c.result,
            c.started_at,
            c.labels,
            c.source,
            c.line,
            c.index,
            c.meta,
        )

    def add_fields(
        self,
        call_id: str,
        trace_id: str,
        task: str,
        step: int,
        tool: str,
        status: str,
        error: str | None,
        arguments: dict[str, Any],
        result: Any,
        started_at: str | None,
        labels: dict[str, Any],
        source: str,
        line: int,
        index: int,
        meta: dict[str, Any] | None,
        *,
        plain: bool = False,
    ) -> None:
        """`add` from plain values: the flat format's path, which builds no `ToolCall` (`read`).
        `plain`: the values come straight from `orjson.loads`, so a repeated result's rows are copied
        (`_results`)."""
        has_result = not (status == "error" and result is None)
        flat = self.flat
        base = len(flat)
        key = None
        result_text: str | None = None
        try:
            self._walk(arguments, "", "")
            n_arg = (len(flat) - base) // _LEAF_W
            res_start = len(flat) // _LEAF_W
            n_res = 0
            if has_result:
                if plain and self._lookups >= 0 and (type(result) is dict or type(result) is list):
                    key = _text_key(result)
                    seen = self._results.get(key) if key is not None else None
                    self._lookups += 1
                    if seen is not None:
                        res_start, n_res, result_text = seen
                        key = None
                        self._hits += 1
                    if self._lookups == CACHE_PROBE and self._hits < CACHE_PROBE * CACHE_MIN_HITS:
                        self._lookups = -1  # off for this chunk
                        self._results.clear()
                if result_text is None:
                    self._walk(result, "", "")
                    n_res = len(flat) // _LEAF_W - res_start
            args_text = canon(arguments)  # the texts in this order: the first failure names the call
            if has_result and result_text is None:
                result_text = canon(result)
            labels_text = canon(labels) if labels else "{}"
            meta_text = canon(meta) if meta else None
        except (TypeError, ValueError, RecursionError):
            del flat[base:]
            self._results.clear()
            raise
        if key is not None and result_text is not None and self._lookups >= 0:
            self._results[key] = (res_start, n_res, result_text)
        fault = labels.get("fault") if labels else None
        self.call_flat.extend(
            (
                call_id,
                int(call_id, 16),
                trace_id,
                task,
                step,
                tool,
                status,
                error,
                args_text,
                result_text,
                started_at,
                labels_text,
                None if fault is None else str(fault),
                source,
                line,
                index,
                meta_text,
            )
        )
        n = self.n
        self.seg_call.append(n)
        self.seg_side.append(0)
        self.seg_n.append(n_arg)
        self.seg_start.append(base // _LEAF_W)
        if has_result:
            self.seg_call.append(n)
            self.seg_side.append(1)
            self.seg_n.append(n_res)
            self.seg_start.append(res_start)
        self.n = n + 1

    def trace_calls(self, source: str) -> dict[str, int]:
        """Calls of this chunk per trace, of the calls from `source` (for `read`'s step counts)."""
        keys = list(CALL_SCHEMA)
        ti, si = keys.index("trace_id"), keys.index("source")
        out: dict[str, int] = {}
        for t, src in zip(self.call_flat[ti::_CALL_W], self.call_flat[si::_CALL_W], strict=True):
            if src == source:
                out[t] = out.get(t, 0) + 1
        return out

    def release(self) -> None:
        """Empty every list now: the recursive walker is a reference cycle holding the lists' appends,
        so without this a flushed chunk would stay in memory until the cyclic GC ran."""
        for col in (self.flat, self.call_flat, self.seg_call, self.seg_side, self.seg_n, self.seg_start):
            col.clear()
        self._results.clear()

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The chunk as (calls, leaves) frames with the corpus schemas; calls in ingest order, leaves
        ordered by task (stable: a sorted run, `order`). The order is decided per call, on the
        calls' tasks, and applied to the leaves as one gather: no per-leaf sort key."""
        calls = _strided_frame(self.call_flat, _CALL_ROW_SCHEMA).cast(CALL_SCHEMA)  # type: ignore[arg-type]
        rank = (
            calls.select(pl.col("task_id").cast(pl.String))
            .with_row_index("ci")
            .sort("task_id", maintain_order=True)
            .with_row_index("rank")
            .sort("ci")
            .get_column("rank")
        )
        ci = np.array(self.seg_call, dtype=np.uint32)
        side = np.array(self.seg_side, dtype=np.uint32)
        n = np.array(self.seg_n, dtype=np.int64)
        start = np.array(self.seg_start, dtype=np.int64)
        leaves = _strided_frame(self.flat, _LEAF_ROW_SCHEMA)
        leaves = leaves.with_columns(_KIND_ENUM.gather(leaves.get_column("kind")))
        if not rank.is_sorted():  # calls not in task order: segments by their call's rank, stable
            # (a call's segments stay in order: arguments, result)
            order = np.argsort(rank.to_numpy()[ci], kind="stable")
            ci, side, n, start = ci[order], side[order], n[order], start[order]
        at = np.cumsum(n) - n  # each segment's first row in the chunk's leaves
        if not np.array_equal(at, start):  # out of order, or a repeated result: one gather
            row = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(at - start, n)
            leaves = leaves[pl.Series("row", row, dtype=pl.UInt32)]
        head = calls.select("cid", "tool", "task_id")[pl.Series("ci", np.repeat(ci, n), dtype=pl.UInt32)]
        sides = _SIDE_ENUM.gather(pl.Series("side", np.repeat(side, n), dtype=pl.UInt32))
        leaves = pl.concat([head, sides.to_frame(), leaves], how="horizontal").select(
            [pl.col(k).cast(t) for k, t in LEAF_SCHEMA.items()]
        )
        return calls, leaves


def truncate(cols: Columns, n: int) -> None:
    """Undo calls appended after the first `n` of this chunk (a record failed half-way)."""
    if cols.n == n:
        return
    keep_segs = sum(1 for ci in cols.seg_call if ci < n)
    # the first segment dropped is call n's arguments, always walked: its first row is where call n began
    keep_rows = cols.seg_start[keep_segs] if keep_segs < len(cols.seg_start) else len(cols.flat) // _LEAF_W
    del cols.call_flat[n * _CALL_W :]
    for lst in (cols.seg_call, cols.seg_side, cols.seg_n, cols.seg_start):
        del lst[keep_segs:]
    del cols.flat[keep_rows * _LEAF_W :]
    cols._results.clear()  # rows it points at may be gone
    cols.n = n


def add_call(
    cols: Columns,
    steps: dict[str, int],
    sha: str,
    line: int,
    index: int,
    trace_id: str,
    task: str,
    step: int | None,
    tool: str,
    status: str,
    error: str | None,
    arguments: dict[str, Any],
    result: Any,
    started_at: str | None,
    labels: dict[str, Any],
    source: str,
    meta: dict[str, Any] | None,
    *,
    plain: bool = False,
) -> None:
    """Add one call from plain values: its step (given, else the calls seen so far in its trace, counted
    in `steps`), its call id (source sha256, line, index); a value that cannot be encoded is a
    `RecordError` naming the call, with nothing of it added. The one per-call body of `stage_calls`
    and of the flat format's fused path (`read`)."""
    seen = steps.get(trace_id, 0)
    steps[trace_id] = seen + 1
    try:
        cols.add_fields(
            make_call_id(sha, line, index),
            trace_id,
            task,
            step if step is not None else seen,
            tool,
            status,
            error,
            arguments,
            result,
            started_at,
            labels,
            source,
            line,
            index,
            meta,
            plain=plain,
        )
    except (TypeError, ValueError, RecursionError) as e:
        why = "is nested too deeply" if isinstance(e, RecursionError) else f"is not JSON-encodable: {e}"
        raise RecordError(f"call {index} ({tool}) {why}") from None


def stage_calls(cols: Columns, parsed: Parsed, sha: str, steps: dict[str, int]) -> int:
    """Add a record's calls to the chunk; all or nothing (a bad value rejects the whole record)."""
    start_n = cols.n
    for c in parsed.calls:
        try:
            add_call(
                cols,
                steps,
                sha,
                c.line,
                c.index,
                c.trace_id,
                c.task,
                c.step,
                c.tool,
                c.status,
                c.error,
                c.arguments,
                c.result,
                c.started_at,
                c.labels,
                c.source,
                c.meta,
            )
        except RecordError:
            truncate(cols, start_n)
            raise
    return len(parsed.calls)


def episode_row(
    ep: Episode, source: str, line: int, tools_text: Callable[[tuple[str, ...]], str] | None = None
) -> tuple[Any, ...]:
    """The episode facts row of `Run.episodes`; `tools_text` (e.g. `Run.tools_text`) canonicalises `tools`."""
    tools = ep.tools
    if tools is None:
        tools_j = None
    else:
        tools_j = tools_text(tools) if tools_text is not None else canon(list(tools))
    return (
        ep.trace_id,
        ep.task_id,
        ep.reward,
        canon(ep.labels) if ep.labels else None,
        tools_j,
        source,
        line,
        ep.trial,
        ep.agent_cost,
        ep.user_cost,
    )


#: The columns of an `episode_row`, in its order.
EPISODE_ROW_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "task_id": pl.String(),
    "reward": pl.Float64(),
    "labels": pl.String(),
    "tools": pl.String(),
    "source": pl.String(),
    "line": pl.Int64(),
    **LATE_EPISODE_COLUMNS,
}


def episode_frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    """Episode rows (`episode_row`) as a frame with `EPISODE_ROW_SCHEMA`."""
    return pl.DataFrame(rows, schema=EPISODE_ROW_SCHEMA, orient="row")
