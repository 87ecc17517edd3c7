"""RELATION's plan generates and refutes the candidates of all search spaces in one batch: the same
candidates, space by space, as generating and refuting each space alone with the code before the batch
(`tests/codes/relation/reference.py`), on random sample rows where relations hold by design."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.relation.mine import CAND_COLS, Field, _generate, _long_all, _refute
from tests.codes.relation import reference as old

#: values that make sums, differences and products meet (cents and halves included), and zeros
_VALUES = [0.0, 1.0, 2.0, 3.0, 5.0, 0.5, 1.5, 2.25, 4.75, 6.0, 10.0, -1.0]


@st.composite
def _space(draw: st.DrawFn) -> tuple[list[Field], pl.DataFrame, pl.DataFrame]:
    """A search space: fields of every role, generation rows and refutation rows (wide, `_r`, fold)."""
    m = draw(st.integers(2, 6))
    roles = draw(st.lists(st.sampled_from(["res", "res", "arg", "sum", "len"]), min_size=m, max_size=m))
    if "res" not in roles:
        roles[0] = "res"
    fields = [
        Field(f"{r[0]}{j}", f"/{r}{j}", r != "arg", r == "sum", r == "len") for j, r in enumerate(roles)
    ]

    def rows(lo: int, hi: int) -> pl.DataFrame:
        n = draw(st.integers(lo, hi))
        cols: dict[str, list[object]] = {
            "_r": list(range(n)),
            "fold": draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)),
        }
        for f in fields:
            vals = draw(st.lists(st.one_of(st.none(), st.sampled_from(_VALUES)), min_size=n, max_size=n))
            cols[f.name] = vals
        # relations that hold on every row where their operands are present: first = second + third,
        # or first = fourth - second - third (a three-term sum with two minus signs)
        form = draw(st.sampled_from(["none", "sum", "minus"])) if len(fields) >= 4 else "none"
        b, c, d = (cols[f.name] for f in fields[1:4]) if form != "none" else ([], [], [])
        if form == "sum":
            cols[fields[0].name] = [
                None if x is None or y is None else x + y for x, y in zip(b, c, strict=True)
            ]  # type: ignore[operator]
        elif form == "minus":
            cols[fields[0].name] = [
                None if x is None or y is None or z is None else z - x - y  # type: ignore[operator]
                for x, y, z in zip(b, c, d, strict=True)
            ]
        schema = {"_r": pl.UInt32, "fold": pl.Int32, **{f.name: pl.Float64 for f in fields}}
        return pl.DataFrame(cols, schema=schema)

    return fields, rows(0, 7), rows(0, 24)


def _batched(spaces: list[tuple[int, pl.DataFrame, list[Field], bool]]) -> pl.DataFrame:
    """The plan's generation over several spaces at once: their rows in one frame keyed by `spec`
    (`_long_all`), then `_generate`."""
    rows = pl.concat(
        [r.with_columns(pl.lit(s, pl.Int64).alias("spec")) for s, r, _, _ in spaces], how="diagonal"
    )
    return _generate(_long_all(rows, [(s, f) for s, _, f, _ in spaces]), [(s, f, t) for s, _, f, t in spaces])


def _rows(frame: pl.DataFrame | None) -> list[tuple[int, ...]]:
    if frame is None or frame.height == 0:
        return []
    return sorted(frame.select(list(CAND_COLS)).iter_rows())


@settings(max_examples=40, deadline=None)
@given(
    spaces=st.lists(_space(), min_size=1, max_size=4),
    ternary=st.lists(st.booleans(), min_size=4, max_size=4),
    k=st.sampled_from([1, 5]),
)
def test_batched_generation_and_refutation_equal_one_space_at_a_time(
    spaces: list[tuple[list[Field], pl.DataFrame, pl.DataFrame]], ternary: list[bool], k: int
) -> None:
    gens = [(s, gen, fields, ternary[s]) for s, (fields, gen, _) in enumerate(spaces)]
    refs = [(s, ref, fields, ternary[s]) for s, (fields, _, ref) in enumerate(spaces)]
    got = _refute(_batched(gens), refs, k)
    for s, (fields, gen, ref) in enumerate(spaces):
        want = old.refute(old.generate(gen, fields, ternary[s]), ref, fields, k)
        assert _rows(got.get(s)) == _rows(want), s


def test_a_relation_is_found_in_its_own_space_only() -> None:
    """The batch joins rows of one space only: `/a = /b + /c` holds in the first space, and the second,
    whose rows carry the same values under other fields, yields its own candidates, not the first's."""
    fa = [Field("c0", "/a", True, False), Field("c1", "/b", True, False), Field("c2", "/c", True, False)]
    fb = [Field("c0", "/x", True, False), Field("c1", "/y", True, False)]
    rows_a = pl.DataFrame(
        {
            "_r": [0, 1, 2],
            "fold": [0, 1, 2],
            "c0": [3.0, 7.0, 4.5],
            "c1": [1.0, 2.0, 4.0],
            "c2": [2.0, 5.0, 0.5],
        },
        schema={"_r": pl.UInt32, "fold": pl.Int32, "c0": pl.Float64, "c1": pl.Float64, "c2": pl.Float64},
    )
    rows_b = pl.DataFrame(
        {"_r": [0, 1, 2], "fold": [0, 1, 2], "c0": [3.0, 9.0, 4.0], "c1": [8.0, 2.0, 1.0]},
        schema={"_r": pl.UInt32, "fold": pl.Int32, "c0": pl.Float64, "c1": pl.Float64},
    )
    got = _refute(
        _batched([(0, rows_a, fa, True), (1, rows_b, fb, True)]),
        [(0, rows_a, fa, True), (1, rows_b, fb, True)],
        5,
    )
    # /a = /b + /c (LINEAR, lhs 0, terms 1 and 2, both +1), and nothing in the second space
    assert (0, 0, 1, 2, -1, 1, 1, 0) in _rows(got[0])
    assert 1 not in got
