"""What the tests of FORMAT (tests/codes/format/) and LENGTH (tests/codes/length/) share: the two order
worlds both codes are found in, the hand-written rules of both, and the assertions each code's tests make
of them for that code (the generic ones are tests/codes/witnesses.py).

The check world (`cs`, mined with 5 folds; `CASES`, faulty results with their FORMAT and LENGTH
violations): order ids of one exact shape, names of one loose shape, free-text notes, items and their
lines never empty. The mining world (`order_world`, `world_corpus`, `world_cs`): the same with skus, a
small status set and tags that are empty in every 7th task."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from output_contracts.codes.contract_set import ContractSet, Rule
from output_contracts.codes.format.shapes import LONG
from output_contracts.mining import mine
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.witnesses import assert_cli_check as witnessed_by_cli
from tests.codes.witnesses import assert_hand_written, receipts_of, write_jsonl
from tests.conftest import REPO
from tests.equivalence import assert_paths_agree, one_checker
from tests.equivalence import hand_rule as a_hand_rule
from tests.helpers import order_calls, order_record, task_record

T = "get_order"
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


def record(i: int, result: Any) -> dict[str, Any]:
    return order_record(i, result)


def clean_records() -> list[dict[str, Any]]:
    r = random.Random(11)
    return [record(i, clean_result(r, i)) for i in range(N_TASKS)]


@pytest.fixture(scope="session")
def cs(tmp_path_factory: pytest.TempPathFactory) -> ContractSet:
    """The real miner on the clean world, 5 folds (the full checker has LENGTH; the fold checkers, with
    ~256 tasks each, do not)."""
    corpus = corpus_from_records(clean_records(), tmp_path_factory.mktemp("clean") / "c")
    return mine(corpus, folds=5, seed=13)


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


# ---- check_call == check_corpus --------------------------------------------------------------------------


def assert_same(cs: ContractSet, corpus: Corpus, fold: int | None = None) -> pl.DataFrame:
    return assert_paths_agree(cs, corpus, fold=fold)


def hand_rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return a_hand_rule("h", code, paths, params)


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
    return one_checker(HAND)


# ---- the order world mined with the default parameters ---------------------------------------------

STATUSES = ["pending", "shipped", "delivered"]
TAGS = ["gift", "vip", "new"]


def order(r: random.Random, i: int, *, tags_empty: bool = False) -> dict[str, Any]:
    n_words = r.randint(1, 14)
    return {
        "order_id": f"ORD-{r.randrange(10**6):06d}",
        "customer": f"{r.choice(FIRST)} {r.choice(LAST)}",
        "status": STATUSES[i % 3],
        "note": " ".join(r.choice(WORDS) for _ in range(n_words)) + r.choice([".", "!", "?", ""]),
        "items": [
            {"sku": f"SKU-{r.randrange(10**4):04d}", "lines": [r.randint(1, 9)] * r.randint(1, 3)}
            for _ in range(r.randint(1, 3))
        ],
        "tags": [] if tags_empty else r.sample(TAGS, r.randint(1, 2)),
    }


def order_world(n_tasks: int, seed: int = 7, calls_per_task: int = 1) -> list[dict[str, Any]]:
    """Flat call records: one `get_order` call per (task, step); `/tags` is empty in every 7th task,
    `/items` and `/items/*/lines` are never empty."""
    r = random.Random(seed)
    return order_calls(n_tasks, calls_per_task, lambda t: order(r, t, tags_empty=t % 7 == 3))


@pytest.fixture(scope="session")
def world_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return corpus_from_records(order_world(320), tmp_path_factory.mktemp("orders") / "c")


@pytest.fixture(scope="session")
def world_cs(world_corpus: Corpus) -> ContractSet:
    return mine(world_corpus)


# ---- what each code's tests assert of the pair's worlds ------------------------------------------------

#: The rules mined from the check world (`cs`), per code.
MINED: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {
    ("FORMAT", ("/order_id",)): {"level": "exact", "shapes": ["AAA-999999"]},
    ("FORMAT", ("/customer",)): {"level": "loose", "shapes": ["Aa Aa"]},
    ("LENGTH", ("/items",)): {"min": 1},
    ("LENGTH", ("/items/*/lines",)): {"min": 1},
}


def cases_corpus(path: Path) -> Corpus:
    """`CASES` as a corpus, one call a line in their order."""
    return corpus_from_records([record(i, res) for i, (res, _) in enumerate(CASES)], path)


def hand_corpus(path: Path, results: list[Any]) -> Corpus:
    """Results of the hand-written rules' tool `h` as a corpus, one call a line in their order."""
    return corpus_from_records([{**record(i, res), "tool": "h"} for i, res in enumerate(results)], path)


def assert_hand_written_rules(tmp_path: Path, code: str) -> None:
    """Hand-written rules the miner does not write (a minimum above 1, up to 255; an exact and a loose
    rule at one place; root pointers): both implementations agree, and `code`'s witnesses are the
    listed ones."""
    hand = hand_set()
    corpus = hand_corpus(tmp_path / "hand", [res for res, _ in HAND_CASES])
    assert_hand_written(hand, corpus, assert_same(hand, corpus), HAND_CASES, code)
    assert schema_errors(hand.to_json(), "contract-set") == []


def cases_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "faulty.jsonl", [record(i, res) for i, (res, _) in enumerate(CASES)])


def assert_cli_file_and_stdin(cs_file: Path, tmp_path: Path, code: str) -> None:
    """`contracts check` on `CASES` from a file and from stdin: `code`'s violations are the listed ones."""
    clean = write_jsonl(tmp_path / "clean.jsonl", clean_records()[:20])
    witnessed_by_cli(cs_file, cases_file(tmp_path), clean, CASES, code)


def subprocess_receipt(cs_file: Path, tmp_path: Path) -> dict[str, Any]:
    """The one receipt of `python -m output_contracts.cli.app check` on a result breaking both codes."""
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
    assert schema_errors(r, "receipt-v2") == []
    return r


def root_places() -> list[dict[str, Any]]:
    """Results that are themselves a list (`skus`) or a string (`ident`), 60 tasks each."""
    recs = [task_record(f"t{i:03d}", [f"SKU-{i:04d}"] * (1 + i % 3), tool="skus") for i in range(60)]
    return recs + [task_record(f"t{i:03d}", f"ID{i:05d}", tool="ident") for i in range(60)]
