"""`check_lines`'s fast path for flat records gives the general path's bytes; its call ids are `make_call_id`'s.

Once the format is known to be flat (detected from the first line, or `--format flat`), `check_lines` calls
the flat adapter's `parse` directly instead of going through `_LineParser.parse`, and hashes call ids from
a copied prefix state. These tests hold both to the general path on the sample world's faulty traces
(every receipt encoded, with `--all`, folds, filters) and on damaged lines.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.checks import checker as checker_mod
from output_contracts.checks.checker import StreamItem, _CallIds, check_lines
from output_contracts.checks.receipts import encode
from output_contracts.cli.check_cmd import _stdin_batches
from output_contracts.codes.contract_set import ContractSet
from output_contracts.traces.records import make_call_id

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CS = ContractSet.load(REPO / "tests" / "golden" / "sample-contracts.json")
FAULTY = sorted((REPO / "sample_traces" / "faulty").glob("*.jsonl.gz"))


def faulty_lines() -> list[bytes]:
    out: list[bytes] = []
    for p in FAULTY:
        with gzip.open(p, "rb") as f:
            out.extend(f)
    return out


def rendered(items: Iterator[StreamItem]) -> list[tuple[Any, ...]]:
    return [
        (i.kind, i.tool, i.line, i.reason, encode(i.receipt) if i.receipt is not None else None)
        for i in items
    ]


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A runner of `check_lines` with the flat fast path switched off (every line through `parse`)."""

    def run(lines: list[bytes], **kw: Any) -> list[tuple[Any, ...]]:
        with monkeypatch.context() as m:

            def use(self: Any, adapter: Any) -> None:
                self.adapter = adapter.begin()  # never sets `flat`

            m.setattr(checker_mod._LineParser, "_use", use)
            return rendered(check_lines(SAMPLE_CS, lines, **kw))

    return run


