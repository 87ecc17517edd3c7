"""Map keys (`output_contracts.mining.maps`): objects whose keys are data are mined with `~*` below them.

Every decision is taken through real mining (`mine`) of small hand-made worlds: which parents become maps
(`ToolContracts.maps`), which rules then exist at `~*` paths, and that no rule path keeps a literal id.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.checks.checker import check_corpus
from output_contracts.codes.contract_set import ContractSet
from output_contracts.jsonutil import pretty_json
from output_contracts.mining import maps as map_keys
from output_contracts.mining import mine
from output_contracts.mining.clean import leaf_rows
from output_contracts.mining.data import load
from output_contracts.schemas import schema_errors, validate
from output_contracts.traces.ingest import corpus_from_records
from output_contracts.traces.pointers import MAP_TOKEN, escape_token, generalize
from tests.helpers import call, corpus, find, mine_records

T = "get_product_details"


def _tokens(cs: ContractSet) -> set[str]:
    """Every token of every rule path of `cs` (the `$args` prefix counts as a token)."""
    return {tok for r in cs.all_rules() for p in r.paths for tok in p.split("/")}


def _paths(cs: ContractSet, tool: str | None = None) -> set[str]:
    return {p for r in cs.all_rules() if tool is None or r.tool == tool for p in r.paths}


# ---- id-keyed maps ---------------------------------------------------------------------------------


def _variants_world(n: int = 40, seed: int = 1) -> tuple[list[dict[str, Any]], set[str]]:
    rng = random.Random(seed)
    recs, ids = [], set()
    for i in range(n):
        variants = {}
        for _ in range(1 + i % 3):
            vid = str(7_000_000_000 + rng.randrange(10**9))
            ids.add(vid)
            variants[vid] = {"price": round(rng.uniform(1, 100), 2), "color": rng.choice(["red", "blue"])}
        recs.append(call(f"t{i:03d}", T, {"product_id": f"P{i}", "variants": variants}))
    return recs, ids


def test_id_keyed_map_gets_wildcard_rules(tmp_path: Path) -> None:
    recs, ids = _variants_world()
    cs = mine_records(tmp_path, recs)
    assert cs.tools[T].maps == ("/variants",)
    pos = find(cs, "POSITIVE", "/variants/~*/price")
    assert pos is not None and pos.support.calls == 40 and pos.support.tasks == 40
    for code, path, params in [
        ("REQUIRED", "/variants/~*/price", {}),
        ("REQUIRED", "/variants/~*/color", {}),
        ("TYPE", "/variants/~*", {"kind": "object"}),
        ("TYPE", "/variants/~*/price", {"kind": "number"}),
        ("TYPE", "/variants/~*/color", {"kind": "string"}),
        ("TYPE", "/variants", {"kind": "object"}),
        ("REQUIRED", "/variants", {}),
    ]:
        r = find(cs, code, path)
        assert r is not None and dict(r.params) == params, (code, path)
    # no rule is about one record: no literal id anywhere, no rule on a key below /variants
    assert not ids & _tokens(cs)
    assert {p for p in _paths(cs) if p.startswith("/variants/")} == {
        "/variants/~*",
        "/variants/~*/price",
        "/variants/~*/color",
    }


def test_prefixed_ids_with_different_entry_shapes_are_one_map(tmp_path: Path) -> None:
    """`gift_card_7513` and `credit_card_123` hold objects of different shapes: still one value kind."""
    recs = []
    for i in range(60):
        pm = {
            f"gift_card_{7000 + i}": {"source": "gift_card", "balance": 10 + i},
            f"credit_card_{100 + i}": {"source": "credit_card", "brand": "visa", "last_four": f"{i:04d}"},
        }
        if i % 2:
            pm[f"paypal_{5000 + i}"] = {"source": "paypal"}
        recs.append(call(f"t{i:03d}", "get_user_details", {"user_id": f"u{i}", "payment_methods": pm}))
    cs = mine_records(tmp_path, recs)
    assert cs.tools["get_user_details"].maps == ("/payment_methods",)
    assert find(cs, "REQUIRED", "/payment_methods/~*/source") is not None
    # fields of some entries only are not required of every entry
    assert find(cs, "REQUIRED", "/payment_methods/~*/brand") is None
    assert find(cs, "REQUIRED", "/payment_methods/~*/balance") is None
    assert find(cs, "POSITIVE", "/payment_methods/~*/balance") is not None
    # the entries' values are pooled over every key: one domain for every payment method's source
    dom = find(cs, "DOMAIN", "/payment_methods/~*/source")
    assert dom is not None and dom.params == {"values": ["credit_card", "gift_card", "paypal"]}
    assert not any("_card_" in t or "paypal_" in t for t in _tokens(cs))


def test_wide_lookup_table_at_root_is_a_map(tmp_path: Path) -> None:
    """A constant name -> id table with 24 word keys (no digits in the names): a map at the root ("")."""
    adj = ["Action", "Bluetooth", "Desk", "Electric", "Gaming", "Smart"]
    noun = ["Camera", "Speaker", "Lamp", "Kettle"]
    names = [f"{a} {n}" for a in adj for n in noun]
    assert len(names) == 24 and not any(map_keys.is_id_key(n) for n in names)
    table = {name: str(3_377_618_313 + 97 * i) for i, name in enumerate(names)}
    recs = [call(f"t{i:03d}", "list_all_product_types", table) for i in range(30)]
    cs = mine_records(tmp_path, recs)
    assert cs.tools["list_all_product_types"].maps == ("",)
    r = find(cs, "TYPE", "/~*")
    assert r is not None and r.params == {"kind": "string"} and r.support.calls == 30
    assert not set(names) & _tokens(cs)
    assert _paths(cs) == {"", "/~*"}


def test_width_threshold(tmp_path: Path) -> None:
    """Same word-keyed uniform table: 20 keys per object is wide enough, 19 is a record."""

    def recs(width: int) -> list[dict[str, Any]]:
        keys = [f"field_{chr(97 + i)}{chr(97 + i)}" for i in range(width)]
        return [call(f"t{i:03d}", "wide", {k: f"v{i}-{j}" for j, k in enumerate(keys)}) for i in range(30)]

    assert map_keys.MIN_WIDTH == 20
    assert mine_records(tmp_path, recs(20)).tools["wide"].maps == ("",)
    narrow = mine_records(tmp_path, recs(19))
    assert narrow.tools["wide"].maps == ()
    assert find(narrow, "REQUIRED", "/field_aa") is not None


def test_id_share_threshold(tmp_path: Path) -> None:
    """9 of 10 keys spelled like ids (>= 90%) make a map; 8 of 10 do not (10 keys per object, every key
    in every task: neither wide nor open)."""

    def recs(n_ids: int) -> list[dict[str, Any]]:
        keys = [f"acct_{100 + i}" for i in range(n_ids)] + [f"word_{chr(97 + i)}" for i in range(10 - n_ids)]
        return [call(f"t{i:03d}", "accts", {"by_key": {k: {"n": f"n{i}"} for k in keys}}) for i in range(40)]

    assert mine_records(tmp_path, recs(9)).tools["accts"].maps == ("/by_key",)
    eight = mine_records(tmp_path, recs(8))
    assert eight.tools["accts"].maps == ()
    assert "/by_key/acct_100/n" in _paths(eight)


def test_options_like_records_stay_records(tmp_path: Path) -> None:
    """A few word keys per object, varying by product: not a map; the per-key domains survive."""
    colors, sizes, materials = ["red", "green", "blue"], ["S", "M", "L"], ["wool", "cotton"]
    recs = []
    for i in range(120):
        opts: dict[str, str] = {"color": colors[i % 3]}
        if i % 2:
            opts["size"] = sizes[i % 3]
        else:
            opts["material"] = materials[i % 4 // 2]
        recs.append(call(f"t{i:03d}", "get_item", {"items": [{"item_id": f"I{i}", "options": opts}]}))
    cs = mine_records(tmp_path, recs)
    assert cs.tools["get_item"].maps == ()
    for path, values in [
        ("/items/*/options/color", colors),
        ("/items/*/options/size", sizes),
        ("/items/*/options/material", materials),
    ]:
        r = find(cs, "DOMAIN", path)
        assert r is not None and r.params == {"values": sorted(values)}, path
    assert find(cs, "REQUIRED", "/items/*/options/color") is not None
    assert not any(MAP_TOKEN in p for p in _paths(cs))


def test_mixed_entry_kinds_are_not_a_map(tmp_path: Path) -> None:
    """Digit keys, but one holds numbers and the other strings: a record with odd field names."""
    cs = mine_records(
        tmp_path, [call(f"t{i:03d}", "codes", {"codes": {"123": i, "456": "x"}}) for i in range(40)]
    )
    assert cs.tools["codes"].maps == ()
    assert find(cs, "TYPE", "/codes/123").params == {"kind": "int"}  # type: ignore[union-attr]
    assert find(cs, "TYPE", "/codes/456").params == {"kind": "string"}  # type: ignore[union-attr]
    assert find(cs, "REQUIRED", "/codes/123") is not None


def test_null_and_int_float_do_not_break_homogeneity(tmp_path: Path) -> None:
    """Null aside, int and float are one class: `{"123": 7, "456": 2.5 | null}` is a map."""
    recs = [
        call(f"t{i:03d}", "codes", {"codes": {"123": i, "456": None if i % 2 else 2.5}}) for i in range(40)
    ]
    cs = mine_records(tmp_path, recs)
    assert cs.tools["codes"].maps == ("/codes",)
    r = find(cs, "NONNEG", "/codes/~*")
    assert r is not None and r.support.calls == 40
    assert find(cs, "REQUIRED", "/codes/123") is None and "123" not in _tokens(cs)


def test_argument_side_map(tmp_path: Path) -> None:
    recs = [
        call(
            f"t{i:03d}",
            "place",
            {"ok": True},
            arguments={"qty": {f"item_{1000 + 3 * i + j}": j + 1 for j in range(3)}},
        )
        for i in range(40)
    ]
    cs = mine_records(tmp_path, recs)
    assert cs.tools["place"].maps == ("$args/qty",)
    assert cs.tools["place"].map_parents("arg") == frozenset({"/qty"})
    assert cs.tools["place"].map_parents("result") == frozenset()


def test_nested_maps(tmp_path: Path) -> None:
    """A map entry holding another map: decided top-down, written `/users/~*/cards/~*/balance`."""
    rng = random.Random(5)
    recs = []
    for i in range(40):
        users = {
            f"user_{1000 + 10 * i + u}": {
                "name": f"N{u}",
                "cards": {
                    f"card_{rng.randrange(10**6):06d}": {"balance": rng.randint(0, 500)} for _ in range(2)
                },
            }
            for u in range(1 + i % 2)
        }
        recs.append(call(f"t{i:03d}", "get_users", {"users": users}))
    cs = mine_records(tmp_path, recs)
    assert cs.tools["get_users"].maps == ("/users", "/users/~*/cards")
    for code, path in [
        ("NONNEG", "/users/~*/cards/~*/balance"),
        ("REQUIRED", "/users/~*/cards/~*/balance"),
        ("REQUIRED", "/users/~*/cards"),
        ("TYPE", "/users/~*/cards/~*"),
    ]:
        assert find(cs, code, path) is not None, (code, path)
    assert not any(t.startswith(("user_", "card_")) for t in _tokens(cs))


# ---- open key sets ---------------------------------------------------------------------------------

NAMES = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar",
    "peggy", "rupert", "sybil", "trent", "victor", "walter",
]  # fmt: skip


def _homes(keys_per_task: list[list[str]], calls_per_task: int = 3) -> list[dict[str, Any]]:
    return [
        call(
            f"t{t:03d}",
            "get_homes",
            {"homes": {k: {"city": "Paris" if j % 2 else "Lyon", "rooms": 1 + j} for k in keys}},
        )
        for t, keys in enumerate(keys_per_task)
        for j in range(calls_per_task)
    ]


def test_open_key_set_each_key_in_one_task_is_a_map(tmp_path: Path) -> None:
    keys = [[f"{n}_home"] for n in NAMES[:12]]  # 12 keys, 12 tasks, each key in exactly one task
    assert not any(map_keys.is_id_key(k[0]) for k in keys)
    cs = mine_records(tmp_path, _homes(keys))
    assert cs.tools["get_homes"].maps == ("/homes",)
    r = find(cs, "REQUIRED", "/homes/~*/rooms")
    assert r is not None and r.support.tasks == 12 and r.support.calls == 36
    assert not any(t.endswith("_home") for t in _tokens(cs))


def test_closed_key_set_repeated_in_every_task_is_not_a_map(tmp_path: Path) -> None:
    """The same 12 keys, each task's calls holding 3 of them, every key in 7 or 8 of 30 tasks."""
    keys = [f"{n}_home" for n in NAMES[:12]]
    per_task = [[keys[(t + j) % 12] for j in range(3)] for t in range(30)]
    cs = mine_records(tmp_path, _homes(per_task, calls_per_task=4))
    assert cs.tools["get_homes"].maps == ()
    assert "/homes/alice_home/rooms" in _paths(cs)


