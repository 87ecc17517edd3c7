"""Fault injection (`contracts inject`): plant labelled faults in clean flat traces to measure detection.

The taxonomy (docs/faults.md says, per kind, what contracts should and should not catch):

| kind | what changes in the tool result |
|---|---|
| `sign_flip` | a positive number becomes negative (a count, a price) |
| `drop_field` | a field present in every result of the tool is removed |
| `null_field` | such a field becomes `null` |
| `type_swap` | a number becomes its decimal string; an object becomes the list of its values |
| `stale_echo` | a result value that echoes an argument (an id) takes another call's value |
| `date_swap` | two ordered dates/times (depart <= arrive) swap places |
| `relation_break` | a total stops equalling its parts (subtotal + tax, Σ items) by a small amount |
| `domain_drift` | a small categorical field takes a value never seen (a new status) |
| `plausible_string` | a free-text field takes another realistic value of the same field (wrong name) |
| `truncated_list` | a list loses its tail |

Only tool *results* are changed: arguments are what the agent asked for and stay as recorded. Each faulted
call gets `labels = {"fault": kind, "fault_path": pointer, "original": value}` (plus `fault_paths` for
`date_swap`, which changes two nodes); everything else is byte-for-byte the input record.

Where faults go. With a contract set (`contracts=`), targets of the rule-expressible kinds are the nodes
its rules cover (a `NONNEG` path for `sign_flip`, a `REQUIRED` path for `drop_field`, ...): detection then
measures the checker on exactly what it claims to guard. Without one, structural heuristics computed over
the input itself pick nodes that *look* invariant (a field present in every result of the tool, a number
never negative at that path, two dates always ordered, a total always equal to the sum of two siblings),
which is a harder, rule-agnostic test. `plausible_string` and `truncated_list` always use heuristics (no
rule class expresses them).

Which calls. Eligible calls have `status` ok, a result, and no fault label. Each is selected with
probability `rate` (one seeded `random.Random(seed)` draw per eligible call, in input order). A selected
call gets one fault: among the requested kinds that have a target in it, the kind injected least so far
(ties broken by the same generator), so small corpora still get balanced counts per kind. A selected call
with no target for any requested kind is left unchanged and counted in `no_target`. Same input, kinds,
rate, seed and contract set -> the same output bytes.
"""

from __future__ import annotations

import copy
import functools
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from output_contracts.audit.fault_targets import (
    KINDS,
    Context,
    Target,
    Targets,
    Walked,
    decimals,
    delete_at,
    get_at,
    is_eligible,
    is_num,
    learn,
    parts_needed,
    set_at,
    walk,
)
from output_contracts.audit.incidents import BY_KIND, INCIDENT_KINDS, At
from output_contracts.choices import FAULT_GROUPS
from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.defaults import DEFAULT_SEED
from output_contracts.errors import TraceError, UsageError, reading
from output_contracts.jsonutil import atomic_write_bytes, canonical_json, chunked_lines

#: Kinds the structural contracts are designed to catch (the acceptance target is >= 90% on these).
DETECTABLE: tuple[str, ...] = (
    "sign_flip",
    "drop_field",
    "type_swap",
    "stale_echo",
    "date_swap",
    "relation_break",
)

#: How many results per tool `other_entity` picks from (the first ones: bounded memory, same bytes).
OTHER_RESULTS = 64

#: New categorical values used by `domain_drift`: realistic statuses an upstream API might start sending.
DRIFT_VALUES = ("pending_review", "on_hold", "suspended", "archived", "partially_refunded", "unknown")


#: Every fault kind, in the order reports list them: the basic taxonomy, then the incident suite.
ALL_KINDS: tuple[str, ...] = KINDS + INCIDENT_KINDS
#: Names that stand for several kinds in `--kinds`.
KIND_GROUPS: dict[str, tuple[str, ...]] = {"all": ALL_KINDS, "basic": KINDS, "incidents": INCIDENT_KINDS}
# the names `--kinds` offers come from `choices` (cheap to import for `--help`): the same names
assert tuple(KIND_GROUPS) == FAULT_GROUPS, (KIND_GROUPS, FAULT_GROUPS)


