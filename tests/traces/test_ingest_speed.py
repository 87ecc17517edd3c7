"""The fast paths of ingest: column-wise leaf frames, the flat adapter's `tools` cache, the
episode row caches and the default chunk size. Each is checked against the plain computation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.progress import NULL_PROGRESS
from output_contracts.traces.corpus import CALL_SCHEMA
from output_contracts.traces.formats.adapter import (
    RecordContext,
    RecordError,
    optional_reward,
    run_facts,
    tool_names,
)
from output_contracts.traces.formats.flat import FlatAdapter
from output_contracts.traces.ingest import DEFAULT_CHUNK_ROWS, ingest
from output_contracts.traces.ingest.columns import Columns as _Columns
from output_contracts.traces.ingest.columns import truncate as _truncate
from output_contracts.traces.ingest.run import Run
from output_contracts.traces.leaves import LEAF_SCHEMA, flatten
from output_contracts.traces.records import ToolCall

CTX = RecordContext("s.jsonl", "ab" * 32, 1)


def _calls() -> list[ToolCall]:
    return [
        ToolCall("t1", "get", {"a/b": 1, "x~y": [1, "s", None]}, {"items": [{"p": 1.5}, {"p": True}]}),
        ToolCall("t1", "put", {}, None, status="error", error="boom", labels={"fault": "drop"}),
        ToolCall("t2", "get", {"q": {"r": {"s": ""}}}, [[], {}, 3], task_id="task", started_at="2026"),
        ToolCall("t2", "put", {"n": -0.0}, "text", status="ok", meta={"k": 1}, line=7, index=2),
    ]


def _filled() -> tuple[_Columns, list[ToolCall]]:
    cols = _Columns()
    calls = _calls()
    for i, c in enumerate(calls):
        cols.add(c, f"{i + 1:016x}", i)
    return cols, calls


def _reference_leaves(calls: list[ToolCall]) -> pl.DataFrame:
    """The leaves frame built row by row from the reference `flatten`."""
    rows: list[tuple[Any, ...]] = []
    for i, c in enumerate(calls):
        cid = f"{i + 1:016x}"
        sides = [("arg", c.arguments)]
        if not (c.status == "error" and c.result is None):
            sides.append(("result", c.result))
        for side, value in sides:
            rows.extend((int(cid, 16), c.tool, c.task, side, *leaf) for leaf in flatten(value))
    # leaves come ordered by task, stable (a sorted run): a call's nodes stay together and in order
    rows.sort(key=lambda r: r[2])
    return pl.DataFrame(rows, schema=dict(LEAF_SCHEMA), orient="row")


def test_leaves_frame_matches_row_by_row_reference() -> None:
    cols, calls = _filled()
    got_calls, got_leaves = cols.frames()
    want = _reference_leaves(calls)
    assert got_leaves.height == 24  # 12 + 1 + 8 + 3 nodes
    assert got_leaves.schema == want.schema
    assert got_leaves.equals(want)
    # spot values: escaped keys, array patterns, the error call without a result side
    assert got_leaves.filter(pl.col("cid") == 1).select("path", "pattern").rows()[:4] == [
        ("", ""),
        ("/a~1b", "/a~1b"),
        ("/x~0y", "/x~0y"),
        ("/x~0y/0", "/x~0y/*"),
    ]
    assert got_leaves.filter(pl.col("cid") == 2)["side"].to_list() == ["arg"]
    assert got_calls.schema == pl.Schema(CALL_SCHEMA)
    assert got_calls["call_id"].to_list() == [f"{i:016x}" for i in (1, 2, 3, 4)]
    assert got_calls["step"].to_list() == [0, 1, 2, 3]
    assert got_calls["task_id"].cast(pl.String).to_list() == ["t1", "t1", "task", "t2"]
    assert got_calls["fault"].to_list() == [None, "drop", None, None]
    assert got_calls["result"].to_list() == ['{"items":[{"p":1.5},{"p":true}]}', None, "[[],{},3]", '"text"']
    assert got_calls["meta"].to_list() == [None, None, None, '{"k":1}']
    assert (got_calls["line"].to_list(), got_calls["index"].to_list()) == ([0, 0, 0, 7], [0, 0, 0, 2])


def test_rows_view_and_truncate() -> None:
    cols, calls = _filled()
    assert cols.rows == [leaf for c in calls for leaf in _sides(c)]
    _truncate(cols, 2)
    assert cols.n == 2
    assert cols.rows == [leaf for c in calls[:2] for leaf in _sides(c)]
    _, leaves = cols.frames()
    assert leaves.equals(_reference_leaves(calls[:2]))
    cols.release()
    assert (cols.rows, cols.call_flat, cols.seg_n) == ([], [], [])


def _sides(c: ToolCall) -> list[tuple[Any, ...]]:
    out = list(flatten(c.arguments))
    if not (c.status == "error" and c.result is None):
        out.extend(flatten(c.result))
    return out


def test_failed_call_leaves_no_partial_rows() -> None:
    cols, _ = _filled()
    before = cols.rows
    with pytest.raises(TypeError, match="not a JSON value at '/no': object"):
        cols.add(ToolCall("t3", "bad", {"ok": 1, "no": object()}, {}), "00000000000000ff", 0)
    assert cols.rows == before
    assert cols.n == 4


def _flat_rec(trace: str, tools: Any, reward: Any = 1.0) -> dict[str, Any]:
    return {"trace_id": trace, "tool": "get", "arguments": {}, "result": {}, "tools": tools, "reward": reward}


def test_flat_tools_cache_is_exact() -> None:
    ad = FlatAdapter()
    a = ad.parse(_flat_rec("t1", ["x", "y"]), CTX).episodes[0]
    b = ad.parse(_flat_rec("t2", ["x", "y"]), CTX).episodes[0]
    assert a.tools == ("x", "y")
    assert b.tools is a.tools  # reused: equal list
    c = ad.parse(_flat_rec("t2", ["x", "y", "x", "z"]), CTX).episodes[0]
    assert c.tools == ("x", "y", "z")
    # the cache holds a copy: changing the caller's list in place cannot leak into the next answer
    mine = ["p", "q"]
    assert ad.parse(_flat_rec("t3", mine), CTX).episodes[0].tools == ("p", "q")
    mine.append("r")
    assert ad.parse(_flat_rec("t3", mine), CTX).episodes[0].tools == ("p", "q", "r")
    # object entries are not cached, and still answered right after an in-place change
    objs: list[Any] = [{"name": "n1"}, {"type": "function", "function": {"name": "n2"}}]
    assert ad.parse(_flat_rec("t4", objs), CTX).episodes[0].tools == ("n1", "n2")
    objs[0]["name"] = "n9"
    assert ad.parse(_flat_rec("t4", objs), CTX).episodes[0].tools == tool_names(objs) == ("n9", "n2")
    # validation still runs on a cache hit
    ad.parse(_flat_rec("t5", ["x", "y"]), CTX)
    with pytest.raises(RecordError) as e:
        ad.parse(_flat_rec("t5", ["x", "y"], reward=True), CTX)
    assert e.value.field == "reward"
    with pytest.raises(RecordError) as e:
        ad.parse(_flat_rec("t5", "x,y"), CTX)
    assert e.value.field == "tools"
    none = ad.parse(_flat_rec("t6", None, reward=None), CTX)
    assert none.episodes == ()


def test_episode_tools_from_alternating_lists(tmp_path: Path) -> None:
    recs = []
    for i in range(12):
        r = _flat_rec(f"ep-{i % 3}", [["a", "b"], ["b", "a"], ["c"]][i % 3], reward=None if i < 3 else i / 2)
        recs.append(r)
    recs.append(_flat_rec("ep-9", None, reward=None))
    f = tmp_path / "a.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    ingest([f], tmp_path / "c", chunk_rows=5)
    eps = pl.read_parquet(tmp_path / "c" / "episodes.parquet")
    assert eps.select("trace_id", "tools", "reward", "n_calls").rows() == [
        ("ep-0", '["a","b"]', 1.5, 4),
        ("ep-1", '["b","a"]', 2.0, 4),
        ("ep-2", '["c"]', 2.5, 4),
        ("ep-9", None, None, 1),
    ]


def test_default_chunk_rows_and_run_caches() -> None:
    assert DEFAULT_CHUNK_ROWS == 50_000
    run = Run(out=Path("."), stage=Path("."), strict=False, chunk_rows=1, progress=NULL_PROGRESS)
    t1 = ("a", "b")
    assert run.tools_text(t1) == '["a","b"]'
    assert run.tools_text(t1) == '["a","b"]'
    assert run.tools_text(("b",)) == '["b"]'
    run.add_episode(("e", None, None, None, '["a"]', "s", 1))
    run.add_episode(("e", "task", None, None, '["b"]', "s", 2))
    run.add_episode(("e", "other", 0.5, None, None, "s", 3))
    assert run.episodes == [("e", "task", 0.5, None, '["a"]', "s", 1)]


# ---- the fused flat path: the same corpus as parse + stage_calls ------------------------------------

_EDGE_LINES = [
    {"trace_id": "t1", "tool": "get", "arguments": {"a": [1, {"b": None}]}, "result": {"x": 1.5}, "step": 3},
    {
        "trace_id": "t1",
        "tool": "get",
        "arguments": {},
        "result": '{"decoded": [true]}',
        "labels": {"fault": 7},
    },
    {
        "trace_id": 12,
        "task_id": 4,
        "tool": "put",
        "arguments": {"k/~": "v"},
        "status": "error",
        "error": {"e": 1},
    },
    {
        "trace_id": "t2",
        "tool": "put",
        "arguments": {},
        "status": "error",
        "result": None,
        "started_at": "2026",
    },
    {
        "trace_id": "t2",
        "tool": "x",
        "arguments": {},
        "result": 1,
        "reward": 0.5,
        "tools": ["x", "y"],
        "trial": 2,
    },
    {"trace_id": "t2", "tool": "x", "arguments": {}, "result": 1, "agent_cost": 0.1, "user_cost": "n/a"},
    {"trace_id": "t3", "tool": "x", "arguments": [], "result": 1},  # arguments not an object
    {"trace_id": "t3", "tool": "x", "arguments": {}},  # result missing
    {"trace_id": "t3", "tool": "x", "arguments": {}, "result": 1, "step": -1},
    {"trace_id": "t3", "tool": "x", "arguments": {}, "result": 1, "step": 1.5},
    {"trace_id": "t3", "tool": "x", "arguments": {}, "result": 1, "status": "maybe"},
    {"trace_id": "t3", "tool": "x", "arguments": {}, "result": 1, "reward": True},
    {"trace_id": "t3", "tool": "x", "arguments": {}, "result": 1, "tools": "x,y"},
    {"trace_id": "t3", "tool": "x", "arguments": {}, "result": 1, "labels": []},
    {"trace_id": "", "tool": "x", "arguments": {}, "result": 1},
    {"messages": [{"role": "user", "content": "hi"}]},  # another format's record
    [1, 2],
    "text",
]


class _NotFlat:
    """Stands in for `FlatAdapter` in `ingest_read` so that no adapter takes the fused path."""


def _corpus_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.suffix != ".lock"}


def _both_paths(tmp_path: Path, lines: list[bytes], monkeypatch: pytest.MonkeyPatch, chunk_rows: int) -> None:
    import output_contracts.traces.ingest.read as ingest_read

    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(lines))
    # a generated file may yield no call (every line rejected): its accounting is compared all the same
    ingest([src], tmp_path / "fused", format="flat", chunk_rows=chunk_rows, allow_empty=True)
    with monkeypatch.context() as m:
        m.setattr(ingest_read, "FlatAdapter", _NotFlat)
        ingest([src], tmp_path / "plain", format="flat", chunk_rows=chunk_rows, allow_empty=True)
    fused, plain = _corpus_bytes(tmp_path / "fused"), _corpus_bytes(tmp_path / "plain")
    assert list(fused) == list(plain)
    for name in fused:
        if name == "corpus.json":  # the files' digests are in it: compared through the files themselves
            continue
        assert fused[name] == plain[name], name
    assert orjson.loads(fused["corpus.json"])["counts"] == orjson.loads(plain["corpus.json"])["counts"]


def test_fused_flat_path_writes_the_plain_paths_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [orjson.dumps(r) + b"\n" for r in _EDGE_LINES] + [b"{not json\n", b"\n", b"\xff\xfe\n"]
    _both_paths(tmp_path, lines * 3, monkeypatch, chunk_rows=4)
    rejects = (tmp_path / "fused" / "rejects.jsonl").read_bytes().splitlines()
    # every bad line is reported with its line: records 7-18 of each block of 21 and lines 19 and 21
    # (bad JSON, bad UTF-8); line 20 is blank
    bad = [*range(7, 19), 19, 21]
    assert [orjson.loads(r)["line"] for r in rejects] == [b * 21 + i for b in range(3) for i in bad]
    assert all(orjson.loads(r)["source"].endswith("in.jsonl") for r in rejects)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(range(len(_EDGE_LINES))), min_size=1, max_size=25), st.integers(1, 6))
def test_fused_flat_path_property(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, picks: list[int], chunk: int
) -> None:
    lines = [orjson.dumps(_EDGE_LINES[i]) + b"\n" for i in picks]
    _both_paths(tmp_path_factory.mktemp("fused"), lines, monkeypatch, chunk_rows=chunk)


#: Results that repeat, and near repeats the result cache must tell apart, as JSON texts:
#: the same keys in another order, 1 / 1.0 / true / "1", -0.0 / 0.0, a nested change, empty containers,
#: a value nested deeper than orjson encodes (never cached; a reject on both paths), a scalar result.
_RESULT_TEXTS: list[bytes] = [
    b'{"a": 1, "b": [1, 2], "c": {"d": "x/y~z"}}',
    b'{"b": [1, 2], "a": 1, "c": {"d": "x/y~z"}}',
    b'{"a": 1.0, "b": [1, 2], "c": {"d": "x/y~z"}}',
    b'{"a": true, "b": [1, 2], "c": {"d": "x/y~z"}}',
    b'{"a": "1", "b": [1, 2], "c": {"d": "x/y~z"}}',
    b'{"a": 1, "b": [1, 2], "c": {"d": "x/y~z", "e": null}}',
    b'{"a": -0.0, "b": [], "c": {}}',
    b'{"a": 0.0, "b": [], "c": {}}',
    b'[{"p": 1.5, "q": [null]}, {"p": 1.5}]',
    b"[[], {}]",
    b"[]",
    b"{}",
    b"[" * 300 + b"1" + b"]" * 300,
    b'"text"',
]
_RESULT_POOL: list[Any] = [orjson.loads(t) for t in _RESULT_TEXTS]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(range(len(_RESULT_TEXTS))), st.sampled_from(["get", "put"]), st.booleans()),
        min_size=1,
        max_size=30,
    ),
    st.integers(1, 8),
    st.sampled_from([3, 1000]),
)
def test_repeated_results_copy_the_first_ones_rows(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    picks: list[tuple[int, str, bool]],
    chunk: int,
    probe: int,
) -> None:
    """The fused flat path copies a repeated result's rows instead of walking it again: the
    corpus is byte for byte the one the plain path (no copies) writes, across chunks and bad lines."""
    lines = [
        orjson.dumps({"trace_id": f"t{i % 3}", "tool": tool, "arguments": {"i": i % 2} if ok else []})[:-1]
        + b', "result": '
        + _RESULT_TEXTS[k]
        + b"}\n"
        for i, (k, tool, ok) in enumerate(picks)
    ]
    import output_contracts.traces.ingest.columns as ingest_columns

    with monkeypatch.context() as m:
        m.setattr(ingest_columns, "CACHE_PROBE", probe)  # 3: the cache may switch off mid-chunk
        _both_paths(tmp_path_factory.mktemp("repeat"), lines, monkeypatch, chunk_rows=chunk)


def test_result_copies_are_the_walks_rows() -> None:
    """A repeated result's rows (the first occurrence's, gathered again) equal `flatten`'s; a near
    repeat is walked; a failed call leaves the rows as they were and empties the cache."""
    cols = _Columns()
    values = [_RESULT_POOL[i] for i in (0, 1, 0, 2, 3, 0, 8, 8, 6, 7, 6, 9, 9, 13)]
    for i, v in enumerate(values):
        cols.add_fields(
            f"{i:016x}", "t", "t", i, "get", "ok", None, {}, v, None, {}, "s", i, 0, None, plain=True
        )
    expected: list[Any] = []
    for v in values:
        expected += [*flatten({}), *flatten(v)]
    assert cols.leaf_rows == expected
    assert len(cols.rows) == len(expected) - 2 * 7 - 7 - 4 - 3  # the repeats of 0, 8, 6, 9: not walked
    assert len(cols._results) == 8  # 0, 1, 2, 3, 6, 7, 8, 9: a scalar result is not cached
    _, leaves = cols.frames()
    assert (
        leaves.select("path", "pattern", pl.col("kind").cast(pl.String), "num", "str", "len").rows()
        == expected
    )
    n = len(cols.rows)
    with pytest.raises(TypeError):
        cols.add_fields(
            "f" * 16,
            "t",
            "t",
            0,
            "get",
            "ok",
            None,
            {},
            _RESULT_POOL[0],
            None,
            {},
            "s",
            0,
            0,
            {1: {1}},
            plain=True,
        )
    assert len(cols.rows) == n and not cols._results
    _truncate(cols, 3)  # a record failed half-way: calls 3.. undone, the rows they walked with them
    assert cols.leaf_rows == expected[: 3 * 8] and len(cols.rows) == 3 + 7 + 7  # call 2 repeats call 0


@pytest.mark.parametrize("group", [10, 50_000])
def test_calls_row_groups_do_not_depend_on_chunking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: int
) -> None:
    """The staged calls file is renamed into place: its row groups are cut at `CALL_GROUP_ROWS`
    calls whatever the chunk size, so chunking changes no byte of the corpus."""
    import pyarrow.parquet as pq

    import output_contracts.traces.ingest.run as ingest_run

    monkeypatch.setattr(ingest_run, "CALL_GROUP_ROWS", group)
    recs = [
        {"trace_id": f"t{i % 4}", "tool": "get", "arguments": {"i": i}, "result": {"v": [i]}}
        for i in range(47)
    ]
    f = tmp_path / "a.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    corpora = {}
    for chunk in (3, 7, 1000):
        ingest([f], tmp_path / f"c{chunk}", chunk_rows=chunk)
        corpora[chunk] = _corpus_bytes(tmp_path / f"c{chunk}")
    assert corpora[3] == corpora[7] == corpora[1000]
    sizes = [
        g.num_rows
        for g in (
            pq.ParquetFile(tmp_path / "c7" / "calls.parquet").metadata.row_group(i)
            for i in range(pq.ParquetFile(tmp_path / "c7" / "calls.parquet").num_row_groups)
        )
    ]
    assert sizes == ([10, 10, 10, 10, 7] if group == 10 else [47])


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=3)
_keys = st.sampled_from(["a", "b", "a/b", "x~y", "*", "0", ""])
_values = st.recursive(
    _scalars,
    lambda ch: st.lists(ch, max_size=3) | st.dictionaries(_keys, ch, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_values, min_size=1, max_size=8))
def test_shape_cache_across_values_matches_flatten(values: list[Any]) -> None:
    """One chunk's walker caches child paths per (path, pattern, keys): values of the same
    and of different shapes, walked in turn through one `Columns`, give `flatten`'s rows each."""
    cols = _Columns()
    expected: list[Any] = []
    for v in values * 2:  # every shape comes back at least once
        cols._walk(v, "", "")
        expected.extend(flatten(v))
        cols._walk({"r": v, "s": [v, {"r": v}]}, "", "")
        expected.extend(flatten({"r": v, "s": [v, {"r": v}]}))
    assert cols.rows == expected


