"""Each property code's cases and their golden violations, one snapshot per code folder (as ruff keeps one
per rule).

`tests/codes/<folder>/cases.json` holds a few hand-chosen rules of the folder's codes (tool, code, paths,
params, support; a tool's map parents under `maps`) and calls of real shapes (tool, arguments, result, a
`note` saying what the call shows; calls sharing an `episode` are one episode, in order, for the code
judged per episode; `status: "error"` for a failed call, which has no result). `golden.json` beside it holds
the violations every call gets: code, rule, path, expected, observed, present, detail (and `refers`, the
earlier call a violation names, where there is one).

Every case runs through the four evaluations of one contract set of those rules (one checker, k = 1),
which must agree exactly:
- `check_call` (`output_contracts.checks.checker`, what an agent loop calls), one episode memory a episode;
- the compiled per-call checker (`output_contracts.codes.engine.compiled.compiled_violations`, its memory
  from `compiled_memory`);
- the generic per-call engine (`output_contracts.codes.engine.evaluate.call_violations`, `episode_memory`);
- the vectorised corpus engine (`evaluate.find_violations` over a corpus of the same calls, its witnesses
  rendered by `checks.checker.violation_frame`).
Their answer must equal golden.json. After an intended change of behaviour, rewrite the golden files and
read the diff: `.venv/bin/python -m pytest tests/codes/test_snapshots.py --update-golden`.

Every registered code (`output_contracts.codes.table.specs()`) has its folder here with its cases, so a
code added without its tests folder fails; every rule of a folder's cases fires on some call, and some
call stays silent.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from output_contracts.checks.checker import check_call, violation_frame
from output_contracts.codes.contract_set import ContractSet, Rule, Support, rule_id
from output_contracts.codes.engine.compiled import compiled_memory, compiled_violations
from output_contracts.codes.engine.evaluate import call_violations, episode_memory, find_violations
from output_contracts.codes.evaluation import EpisodeMemory
from output_contracts.codes.table import specs
from output_contracts.codes.violation import Violation
from output_contracts.jsonutil import canonical_json, pretty_json
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import one_checker

HERE = Path(__file__).resolve().parent
UPDATE_HINT = ".venv/bin/python -m pytest tests/codes/test_snapshots.py --update-golden"
DIFF_LINES = 60


def code_folders() -> dict[str, tuple[str, ...]]:
    """Each folder of `codes/` that registers codes, with their names (`sign`: POSITIVE and NONNEG)."""
    out: dict[str, list[str]] = {}
    for spec in specs():
        out.setdefault(spec.__module__.rpartition(".")[2], []).append(spec.name)
    return {folder: tuple(codes) for folder, codes in sorted(out.items())}


FOLDERS = code_folders()

#: One violation as golden.json holds it.
Row = dict[str, Any]
#: The violations of every call, in the calls' order.
Answer = list[list[Row]]


@dataclass(frozen=True)
class Cases:
    """A folder's cases.json: the contract set of its rules and its calls."""

    folder: str
    contracts: ContractSet
    calls: tuple[dict[str, Any], ...]

    @classmethod
    def load(cls, folder: str) -> Cases:
        path = HERE / folder / "cases.json"
        if not path.is_file():
            pytest.fail(
                f"codes/{folder}/ registers {', '.join(FOLDERS[folder])} but tests/codes/{folder}/cases.json "
                "is missing: add the folder's cases (see tests/codes/test_snapshots.py)",
                pytrace=False,
            )
        data = orjson.loads(path.read_bytes())
        rules = tuple(
            Rule(
                rule_id(r["tool"], r["code"], r["paths"], r["params"]),
                r["tool"],
                r["code"],
                tuple(r["paths"]),
                r["params"],
                Support(**r["support"]),
                source=tuple(r.get("source", ["mined"])),
            )
            for r in data["rules"]
        )
        return cls(folder, one_checker(rules, data.get("maps")), tuple(data["calls"]))

    def episode(self, i: int) -> str:
        """The episode (trace) of call i: its `episode`, else one of its own."""
        return str(self.calls[i].get("episode", f"call-{i}"))

    def ok(self, i: int) -> bool:
        return self.calls[i].get("status", "ok") == "ok"

    def records(self) -> list[dict[str, Any]]:
        """The calls as flat call records (DESIGN §2.1), one a line in their order."""
        out = []
        for i, call in enumerate(self.calls):
            rec: dict[str, Any] = {
                "trace_id": self.episode(i),
                "step": i,
                "tool": call["tool"],
                "arguments": call["arguments"],
            }
            if self.ok(i):
                rec["result"] = call["result"]
            else:
                rec.update(status="error", error=call.get("error", "failed"))
            out.append(rec)
        return out


