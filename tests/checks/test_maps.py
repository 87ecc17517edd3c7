"""The checker reads map keys as `~*`, as the miner did: rules about every entry catch entries never seen.

Both checker paths are compared on corpora whose results have map parents: `check_call` /
`call_violations` (per call, `_index_nodes(..., maps)`) and `check_corpus` (vectorised, `generalize_patterns`),
for the full checker and every fold checker. Faults are planted in entries under keys the miner never saw;
receipts name the concrete path (with the new key), rules keep the `~*` pattern.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.checks.checker import call_violations, check_call, check_corpus
from output_contracts.checks.receipts import encode
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.pointers import MAP_TOKEN, escape_token

T = "get_product_details"
LAYOUTS = ("flat", "in_array", "root", "nested")
FAULTS = ("negative_price", "missing_price", "price_type", "entry_type", "relation", "dates")


def _id(rng: random.Random, style: str) -> str:
    n = rng.randrange(10**7, 10**8)
    return {
        "digits": str(n),
        "prefixed": f"gift_card_{n}",
        "hash": f"#W{n}",
        "email": f"user{n}@example.com",
        "escaped": f"sku/{n}~x",  # `/` and `~` in a key: escaped in every path
    }[style]


def _entry(rng: random.Random) -> dict[str, Any]:
    price = round(rng.uniform(0.5, 99.0), 2)
    qty = rng.randint(1, 9)
    start = rng.randint(1, 14)
    return {
        "price": price,
        "qty": qty,
        "line": round(price * qty, 2),
        "start": f"2024-03-{start:02d}",
        "end": f"2024-03-{start + rng.randint(0, 14):02d}",
    }


def _wrap(layout: str, entries: dict[str, Any], rng: random.Random, i: int) -> tuple[Any, str]:
    """A result holding the map `entries` at the layout's map parent, and that parent's concrete path."""
    if layout == "flat":
        return {"product_id": f"P{i}", "variants": entries}, "/variants"
    if layout == "in_array":
        return {"items": [{"sku": f"S{i}", "variants": entries}]}, "/items/0/variants"
    if layout == "root":
        return entries, ""
    user = f"user_{rng.randrange(10**6, 10**7)}"
    return {"users": {user: {"cards": entries}}}, f"/users/{escape_token(user)}/cards"


def _clean(rng: random.Random, layout: str, style: str, n_calls: int, n_tasks: int) -> list[dict[str, Any]]:
    recs = []
    for i in range(n_calls):
        entries = {_id(rng, style): _entry(rng) for _ in range(rng.randint(2 if i == 0 else 1, 3))}
        res, _ = _wrap(layout, entries, rng, i)
        recs.append(
            {
                "trace_id": f"ep{i}",
                "task_id": f"task-{i % n_tasks:02d}",
                "tool": T,
                "arguments": {},
                "result": res,
            }
        )
    return recs


def _plant(fault: str, rng: random.Random) -> tuple[dict[str, Any], str, str]:
    """A bad entry, the code that must fire and the field it fires at ('' = the entry itself)."""
    e = _entry(rng)
    if fault == "negative_price":
        e["price"] = -e["price"]
        e["line"] = round(e["price"] * e["qty"], 2)
        return e, "POSITIVE", "/price"
    if fault == "missing_price":
        del e["price"]
        return e, "REQUIRED", "/price"
    if fault == "price_type":
        e["price"] = str(e["price"])
        return e, "TYPE", "/price"
    if fault == "entry_type":
        return "sold out", "TYPE", ""  # type: ignore[return-value]
    if fault == "relation":
        e["line"] = round(e["line"] + 1.5, 2)
        return e, "RELATION", "/line"
    e["start"], e["end"] = "2024-04-20", "2024-04-02"
    return e, "DATE_ORDER", "/end"


def _rows_corpus(df: pl.DataFrame) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = {}
    for r in df.iter_rows(named=True):
        out.setdefault(r["cid"], []).append(
            (r["rule"], r["code"], r["path"], r["expected"], r["observed"], r["present"], r["detail"])
        )
    return {k: sorted(v) for k, v in out.items()}


def _rows_call(cs: ContractSet, args: Any, res: Any, fold: int | None) -> list[tuple[Any, ...]]:
    return sorted(
        (v.rule, v.code, v.path, canonical_str(v.expected), canonical_str(v.observed), v.present, v.detail)
        for v in call_violations(cs, T, args, res, fold=fold)
    )


def _assert_paths_agree(cs: ContractSet, corpus: Corpus) -> dict[int | None, pl.DataFrame]:
    """check_corpus == call_violations on every call, for the full checker and every fold checker."""
    calls = corpus.scan_calls().select("cid", "arguments", "result").collect()
    docs = [(cid, orjson.loads(a), orjson.loads(r)) for cid, a, r in calls.iter_rows()]
    frames: dict[int | None, pl.DataFrame] = {}
    for fold in [None, *range(cs.k if cs.folds else 0)]:
        df = check_corpus(cs, corpus, fold=fold)
        if fold is None:
            assert check_corpus(cs, corpus, batch_calls=20).equals(df)  # batching changes nothing
        by_cid = _rows_corpus(df)
        for cid, args, res in docs:
            assert _rows_call(cs, args, res, fold) == by_cid.get(cid, []), (fold, res)
        frames[fold] = df
    if cs.folds:  # cross-fitted: each call checked by its own task's fold checker
        tasks = dict(
            corpus.scan_calls().select("cid", pl.col("task_id").cast(pl.String)).collect().iter_rows()
        )
        by_cid = _rows_corpus(check_corpus(cs, corpus, fold="cross"))
        for cid, args, res in docs:
            assert _rows_call(cs, args, res, cs.fold_of(tasks[cid])) == by_cid.get(cid, []), ("cross", res)
    return frames


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    layout=st.sampled_from(LAYOUTS),
    style=st.sampled_from(("digits", "prefixed", "hash", "email", "escaped")),
    faults=st.lists(st.sampled_from(FAULTS), min_size=1, max_size=4),
    n_calls=st.integers(40, 70),
    n_tasks=st.integers(8, 12),
)
def test_check_call_equals_check_corpus_with_maps(
    seed: int, layout: str, style: str, faults: list[str], n_calls: int, n_tasks: int
) -> None:
    rng = random.Random(seed)
    clean = _clean(rng, layout, style, n_calls, n_tasks)
    seen = {k for r in clean for k in orjson.dumps(r["result"]).decode().split('"')}
    with tempfile.TemporaryDirectory() as tmp:
        cs = mine(corpus_from_records(clean, Path(tmp) / "clean"), folds=3)
        want_maps = {
            "flat": ("/variants",),
            "in_array": ("/items/*/variants",),
            "root": ("",),
            "nested": ("/users", "/users/~*/cards"),
        }[layout]
        assert cs.tools[T].maps == want_maps
        parent_pattern = want_maps[-1]
        entry = f"{parent_pattern}/{MAP_TOKEN}"
        have = {(r.code, r.paths) for r in cs.rules_for(None)}
        for code, paths in [
            ("POSITIVE", (f"{entry}/price",)),
            ("REQUIRED", (f"{entry}/price",)),
            ("TYPE", (f"{entry}/price",)),
            ("TYPE", (entry,)),
            ("DATE_ORDER", (f"{entry}/start", f"{entry}/end")),
            ("RELATION", (f"{entry}/line", f"{entry}/price", f"{entry}/qty")),
        ]:
            assert (code, paths) in have, (code, paths)
        # faulty calls: each plants faults in entries under keys never seen while mining
        planted: list[tuple[Any, list[tuple[str, str]]]] = []
        faulty = []
        for j, fault in enumerate(faults):
            entries: dict[str, Any] = {_id(rng, style): _entry(rng)}  # a clean new entry beside it
            new_key = _id(rng, style)
            assert new_key not in seen
            bad, code, field = _plant(fault, rng)
            entries[new_key] = bad
            res, parent = _wrap(layout, entries, rng, 1000 + j)
            planted.append((res, [(code, f"{parent}/{escape_token(new_key)}{field}")]))
            faulty.append(
                {"trace_id": f"bad{j}", "task_id": f"task-{j:02d}", "tool": T, "arguments": {}, "result": res}
            )
        corpus = corpus_from_records(clean + faulty, Path(tmp) / "mixed")
        frames = _assert_paths_agree(cs, corpus)
        # the clean calls hold under the full checker; every planted fault is caught at its concrete path
        full = frames[None]
        assert set(full["trace_id"].to_list()) == {f"bad{j}" for j in range(len(faults))}
        for res, want in planted:
            got = {(v.code, v.path) for v in call_violations(cs, T, {}, res)}
            for code, path in want:
                assert (code, path) in got, (code, path, got)
            receipt = check_call(cs, T, {}, res)
            assert receipt is not None and receipt.violations == tuple(call_violations(cs, T, {}, res))
            enc = encode(receipt)
            assert schema_errors(enc, "receipt-v2") == []
            v = next(x for x in enc["outcome_contract"]["violations"] if (x["code"], x["path"]) == want[0])
            assert MAP_TOKEN not in v["path"]
            rule = next(r for r in cs.all_rules() if r.id == v["rule"])
            assert any(MAP_TOKEN in p for p in rule.paths)  # the rule keeps the pattern


# ---- a map parent holding an array -------------------------------------------------------------------


def _variants_contracts(tmp: Path) -> ContractSet:
    rng = random.Random(7)
    return mine(corpus_from_records(_clean(rng, "flat", "digits", 40, 8), tmp / "clean"))


def test_array_at_a_map_parent_is_read_alike_by_both_paths(tmp_path: Path) -> None:
    cs = _variants_contracts(tmp_path)
    assert cs.tools[T].maps == ("/variants",)
    res = {"product_id": "X", "variants": [{"price": -5.0, "qty": 1, "line": -5.0}]}
    rec = {"trace_id": "x", "tool": T, "arguments": {}, "result": res}
    df = check_corpus(cs, corpus_from_records([rec], tmp_path / "arr"))
    per_call = sorted((v.code, v.path) for v in call_violations(cs, T, {}, res))
    assert sorted(zip(df["code"].to_list(), df["path"].to_list(), strict=True)) == per_call


def test_clean_entries_under_new_keys_hold(tmp_path: Path) -> None:
    cs = _variants_contracts(tmp_path)
    rng = random.Random(99)
    res = {"product_id": "NEW", "variants": {"9000000001": _entry(rng), "9000000002": _entry(rng)}}
    assert call_violations(cs, T, {}, res) == []
    assert check_call(cs, T, {}, res) is None
    assert (
        check_corpus(
            cs,
            corpus_from_records(
                [{"trace_id": "n", "tool": T, "arguments": {}, "result": res}], tmp_path / "n"
            ),
        ).height
        == 0
    )


# ---- the CLI -----------------------------------------------------------------------------------------


def _run(*args: str, input: bytes | None = None) -> Any:
    return CliRunner().invoke(app, list(args), input=input)


def _jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def test_cli_mine_then_check_catches_a_new_key(tmp_path: Path) -> None:
    rng = random.Random(3)
    clean = _clean(rng, "flat", "digits", 50, 10)
    _jsonl(tmp_path / "clean.jsonl", clean)
    out = tmp_path / "contracts.json"
    r = _run("mine", str(tmp_path / "clean.jsonl"), "-o", str(out), "-q")
    assert r.exit_code == 0, r.output
    data = orjson.loads(out.read_bytes())
    assert data["tools"][T]["maps"] == ["/variants"]
    assert schema_errors(data, "contract-set") == []

    ok = _run("check", "--contracts", str(out), str(_jsonl(tmp_path / "ok.jsonl", clean[:10])))
    assert ok.exit_code == 0, ok.output
    assert ok.stdout == ""

    bad_entry = {**_entry(rng), "price": -2.5}
    bad_entry["line"] = round(bad_entry["price"] * bad_entry["qty"], 2)
    bad = {
        "trace_id": "b1",
        "tool": T,
        "arguments": {},
        "result": {"product_id": "P-new", "variants": {"5550001234": bad_entry}},
    }
    src = _jsonl(tmp_path / "bad.jsonl", [*clean[:3], bad])
    res = _run("check", "--contracts", str(out), str(src))
    assert res.exit_code == 1, res.output
    receipts = [orjson.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert [rc["line"] for rc in receipts] == [4]
    vs = receipts[0]["outcome_contract"]["violations"]
    assert sorted((v["code"], v["path"], v["observed"]) for v in vs) == [
        ("POSITIVE", "/variants/5550001234/line", bad_entry["line"]),
        ("POSITIVE", "/variants/5550001234/price", -2.5),
    ]
    rule_paths = {rule["id"]: rule["paths"] for rule in data["tools"][T]["rules"]}
    assert sorted(rule_paths[v["rule"]] for v in vs) == [["/variants/~*/line"], ["/variants/~*/price"]]
    # stdin is checked call by call (check_lines): the same receipt
    streamed = _run("check", "--contracts", str(out), "-", input=src.read_bytes())
    assert streamed.exit_code == 1, streamed.output
    got = [orjson.loads(line) for line in streamed.stdout.splitlines() if line.strip()]
    assert [rc["outcome_contract"]["violations"] for rc in got] == [vs]


def test_inject_targets_map_entries_named_by_rules(tmp_path: Path) -> None:
    """Fault injection that targets a contract set's rules finds `~*` rules' nodes in every entry."""
    from output_contracts.audit.inject import inject_records

    rng = random.Random(11)
    recs = _clean(rng, "flat", "digits", 60, 12)
    cs = mine(corpus_from_records(recs, tmp_path / "c"))
    assert cs.tools[T].maps == ("/variants",)
    out, rep = inject_records(recs, kinds=["sign_flip", "drop_field"], rate=1.0, seed=3, contracts=cs)
    assert rep.targeting == "contracts" and rep.no_target == 0
    paths = [r["labels"]["fault_path"] for r in out if "fault" in r.get("labels", {})]
    assert len(paths) == 60
    under = [(p, r) for p, r in zip(paths, recs, strict=True) if p.startswith("/variants/")]
    # most targets are entry fields (three of the four signed/required fields live in entries), each at
    # a key the faulted result really holds; without the maps none would be found there
    assert len(under) >= 40
    assert all(p.split("/")[2] in r["result"]["variants"] for p, r in under)
