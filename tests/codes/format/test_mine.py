"""FORMAT mining: string shapes, and DOMAIN's closed-set test over them.

The order world shared with LENGTH's tests (tests/codes/format_length_world.py) mined with the default
parameters first, then the chance arguments one at a time on small hand-made corpora, then the merge
properties (task parts, folds). The shape functions themselves: test_shapes.py.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.folds import fold_of
from output_contracts.codes.format.mine import FORMAT_MAX_SHAPES
from output_contracts.codes.format.shapes import LONG, NON_ASCII, shape
from output_contracts.codes.table import checks
from output_contracts.jsonutil import canonical_str
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus
from output_contracts.traces.ingest import corpus_from_records
from tests.codes.format_length_world import STATUSES, order_world, root_places
from tests.helpers import codes_of, few_tasks, find, mine_records, rules, sig, task_record


def test_world_format_rules(world_cs: ContractSet) -> None:
    got = {r.paths: r.params for r in rules(world_cs, "FORMAT")}
    assert got == {
        ("/order_id",): {"level": "exact", "shapes": ["AAA-999999"]},
        ("/customer",): {"level": "loose", "shapes": ["Aa Aa"]},
        ("/items/*/sku",): {"level": "exact", "shapes": ["AAA-9999"]},
    }
    r = find(world_cs, "FORMAT", "/order_id")
    assert r is not None and (r.support.calls, r.support.tasks) == (320, 320)
    assert checks()["FORMAT"].describe(r) == "/order_id shaped {A{3}-9{6}} (exact)"
    # a small set of values is DOMAIN's, and FORMAT is subsumed there; free text has no format
    assert find(world_cs, "DOMAIN", "/status") is not None
    assert find(world_cs, "DOMAIN", "/tags/*") is not None
    assert find(world_cs, "FORMAT", "/status") is None
    assert find(world_cs, "FORMAT", "/tags/*") is None
    assert find(world_cs, "FORMAT", "/note") is None
    assert find(world_cs, "DOMAIN", "/note") is None


def test_world_contract_set_is_valid(world_cs: ContractSet) -> None:
    data = world_cs.to_json()
    assert schema_errors(data, "contract-set") == []
    assert data["params"]["min_support"]["FORMAT"] == 50
    assert ContractSet.from_json(data).to_json() == data


def test_format_is_dropped_only_where_domain_holds(world_corpus: Corpus) -> None:
    """Without DOMAIN (its support out of reach), `/status` gets the FORMAT rule DOMAIN subsumed: its
    exact shapes (`aaaaaaa`, `aaaaaaaaa`) differ only in run lengths, so it is judged loose."""
    cs = mine(world_corpus, min_support={"DOMAIN": 10**6})
    assert find(cs, "DOMAIN", "/status") is None
    r = find(cs, "FORMAT", "/status")
    assert r is not None and r.params == {"level": "loose", "shapes": ["a"]}
    r = find(cs, "FORMAT", "/tags/*")
    assert r is not None and r.params == {"level": "loose", "shapes": ["a"]}


def test_subsumption_is_per_checker(tmp_path: Path) -> None:
    """One task says `returned` (same shape as the others): the full checker has no DOMAIN, so it keeps
    FORMAT; the fold checker that never saw that task has DOMAIN, so FORMAT is dropped there only."""
    recs = [task_record(f"t{i:03d}", {"status": STATUSES[i % 3]}) for i in range(150)]
    recs.append(task_record("t-odd", {"status": "returned"}))
    cs = mine_records(tmp_path, recs, folds=3)
    assert find(cs, "DOMAIN", "/status") is None
    assert find(cs, "FORMAT", "/status") is not None
    odd = cs.fold_of("t-odd")
    assert find(cs, "DOMAIN", "/status", fold=odd) is not None
    assert find(cs, "FORMAT", "/status", fold=odd) is None
    for f in range(3):
        if f != odd:
            assert find(cs, "DOMAIN", "/status", fold=f) is None
            assert find(cs, "FORMAT", "/status", fold=f) is not None


def test_root_places(tmp_path: Path) -> None:
    """A result that is itself a list or a string: FORMAT at the root pointer `""` (and at `/*`; LENGTH
    at `""`: tests/codes/length/test_mine.py)."""
    cs = mine_records(tmp_path, root_places(), params=few_tasks("LENGTH"))
    got = {(r.tool, r.code, r.paths): r.params for r in cs.rules_for(None) if r.code == "FORMAT"}
    assert got == {
        ("skus", "FORMAT", ("/*",)): {"level": "exact", "shapes": ["AAA-9999"]},
        ("ident", "FORMAT", ("",)): {"level": "exact", "shapes": ["AA99999"]},
    }
    assert (
        checks()["FORMAT"].describe(find(cs, "FORMAT", "", tool="ident"))
        == "(result) shaped {AA9{5}} (exact)"
    )  # type: ignore[arg-type]


# ---- the chance arguments of FORMAT ------------------------------------------------------------------


def _ids(n: int, fmt: str = "ORD-{:06d}") -> list[dict[str, Any]]:
    """Call i in task `t{i:03d}` (task names sort by index, so task i is in split i mod 5)."""
    return [task_record(f"t{i:03d}", {"id": fmt.format(i * 7919 % 10**6)}) for i in range(n)]


def _with(base: list[dict[str, Any]], tasks: tuple[int, ...], value: str) -> list[dict[str, Any]]:
    return [*base, *(task_record(f"t{i:03d}", {"id": value}) for i in tasks)]


def test_support_counts_tasks(tmp_path: Path) -> None:
    assert find(mine_records(tmp_path, _ids(49)), "FORMAT", "/id") is None
    # 49 tasks stay 49 tasks however often they call
    many = [task_record(f"t{i % 49:03d}", {"id": f"ORD-{i:06d}"}) for i in range(49 * 4)]
    assert find(mine_records(tmp_path, many), "FORMAT", "/id") is None
    r = find(mine_records(tmp_path, _ids(50)), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "exact", "shapes": ["AAA-999999"]}
    assert (r.support.calls, r.support.tasks) == (50, 50)


def test_rare_shape_blocks_format(tmp_path: Path) -> None:
    """A lower-case id in 1 or 2 tasks is the visible edge of an unseen tail (Good–Turing): no rule at
    either level (its loose shape `a-9` is just as rare). In 3 tasks of 3 splits it is part of the
    format, at the exact level (the two shapes differ in case, not in run lengths)."""
    base = _ids(100)
    for tasks in ((2,), (1, 2)):
        assert find(mine_records(tmp_path, _with(base, tasks, "ord-424242")), "FORMAT", "/id") is None
    r = find(mine_records(tmp_path, _with(base, (0, 1, 2), "ord-424242")), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "exact", "shapes": ["AAA-999999", "aaa-999999"]}


def test_rare_exact_shape_falls_back_to_loose(tmp_path: Path) -> None:
    """A truncated id in 2 tasks: the exact set is not closed, the loose one (`A-9`) is."""
    r = find(mine_records(tmp_path, _with(_ids(100), (3, 4), "ORD-42424")), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "loose", "shapes": ["A-9"]}


def test_shape_confined_to_one_split_blocks_format(tmp_path: Path) -> None:
    """Three tasks hold the odd shape, all in split 0 (tasks 0, 5, 10): a set learned without that
    split misses 3 of 103 (shape, task) pairs (> 1%)."""
    base = _ids(100)
    assert find(mine_records(tmp_path, _with(base, (0, 5, 10), "ord-424242")), "FORMAT", "/id") is None
    assert find(mine_records(tmp_path, _with(base, (0, 6, 12), "ord-424242")), "FORMAT", "/id") is not None


SEPARATORS = "-_.:/#+=~"


def _shapes_world(n_shapes: int, n_tasks: int = 120) -> list[dict[str, Any]]:
    """Ids with `n_shapes` different separators (each its own shape at both levels), dealt round-robin."""
    return [
        task_record(f"t{i:03d}", {"id": f"ORD{SEPARATORS[i % n_shapes]}{i * 7919 % 10**6:06d}"})
        for i in range(n_tasks)
    ]


def test_more_than_max_shapes_gives_no_format(tmp_path: Path) -> None:
    assert FORMAT_MAX_SHAPES == 8
    r = find(mine_records(tmp_path, _shapes_world(8)), "FORMAT", "/id")
    assert r is not None and r.params["level"] == "exact"
    assert r.params["shapes"] == sorted(f"AAA{c}999999" for c in SEPARATORS[:8])
    assert find(mine_records(tmp_path, _shapes_world(9)), "FORMAT", "/id") is None
    # and free text is the limit: as many shapes as values
    words = ["a", "bb", "Cc", "d-d", "E.e", "f f", "g9", "H_h", "i/i", "J:j", "k#k", "l+l"]
    text = [task_record(f"t{i:03d}", {"id": " ".join(words[: 1 + i % 12])}) for i in range(120)]
    assert find(mine_records(tmp_path, text), "FORMAT", "/id") is None


def test_lengths_that_vary_are_judged_loose(tmp_path: Path) -> None:
    """Names of 3 and 4 letters: two exact shapes (`Aaa`, `Aaaa`), a closed set, but one that lists the
    lengths seen, so the place is judged loose. Too many values for DOMAIN."""
    names = ["Ana", "Eve", "Kim", "Bob", "Tom", "Ian", "Sue", "Max", "Zoe", "Lea"]
    names += ["Olga", "Ivan", "Nina", "Hugo", "Omar", "Lena", "Axel", "Emma", "Finn"]
    recs = [task_record(f"t{i:03d}", {"name": names[i % len(names)]}) for i in range(120)]
    cs = mine_records(tmp_path, recs)
    assert find(cs, "DOMAIN", "/name") is None
    r = find(cs, "FORMAT", "/name")
    assert r is not None and r.params == {"level": "loose", "shapes": ["Aa"]}


def _random_ids(n_tasks: int, length: int | tuple[int, ...] = 6, seed: int = 3) -> list[dict[str, Any]]:
    """Random upper-case alphanumeric ids (τ-bench's reservation ids: `4WQ150`, `VAAOXJ`), one per task:
    as many exact and loose shapes as values."""
    r = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    lengths = (length,) if isinstance(length, int) else length
    return [
        task_record(
            f"t{i:03d}", {"id": "".join(r.choice(alphabet) for _ in range(lengths[i % len(lengths)]))}
        )
        for i in range(n_tasks)
    ]


def test_random_ids_are_judged_by_their_character_classes(tmp_path: Path) -> None:
    """Neither the exact nor the loose set of random ids is closed; their parts (`6:9`, `6:A`) are, so
    the place gets a charset rule that admits any mix of capitals and digits at length 6."""
    recs = _random_ids(200)
    assert len({shape(rec["result"]["id"], "exact") for rec in recs}) > FORMAT_MAX_SHAPES
    cs = mine_records(tmp_path, recs)
    r = find(cs, "FORMAT", "/id")
    assert r is not None and r.params == {"level": "charset", "shapes": ["6:9", "6:A"]}
    assert (r.support.calls, r.support.tasks) == (200, 200)
    assert checks()["FORMAT"].describe(r) == "/id shaped {[9A]{6}} (charset)"


def test_charset_needs_one_length_and_no_rare_class(tmp_path: Path) -> None:
    """Ids of lengths 6 and 7: the parts list the lengths seen, not a format, so no rule (as exact shapes
    that differ only in run lengths). A class in 2 tasks only (a hyphen) is a rare part: the set is not
    closed (the same Good–Turing test as every FORMAT level); in every 5th task it is part of the rule."""
    assert find(mine_records(tmp_path, _random_ids(200, (6, 7))), "FORMAT", "/id") is None
    base = _random_ids(200)
    rare = [*base, *(task_record(f"t{i:03d}", {"id": "4W-150"}) for i in (3, 4))]
    assert find(mine_records(tmp_path, rare), "FORMAT", "/id") is None
    common = [*base, *(task_record(f"t{i:03d}", {"id": "4W-150"}) for i in range(0, 200, 3))]
    r = find(mine_records(tmp_path, common), "FORMAT", "/id")
    assert r is not None and r.params == {"level": "charset", "shapes": ["6:-", "6:9", "6:A"]}


def test_long_strings_have_one_shape(tmp_path: Path) -> None:
    """Strings over FORMAT_MAX_LEN characters are all shaped LONG: a field that always holds a page of
    text has the format `…` (and a short sentinel there would break it)."""
    recs = [task_record(f"t{i:03d}", {"page": f"{i:03d} " + "lorem ipsum " * (6 + i % 5)}) for i in range(60)]
    r = find(mine_records(tmp_path, recs), "FORMAT", "/page")
    assert r is not None and r.params == {"level": "exact", "shapes": [LONG]}


def test_long_and_one_non_ascii_character_stay_exact(tmp_path: Path) -> None:
    chars = "éüßøåçñ日本語"
    recs = [
        task_record(f"t{i:03d}", {"s": chars[i % len(chars)] if i % 2 else f"{i:03d}" + "x" * 70})
        for i in range(100)
    ]
    r = find(mine_records(tmp_path, recs), "FORMAT", "/s")
    assert r is not None and r.params == {"level": "exact", "shapes": [NON_ASCII, LONG]}


# ---- merges: task parts and folds ----------------------------------------------------------------------


def test_parts_give_the_same_bytes(world_corpus: Corpus) -> None:
    rows = leaf_rows(world_corpus)
    for k in (1, 5):
        one = canonical_str(mine(world_corpus, folds=k).to_json())
        for n_parts in (3, 7):
            split = mine(world_corpus, folds=k, part_rows=rows // n_parts + 1)
            assert canonical_str(split.to_json()) == one, (k, n_parts)


def test_full_checker_of_k_folds_is_k1(world_corpus: Corpus, world_cs: ContractSet) -> None:
    """The k = 5 full checker is the merge of all folds: the k = 1 rules, support included. Its fold
    checkers see ~256 tasks (too few for LENGTH: tests/codes/length/); each one's FORMAT rules are what
    mining without its fold gives."""
    k5 = mine(world_corpus, folds=5)
    assert sig(k5) == sig(world_cs)
    assert "FORMAT" in codes_of(k5.rules_for(None))
    records = order_world(320)
    for f in range(5):
        rest = [r for r in records if fold_of(r["task_id"], k5.seed, 5) != f]
        alone = mine(corpus_from_records(rest, world_corpus.path.parent / f"without-{f}"))
        got = sig(k5, f, ("FORMAT",))
        assert got == sig(alone, None, ("FORMAT",)) and got, f
