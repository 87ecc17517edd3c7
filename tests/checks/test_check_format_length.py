"""FORMAT and LENGTH through the checker: `check_call` (plain Python) and `check_corpus` (vectorised) give
the same witnesses, receipts validate, and `contracts check` reports them from files and from stdin."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.checks.checker import (
    call_violations,
    check_call,
    check_corpus,
    load_contracts,
    receipts_from_frame,
)
from output_contracts.checks.receipts import encode
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import (
    ContractSet,
    FoldChecker,
    Rule,
    Support,
    ToolContracts,
    rule_id,
)
from output_contracts.codes.format.shapes import LONG, NON_ASCII
from output_contracts.codes.violation import Violation
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree

T = "get_order"
REPO = Path(__file__).resolve().parents[2]
N_TASKS = 320  # LENGTH needs 300 tasks with the default parameters

FIRST = ["Ana", "Yusuf", "Li", "Mohammed", "Eve", "Olga", "Bartholomew", "Kim", "Ian", "Francesca"]
LAST = ["Rossi", "Ng", "Schmidt", "Okafor", "Li", "Fernandez", "Kowalski"]
WORDS = ["late", "box", "gift", "call", "ok", "please", "door", "fragile", "left", "at"]


def clean_result(r: random.Random, i: int) -> dict[str, Any]:
    return {
        "order_id": f"ORD-{r.randrange(10**6):06d}",
        "customer": f"{r.choice(FIRST)} {r.choice(LAST)}",
        "status": ["pending", "shipped", "delivered"][i % 3],
        "note": " ".join(r.choice(WORDS) for _ in range(r.randint(1, 14))) + r.choice([".", "!", ""]),
        "items": [{"lines": [r.randint(1, 9)] * r.randint(1, 3)} for _ in range(r.randint(1, 3))],
        "tags": [] if i % 7 == 3 else ["gift"] * r.randint(1, 2),
    }


def record(i: int, result: Any, task: str | None = None) -> dict[str, Any]:
    oid = result.get("order_id") if isinstance(result, dict) else None
    return {
        "trace_id": f"ep-{i:04d}",
        "task_id": task or f"task-{i:04d}",
        "step": 0,
        "tool": T,
        "arguments": {"order_id": oid} if isinstance(oid, str) else {},
        "result": result,
        "status": "ok",
    }


def clean_records() -> list[dict[str, Any]]:
    r = random.Random(11)
    return [record(i, clean_result(r, i)) for i in range(N_TASKS)]


@pytest.fixture(scope="module")
def cs(tmp_path_factory: pytest.TempPathFactory) -> ContractSet:
    """The real miner on the clean world, 5 folds (the full checker has LENGTH; the fold checkers, with
    ~256 tasks each, do not)."""
    corpus = corpus_from_records(clean_records(), tmp_path_factory.mktemp("clean") / "c")
    return mine(corpus, folds=5, seed=13)


@pytest.fixture(scope="module")
def cs_file(cs: ContractSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cs") / "contracts.json"
    cs.save(p)
    return p


def base() -> dict[str, Any]:
    return {
        "order_id": "ORD-123456",
        "customer": "Yusuf Rossi",
        "status": "shipped",
        "note": "leave at the door",
        "items": [{"lines": [1]}, {"lines": [2, 3]}],
        "tags": [],
    }


def faulty(**changes: Any) -> dict[str, Any]:
    return {**base(), **changes}


MOJIBAKE = "JosÃ© Rossi"
LONG_ID = "ORD-" + "1234567890" * 7

#: (result, the expected (code, path, expected, observed) of the FORMAT and LENGTH violations)
CASES: list[tuple[dict[str, Any], list[tuple[str, str, Any, Any]]]] = [
    (base(), []),
    (faulty(order_id="ord-123456"), [("FORMAT", "/order_id", ["AAA-999999"], "ord-123456")]),
    (faulty(order_id="ORD-123456  "), [("FORMAT", "/order_id", ["AAA-999999"], "ORD-123456  ")]),
    (faulty(order_id="ORD-12345"), [("FORMAT", "/order_id", ["AAA-999999"], "ORD-12345")]),
    (faulty(order_id=LONG_ID), [("FORMAT", "/order_id", ["AAA-999999"], LONG_ID)]),
    (faulty(customer=MOJIBAKE), [("FORMAT", "/customer", ["Aa Aa"], MOJIBAKE)]),
    (faulty(customer="N/A"), [("FORMAT", "/customer", ["Aa Aa"], "N/A")]),
    (
        faulty(customer="Bartholomew Fernandez-Kowalski"),
        [("FORMAT", "/customer", ["Aa Aa"], "Bartholomew Fernandez-Kowalski")],
    ),
    (faulty(customer="Al Yo"), []),  # loose: any run lengths
    (faulty(items=[]), [("LENGTH", "/items", ">= 1 items", [])]),
    (faulty(items=[{"lines": [1]}, {"lines": []}]), [("LENGTH", "/items/1/lines", ">= 1 items", [])]),
    (
        faulty(order_id="ord-1", items=[]),
        [("FORMAT", "/order_id", ["AAA-999999"], "ord-1"), ("LENGTH", "/items", ">= 1 items", [])],
    ),
]


def ours(vs: list[Violation] | tuple[Violation, ...]) -> list[tuple[str, str, Any, Any]]:
    return sorted((v.code, v.path, v.expected, v.observed) for v in vs if v.code in ("FORMAT", "LENGTH"))


def test_contract_set_has_the_rules(cs: ContractSet, cs_file: Path) -> None:
    assert schema_errors(cs.to_json(), "contract-set") == []
    assert schema_errors(orjson.loads(cs_file.read_bytes()), "contract-set") == []
    got = {(r.code, r.paths): r.params for r in cs.rules_for(None) if r.code in ("FORMAT", "LENGTH")}
    assert got == {
        ("FORMAT", ("/order_id",)): {"level": "exact", "shapes": ["AAA-999999"]},
        ("FORMAT", ("/customer",)): {"level": "loose", "shapes": ["Aa Aa"]},
        ("LENGTH", ("/items",)): {"min": 1},
        ("LENGTH", ("/items/*/lines",)): {"min": 1},
    }
    assert load_contracts(cs_file).to_json() == cs.to_json()


@pytest.mark.parametrize("result,expected", CASES)
def test_check_call_witnesses(cs: ContractSet, result: dict[str, Any], expected: list[Any]) -> None:
    rc = check_call(cs, T, {"order_id": result["order_id"]}, result)
    assert ours(rc.violations if rc is not None else ()) == sorted(expected)
    if rc is not None:
        assert all(v.present for v in rc.violations)
        assert schema_errors(encode(rc), "receipt-v2") == []
        assert schema_errors(encode(rc, "v1"), "receipt-v1") == []
        assert rc.tool == T and rc.result == result  # the result is never changed


def test_detail_sentences(cs: ContractSet) -> None:
    rc = check_call(cs, T, {"order_id": "ord-123456"}, faulty(order_id="ord-123456"))
    assert rc is not None
    (v,) = rc.violations
    assert v.detail == (
        'get_order returned order_id="ord-123456", shaped a{3}-9{6}; every one of 320 clean results was '
        "shaped A{3}-9{6}"
    )
    rc = check_call(cs, T, {"order_id": "ORD-123456"}, faulty(customer=MOJIBAKE))
    assert rc is not None
    (v,) = rc.violations
    assert f"shaped A+a+{NON_ASCII}+ A+a+;" in v.detail and "was shaped A+a+ A+a+" in v.detail
    rc = check_call(cs, T, {"order_id": "ORD-123456"}, faulty(items=[]))
    assert rc is not None
    (v,) = rc.violations
    assert v.detail == "get_order returned 0 items at items; every one of 320 clean results had at least 1"


def test_fold_checkers_have_no_length(cs: ContractSet) -> None:
    """Trained on ~256 tasks, a fold checker has FORMAT but not LENGTH (300 tasks)."""
    res = faulty(order_id="ord-123456", items=[])
    for f in range(cs.k):
        vs = call_violations(cs, T, {"order_id": "ord-123456"}, res, fold=f)
        assert [v.code for v in vs if v.code in ("FORMAT", "LENGTH")] == ["FORMAT"], f


# ---- check_call == check_corpus --------------------------------------------------------------------------


def assert_same(cs: ContractSet, corpus: Corpus, fold: int | None = None) -> pl.DataFrame:
    return assert_paths_agree(cs, corpus, fold=fold)


def test_corpus_equals_call(cs: ContractSet, tmp_path: Path) -> None:
    recs = [record(i, res) for i, (res, _) in enumerate(CASES)]
    corpus = corpus_from_records(recs, tmp_path / "faulty")
    df = assert_same(cs, corpus)
    for fold in range(cs.k):
        assert_same(cs, corpus, fold)
    # the witnesses are the listed ones, call by call
    receipts = list(receipts_from_frame(cs, corpus, df, include_all=True))
    assert [ours(r.violations) for r in receipts] == [sorted(e) for _, e in CASES]
    for r in receipts:
        assert schema_errors(encode(r), "receipt-v2") == []
    assert sorted(check_corpus(cs, corpus, codes=["LENGTH"])["path"].to_list()) == [
        "/items",
        "/items",
        "/items/1/lines",
    ]


def hand_rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return Rule(rule_id("h", code, paths, params), "h", code, tuple(paths), params, Support(100, 9))


HAND = (
    hand_rule("FORMAT", ["/a"], {"level": "exact", "shapes": ["A9", "a-a"]}),
    hand_rule("FORMAT", ["/a"], {"level": "loose", "shapes": ["A9"]}),
    hand_rule("FORMAT", ["/xs/*/b"], {"level": "loose", "shapes": ["a"]}),
    hand_rule("FORMAT", [""], {"level": "exact", "shapes": [LONG]}),
    hand_rule("FORMAT", ["/id"], {"level": "charset", "shapes": ["6:9", "6:A"]}),
    hand_rule("LENGTH", ["/xs"], {"min": 2}),
    hand_rule("LENGTH", ["/ys"], {"min": 255}),
    hand_rule("LENGTH", [""], {"min": 1}),
)
HAND_CASES: list[tuple[Any, list[tuple[str, str, Any]]]] = [
    (
        {"a": "B7", "xs": [{"b": "x"}, {"b": "Xy"}], "ys": list(range(254))},
        [("FORMAT", "/xs/1/b", ["a"]), ("LENGTH", "/ys", ">= 255 items")],
    ),
    (
        {"a": "BB77", "xs": [{"b": "xx"}], "ys": list(range(255))},
        [("FORMAT", "/a", ["A9", "a-a"]), ("LENGTH", "/xs", ">= 2 items")],
    ),
    (
        {"a": "b-c", "xs": [], "ys": []},
        [("FORMAT", "/a", ["A9"]), ("LENGTH", "/xs", ">= 2 items"), ("LENGTH", "/ys", ">= 255 items")],
    ),
    ({"a": 7, "xs": "none", "ys": {}}, []),  # other kinds are TYPE's business
    ([], [("LENGTH", "", ">= 1 items")]),
    ([1], []),
    ("x" * 65, []),
    ("short", [("FORMAT", "", [LONG])]),
    # charset: any mix of the allowed classes at the allowed length (all letters, all digits too)
    ({"id": "4WQ150", "xs": [1, 2], "ys": list(range(255))}, []),
    ({"id": "VAAOXJ", "xs": [1, 2], "ys": list(range(255))}, []),
    ({"id": "123456", "xs": [1, 2], "ys": list(range(255))}, []),
    ({"id": "4wq150", "xs": [1, 2], "ys": list(range(255))}, [("FORMAT", "/id", ["6:9", "6:A"])]),
    ({"id": "4WQ15", "xs": [1, 2], "ys": list(range(255))}, [("FORMAT", "/id", ["6:9", "6:A"])]),
    ({"id": "4WQ150  ", "xs": [1, 2], "ys": list(range(255))}, [("FORMAT", "/id", ["6:9", "6:A"])]),
    ({"id": "4WQ-50", "xs": [1, 2], "ys": list(range(255))}, [("FORMAT", "/id", ["6:9", "6:A"])]),
    ({"id": "", "xs": [1, 2], "ys": list(range(255))}, [("FORMAT", "/id", ["6:9", "6:A"])]),
]


def hand_set() -> ContractSet:
    return ContractSet(
        params={"k": 1, "seed": 13},
        corpus={},
        tools={"h": ToolContracts(rules=HAND)},
        folds=(FoldChecker(0, tuple(r.id for r in HAND)),),
    )


def test_hand_written_rules_both_levels_and_minima(tmp_path: Path) -> None:
    """Hand-written rules the miner does not write (a minimum above 1, up to 255; an exact and a loose
    rule at one place; root pointers): both implementations agree, and the witnesses are the listed ones."""
    hand = hand_set()
    recs = [{**record(i, res), "tool": "h"} for i, (res, _) in enumerate(HAND_CASES)]
    corpus = corpus_from_records(recs, tmp_path / "hand")
    df = assert_same(hand, corpus)
    receipts = list(receipts_from_frame(hand, corpus, df, include_all=True))
    got = [sorted((v.code, v.path, v.expected) for v in r.violations) for r in receipts]
    assert got == [sorted(e) for _, e in HAND_CASES]
    assert schema_errors(hand.to_json(), "contract-set") == []


def test_format_on_string_codes_equals_strings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a corpus with a mining view the corpus pass tells strings apart by their view codes (`skey`),
    without one by their text: the same FORMAT violations either way, with two rules at one place
    (one string judged per rule) and strings that repeat across calls."""
    hand = hand_set()
    cases = [res for res, _ in HAND_CASES] * 2
    corpus = corpus_from_records([{**record(i, r), "tool": "h"} for i, r in enumerate(cases)], tmp_path / "h")
    assert corpus.view() is not None
    coded = check_corpus(hand, corpus, codes=["FORMAT"])
    assert coded.height == 2 * sum(c == "FORMAT" for _, e in HAND_CASES for c, _p, _x in e)
    monkeypatch.setattr(Corpus, "view", lambda self: None)
    assert check_corpus(hand, corpus, codes=["FORMAT"]).equals(coded)