def parse_kinds(text: str | Sequence[str]) -> tuple[str, ...]:
    """`"sign_flip,drop_field"`, a group (`all`, `basic`, `incidents`) or a mix -> validated kinds in
    taxonomy order (nothing given = `all`)."""
    items = [text] if isinstance(text, str) else list(text)
    names = [k.strip() for item in items for k in item.split(",") if k.strip()]
    if not names:
        return ALL_KINDS
    unknown = sorted(set(names) - set(ALL_KINDS) - set(KIND_GROUPS))
    if unknown:
        raise UsageError(
            f"unknown fault kind(s) {', '.join(unknown)} (known: {', '.join(ALL_KINDS)}, or a group: "
            f"{', '.join(KIND_GROUPS)})",
            field="kinds",
        )
    wanted = {k for n in names for k in KIND_GROUPS.get(n, (n,))}
    return tuple(k for k in ALL_KINDS if k in wanted)


def find_targets(
    finder: Targets,
    kind: str,
    rec: Mapping[str, Any],
    others: Sequence[Any] = (),
    walked: Walked | None = None,
) -> list[Target]:
    """Where a fault of `kind` can go in this call: an incident's targets by value shape alone, a basic
    kind's from the contract set or the heuristics (`Targets.find`). `others`: earlier results of the
    same tool (an incident that serves one has no target without one that differs). `walked`: the
    call's result as `Walked`, when the caller asks about several kinds (one walk serves them all)."""
    incident = BY_KIND.get(kind)
    if incident is None:
        return finder.find(kind, rec, walked)
    res = rec["result"]
    if incident.needs_other and not any(o != res for o in others):
        return []
    if incident.partner is not None:
        partners = incident.partner(res)
        return [Target(kind, p, partners[p]) for p in sorted(partners)]
    if walked is not None and isinstance(incident.targets, At):
        return [Target(kind, p) for p in incident.targets.among(walked.values())]
    return [Target(kind, p) for p in incident.targets(res)]


# --- applying a fault ---------------------------------------------------------------------------------


def _apply(
    t: Target, rec: dict[str, Any], ctx: Context, rng: random.Random, others: Sequence[Any] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (new record, labels) with fault `t` planted. The input record is not modified. `others`:
    earlier results of the same tool (what `other_entity` serves instead)."""
    new = copy.deepcopy(rec)
    res = new["result"]
    tool = new["tool"]
    labels: dict[str, Any] = {"fault": t.kind, "fault_path": t.path}
    orig = get_at(res, t.path)
    labels["original"] = orig
    k = t.kind
    incident = BY_KIND.get(k)
    if incident is not None and t.other:
        other = get_at(res, t.other)
        res = set_at(set_at(res, t.path, other), t.other, orig)
        labels["fault_paths"] = sorted([t.path, t.other])
    elif incident is not None:
        res = set_at(res, t.path, incident.apply(copy.deepcopy(orig), rng, others))
    elif k == "sign_flip":
        res = set_at(res, t.path, -orig)
    elif k == "drop_field":
        res = delete_at(res, t.path)
    elif k == "null_field":
        res = set_at(res, t.path, None)
    elif k == "type_swap":
        if is_num(orig):
            res = set_at(res, t.path, _num_text(orig))
        else:
            res = set_at(res, t.path, list(orig.values()))
    elif k == "stale_echo":
        res = set_at(res, t.path, _stale(orig, ctx, tool, t.path, rng))
    elif k == "date_swap":
        other = get_at(res, t.other)
        res = set_at(res, t.path, other)
        res = set_at(res, t.other, orig)
        labels["fault_paths"] = sorted([t.path, t.other])
    elif k == "relation_break":
        tol = dict(t.params).get("tol", "exact")
        if isinstance(orig, int) and tol == "exact":
            broken: float = orig + 1
        elif tol == "rel":
            broken = orig * 1.001 if orig else 0.001
        else:
            broken = round(orig + 0.01, max(2, decimals(orig)))
        res = set_at(res, t.path, broken)
    elif k == "domain_drift":
        values = set(dict(t.params).get("values", ()))
        res = set_at(res, t.path, _drift(orig, values))
    elif k == "plausible_string":
        pool = [
            s for s in ctx.scalars.get((tool, _pattern(res, t.path)), []) if isinstance(s, str) and s != orig
        ]
        res = set_at(res, t.path, rng.choice(pool))
    elif k == "truncated_list":
        res = set_at(res, t.path, orig[: max(1, len(orig) // 2)])
    else:  # pragma: no cover - KINDS is closed
        raise AssertionError(k)
    new["result"] = res
    return new, labels


def _pattern(doc: Any, path: str) -> str:
    for p, pat, _v in walk(doc):
        if p == path:
            return pat
    return path


def _num_text(v: float) -> str:
    return str(v) if isinstance(v, int) else repr(v)


def _stale(orig: Any, ctx: Context, tool: str, path: str, rng: random.Random) -> Any:
    """Another call's value at the same path (a stale id), or a near-miss of the same kind."""
    pool = [s for s in ctx.scalars.get((tool, path), []) if type(s) is type(orig) and s != orig]
    if pool:
        return rng.choice(pool)
    if isinstance(orig, int):
        return orig + 1
    return orig[:-1] + ("0" if not orig.endswith("0") else "1") if orig else "0"


def _drift(orig: str, values: set[str]) -> str:
    upper = bool(values) and all(v.isupper() for v in values if v)
    for cand in DRIFT_VALUES:
        c = cand.upper() if upper else cand
        if c not in values and c != orig:
            return c
    return orig + "_v2"


# --- public API ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InjectReport:
    """What `inject_records` did: eligible calls, faults per kind, selected calls without a target."""

    records: int
    eligible: int
    selected: int
    injected: Mapping[str, int]
    no_target: int
    targeting: str
    #: input lines left out, as ingest rejects them: {source, line, error} (trace-file input only)
    rejected: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "records": self.records,
            "eligible": self.eligible,
            "selected": self.selected,
            "injected": dict(sorted(self.injected.items())),
            "no_target": self.no_target,
            "targeting": self.targeting,
        }
        if self.rejected:  # absent when nothing was rejected (a corpus input never has any)
            out["rejected"] = [dict(r) for r in self.rejected]
        return out