def test_open_key_set_thresholds(tmp_path: Path) -> None:
    # 9 tasks with their own key: too few keys and tasks to judge
    assert mine_records(tmp_path, _homes([[f"{n}_home"] for n in NAMES[:9]])).tools["get_homes"].maps == ()
    # 10 keys but only 9 tasks (one task holds two keys): the parent is seen in too few tasks
    nine = [[f"{n}_home"] for n in NAMES[:8]] + [[f"{NAMES[8]}_home", f"{NAMES[9]}_home"]]
    assert mine_records(tmp_path, _homes(nine)).tools["get_homes"].maps == ()
    # 10 keys in 10 tasks: a map
    ten = [[f"{n}_home"] for n in NAMES[:10]]
    assert mine_records(tmp_path, _homes(ten)).tools["get_homes"].maps == ("/homes",)


@pytest.mark.parametrize(("shared_tasks", "is_map"), [(10, True), (11, False)])
def test_open_key_set_unseen_mass_boundary(tmp_path: Path, shared_tasks: int, is_map: bool) -> None:
    """10 keys each in one task (10 pairs) and one key shared by `shared_tasks` tasks: the once-seen
    share is 10/20 = 0.5 (a map) or 10/21 < 0.5 (not)."""
    per_task = [[f"{n}_home"] for n in NAMES[:10]] + [["shared_home"] for _ in range(shared_tasks)]
    cs = mine_records(tmp_path, _homes(per_task))
    assert cs.tools["get_homes"].maps == (("/homes",) if is_map else ())