def fast(lines: list[bytes], monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[list[tuple[Any, ...]], int]:
    """`check_lines` as shipped, and how many lines went through the general `_LineParser.parse`."""
    calls = [0]
    parse = checker_mod._LineParser.parse

    def counted(self: Any, rec: Any, line: int) -> Any:
        calls[0] += 1
        return parse(self, rec, line)

    with monkeypatch.context() as m:
        m.setattr(checker_mod._LineParser, "parse", counted)
        out = rendered(check_lines(SAMPLE_CS, lines, **kw))
    return out, calls[0]


@given(
    sha=st.text(min_size=0, max_size=80),
    line=st.integers(min_value=0, max_value=2**63),
    index=st.integers(min_value=0, max_value=10_000),
)
def test_call_ids_are_make_call_id(sha: str, line: int, index: int) -> None:
    assert _CallIds(sha)(line, index) == make_call_id(sha, line, index)


@pytest.mark.skipif(not FAULTY, reason="sample_traces/faulty is absent")
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"include_all": True},
        {"fold": 2},
        {"fold": "cross"},
        {"codes": ["TYPE", "RANGE", "CONSISTENT"]},
        {"tools": ["get_order", "get_customer"]},
        {"format": "flat", "encoder": "v1"},
    ],
    ids=["default", "all", "fold2", "cross", "codes", "tools", "format-flat-v1"],
)
def test_fast_path_gives_the_general_bytes_on_the_faulty_world(
    kw: dict[str, Any], general: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = faulty_lines()
    got, through_parse = fast(lines, monkeypatch, **kw)
    want = general(lines, **kw)
    assert got == want
    # the fast path was taken: only the detecting first line (none with --format flat) went through parse
    assert through_parse == (0 if kw.get("format") == "flat" else 1)
    receipts = [r for *_, r in got if r is not None]
    assert receipts  # the faulty world fires (or, with --all, every checked call has a receipt)
    if kw.get("include_all"):
        assert len(receipts) == sum(1 for k, *_ in got if k == "call")


@pytest.mark.skipif(not FAULTY, reason="sample_traces/faulty is absent")
def test_damaged_lines_are_rejected_alike(general: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = faulty_lines()[:40]
    rec = orjson.loads(lines[3])
    bad_args = orjson.dumps({**rec, "arguments": [1]}) + b"\n"
    bad_status = orjson.dumps({**rec, "status": "maybe"}) + b"\n"
    error_call = orjson.dumps({**rec, "status": "error", "result": None}) + b"\n"
    no_result = orjson.dumps({k: v for k, v in rec.items() if k != "result"}) + b"\n"
    damaged = [
        lines[0],
        b"\n",
        b"   \n",
        b"{not json\n",
        b"[1, 2]\n",
        bad_args,
        bad_status,
        error_call,
        no_result,
        *lines[1:],
    ]
    got, _ = fast(damaged, monkeypatch, include_all=True)
    want = general(damaged, include_all=True)
    assert got == want
    kinds = [k for k, *_ in got]
    errors = sum(orjson.loads(raw).get("status") == "error" for raw in lines)
    assert kinds.count("rejected") == 5  # not json, a list, bad arguments, bad status, no result
    assert kinds.count("skipped") == errors + 1  # the world's error calls and the one added
    assert kinds.count("call") == 40 - errors


def test_two_streams_in_one_process_read_a_session_format_alike(shared_data: Path) -> None:
    """Each stream gets a fresh reader: a session format (a call and its result on different lines)
    read twice in one process gives the same items both times, not 'already has its result'."""
    src = shared_data / "formats" / "claude-code" / "representative_messages.jsonl"
    lines = src.read_bytes().splitlines()
    first = rendered(check_lines(SAMPLE_CS, lines, source="s", include_all=True))
    second = rendered(check_lines(SAMPLE_CS, lines, source="s", include_all=True))
    assert [i[0] for i in first].count("call") >= 2
    assert first == second


# Values of every type a decoded JSON line can hold, for the fields the flat adapter reads.
_json_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "ok", "error", "maybe", "t-1", '{"a": 1}', " [1, 2]", "[oops", "Error: x"]),
    st.lists(st.sampled_from(["get_order", "get_customer", "x"]), max_size=4),
    st.lists(
        st.one_of(st.just("a"), st.fixed_dictionaries({"name": st.just("b")}), st.integers()), max_size=3
    ),
    st.fixed_dictionaries({}, optional={"k": st.integers(), "name": st.just("n")}),
)
_FLAT_KEYS = (
    "trace_id", "tool", "arguments", "result", "status", "step", "labels", "error", "task_id",
    "started_at", "tools", "reward", "trial", "agent_cost", "user_cost",
)  # fmt: skip


@settings(max_examples=400)
@given(
    st.one_of(
        st.dictionaries(st.sampled_from(_FLAT_KEYS), _json_values, max_size=len(_FLAT_KEYS)),
        # the usual shape with one or two fields changed: the cases a loose test would let through
        st.dictionaries(st.sampled_from(_FLAT_KEYS), _json_values, max_size=2).map(
            lambda d: {"trace_id": "t", "tool": "get_order", "arguments": {}, "result": {}, **d}
        ),
    )
)
def test_flat_fields_vouch_only_for_what_the_adapter_parses_alike(record: dict[str, Any]) -> None:
    """`_flat_fields` gives a record's fields only when the flat adapter parses it to the same fields
    (call, task, whether the line declares its episode, visible tools); else None, and the adapter
    parses or refuses it itself."""
    from output_contracts.traces.formats.adapter import RecordContext
    from output_contracts.traces.formats.flat import FlatAdapter

    seen: list[Any] = []
    got = checker_mod._flat_fields(record, seen)
    again = checker_mod._flat_fields(record, seen)  # the second read may come from the tools cache
    assert again == got
    try:
        parsed = FlatAdapter().parse(record, RecordContext("-", "sha", 7))
    except Exception:
        assert got is None
        return
    if got is None:
        return  # an unusual record: the adapter parses it, check_lines uses the adapter's answer
    (call,) = parsed.calls
    trace_id, tool, args, result, status, task, declares, tools = got
    assert (trace_id, tool, args, result, status, task) == (
        call.trace_id, call.tool, call.arguments, call.result, call.status, call.task,
    )  # fmt: skip
    assert declares == bool(parsed.episodes)
    if declares:
        assert tools == parsed.episodes[0].tools


