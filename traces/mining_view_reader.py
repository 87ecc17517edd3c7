"""Reading a corpus's mining view (`output_contracts.traces.mining_view` writes it): the integer-coded
leaves mining reads instead of `leaves.parquet`, the pattern table in memory, and the string dictionary
left on disk, read only for the codes or values asked for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from output_contracts.errors import MiningError
from output_contracts.traces.corpus import LEAVES_FILE, Corpus
from output_contracts.traces.mining_view import VIEW_FILE, VIEW_PATTERNS_FILE, VIEW_STRINGS_FILE


@dataclass(frozen=True)
class View:
    """The corpus's mining view (`output_contracts.traces.mining_view`): `lpats` (lpat -> tool, side,
    pattern) in memory, the string dictionary left on disk (`strings`: code -> string, read only for
    the few codes or values asked for: at 10M calls it is 14M strings, 245 MiB in memory); and, once
    `selecting` has run, what every read filters by, computed once per load instead of per chunk:
    `keep` (the lpats of the selected tools; None: all) and `drop` (the view call indexes of the calls
    left out; None: none).

    A part's rows take their call keys and string texts from `leaves.parquet`, which holds the same rows
    in the same order (`scan_with_leaves`): reading those two columns of a row range costs less than
    gathering them from in-memory dictionaries, and nothing per corpus stays in memory for them."""

    path: Path
    strings: Path
    lpats: pl.DataFrame
    leaves: Path
    keep: pl.Series | None = None
    drop: pl.Series | None = None

    @staticmethod
    def open(corpus: Corpus) -> View | None:
        """The view of a corpus that has one (`Corpus.view`), else None."""
        folder = corpus.view()
        if folder is None:
            return None
        return View(
            folder / VIEW_FILE,
            folder / VIEW_STRINGS_FILE,
            pl.read_parquet(folder / VIEW_PATTERNS_FILE).with_row_index("lpat"),
            corpus.path / LEAVES_FILE,
        )

    def selecting(self, corpus: Corpus, tools: Sequence[str] | None, unclean: pl.DataFrame | None) -> View:
        """This view restricted to the clean calls of `tools` (`unclean`: cids of the calls left out)."""
        keep = None
        if tools is not None:
            keep = self.lpats.filter(pl.col("tool").is_in(list(tools)))["lpat"].cast(pl.UInt32)
        drop = None if unclean is None else call_indexes(corpus, unclean["cid"])
        return replace(self, keep=keep, drop=drop)

    def codes(self, values: pl.Series) -> pl.Series:
        """The string codes of `values` (each must be in the dictionary), in their order."""
        want = pl.DataFrame({"str": values.cast(pl.String)}).with_row_index("_i")
        found = (
            pl.scan_parquet(self.strings)
            .with_row_index("code")
            .join(want.lazy(), on="str")
            .select("_i", "code")
            .collect(engine="streaming")
        )
        if found.height != want.height:
            raise MiningError("a value is missing from the mining view's strings", source=str(self.strings))
        return found.sort("_i")["code"].cast(pl.UInt32)

    def texts(self, codes: pl.Series) -> pl.Series:
        """The strings of `codes` (nulls stay null), in their order."""
        wanted = codes.drop_nulls().unique()
        found = (
            pl.scan_parquet(self.strings)
            .with_row_index("code")
            .filter(pl.col("code").is_in(wanted.cast(pl.UInt32).implode()))
            .collect(engine="streaming")
        )
        return pl.DataFrame({"code": codes.cast(pl.UInt32)}).join(
            found, on="code", how="left", maintain_order="left"
        )["str"]

    def scan(self, start: int, rows: int) -> pl.LazyFrame:
        """View rows [start, start + rows) of the selected tools' clean calls (`selecting`)."""
        return self._filtered(pl.scan_parquet(self.path).slice(start, rows))

    def read_with_leaves(self, start: int, rows: int) -> pl.DataFrame:
        """View rows [start, start + rows), read, unfiltered, with `cid` and `text` (the string of
        `str`) from the same rows of `leaves.parquet` (`kept` says which rows the selection keeps).
        The two files are read apart and put side by side, not rechunked: the caller's one filter per
        side copies every column once anyway (`_read_view_chunk`)."""
        view = pl.scan_parquet(self.path).slice(start, rows).collect()
        leaves = (
            pl.scan_parquet(self.leaves)
            .slice(start, rows)
            .select("cid", pl.col("str").alias("text"))
            .collect()
        )
        return view.hstack(leaves)

    def kept(self, raw: pl.DataFrame) -> pl.Series | None:
        """Which rows of `read_with_leaves` the selection keeps (`selecting`; None: all)."""
        keep = None
        if self.keep is not None:
            keep = raw["lpat"].is_in(self.keep.implode())
        if self.drop is not None:
            kept = raw["call"].is_in(self.drop.implode()).not_()
            keep = kept if keep is None else keep & kept
        return keep

    def _filtered(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        # the slice comes first (a range of file rows), then the filters
        if self.keep is not None:
            lf = lf.filter(pl.col("lpat").is_in(self.keep.implode()))
        if self.drop is not None:
            lf = lf.filter(~pl.col("call").is_in(self.drop.implode()))
        return lf


def call_indexes(corpus: Corpus, cids: pl.Series) -> pl.Series:
    """The view's call indexes of `cids` (a call's rank among the corpus's cids in increasing order)."""
    every = corpus.scan_calls().select(pl.col("cid").unique().sort()).collect()["cid"]
    return every.search_sorted(cids).cast(pl.UInt32)