def row(fields: Mapping[str, Any]) -> Row:
    """A violation's fields (`Violation`'s), `refers` only where a violation names an earlier call."""
    return {k: v for k, v in fields.items() if k != "refers" or v is not None}


def in_order(rows: Sequence[Row]) -> list[Row]:
    """One call's violations in a fixed order (an engine's own order is not part of the answer)."""
    return sorted(rows, key=lambda r: (r["rule"], r["path"], canonical_json(r)))


#: A per-call evaluation: (contract set, tool, arguments, result, memory, call id) -> violations.
PerCall = Callable[[ContractSet, str, Any, Any, EpisodeMemory, str], Sequence[Violation]]


def _check_call(cs: ContractSet, tool: str, args: Any, result: Any, memory: EpisodeMemory, cid: str) -> Any:
    receipt = check_call(cs, tool, args, result, memory=memory, call_id=cid)
    return () if receipt is None else receipt.violations


def _compiled(cs: ContractSet, tool: str, args: Any, result: Any, memory: EpisodeMemory, cid: str) -> Any:
    return compiled_violations(cs, tool, args, result, memory=memory, call_id=cid)


def _generic(cs: ContractSet, tool: str, args: Any, result: Any, memory: EpisodeMemory, cid: str) -> Any:
    return call_violations(cs, tool, args, result, memory=memory, call_id=cid)


#: name -> (the evaluation, a fresh memory of one episode)
PER_CALL: dict[str, tuple[PerCall, Callable[[ContractSet], EpisodeMemory]]] = {
    "check_call": (_check_call, episode_memory),
    "compiled": (_compiled, compiled_memory),
    "generic per call": (_generic, episode_memory),
}


def per_call(
    cases: Cases, call_ids: Sequence[str], run: PerCall, memory: Callable[[ContractSet], Any]
) -> Answer:
    """Every call in order through `run`, each episode with its memory (a failed call is not checked, but
    its arguments may name an entity the episode saw)."""
    memories: dict[str, EpisodeMemory] = {}
    out: Answer = []
    for i, call in enumerate(cases.calls):
        mem = memories.setdefault(cases.episode(i), memory(cases.contracts))
        if not cases.ok(i):
            mem.record(call["tool"], call["arguments"], None, call_ids[i], ok=False)
            out.append([])
            continue
        found = run(cases.contracts, call["tool"], call["arguments"], call["result"], mem, call_ids[i])
        out.append(in_order([row(dataclasses.asdict(v)) for v in found]))
    return out


def vectorised(cases: Cases, corpus: Corpus) -> Answer:
    """The corpus pass over every call, witnesses rendered as the checker renders them."""
    found, entries, calls = find_violations(cases.contracts, corpus)
    frame = violation_frame(corpus, found, entries, calls)
    out: Answer = [[] for _ in cases.calls]
    fields = [f.name for f in dataclasses.fields(Violation)]
    for r in frame.iter_rows(named=True):
        r.update(expected=orjson.loads(r["expected"]), observed=orjson.loads(r["observed"]))
        out[r["line"] - 1].append(row({f: r[f] for f in fields}))
    return [in_order(rows) for rows in out]