# Random results: strings of every shape at the FORMAT places, arrays of every length at the LENGTH ones.
strings = st.one_of(
    st.sampled_from(["ORD-123456", "ord-123456", "ORD-123456  ", "Yusuf Rossi", MOJIBAKE, "", LONG_ID]),
    st.text(max_size=70),
    st.from_regex(r"\A[A-Za-z]{1,4}[- ][0-9A-Za-z]{1,7}\Z"),
)
anything = st.one_of(strings, st.integers(-2, 2), st.none(), st.lists(st.integers(0, 3), max_size=2))


@st.composite
def results(draw: Any) -> dict[str, Any]:
    res = base()
    res["order_id"] = draw(strings)
    res["customer"] = draw(st.one_of(strings, anything))
    res["items"] = draw(
        st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"lines": st.one_of(st.lists(st.integers(0, 3), max_size=3), anything)}
                ),
                max_size=3,
            ),
            anything,
        )
    )
    return res


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(results(), min_size=1, max_size=12))
def test_vectorised_equals_plain(batch: list[dict[str, Any]], cs: ContractSet, tmp_path_factory: Any) -> None:
    corpus = corpus_from_records(
        [record(i, r) for i, r in enumerate(batch)], tmp_path_factory.mktemp("p") / "c"
    )
    assert_same(cs, corpus)