def _nested_open(users: bool) -> list[dict[str, Any]]:
    """Per-task home keys (each in one task, no digits), 20 calls a task. With `users`, the homes sit
    below an id-keyed map of users and hold rooms keyed by words; without, they hold rooms keyed per
    task (`alice_kitchen`: each room key in one task too)."""
    recs = []
    for t, n in enumerate(NAMES[:12]):
        room = f"{n}_" if not users else ""
        for j in range(20):
            home = {
                "city": "Paris",
                "rooms": {f"{room}kitchen": {"area": 10 + j}, f"{room}bath": {"area": 5}},
            }
            res = {"homes": {f"{n}_home": home}}
            recs.append(
                call(f"t{t:03d}", "get_homes", {"users": {f"user_{t}{j:03d}": res}} if users else res)
            )
    return recs


def test_open_key_set_below_an_id_map(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _nested_open(users=True))
    assert cs.tools["get_homes"].maps == ("/users", "/users/~*/homes")
    r = find(cs, "NONNEG", "/users/~*/homes/~*/rooms/kitchen/area")
    assert r is not None and r.support.calls == 240 and r.support.tasks == 12
    assert not any(t.startswith("user_") or t.endswith("_home") for t in _tokens(cs))


def test_open_key_set_below_an_open_key_set(tmp_path: Path) -> None:
    cs = mine_records(tmp_path, _nested_open(users=False))
    # 24 room keys, the parent in 12 tasks, every key in exactly one task: rule (c) holds for the rooms
    assert map_keys.open_keys(12, {f"{n}_{r}": 1 for n in NAMES[:12] for r in ("kitchen", "bath")})
    assert cs.tools["get_homes"].maps == ("/homes", "/homes/~*/rooms")
    assert not any(t.endswith(("_kitchen", "_bath")) for t in _tokens(cs))