def test_flat_fields_take_the_usual_record() -> None:
    """The sample world's records are all vouched for (the fast path is the path taken)."""
    lines = faulty_lines()
    seen: list[Any] = []
    assert all(checker_mod._flat_fields(orjson.loads(raw), seen) is not None for raw in lines)


class _Trickle(io.BytesIO):
    """A stdin whose every read returns at most `n` bytes (a pipe that delivers little at a time)."""

    def __init__(self, data: bytes, n: int) -> None:
        super().__init__(data)
        self.n = n

    def read1(self, size: int = -1) -> bytes:
        return super().read1(min(self.n, size if size > 0 else self.n))


@given(
    st.lists(st.sampled_from([b"{}", b"", b"\r", b" ", b"x", b'{"a": 1}', b"\xff"]), max_size=12).map(
        lambda parts: b"\n".join(parts)
    ),
    st.integers(min_value=1, max_value=9),
)
@settings(deadline=None)
def test_stdin_lines_are_readline_lines(data: bytes, chunk: int) -> None:
    """The chunked reader hands out the bytes `readline` would, line for line, whatever the chunking;
    it calls `before_wait` before every read (so the CLI flushes before it may block)."""
    waits: list[int] = []
    batches = list(_stdin_batches(_Trickle(data, chunk), lambda: waits.append(1)))
    assert all(batches)  # a batch is never empty
    assert [line for batch in batches for line in batch] == list(iter(io.BytesIO(data).readline, b""))
    assert len(waits) >= 1 + len(data) // chunk


@pytest.mark.skipif(not FAULTY, reason="sample_traces/faulty is absent")
def test_check_stdin_answers_each_line_before_the_next_arrives(tmp_path: Path) -> None:
    """Interactive use: a writer that sends one line and waits for its receipt gets it (the output
    is flushed before `check -` blocks on stdin); the receipts are those of the whole input at once."""
    import os
    import select
    import subprocess
    import sys

    lines = faulty_lines()[:6]
    cmd = [sys.executable, "-m", "output_contracts.cli.app", "check", "-c"]
    cmd += [str(REPO / "tests" / "golden" / "sample-contracts.json"), "-", "--all", "-q"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as usual
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path, bufsize=0, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()

    def receipt() -> bytes:
        got = b""
        while not got.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], 60)
            assert ready, "no receipt within 60 s: the output was not flushed before reading stdin"
            more = os.read(fd, 1 << 16)
            assert more
            got += more
        return got

    answers = []
    try:
        for raw in lines:
            proc.stdin.write(raw)
            answers.append(receipt())
        proc.stdin.close()
        rest = proc.stdout.read()
    finally:
        proc.kill() if proc.poll() is None and proc.stdin.closed is False else None
        proc.wait(timeout=60)
    whole = subprocess.run(
        cmd, input=b"".join(lines), capture_output=True, cwd=tmp_path, timeout=120, env=env
    )
    assert rest == b""
    assert b"".join(answers) == whole.stdout
    assert [orjson.loads(a)["line"] for a in answers] == [1, 2, 3, 4, 5, 6]