def test_episode_rows_spilled_per_chunk_merge_as_held(tmp_path: Path) -> None:
    """Episode rows are spilled with every chunk (peak RSS flat in the input), so a trace whose
    calls span chunks has several rows; the commit merges them by the rule `Run.add_episode` applies to
    rows held together (first row's source and line, each fact's first non-null): the corpus is the
    same byte for byte at any chunk size."""
    recs = []
    for i in range(40):
        r: dict[str, Any] = {"trace_id": f"t{(i * 7) % 5}", "tool": "get", "arguments": {"i": i}, "result": i}
        if i % 9 == 4:
            r["reward"] = i / 10
        if i % 11 == 6:
            r["tools"] = ["get", f"x{i}"]
        if i % 13 == 8:
            r["trial"] = i
        recs.append(r)
    f = tmp_path / "a.jsonl"
    f.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    corpora = {}
    for chunk in (1, 3, 1000):
        ingest([f], tmp_path / f"c{chunk}", chunk_rows=chunk)
        corpora[chunk] = _corpus_bytes(tmp_path / f"c{chunk}")
    assert corpora[1] == corpora[3] == corpora[1000]
    eps = pl.read_parquet(tmp_path / "c1" / "episodes.parquet").sort("trace_id")
    # t4: lines 3, 8, 13, ... (i = 2, 7, 12, ...); its first row with episode facts is line 18 (tools,
    # i = 17), the reward comes later (i = 22), the trial never
    t4 = eps.row(4, named=True)
    assert (t4["trace_id"], t4["line"], t4["reward"], t4["tools"], t4["trial"]) == (
        "t4",
        18,
        2.2,
        '["get","x17"]',
        None,
    )
    assert eps["n_calls"].to_list() == [8] * 5