def test_open_keys_function() -> None:
    assert map_keys.open_keys(10, {f"k{i}": 1 for i in range(10)})
    assert not map_keys.open_keys(9, {f"k{i}": 1 for i in range(10)})
    assert not map_keys.open_keys(10, {f"k{i}": 1 for i in range(9)})
    assert map_keys.open_keys(20, {**{f"k{i}": 1 for i in range(10)}, "s": 10})
    assert not map_keys.open_keys(21, {**{f"k{i}": 1 for i in range(10)}, "s": 11})


def test_is_id_key_and_generalize() -> None:
    for tok in ("7583936705", "gift_card_7513", "#W2378156", "2024-05-01", "a@b.c", "credit_card_123"):
        assert map_keys.is_id_key(tok), tok
    for tok in ("price", "color", "item12", "v2", "Action Camera"):
        assert not map_keys.is_id_key(tok), tok
    assert generalize("/users/u_001/cards/c_123/balance", {"/users", "/users/~*/cards"}) == (
        "/users/~*/cards/~*/balance"
    )
    assert generalize("/Desk Lamp", {""}) == "/~*"
    assert generalize("", {""}) == ""
    assert generalize("/variants/123/price", set()) == "/variants/123/price"


# ---- property: random id-keyed worlds --------------------------------------------------------------