def _reference_stream(
    cs: ContractSet, lines: list[bytes], *, fold: Any = None, tools: list[str] | None = None, **kw: Any
) -> list[bytes]:
    """`check -` written the plain way, as the reference its batches are held to: each line parsed by
    the flat adapter, each call judged by the generic engine (`call_violations`, a full node index)
    with an `EpisodeMemory` for every trace whether or not it tracks a place, every call id hashed
    (`make_call_id`) before anything needs it; the encoded receipts, one per line."""
    from output_contracts.checks.receipts import planned_receipt
    from output_contracts.codes.consistent.check import EpisodeMemory
    from output_contracts.codes.engine.evaluate import call_violations, episode_memory
    from output_contracts.jsonutil import canonical_json, sha256_hex
    from output_contracts.traces.formats.adapter import RecordContext
    from output_contracts.traces.formats.flat import FlatAdapter

    adapter, sha = FlatAdapter().begin(), sha256_hex("-")
    memories: dict[str, Any] = {}
    places: dict[Any, Any] = {}
    visible: dict[str, Any] = {}
    out = []
    for n, raw in enumerate(lines, start=1):
        parsed = adapter.parse(orjson.loads(raw), RecordContext("-", sha, n))
        for ep in parsed.episodes:
            visible[ep.trace_id] = ep.tools
        for c in parsed.calls:
            f = cs.fold_of(c.task) if fold == "cross" else fold
            if f not in places:  # what each checker's memory tracks, listed once per checker
                places[f] = episode_memory(cs, f).pairs
            if c.trace_id not in memories:
                memories[c.trace_id] = EpisodeMemory(places[f])
            memory = memories[c.trace_id]
            call_id = make_call_id(sha, c.line, c.index)
            if tools is not None and c.tool not in tools:
                memory.record(c.tool, c.arguments, c.result, call_id, ok=c.status == "ok")
                continue
            if c.status != "ok":
                memory.record(c.tool, c.arguments, None, call_id, ok=False)
                continue
            vs = call_violations(cs, c.tool, c.arguments, c.result, fold=f, memory=memory, call_id=call_id)
            if vs or kw.get("include_all"):
                r = planned_receipt(
                    cs,
                    c.tool,
                    c.result,
                    vs,
                    visible.get(c.trace_id),
                    call_id=call_id,
                    source="-",
                    line=c.line,
                )
                out.append(canonical_json(encode(r)))
    return out


@pytest.mark.skipif(not FAULTY, reason="sample_traces/faulty is absent")
@pytest.mark.parametrize(
    ("kw", "chunk"),
    [
        ({"include_all": True}, 1 << 16),
        ({"fold": "cross"}, 997),
        ({"tools": ["query_warehouse", "get_order"]}, 4093),
    ],
    ids=["all", "cross-small-reads", "tools"],
)
def test_batches_give_the_plain_per_call_receipts(kw: dict[str, Any], chunk: int) -> None:
    """`check_batches` over stdin read in chunks (lines split across reads) gives, byte for byte, the
    receipts of the plain per-call reference on the faulty world: every class, CONSISTENT across the
    calls of an episode (the memory, its touches by calls filtered out or failed, lazily hashed ids
    of the earlier calls it cites), and per-tool counts that add up to the calls checked."""
    from output_contracts.checks.checker import check_batches
    from output_contracts.cli.check_cmd import _stdin_batches

    lines = faulty_lines()[:1500]
    got: list[bytes] = []
    checked = 0
    for batch in check_batches(
        SAMPLE_CS, _stdin_batches(_Trickle(b"".join(lines), chunk), lambda: None), **kw
    ):
        checked += sum(batch.checked.values())
        got.extend(
            orjson.dumps(encode(i.receipt), option=orjson.OPT_SORT_KEYS) for i in batch.items if i.receipt
        )
    want = _reference_stream(SAMPLE_CS, lines, **kw)
    assert got == want
    assert b'"code":"CONSISTENT"' in b"".join(got)
    calls = [orjson.loads(raw) for raw in lines]
    assert checked == sum(
        1 for c in calls if c.get("status", "ok") == "ok" and c["tool"] in kw.get("tools", [c["tool"]])
    )


def _nonfinite_reference(value: Any) -> bool:
    """The recursive search `jsonutil._has_nonfinite` replaced (a generator per container)."""
    import math

    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_nonfinite_reference(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_nonfinite_reference(v) for v in value)
    return False


_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3))


@given(
    st.recursive(
        _leaf,
        lambda kids: st.one_of(
            st.lists(kids, max_size=4),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(st.text(max_size=2), kids, max_size=4),
        ),
        max_leaves=20,
    )
)
def test_nonfinite_search_answers_as_the_recursive_one(value: Any) -> None:
    """Receipts are searched for NaN/inf whenever their JSON holds a `null`: the stack loop gives the
    recursive search's answer on any nesting of dicts, lists, tuples and scalars (NaN, ±inf included),
    and `canonical_json` refuses exactly those values."""
    from output_contracts.jsonutil import _has_nonfinite, canonical_json

    want = _nonfinite_reference(value)
    assert _has_nonfinite(value) == want
    try:
        canonical_json(value)
    except ValueError:
        assert want
    else:
        assert not want
