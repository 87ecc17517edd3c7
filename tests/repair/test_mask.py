"""The action mask: every refusal reason, immutability (incl. array shifts), budgets, and a property test."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from output_contracts.repair import mask
from output_contracts.repair.patch import exists, parse_pointer, resolve
from output_contracts.repair.validator import verify
from tests.repair.conftest import GOOD, SCHEMA

DOC: dict[str, Any] = {"a": 1, "b": {"c": [10, 20, 30]}, "s": "x"}


def _check(action: Any, *, immutable: tuple[str, ...] = (), ops_left: int = 2) -> mask.MaskVerdict:
    return mask.check(action, DOC, immutable=immutable, ops_left=ops_left)


@pytest.mark.parametrize(
    ("action", "reason", "op_index"),
    [
        ("fix it", "MALFORMED_PATCH", None),
        ([], "MALFORMED_PATCH", None),
        ({"op": "add", "path": "/x", "value": 1}, "MALFORMED_PATCH", None),
        ([5], "MALFORMED_OP", 0),
        ([{"op": "upsert", "path": "/a", "value": 1}], "MALFORMED_OP", 0),
        ([{"op": "add", "value": 1}], "MALFORMED_OP", 0),
        ([{"op": "add", "path": "/x"}], "MALFORMED_OP", 0),
        ([{"op": "move", "path": "/x"}], "MALFORMED_OP", 0),
        ([{"op": "remove", "path": "/a", "value": 3}], "MALFORMED_OP", 0),
        ([{"op": "add", "path": "a", "value": 1}], "BAD_POINTER", 0),
        ([{"op": "add", "path": "/a~2", "value": 1}], "BAD_POINTER", 0),
        ([{"op": "copy", "from": 7, "path": "/x"}], "BAD_POINTER", 0),
        ([{"op": "remove", "path": "/zz"}], "PATH_NOT_FOUND", 0),
        ([{"op": "replace", "path": "/b/c/3", "value": 1}], "PATH_NOT_FOUND", 0),
        ([{"op": "replace", "path": "/b/c/01", "value": 1}], "PATH_NOT_FOUND", 0),
        ([{"op": "test", "path": "/nope", "value": 1}], "PATH_NOT_FOUND", 0),
        ([{"op": "add", "path": "/q/r", "value": 1}], "PARENT_NOT_FOUND", 0),
        ([{"op": "add", "path": "/a/r", "value": 1}], "PARENT_NOT_FOUND", 0),
        ([{"op": "add", "path": "/b/c/4", "value": 1}], "PATH_NOT_FOUND", 0),
        ([{"op": "move", "from": "/nope", "path": "/x"}], "FROM_NOT_FOUND", 0),
        ([{"op": "copy", "from": "/b/c/9", "path": "/x"}], "FROM_NOT_FOUND", 0),
        ([{"op": "move", "from": "/b", "path": "/b/c/0"}], "MOVE_INTO_CHILD", 0),
        ([{"op": "test", "path": "/a", "value": True}], "TEST_FAILED", 0),
        ([{"op": "test", "path": "/a", "value": 2}], "TEST_FAILED", 0),
        (
            [
                {"op": "add", "path": "/x", "value": 1},
                {"op": "add", "path": "/y", "value": 1},
                {"op": "remove", "path": "/a"},
            ],
            "OVER_BUDGET",
            None,
        ),
        # Ops see the document the previous ops left: the second remove finds nothing.
        ([{"op": "remove", "path": "/a"}, {"op": "remove", "path": "/a"}], "PATH_NOT_FOUND", 1),
    ],
)
def test_each_refusal_reason(action: Any, reason: str, op_index: int | None) -> None:
    before = copy.deepcopy(DOC)
    v = _check(action)
    assert not v.ok
    assert v.reason == reason
    assert v.op_index == op_index
    assert reason in mask.REASONS
    assert before == DOC  # nothing applied


@pytest.mark.parametrize(
    "op",
    [
        {"op": "replace", "path": "/b/c/1", "value": 0},  # the path itself
        {"op": "remove", "path": "/b"},  # an ancestor
        {"op": "replace", "path": "", "value": {}},  # the root
        {"op": "add", "path": "/b/c/0", "value": 5},  # shifts index 1 to 2
        {"op": "remove", "path": "/b/c/0"},  # shifts index 1 to 0
        {"op": "move", "from": "/b/c/1", "path": "/x"},  # moving it away
        {"op": "copy", "from": "/a", "path": "/b/c/1"},  # inserting before it
    ],
)
def test_immutable_refusals(op: dict[str, Any]) -> None:
    v = _check([op], immutable=("/b/c/1",))
    assert (v.ok, v.reason) == (False, "IMMUTABLE_PATH")


def test_immutable_descendant_and_absent_path() -> None:
    assert (
        _check([{"op": "replace", "path": "/b/c/0", "value": 1}], immutable=("/b",)).reason
        == "IMMUTABLE_PATH"
    )
    assert _check([{"op": "add", "path": "/new", "value": 1}], immutable=("/new",)).reason == "IMMUTABLE_PATH"


@pytest.mark.parametrize(
    "op",
    [
        {"op": "test", "path": "/b/c/1", "value": 20},  # reading is fine
        {"op": "copy", "from": "/b/c/1", "path": "/x"},  # reading the source is fine
        {"op": "add", "path": "/b/c/-", "value": 40},  # appending after it shifts nothing
        {"op": "replace", "path": "/b/c/2", "value": 0},  # a later sibling
        {"op": "replace", "path": "/a", "value": 2},
    ],
)
def test_allowed_near_immutable(op: dict[str, Any]) -> None:
    v = _check([op], immutable=("/b/c/1",))
    assert v.ok, v.detail
    assert resolve(v.result, parse_pointer("/b/c/1")) == 20


def test_accepted_patch_semantics_and_budget_counts_only_mutating_ops() -> None:
    patch = [
        {"op": "test", "path": "/a", "value": 1.0},
        {"op": "move", "from": "/s", "path": "/b/s"},
        {"op": "copy", "from": "/b/c/2", "path": "/b/c/0"},
    ]
    v = _check(patch, ops_left=2)
    assert v.ok and v.mutating_ops == 2
    assert v.result == {"a": 1, "b": {"c": [30, 10, 20, 30], "s": "x"}}
    assert _check(patch, ops_left=1).reason == "OVER_BUDGET"
    # move onto itself is a no-op, ~1 and ~0 escapes resolve
    assert mask.check([{"op": "move", "from": "/a", "path": "/a"}], DOC, ops_left=1).result == DOC
    v = mask.check([{"op": "add", "path": "/k~1v~0", "value": 1}], {}, ops_left=1)
    assert v.result == {"k/v~": 1}


# ----------------------------------------------------------------------------------- property test

_KEYS = st.sampled_from(["sku", "qty", "unit", "tags", "note", "extra", "0", "1", "-"])
_PTR = st.one_of(
    st.sampled_from(["/qty", "/unit", "/sku", "/tags/0", "/tags/1", "/tags/-", "/note", "/units"]),
    st.lists(_KEYS, max_size=3).map(lambda ks: "".join("/" + k for k in ks)),
)
_VAL = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.sampled_from(["A-1", "box", "each", "3", ""]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_KEYS, inner, max_size=2),
    max_leaves=4,
)
_OP = st.one_of(
    st.builds(
        lambda o, p, v: {"op": o, "path": p, "value": v},
        st.sampled_from(["add", "replace", "test"]),
        _PTR,
        _VAL,
    ),
    st.builds(lambda p: {"op": "remove", "path": p}, _PTR),
    st.builds(lambda o, f, p: {"op": o, "from": f, "path": p}, st.sampled_from(["move", "copy"]), _PTR, _PTR),
    st.just({"op": "bogus", "path": "/sku"}),
)
# Near-fixes, so that many episodes are accepted and the oracle below has something to judge.
_NEAR = st.builds(
    lambda o, p, v: {"op": o, "path": p, "value": v},
    st.sampled_from(["replace", "add"]),
    st.sampled_from(["/qty", "/qty", "/qty", "/sku", "/unit", "/note"]),
    st.sampled_from([-1, 0, 1, 2, 3, 3, 3, "A-1", "box", "crate"]),
)
_PATCH = st.lists(_OP, min_size=1, max_size=3) | st.lists(_NEAR, min_size=1, max_size=2)


@settings(max_examples=150, deadline=None)
@given(patches=st.lists(_PATCH, min_size=1, max_size=3))
def test_random_patches_never_accept_invalid_or_touch_immutable(patches: list[list[dict[str, Any]]]) -> None:
    """No sequence of random patches yields an accepted object failing the schema or a changed immutable path."""
    from output_contracts.repair.loop import Budgets, run_episode
    from output_contracts.repair.state import Action
    from tests.repair.conftest import make_case

    immutable = ("/sku", "/tags/0")
    start = {"sku": "A-1", "qty": "3", "unit": "box", "tags": ["x", "y"]}
    queue = list(patches)

    class Random:
        name = "random"

        def describe(self) -> dict[str, Any]:
            return {"name": self.name}

        def act(self, state: Any) -> Action:
            return Action(queue.pop(0)) if queue else Action.abstain()

    ep = run_episode(
        make_case(start, immutable=immutable), Random(), Budgets(max_ops=4, max_attempts=3), clock=None
    )
    event(f"outcome: {ep.outcome}")
    if ep.accepted:
        # an independent oracle, not our own verifier: plain jsonschema with format checking
        oracle = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
        assert oracle.is_valid(ep.final)
        assert verify(ep.final, SCHEMA) == ()
    for ptr in immutable:
        toks = parse_pointer(ptr)
        assert exists(ep.final, toks)
        assert resolve(ep.final, toks) == resolve(start, toks)
    # and each accepted mask verdict alone keeps immutable paths too
    for p in patches:
        v = mask.check(p, start, immutable=immutable, ops_left=4)
        if v.ok:
            for ptr in immutable:
                assert resolve(v.result, parse_pointer(ptr)) == resolve(start, parse_pointer(ptr))


def test_good_object_is_valid() -> None:
    assert verify(GOOD, SCHEMA) == ()