LAYOUTS = ("flat", "in_array", "root", "nested")
ID_STYLES = ("digits", "prefixed", "hash", "email")


def _id(rng: random.Random, style: str) -> str:
    n = rng.randrange(10**7, 10**8)
    if style == "digits":
        return str(n)
    if style == "prefixed":
        return f"{rng.choice(['gift_card', 'credit_card', 'paypal'])}_{n}"
    if style == "hash":
        return f"#W{n}"
    return f"user{n}@example.com"


def _entry(rng: random.Random, scalar: bool) -> Any:
    if scalar:
        return rng.choice([rng.randint(1, 50), round(rng.uniform(0.5, 99.0), 2)])
    e: dict[str, Any] = {"price": round(rng.uniform(0.5, 99.0), 2), "qty": rng.randint(1, 9)}
    e["line"] = round(e["price"] * e["qty"], 2)
    if rng.random() < 0.5:
        e["color"] = rng.choice(["red", "blue", "green"])
    return e


def _random_world(
    seed: int, layout: str, style: str, scalar: bool, n_calls: int, n_tasks: int
) -> tuple[list[dict[str, Any]], set[str], tuple[str, ...]]:
    rng = random.Random(seed)
    ids: set[str] = set()

    def a_map(min_entries: int = 0) -> dict[str, Any]:
        out = {}
        for _ in range(rng.randint(min_entries, 4)):
            k = _id(rng, style)
            ids.add(escape_token(k))
            out[k] = _entry(rng, scalar)
        return out

    recs = []
    for i in range(n_calls):
        first = 2 if i == 0 else 0  # at least two distinct keys in the world
        if layout == "flat":
            res: Any = {"product_id": f"P{i}", "variants": a_map(first)}
        elif layout == "in_array":
            res = {
                "items": [{"sku": f"S{i}-{j}", "variants": a_map(first)} for j in range(rng.randint(1, 3))]
            }
        elif layout == "root":
            res = a_map(max(first, 1))
        else:
            res = {
                "users": {f"user_{rng.randrange(10**6, 10**7)}": {"cards": a_map(first)} for _ in range(2)}
            }
        recs.append(call(f"w{seed}-t{i % n_tasks:03d}", "tool", res, arguments={"q": f"q{i}"}))
    expected = {
        "flat": ("/variants",),
        "in_array": ("/items/*/variants",),
        "root": ("",),
        "nested": ("/users", "/users/~*/cards"),
    }[layout]
    if layout == "nested":
        ids |= {escape_token(k) for r in recs for k in r["result"]["users"]}  # the user keys are ids too
    return recs, ids, expected


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    layout=st.sampled_from(LAYOUTS),
    style=st.sampled_from(ID_STYLES),
    scalar=st.booleans(),
    n_calls=st.integers(30, 70),
    n_tasks=st.integers(3, 12),
    folds=st.sampled_from([1, 3]),
)
def test_random_id_maps_mine_rules_that_hold(
    seed: int, layout: str, style: str, scalar: bool, n_calls: int, n_tasks: int, folds: int
) -> None:
    recs, ids, expected = _random_world(seed, layout, style, scalar, n_calls, n_tasks)
    with tempfile.TemporaryDirectory() as tmp:
        c = corpus_from_records(recs, Path(tmp) / "c")
        cs = mine(c, folds=folds)  # `mine` re-checks every checker on its own data and raises on a misfire
        assert cs.tools["tool"].maps == expected
        assert not ids & _tokens(cs)
        assert any(MAP_TOKEN in p for p in _paths(cs))
        assert check_corpus(cs, c).height == 0
        for f in range(folds if folds > 1 else 0):
            # fold checker f may only fire on the tasks it was not mined from (fold f's)
            fired = check_corpus(cs, c, fold=f)
            assert all(cs.fold_of(t) == f for t in fired["task_id"].to_list())