def golden_doc(cases: Cases, call_ids: Sequence[str], answer: Answer) -> dict[str, Any]:
    """golden.json: each call (its index, the id a later violation `refers` to it by, tool and note)
    with its violations."""
    return {
        "calls": [
            {
                "call": i,
                "call_id": call_ids[i],
                "tool": call["tool"],
                "note": call.get("note", ""),
                "violations": answer[i],
            }
            for i, call in enumerate(cases.calls)
        ]
    }


def _diff(name: str, want: bytes, got: bytes) -> str:
    lines = list(
        difflib.unified_diff(
            want.decode().splitlines(),
            got.decode().splitlines(),
            f"{name} (golden)",
            f"{name} (now)",
            lineterm="",
        )
    )
    more = f"\n... {len(lines) - DIFF_LINES} more lines" if len(lines) > DIFF_LINES else ""
    return "\n".join(lines[:DIFF_LINES]) + more


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_cases_give_the_golden_violations_on_every_engine(
    folder: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    cases = Cases.load(folder)
    cs = cases.contracts
    assert schema_errors(cs.to_json(), "contract-set") == []
    codes = FOLDERS[folder]
    assert {r.code for r in cs.all_rules()} == set(codes), (
        f"cases.json of {folder} holds rules of {codes} only"
    )

    corpus = corpus_from_records(cases.records(), tmp_path / "corpus")
    ids = corpus.scan_calls().select("line", "call_id").sort("line").collect()
    assert ids.get_column("line").to_list() == list(range(1, len(cases.calls) + 1))
    call_ids = ids.get_column("call_id").to_list()

    answers = {name: per_call(cases, call_ids, run, memory) for name, (run, memory) in PER_CALL.items()}
    answers["vectorised"] = vectorised(cases, corpus)
    first, answer = next(iter(answers.items()))
    for name, other in answers.items():
        for i, (a, b) in enumerate(zip(answer, other, strict=True)):
            assert canonical_json(a) == canonical_json(b), f"call {i}: {first} and {name} disagree\n{a}\n{b}"

    # the cases are worth their place: each rule breaks somewhere, and some call holds
    fired = {r["rule"] for rows in answer for r in rows}
    silent = [i for i, rows in enumerate(answer) if cases.ok(i) and not rows]
    assert {r.id: r.paths for r in cs.all_rules() if r.id not in fired} == {}, "rules no call breaks"
    assert silent, "no call of the cases holds"

    data = pretty_json(golden_doc(cases, call_ids, answer))
    path = HERE / folder / "golden.json"
    if request.config.getoption("--update-golden"):
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    elif not path.is_file():
        pytest.fail(
            f"tests/codes/{folder}/golden.json is missing; create it with: {UPDATE_HINT}", pytrace=False
        )
    elif path.read_bytes() != data:
        shown = f"tests/codes/{folder}/golden.json"
        pytest.fail(f"{_diff(shown, path.read_bytes(), data)}\nrewrite it with: {UPDATE_HINT}", pytrace=False)


def test_every_code_folder_has_its_tests_folder() -> None:
    """A code folder of `codes/` has a tests folder of the same name, with its cases and golden output."""
    for folder in FOLDERS:
        for name in ("__init__.py", "cases.json", "golden.json"):
            assert (HERE / folder / name).is_file(), f"tests/codes/{folder}/{name}"


def test_no_cases_without_their_code() -> None:
    """Every tests/codes/*/cases.json is a registered code folder's (a renamed or removed code leaves none)."""
    stale = sorted(p.parent.name for p in HERE.glob("*/cases.json") if p.parent.name not in FOLDERS)
    stale += sorted(p.parent.name for p in HERE.glob("*/golden.json") if p.parent.name not in FOLDERS)
    assert stale == []
