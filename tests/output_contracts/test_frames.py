"""`output_contracts.frames`: small results kept across batch/part loops own their memory (`detach`); Arrow
strings reach polars unchanged (`from_arrow_strings`, `StringBytes.mapped`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from output_contracts.frames import ExactGroups, StringBytes, detach, from_arrow_strings, write_ipc


def held_bytes(s: pl.Series) -> int:
    """Bytes of every Arrow buffer the column keeps alive (views export zero-copy with their buffers)."""
    a = s.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
    return sum(b.size for c in chunks for b in c.buffers() if b is not None)


def big_frame(n: int = 200_000) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "path": [f"/items/{j}/a/long/enough/path/not/inlined" for j in range(n)],
            "n": list(range(n)),
            "tags": [[f"tag number {j} of a long list"] for j in range(n)],
            "info": [{"name": f"a struct field long enough {j}", "k": j} for j in range(n)],
        }
    )


def test_a_filtered_frame_pins_the_buffers_and_detach_frees_them() -> None:
    big = big_frame()
    small = big.filter(pl.col("n") % 1000 == 0)
    kept = detach(small)
    assert kept.equals(small)
    assert kept.schema == small.schema
    for col in ("path", "tags", "info"):
        # the undetached filter still holds the whole column's data (MiBs); the detached copy, its 200 rows
        assert held_bytes(small[col]) > 50 * held_bytes(kept[col]), col
    assert held_bytes(kept["path"]) < 20_000


def test_slices_of_a_big_column_are_copied() -> None:
    """A result made of slices of big arrays (many chunks) holds the arrays; detached, its own rows."""
    big = pl.DataFrame({"cid": list(range(1_000_000)), "ridx": [7] * 1_000_000})
    small = pl.concat([big.slice(i * 100_000, 3) for i in range(10)], rechunk=False)
    assert small["cid"].n_chunks() == 10
    kept = detach(small)
    # one chunk a column is a copy: the 10 slices (each holding the whole 8 MB array) are let go
    assert kept.equals(small) and kept["cid"].n_chunks() == 1 and kept["ridx"].n_chunks() == 1


def test_detach_recurses_into_tuples_and_lists_and_passes_other_values() -> None:
    big = big_frame(5_000)
    small = big.head(3)
    out = detach((small, [small, 7], None, "x"))
    assert isinstance(out, tuple) and out[2] is None and out[3] == "x"
    assert out[0].equals(small) and out[1][0].equals(small) and out[1][1] == 7
    numeric = pl.DataFrame({"a": [1, 2]})
    assert detach(numeric).equals(numeric)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=30), st.integers(0, 3))
def test_detach_keeps_values_nulls_and_order(values: list[str | None], step: int) -> None:
    df = pl.DataFrame({"s": values, "i": list(range(len(values)))}, schema={"s": pl.String, "i": pl.Int64})
    small = df.filter(pl.col("i") % (step + 1) == 0)
    out = detach(small)
    assert out.schema == small.schema
    assert out["s"].to_list() == small["s"].to_list()
    assert out["i"].to_list() == small["i"].to_list()


def test_write_ipc_holds_a_categorical_of_several_chunks(tmp_path: Path) -> None:
    # chunks made apart export different dictionaries (the 10M ingest's per-batch call facts did)
    first = pl.DataFrame({"t": ["x", "x"], "n": [1, 2]}).cast({"t": pl.Categorical})
    second = pl.DataFrame({"t": ["y", None], "n": [3, 4]}).cast({"t": pl.Categorical})
    frame = pl.concat([first, second], rechunk=False)
    for batch_rows in (None, 1, 3):
        write_ipc(frame, tmp_path / "f.arrow", batch_rows)
        back = pl.read_ipc(tmp_path / "f.arrow")
        assert back.get_column("t").cast(pl.String).to_list() == ["x", "x", "y", None]
        assert back.get_column("n").to_list() == [1, 2, 3, 4]
        with pa.ipc.open_file(pa.memory_map(str(tmp_path / "f.arrow"))) as reader:
            sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
        assert sizes == {None: [2, 2], 1: [1, 1, 1, 1], 3: [3, 1]}[batch_rows]  # exact, whatever the chunks


@given(st.lists(st.integers(1, 9), max_size=8), st.integers(1, 5))
def test_exact_groups_cut_at_multiples_of_the_size(pieces: list[int], size: int) -> None:
    written: list[list[int]] = []
    groups = ExactGroups(lambda f: written.append(f.get_column("v").to_list()), size)
    start = 0
    for n in pieces:
        groups.add(pl.DataFrame({"v": list(range(start, start + n))}))
        start += n
    groups.close(pl.DataFrame({"v": []}, schema={"v": pl.Int64}))
    assert [v for group in written for v in group] == list(range(start))
    assert (all(len(g) == size for g in written[:-1]) and 0 < len(written[-1]) <= size) or start == 0
    assert len(written) == max(1, -(-start // size))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.none() | st.text(max_size=6), max_size=30), st.integers(0, 5), st.integers(0, 5))
def test_from_arrow_strings_is_polars_own_conversion(values: list[str | None], start: int, cut: int) -> None:
    """The PyCapsule route gives the Series polars' pyarrow route gives, slices (an offset) included,
    and a byte map through `StringBytes.mapped` keeps values, nulls and order."""
    arr = pa.array(values, type=pa.large_string()).slice(min(start, len(values)), max(0, len(values) - cut))
    got = from_arrow_strings(arr)
    assert got.dtype == pl.String
    assert got.to_list() == pl.Series(arr, dtype=pl.String).to_list() == arr.to_pylist()
    upper = np.arange(256, dtype=np.uint8)
    upper[ord("a") : ord("z") + 1] -= 32
    mapped = StringBytes.of(pl.Series(values, dtype=pl.String)).mapped(upper)
    assert mapped.to_list() == [
        None if v is None else "".join(c.upper() if "a" <= c <= "z" else c for c in v) for v in values
    ]