# ---- the CLI ----------------------------------------------------------------------------------------------


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def receipts_of(stdout: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stdout.splitlines() if line.strip()]


def witnesses(receipt: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    return sorted(
        (v["code"], v["path"], v["expected"], v["observed"])
        for v in receipt["outcome_contract"]["violations"]
        if v["code"] in ("FORMAT", "LENGTH")
    )


def test_cli_file_and_stdin(cs_file: Path, tmp_path: Path) -> None:
    recs = [record(i, res) for i, (res, _) in enumerate(CASES)]
    src = write_jsonl(tmp_path / "faulty.jsonl", recs)
    runner = CliRunner()
    from_file = runner.invoke(app, ["check", "--contracts", str(cs_file), "-q", str(src)])
    assert from_file.exit_code == 1, from_file.output
    out = receipts_of(from_file.stdout)
    want = {i + 1: sorted(e) for i, (_, e) in enumerate(CASES) if e}
    assert {r["line"]: witnesses(r) for r in out} == want
    for r in out:
        assert schema_errors(r, "receipt-v2") == []
    # stdin is checked call by call (check_call), the file as a corpus (check_corpus): same violations
    streamed = runner.invoke(app, ["check", "--contracts", str(cs_file), "-q", "-"], input=src.read_bytes())
    assert streamed.exit_code == 1, streamed.output
    strip = [(r["line"], r["outcome_contract"]) for r in out]
    assert [(r["line"], r["outcome_contract"]) for r in receipts_of(streamed.stdout)] == strip
    # encoder v1 and the code filter
    v1 = runner.invoke(
        app, ["check", "-c", str(cs_file), "-q", "--encoder", "v1", "--code", "LENGTH", str(src)]
    )
    assert v1.exit_code == 1, v1.output
    out1 = receipts_of(v1.stdout)
    assert sorted((r["line"], v["path"]) for r in out1 for v in r["outcome_contract"]["violations"]) == [
        (10, "/items"),
        (11, "/items/1/lines"),
        (12, "/items"),
    ]
    for r in out1:
        assert schema_errors(r, "receipt-v1") == []
        assert {v["code"] for v in r["outcome_contract"]["violations"]} == {"LENGTH"}
    # a clean file: exit 0, no receipts
    clean = write_jsonl(tmp_path / "clean.jsonl", clean_records()[:20])
    ok = runner.invoke(app, ["check", "--contracts", str(cs_file), "-q", str(clean)])
    assert ok.exit_code == 0, ok.output
    assert receipts_of(ok.stdout) == []


def test_cli_subprocess(cs_file: Path, tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "f.jsonl", [record(0, faulty(order_id="ORD-123456  ", items=[]))])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "output_contracts.cli.app",
            "check",
            "--contracts",
            str(cs_file),
            "-q",
            str(src),
        ],
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr.decode()
    (r,) = receipts_of(proc.stdout.decode())
    assert witnesses(r) == [
        ("FORMAT", "/order_id", ["AAA-999999"], "ORD-123456  "),
        ("LENGTH", "/items", ">= 1 items", []),
    ]
    assert schema_errors(r, "receipt-v2") == []