class Planting:
    """Faults planted in a stream of flat call records (see module docstring), in bounded memory.

    `read()` gives the records afresh each time it is called: injection reads them twice when the kinds
    asked need what the heuristics learn from the whole input first (`parts_needed`), else once.
    Iterating gives the new records in input order; `report` is set once the iteration has ended. No
    record is held beyond the one being planted (and the first `OTHER_RESULTS` results of each tool)."""

    def __init__(
        self,
        read: Callable[[], Iterable[Mapping[str, Any]]],
        *,
        kinds: Sequence[str] = ALL_KINDS,
        rate: float = 0.1,
        seed: int = DEFAULT_SEED,
        contracts: ContractSet | None = None,
    ) -> None:
        if not 0.0 <= rate <= 1.0 or math.isnan(rate):
            raise UsageError(f"rate must be between 0 and 1, got {rate}", field="rate")
        self.read, self.rate, self.seed, self.contracts = read, rate, seed, contracts
        self.kinds = parse_kinds(list(kinds))
        self.report: InjectReport | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        kinds, contracts = self.kinds, self.contracts
        parts = parts_needed(kinds, heuristic=contracts is None)
        ctx = learn(self.read(), parts) if parts else Context()
        rules: dict[str, list[Rule]] | None = None
        if contracts is not None:
            rules = defaultdict(list)
            for r in contracts.rules_for(None):
                rules[r.tool].append(r)
        maps = (
            {t: tc.map_parents("result") for t, tc in contracts.tools.items()}
            if contracts is not None
            else None
        )
        finder = Targets(ctx, rules, maps)
        rng = random.Random(self.seed)
        seen_results: dict[str, list[Any]] = defaultdict(list)  # per tool, the first eligible results
        counts: Counter[str] = Counter({k: 0 for k in kinds})
        records = eligible = selected = no_target = 0
        for rec in self.read():
            records += 1
            if not is_eligible(rec):
                yield dict(rec)
                continue
            eligible += 1
            earlier = seen_results[rec["tool"]]
            others = tuple(earlier)
            if len(earlier) < OTHER_RESULTS:
                earlier.append(rec["result"])
            if rng.random() >= self.rate:
                yield dict(rec)
                continue
            selected += 1
            walked = Walked(rec["result"])
            found = least_injected(
                kinds,
                counts,
                lambda k: find_targets(finder, k, rec, others, walked),  # noqa: B023 (used at once)
            )
            if not found:
                no_target += 1
                yield dict(rec)
                continue
            choices = list(found)  # in `kinds` order
            kind = choices[rng.randrange(len(choices))]
            targets = sorted(found[kind], key=lambda t: (t.path, t.other))
            target = targets[rng.randrange(len(targets))]
            new, labels = _apply(target, dict(rec), ctx, rng, others)
            base = rec.get("labels") if isinstance(rec.get("labels"), dict) else {}
            new["labels"] = {**(base or {}), **labels}
            counts[kind] += 1
            yield new
        self.report = InjectReport(
            records=records,
            eligible=eligible,
            selected=selected,
            injected=dict(counts),
            no_target=no_target,
            targeting="contracts" if contracts is not None else "heuristic",
        )