# ---- determinism and schema ------------------------------------------------------------------------


def _determinism_world() -> list[dict[str, Any]]:
    recs, _ids = _variants_world(n=60, seed=3)
    recs = [{**r, "task_id": f"t{i % 15:03d}"} for i, r in enumerate(recs)]
    recs += _homes([[f"{n}_home"] for n in NAMES[:12]])
    return recs


def test_same_records_same_bytes(tmp_path: Path) -> None:
    recs = _determinism_world()
    c1 = corpus(tmp_path, recs, name="a")
    c2 = corpus(tmp_path, recs, name="b")
    one = pretty_json(mine(c1, folds=3).to_json())
    assert pretty_json(mine(c1, folds=3).to_json()) == one
    assert pretty_json(mine(c2, folds=3).to_json()) == one
    cs = mine(c1, folds=3)
    assert cs.tools[T].maps == ("/variants",) and cs.tools["get_homes"].maps == ("/homes",)
    cs.save(tmp_path / "contracts.json")
    assert (tmp_path / "contracts.json").read_bytes() == one
    assert ContractSet.load(tmp_path / "contracts.json") == cs


def test_parts_give_the_same_bytes(tmp_path: Path) -> None:
    c = corpus(tmp_path, _determinism_world())
    one = pretty_json(mine(c, folds=3).to_json())
    small = leaf_rows(c) // 4 + 1
    data = load(c, clean="ok", k=3, seed=13, tools=None, part_rows=small)
    try:
        assert data.nparts >= 3
        assert data.maps == {T: ("/variants",), "get_homes": ("/homes",)}
    finally:
        data.close()
    assert pretty_json(mine(c, folds=3, part_rows=small).to_json()) == one


def test_contract_set_with_maps_validates(tmp_path: Path) -> None:
    recs, _ids = _variants_world()
    cs = mine_records(tmp_path, [*recs, *_homes([[f"{n}_home"] for n in NAMES[:12]])], folds=3)
    data = cs.to_json()
    assert data["tools"][T]["maps"] == ["/variants"]
    assert data["tools"]["get_homes"]["maps"] == ["/homes"]
    assert schema_errors(data, "contract-set") == []
    validate(data, "contract-set")
    # the schema holds the field to its form: a list of unique strings
    bad = {**data, "tools": {**data["tools"], T: {**data["tools"][T], "maps": ["/variants", "/variants"]}}}
    assert any("maps" in e for e in schema_errors(bad, "contract-set"))
    assert ContractSet.from_json(data) == cs


def test_tool_partitions_merge_to_the_same_bytes(tmp_path: Path) -> None:
    """The Dask engine mines one tool partition at a time (`mine(tools=[...])`): map decisions are per
    tool, so the merged partitions are the local engine's bytes (run here in-process, no cluster)."""
    from output_contracts.codes.mine_params import MineParams
    from output_contracts.mining.distributed import merge, mine_part, plan

    c = corpus(tmp_path, _determinism_world())
    local = pretty_json(mine(c, folds=3).to_json())
    p = plan(c, MineParams.of(folds=3))
    assert p is not None and len(p.parts) == 2
    parts = [
        mine_part(p.corpus_path, p.corpus_sha256, part, p.mine_params, p.verify, p.registry)
        for part in p.parts
    ]
    assert {t: cs.tools[t].maps for cs in parts for t in cs.tools} == {
        T: ("/variants",),
        "get_homes": ("/homes",),
    }
    assert pretty_json(merge(p, parts).to_json()) == local