def _old_finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        return None
    return float(v)


class _IntSub(int):
    """An int subclass: the fast paths test `type(v) is int`, the general one must still see it."""


_fact_values = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=2)
    | st.builds(_IntSub, st.integers(-3, 3))
    | st.lists(st.integers(), max_size=1)
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["trial", "agent_cost", "user_cost", "reward", "x"]), _fact_values))
def test_run_facts_and_reward_fast_paths_match_the_plain_checks(rec: dict[str, Any]) -> None:
    """`run_facts` and `optional_reward` answer the common cases first: the same values and
    the same errors as the plain checks they had, for any value."""
    v = rec.get("trial")
    old_trial = v if isinstance(v, int) and not isinstance(v, bool) else None
    assert run_facts(rec) == (
        old_trial,
        _old_finite(rec.get("agent_cost")),
        _old_finite(rec.get("user_cost")),
    )
    r = rec.get("reward")
    if r is None:
        assert optional_reward(rec) is None
    elif isinstance(r, bool) or not isinstance(r, int | float) or not math.isfinite(float(r)):
        with pytest.raises(RecordError):
            optional_reward(rec)
    else:
        got = optional_reward(rec)
        assert type(got) is float and got == float(r)


def test_result_cache_stops_when_results_rarely_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk whose first `CACHE_PROBE` results are mostly new stops looking them up: later
    repeats are walked again, and the rows are the same either way."""
    import output_contracts.traces.ingest.columns as ingest_columns

    monkeypatch.setattr(ingest_columns, "CACHE_PROBE", 4)
    values = [_RESULT_POOL[i] for i in (0, 1, 2, 0, 0, 8, 8)]  # 1 hit in the first 4: off after the 4th
    cols = _Columns()
    for i, v in enumerate(values):
        cols.add_fields(
            f"{i:016x}", "t", "t", i, "get", "ok", None, {}, v, None, {}, "s", i, 0, None, plain=True
        )
    assert cols._lookups == -1 and not cols._results
    assert cols.leaf_rows == [r for v in values for r in (*flatten({}), *flatten(v))]
    assert len(cols.rows) == len(cols.leaf_rows) - 7  # only the 4th call's repeat of 0 was not walked


_edge_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)  # past 2^53: float() rounds, as the column-wise conversion must
    | st.sampled_from([2**53 + 1, -(2**63), 2**64 - 1, 0, -1])
    | st.floats(allow_nan=False)
    | st.sampled_from([-0.0, 0.0, 1e308, 5e-324])
    | st.text(alphabet=st.sampled_from("a/~é\U0001f600\x00"), max_size=4)  # astral: len in code points
)
_edge_values = st.recursive(
    _edge_scalars,
    lambda ch: (
        st.lists(ch, max_size=3)
        | st.dictionaries(_keys, ch, max_size=3)
        | st.lists(_edge_scalars, min_size=62, max_size=70)
    ),  # sizes past the cached markers (64)
    max_leaves=20,
)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_edge_values, _edge_values), min_size=1, max_size=5), st.booleans())
def test_leaf_frame_values_match_flatten(pairs: list[tuple[Any, Any]], plain: bool) -> None:
    """The leaf frame's kind, num, str and len equal `flatten`'s row for row, for values straight from
    orjson (`plain`) and checked values alike, on ints past 2^53, signed zeros, astral characters and
    arrays of 62-70 items: the guard any column-wise rewrite of the walk must pass."""
    cols = _Columns()
    expected: list[Any] = []
    for i, (args, result) in enumerate(pairs):
        cols.add_fields(
            f"{i:016x}",
            "t",
            "t",
            i,
            "get",
            "ok",
            None,
            {"a": args},
            result,
            None,
            {},
            "s",
            i,
            0,
            None,
            plain=plain,
        )
        expected += [*flatten({"a": args}), *flatten(result)]
    assert repr(cols.leaf_rows) == repr(expected)  # repr: -0.0 and 0.0 told apart
    _, leaves = cols.frames()
    got = leaves.select("path", "pattern", pl.col("kind").cast(pl.String), "num", "str", "len").rows()
    assert repr(got) == repr(expected)