def least_injected(
    kinds: Sequence[str], counts: Mapping[str, int], search: Callable[[str], list[Target]]
) -> dict[str, list[Target]]:
    """The kinds (in `kinds` order) that have a target in this call (`search(kind)`) and were injected
    least so far among those that have one, with their targets; empty when no kind has one. The count
    levels are tried from the lowest, so a kind above the first level with a target is never searched."""
    for level in sorted(set(counts[k] for k in kinds)):
        found = {k: ts for k in kinds if counts[k] == level and (ts := search(k))}
        if found:
            return found
    return {}


def inject_records(
    records: Sequence[Mapping[str, Any]],
    *,
    kinds: Sequence[str] = ALL_KINDS,
    rate: float = 0.1,
    seed: int = DEFAULT_SEED,
    contracts: ContractSet | None = None,
) -> tuple[list[dict[str, Any]], InjectReport]:
    """Plant faults in flat call records held in memory (`Planting` over a list); returns the new
    records and the report."""
    planting = Planting(lambda: records, kinds=kinds, rate=rate, seed=seed, contracts=contracts)
    out = list(planting)
    assert planting.report is not None
    return out, planting.report


def read_flat(
    paths: Iterable[str | Path], rejects: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Flat JSONL records from files (`.jsonl` or `.jsonl.gz`), or every such file in a folder (sorted,
    recursively), in a list: `iter_flat`'s records."""
    return list(iter_flat(paths, rejects))


#: Bytes read from a flat file at a time (`iter_flat`).
READ_BYTES = 1 << 22


def iter_flat(
    paths: Iterable[str | Path], rejects: list[dict[str, Any]] | None = None
) -> Iterator[dict[str, Any]]:
    """Flat JSONL records from files (`.jsonl` or `.jsonl.gz`), or every such file in a folder (sorted,
    recursively), read `READ_BYTES` at a time. A bad line is an error naming the file and line, or, when
    a `rejects` list is given, appended to it as `{source, line, error}` and left out, as `ingest`
    rejects a line. A file that cannot be read or decompressed is always an error. Lines are counted
    as `bytes.splitlines` counts them (a lone `\r` ends one too). Other formats: ingest them first and
    pass the corpus folder."""
    import gzip

    for src in paths:
        p = Path(src)
        if p.is_dir():
            files = sorted(
                f for f in p.rglob("*") if f.is_file() and f.name.endswith((".jsonl", ".jsonl.gz"))
            )
            if not files:
                raise TraceError("folder holds no *.jsonl or *.jsonl.gz files", source=str(p))
        else:
            files = [p]
        for f in files:
            with reading(f):  # opened here so that an OS error names the file; closed by the `with` below
                opened: Any = gzip.open(f, "rb") if f.name.endswith(".gz") else f.open("rb")  # noqa: SIM115
            with opened as fh:
                i = 0
                for physical in chunked_lines(functools.partial(_read, fh, f), size=READ_BYTES):
                    for raw in physical.splitlines():
                        i += 1
                        if not raw.strip():
                            continue
                        rec = _flat_line(raw, f, i, rejects)
                        if rec is not None:
                            yield rec


def _read(fh: Any, f: Path, n: int) -> bytes:
    """`n` bytes of `fh` (the file `f`), an OS or decompression error named as `f`'s."""
    with reading(f):
        data: bytes = fh.read(n)
    return data


def _flat_line(raw: bytes, f: Path, i: int, rejects: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """Line `i` of `f` as a flat record, or None when it is rejected into `rejects`."""
    try:
        rec = orjson.loads(raw)
        if not isinstance(rec, dict) or not isinstance(rec.get("tool"), str):
            raise TraceError(
                "not a flat call record (needs 'tool'); ingest other formats first and pass the corpus",
                source=str(f),
                line=i,
                field="tool",
            )
    except orjson.JSONDecodeError as e:
        bad = TraceError(f"invalid JSON: {e}", source=str(f), line=i)
        if rejects is None:
            raise bad from e
        rejects.append({"source": str(f), "line": i, "error": bad.message})
        return None
    except TraceError as e:
        if rejects is None:
            raise
        rejects.append({"source": str(f), "line": i, "error": e.message})
        return None
    return rec


#: Calls read from a corpus at a time (`iter_corpus_records`).
CORPUS_BATCH = 20_000


def iter_corpus_records(corpus: Any, batch: int = CORPUS_BATCH) -> Iterator[dict[str, Any]]:
    """Flat records rebuilt from a corpus (calls, plus each episode's `reward` and visible `tools`, which
    the flat format carries on any call of the trace), so an ingested corpus of any format can be
    injected; read `batch` calls at a time, in the corpus's order."""
    import polars as pl

    cols = [
        "trace_id",
        "task_id",
        "step",
        "tool",
        "status",
        "error",
        "arguments",
        "result",
        "started_at",
        "labels",
    ]
    episodes = {
        t: (r, tl)
        for t, r, tl in corpus.scan_episodes().select("trace_id", "reward", "tools").collect().iter_rows()
    }
    calls = corpus.scan_calls().select(cols).with_columns(pl.col("task_id", "tool").cast(pl.String))
    offset = 0
    while True:
        df = calls.slice(offset, batch).collect()
        if df.height == 0:
            return
        offset += df.height
        for row in df.iter_rows(named=True):
            reward, tools = episodes.get(row["trace_id"], (None, None))
            rec: dict[str, Any] = {
                "trace_id": row["trace_id"],
                "task_id": row["task_id"],
                "step": row["step"],
                "tool": row["tool"],
                "arguments": orjson.loads(row["arguments"]),
                "status": str(row["status"]),
            }
            if row["result"] is not None:
                rec["result"] = orjson.loads(row["result"])
            if row["error"] is not None:
                rec["error"] = row["error"]
            if row["started_at"] is not None:
                rec["started_at"] = row["started_at"]
            rec["labels"] = orjson.loads(row["labels"]) if row["labels"] else {}
            if reward is not None:
                rec["reward"] = reward
            if tools is not None:
                rec["tools"] = orjson.loads(tools)
            yield rec


def write_flat(records: Iterable[Mapping[str, Any]], out: str | Path) -> None:
    """Write records as canonical flat JSONL, atomically, one record at a time."""
    atomic_write_bytes(out, (canonical_json(dict(r)) + b"\n" for r in records))


def inject_file(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    kinds: Sequence[str] = ALL_KINDS,
    rate: float = 0.1,
    seed: int = DEFAULT_SEED,
    contracts: ContractSet | None = None,
    allow_empty: bool = False,
) -> InjectReport:
    """`contracts inject`: read flat JSONL (or a corpus folder), plant faults, write flat JSONL to `out`
    (no call record read is an error unless `allow_empty`: then `out` is written empty).

    Trace files are read as flat records, not ingested (`output_contracts.traces.sources.open_corpus` is for
    commands that need a corpus): injection works on the records it writes back."""
    from output_contracts.traces.corpus import Corpus
    from output_contracts.traces.sources import is_corpus

    rejected: list[dict[str, Any]] = []

    def read() -> Iterator[dict[str, Any]]:
        rejected.clear()  # each reading rejects the same lines: the last one's are reported
        for s in sources:
            if is_corpus(s):
                yield from iter_corpus_records(Corpus.open(s))
            else:
                yield from iter_flat([s], rejected)

    planting = Planting(read, kinds=kinds, rate=rate, seed=seed, contracts=contracts)
    write_flat(planting if allow_empty else _not_empty(planting, sources, rejected), out)
    assert planting.report is not None
    return replace(planting.report, rejected=tuple(rejected))


def _not_empty(
    records: Iterable[dict[str, Any]], sources: Sequence[str | Path], rejected: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """`records`, or the error that there was none to inject into (raised before anything is written)."""
    empty = True
    for rec in records:
        empty = False
        yield rec
    if empty:
        n = len(rejected)
        raise TraceError(
            f"no tool call found ({n:,} reject{'' if n == 1 else 's'}); check the path and --format, or pass "
            "--allow-empty",
            source=", ".join(str(s) for s in sources) if sources else None,
        )
