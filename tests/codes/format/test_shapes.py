"""FORMAT's shapes (`codes/format/shapes.py`) and their polars spellings (`codes/format/check.py`): the
Python and polars spellings agree on arbitrary text, and the shapes of known strings are the documented
ones."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.codes.format.check import (
    charset_keys,
    exact_shapes,
    key_parts,
    loosen_expr,
    shape_expr,
    with_parts,
)
from output_contracts.codes.format.shapes import (
    FORMAT_MAX_LEN,
    LONG,
    NON_ASCII,
    loosen,
    merge_parts,
    parts,
    shape,
    shown,
)

#: Characters the shape classes treat specially, plus the two shape markers themselves and mojibake.
SPECIAL = "AZaz09 -_.:/#@+\t\n\x00" + NON_ASCII + LONG + "éÃ©ßøñ日本語\U0001f600\u00a0\u200b"
texts = st.one_of(
    st.text(max_size=80),  # any Unicode scalar value (no surrogates)
    st.text(alphabet=st.sampled_from(SPECIAL), max_size=80),
    st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=FORMAT_MAX_LEN - 2, max_size=70),
    st.from_regex(r"\A[A-Z]{2,4}-[0-9]{3,8}[ ]{0,3}\Z"),
)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=12))
def test_shape_expr_equals_shape(values: list[str]) -> None:
    s = pl.Series("s", values, dtype=pl.String)
    for level in ("exact", "loose"):
        got = s.to_frame().select(shape_expr("s", level).alias("out"))["out"].to_list()
        assert got == [shape(v, level) for v in values], level
        # the expression also works on an expression, not only on a column name
        assert s.to_frame().select(shape_expr(pl.col("s"), level).alias("out"))["out"].to_list() == got


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), texts), max_size=12),
    cut=st.tuples(st.integers(0, 12), st.integers(0, 12)),
    chunks=st.integers(1, 3),
)
def test_exact_shapes_equals_shape(values: list[str | None], cut: tuple[int, int], chunks: int) -> None:
    """The byte-table `exact_shapes` (mining's and the corpus checker's) gives `shape(v, "exact")` for
    every string, null for null, on slices (an Arrow offset) and on a Series of several chunks."""
    s = pl.Series("s", values, dtype=pl.String)
    want = [None if v is None else shape(v, "exact") for v in values]
    got = exact_shapes(s)
    assert got.to_list() == want and got.name == "s" and got.dtype == pl.String
    lo, n = min(cut[0], len(values)), cut[1]
    assert exact_shapes(s.slice(lo, n)).to_list() == want[lo : lo + n]
    pieces = [s.slice(i * len(values) // chunks, len(values) // chunks + 1) for i in range(chunks)]
    many = pl.concat(pieces, rechunk=False)
    assert exact_shapes(many).to_list() == [None if v is None else shape(v, "exact") for v in many.to_list()]


@settings(max_examples=150, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=12))
def test_charset_parts_in_polars_equal_parts(values: list[str]) -> None:
    """`with_parts` (the miner's and the corpus checker's) gives each string exactly `parts(v)` (the
    per-call checker's), duplicates and the empty string included; the merged shape lists the same."""
    df = pl.DataFrame({"i": list(range(len(values))), "s": values}, schema={"i": pl.Int64, "s": pl.String})
    got = with_parts(df, "s", "p").group_by("i").agg(pl.col("p"))
    by_i = {i: set(ps) for i, ps in got.iter_rows()}
    assert by_i == {i: set(parts(v)) for i, v in enumerate(values)}
    # the miner's spelling: keys of the distinct exact shapes, then only the distinct keys exploded
    distinct = pl.DataFrame({"str": sorted(set(values))}, schema={"str": pl.String}).with_columns(
        shape_expr("str", "exact").alias("exact")
    )
    keys = charset_keys(distinct, "exact")
    keyed = distinct.join(keys, on="exact").join(key_parts(keys), on="key")
    by_str = {v: set(ps) for v, ps in keyed.group_by("str").agg(pl.col("part")).iter_rows()}
    assert by_str == {v: set(parts(v)) for v in set(values)}
    for v in values:
        merged = shape(v, "charset")
        assert merge_parts(sorted(parts(v))) == [merged]
        if len(v) <= FORMAT_MAX_LEN:
            assert merged.startswith(f"{len(v)}:")
            assert set(merged.split(":", 1)[1]) == set(shape(v, "exact"))


@settings(max_examples=150, deadline=None)
@given(v=texts)
def test_loose_is_exact_with_runs_collapsed(v: str) -> None:
    exact, loose = shape(v, "exact"), shape(v, "loose")
    assert loosen(exact) == loose  # what the miner's run-length test relies on, long strings included
    assert pl.Series([exact]).to_frame().select(loosen_expr(pl.col(""))).item() == loose
    if len(v) > FORMAT_MAX_LEN:
        assert exact == loose == LONG
        return
    assert len(exact) == len(v)
    assert shape(exact, "loose") == loose
    assert shape(exact, "exact") == exact  # a shape is its own exact shape (it is made of class letters)
    assert set(loose) <= set(exact)
    for c in ("A", "a", "9", NON_ASCII):
        assert c + c not in loose


def test_loose_of_the_long_shape_is_long() -> None:
    """A shape is loosened with `loosen`, not re-shaped: `…` (itself a non-ASCII character) stays `…`."""
    v = "x" * (FORMAT_MAX_LEN + 1)
    assert loosen(shape(v, "exact")) == shape(v, "loose") == LONG
    assert shape(LONG, "loose") == NON_ASCII  # a user's string "…" is one non-ASCII character


def test_shapes_by_example() -> None:
    cases = {
        "#W0174651": ("#A9999999", "#A9"),
        "Yusuf Rossi": ("Aaaaa Aaaaa", "Aa Aa"),
        "yusuf.rossi7301@example.com": ("aaaaa.aaaaa9999@aaaaaaa.aaa", "a.a9@a.a"),
        "ORD-123456  ": ("AAA-999999  ", "A-9  "),
        "JosÃ© Rossi": ("Aaa" + NON_ASCII * 2 + " Aaaaa", "Aa" + NON_ASCII + " Aa"),
        "日本": (NON_ASCII * 2, NON_ASCII),
        "": ("", ""),
        "x" * FORMAT_MAX_LEN: ("a" * FORMAT_MAX_LEN, "a"),
        "x" * (FORMAT_MAX_LEN + 1): (LONG, LONG),
    }
    for v, (exact, loose) in cases.items():
        assert (shape(v, "exact"), shape(v, "loose")) == (exact, loose), v
    assert sorted(parts("4WQ150")) == ["6:9", "6:A"]
    assert sorted(parts("Q-3FA9C01B2E")) == ["12:-", "12:9", "12:A"]
    assert parts("") == {"0:"} and parts("x" * (FORMAT_MAX_LEN + 1)) == {LONG}
    assert merge_parts(["6:9", "6:A", "7:A"]) == ["6:9A", "7:A"]
    assert shown("6:9A", "charset") == "[9A]{6}"
    assert shown("AAA-999999", "exact") == "A{3}-9{6}"
    assert shown("Aa9", "exact") == "Aa9"
    assert shown("Aa Aa", "loose") == "A+a+ A+a+"
