"""The one table renderer of the CLI: tables that fit the terminal, and `--plain` tab-separated values.

Every command that prints a table builds a `Grid` and hands it to `show`. On a terminal (or at
`COLUMNS=N`) the table fits the width: paths (file paths, JSON Pointers) wrap at `/`, prose wraps at
spaces, long names are shortened in the middle (`get_reserv…_details`: both ends stay, so a name is
never cut at its end), numbers are never touched; a table that still does not fit is shown in column
groups, each repeating the first column. `--plain` prints the same rows as TSV: one header line, full
values, no title, no colour, no box characters (for `cut` and `awk`).
"""

from __future__ import annotations

import os
import re
import shlex
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich.console import Console

Kind = Literal["text", "name", "path", "num", "key"]
Cell = str | int | None

ELLIPSIS = "…"
SEP = "  "
INDENT = "  "
RULE = "─"
#: The narrowest a shrinkable column gets before the table is split into column groups.
MIN_WIDTH = 10


def width_of(console: Console) -> int:
    """Columns to fit: `COLUMNS` when set, else the terminal's width, else 80 (pipes and files)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if console.is_terminal:
        return console.size.width
    return 80


def abbreviate(s: str, width: int) -> str:
    """`s` in at most `width` characters, shortened in the middle so that both ends stay."""
    if len(s) <= width:
        return s
    if width <= 1:
        return s[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return s[:head] + ELLIPSIS + (s[-tail:] if tail else "")


def _fold(s: str, width: int) -> list[str]:
    return [s[i : i + width] for i in range(0, len(s), width)] or [""]


def wrap_path(s: str, width: int) -> list[str]:
    """A path or JSON Pointer in lines of at most `width`, broken before a `/` (a segment longer than
    the width, and only it, is folded)."""
    if len(s) <= width:
        return [s]
    lines: list[str] = []
    cur = ""
    for tok in re.split(r"(?=/)", s):
        if not tok:
            continue
        if len(cur) + len(tok) <= width:
            cur += tok
            continue
        if cur:
            lines.append(cur)
        pieces = _fold(tok, width)
        lines.extend(pieces[:-1])
        cur = pieces[-1]
    lines.append(cur)
    return lines


def wrap_text(s: str, width: int) -> list[str]:
    """Prose in lines of at most `width`, broken at spaces (a word longer than the width is folded)."""
    if len(s) <= width:
        return [s]
    return textwrap.wrap(s, width, break_on_hyphens=False, break_long_words=True) or [""]


@dataclass(frozen=True)
class Column:
    """A column: its header and how its cells give way to a narrow terminal (`kind`)."""

    header: str
    kind: Kind = "text"  # text wraps at spaces, path at `/`, a name is shortened in the middle; a num
    # (right-aligned) and a key (a short code word) are never touched

    def cell_lines(self, s: str, width: int) -> list[str]:
        lines = s.split("\n")
        out: list[str] = []
        for line in lines:
            if self.kind == "name":
                out.append(abbreviate(line, width))
            elif self.kind == "path":
                # continuation lines indented: a wrapped path is not read as a row of its own
                first, *rest = wrap_path(line, width)
                out.append(first)
                if rest:
                    out.extend(INDENT + x for x in wrap_path("".join(rest), max(width - len(INDENT), 1)))
            elif self.kind == "text":
                out.extend(wrap_text(line, width))
            else:
                out.append(line)
        return out


def _shown(v: Cell) -> str:
    if v is None:
        return ""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _plain(v: Cell) -> str:
    if v is None:
        return ""
    return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _line(parts: Iterable[str]) -> str:
    return SEP.join(parts).rstrip()


def _pad(c: Column, s: str, w: int) -> str:
    return s.rjust(w) if c.kind == "num" else s.ljust(w)


@dataclass
class Grid:
    """Rows under named columns; `footer` rows (totals) follow a rule and are left out of `--plain`.

    Cells are strings, or ints (shown with thousands separators, plain as digits), or None (empty).
    """

    columns: Sequence[Column]
    title: str | None = None
    #: a column (the tool) shown as a heading over its rows when the table is too wide with it
    section: int | None = None
    rows: list[tuple[list[Cell], str | None]] = field(default_factory=list)
    footer: list[list[Cell]] = field(default_factory=list)

    def add_row(self, *cells: Cell, style: str | None = None) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append((list(cells), style))

    def add_footer(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.footer.append(list(cells))

    def tsv(self) -> list[str]:
        """Tab-separated lines: the header, then one line per row, full values (no footer)."""
        out = ["\t".join(c.header for c in self.columns)]
        out.extend("\t".join(_plain(v) for v in cells) for cells, _ in self.rows)
        return out

    def _natural(self, idx: Sequence[int]) -> list[int]:
        every = [cells for cells, _ in self.rows] + self.footer
        res = []
        for i in idx:
            w = len(self.columns[i].header)
            for cells in every:
                for line in _shown(cells[i]).split("\n"):
                    w = max(w, len(line))
            res.append(w)
        return res

    def _without(self, i: int) -> Grid:
        """This table less column `i` (its value printed as a heading above its rows instead)."""
        keep = [j for j in range(len(self.columns)) if j != i]
        g = Grid([self.columns[j] for j in keep], footer=[[f[j] for j in keep] for f in self.footer])
        g.rows = [([cells[j] for j in keep], style) for cells, style in self.rows]
        return g

    def _floor(self, i: int, natural: int) -> int:
        """The narrowest column `i` gets: a path keeps its longest segment whole where it can."""
        c = self.columns[i]
        if c.kind in ("num", "key"):
            return natural
        least = max(len(c.header), MIN_WIDTH)
        if c.kind == "path":
            every = [cells for cells, _ in self.rows]
            segs = [len(t) for cells in every for t in re.split(r"(?=/)", _shown(cells[i]))]
            least = max(least, min(max(segs, default=0), 2 * MIN_WIDTH))
        if c.kind == "text":
            least = max(least, 2 * MIN_WIDTH)
        return min(natural, least)

    def _fit(self, idx: Sequence[int], width: int, names: bool = True) -> list[int] | None:
        """Column widths for the columns `idx` within `width`, or None when they cannot fit. Prose and
        paths give way first (they wrap); names only then (they are shortened), and not at all with
        `names=False`."""
        widths = self._natural(idx)
        floor = [self._floor(i, w) for i, w in zip(idx, widths, strict=True)]
        excess = sum(widths) + len(SEP) * (len(idx) - 1) - width
        for kinds in (("text", "path"), ("name",) if names else ()):
            while excess > 0:
                can = [
                    j for j in range(len(idx)) if widths[j] > floor[j] and self.columns[idx[j]].kind in kinds
                ]
                if not can:
                    break
                j = max(can, key=lambda k: (widths[k], k))
                widths[j] -= 1
                excess -= 1
        return widths if excess <= 0 else None

    def _groups(self, width: int) -> list[tuple[list[int], list[int]]]:
        """The columns in groups that fit (each repeating the first column), with their widths."""
        every = list(range(len(self.columns)))
        fit = self._fit(every, width)
        if fit is not None or len(every) < 3:
            return [(every, fit if fit is not None else self._natural(every))]
        groups: list[tuple[list[int], list[int]]] = []
        cur = [0]
        for i in every[1:]:
            trial = [*cur, i]
            if len(cur) > 1 and self._fit(trial, width, names=False) is None:
                groups.append((cur, self._fit(cur, width) or self._natural(cur)))
                cur = [0, i]
            else:
                cur = trial
        groups.append((cur, self._fit(cur, width) or self._natural(cur)))
        return groups

    def _row(
        self, idx: Sequence[int], widths: Sequence[int], cells: list[Cell], style: str | None
    ) -> list[tuple[str, str | None]]:
        cols = [self.columns[i] for i in idx]
        parts = [c.cell_lines(_shown(cells[i]), w) for c, i, w in zip(cols, idx, widths, strict=True)]
        height = max(len(p) for p in parts)
        return [
            (
                _line(
                    _pad(c, p[k] if k < len(p) else "", w)
                    for c, p, w in zip(cols, parts, widths, strict=True)
                ),
                style,
            )
            for k in range(height)
        ]

    def _block(
        self, idx: Sequence[int], widths: Sequence[int], rows: bool = True
    ) -> list[tuple[str, str | None]]:
        """The header, its rule, and (with `rows`) the rows and the footer of the columns `idx`."""
        cols = [self.columns[i] for i in idx]
        out: list[tuple[str, str | None]] = [
            (_line(_pad(c, c.header, w) for c, w in zip(cols, widths, strict=True)), "bold"),
            (_line(RULE * w for w in widths), None),
        ]
        if not rows:
            return out
        for cells, style in self.rows:
            out.extend(self._row(idx, widths, cells, style))
        if self.footer:
            out.append((_line(RULE * w for w in widths), None))
            for cells in self.footer:
                out.extend(self._row(idx, widths, cells, "bold"))
        return out

    def render(self, width: int) -> list[tuple[str, str | None]]:
        """The table as (line, style) pairs, each line at most `width` wide where that is possible."""
        res: list[tuple[str, str | None]] = []
        if self.title:
            res.extend((t, None) for t in wrap_text(self.title, width))
        every = list(range(len(self.columns)))
        if self.section is not None and self._fit(every, width, names=False) is None:
            rest = self._without(self.section)
            last: object = object()
            groups = rest._groups(width)
            for n, (idx, widths) in enumerate(groups):
                if n:
                    res.append(("", None))
                block = rest._block(idx, widths, rows=False)
                res.extend(block[:2])
                for (cells, style), (full, _) in zip(rest.rows, self.rows, strict=True):
                    head = full[self.section]
                    if head != last:
                        res.extend((t, "bold") for t in wrap_path(_shown(head), width))
                        last = head
                    res.extend(rest._row(idx, widths, cells, style))
                last = object()
            return res
        for n, (idx, widths) in enumerate(self._groups(width)):
            if n:
                res.append(("", None))
            res.extend(self._block(idx, widths))
        return res


def show(console: Console, grid: Grid, *, plain: bool = False) -> None:
    """Print `grid` on `console`: fitted to its width, or as TSV with `plain`."""
    if plain:
        for line in grid.tsv():
            console.file.write(line + "\n")
        console.file.flush()
        return
    for text, style in grid.render(width_of(console)):
        console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)


def wraps_sentences(console: Console) -> bool:
    """Sentences wrap on a terminal, or where `COLUMNS` says how wide the reader is; into a pipe or a
    log they stay one line each, so `grep` finds a whole message (tables fit 80 columns either way)."""
    env = os.environ.get("COLUMNS", "")
    return console.is_terminal or (env.isdigit() and int(env) > 0)


def say(console: Console, text: str, *, style: str | None = None) -> None:
    """Print a sentence for people, wrapped at spaces to the console's width when `wraps_sentences`
    (a long path or name stays whole on its own line rather than being cut)."""
    if not wraps_sentences(console):
        for para in text.split("\n"):
            console.print(para, style=style, markup=False, highlight=False, soft_wrap=True)
        return
    w = width_of(console)
    for para in text.split("\n"):
        lines = textwrap.wrap(
            para, w, break_on_hyphens=False, break_long_words=False, subsequent_indent="  "
        ) or [""]
        for line in lines:
            # a word longer than the width: a path breaks before a `/`, anything else stays whole
            for piece in wrap_path(line, w) if len(line) > w and "/" in line else [line]:
                console.print(piece, style=style, markup=False, highlight=False, soft_wrap=True)


def say_command(console: Console, words: Sequence[str | tuple[str, ...]]) -> None:
    """A shell command to copy, indented, continued with ` \\` where it would pass the width (never
    broken inside a word, nor between an option and its value given as a tuple, so it still pastes
    and runs as one command); one line where sentences do not wrap (`wraps_sentences`)."""
    w = width_of(console) - 2 if wraps_sentences(console) else 1 << 30
    lines: list[str] = []
    cur = "  "
    for word in (" ".join(map(shlex.quote, (x,) if isinstance(x, str) else x)) for x in words):
        if cur.strip() and len(cur) + 1 + len(word) > w:
            lines.append(cur + " \\")
            cur = "      " + word
        else:
            cur = cur + (" " if cur.strip() else "") + word
    lines.append(cur)
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def say_anchor(console: Console, text: str, head: str, root: str) -> None:
    """A ledger's anchor: the sentence, then its head and Merkle root each on a line of its own (64 hex
    digits each: whole, and easy to select)."""
    say(console, text)
    console.print(f"  head {head}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"  root {root}", markup=False, highlight=False, soft_wrap=True)
