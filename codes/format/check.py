"""The evaluation of FORMAT: every string at a pattern has one of a small set of shapes
(`output_contracts.codes.format.shapes`), judged per call in Python and over a corpus in polars.

What it catches: id and date format drift (`#w0174651`, `05/01/2024`, `2024-05-01T10:00:00+00:00` for
`...Z`), case changes, padding (`'ABC  '`), mojibake (`JosÃ©`), sentinel text (`N/A`), truncated ids.

Semantics: every string node at P has a shape (at the rule's level) in `shapes`; other kinds are TYPE's
business. Expected the list of shapes; observed the string. A per-node code: over a corpus only string
hits are kept inside the join; their shapes are computed in polars and anti-joined with the allowed
ones. The Python (`shape`) and polars (`shape_expr`) spellings are held equal by a property test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.engine.compiled import InlineTest, ToolBuilder, nothing, when
from output_contracts.codes.evaluation import NodeCheck
from output_contracts.codes.format import Format
from output_contracts.codes.format.shapes import FORMAT_MAX_LEN, LONG, NON_ASCII, parts, shape
from output_contracts.codes.hits import KIND_BIT, RuleEntry, broken, rule_string_key
from output_contracts.codes.nodes import Operand, PathFinder
from output_contracts.frames import StringBytes

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_CLASS_CHARS = [chr(c) for c in (*range(65, 91), *range(97, 123), *range(48, 58))]
_CLASS_OF = ["A"] * 26 + ["a"] * 26 + ["9"] * 10


def loosen_expr(col: str | pl.Expr) -> pl.Expr:
    """`loosen` as a polars expression over a String column of exact shapes."""
    t = pl.col(col) if isinstance(col, str) else col
    for c in ("A", "a", "9", NON_ASCII):
        t = t.str.replace_all(c + "+", c)
    return t


def shape_expr(col: str | pl.Expr, level: str) -> pl.Expr:
    """`shape` as a polars expression over a String column."""
    s = pl.col(col) if isinstance(col, str) else col
    # non-ASCII characters first (a regex, run only on the strings that have one), then the ASCII classes
    # in one Aho-Corasick pass over the text (the replacements are not matched again)
    t = (
        pl.when(s.str.contains(r"[^\x00-\x7f]"))
        .then(s.str.replace_all(r"[^\x00-\x7f]", NON_ASCII))
        .otherwise(s)
        .str.replace_many(_CLASS_CHARS, _CLASS_OF)
    )
    if level == "loose":
        t = loosen_expr(t)
    return pl.when(s.str.len_chars() > FORMAT_MAX_LEN).then(pl.lit(LONG)).otherwise(t)


#: Each byte's exact-shape character: ASCII letters and digits to their class, every other byte itself.
_BYTE_CLASS = np.arange(256, dtype=np.uint8)
_BYTE_CLASS[ord("A") : ord("Z") + 1] = ord("A")
_BYTE_CLASS[ord("a") : ord("z") + 1] = ord("a")
_BYTE_CLASS[ord("0") : ord("9") + 1] = ord("9")


def exact_shapes(strings: pl.Series) -> pl.Series:
    """`shape(s, "exact")` of every string of a String Series (nulls stay null), in the same order.

    Byte for byte through a table over the Arrow buffer for the ASCII strings of at most FORMAT_MAX_LEN
    bytes (an exact shape has a string's length, and an ASCII string as many bytes as characters); the
    others (non-ASCII, or long) by `shape_expr`. About 7x faster than `shape_expr` on ids and dates,
    where mining and the corpus checker spend their FORMAT time."""
    b = StringBytes.of(strings)
    out = b.mapped(_BYTE_CLASS).alias(strings.name)
    special = ~b.ascii() | (b.lengths > FORMAT_MAX_LEN)
    if special.any():
        idx = pl.Series(np.flatnonzero(special), dtype=pl.UInt32)
        slow = strings.gather(idx).to_frame("s").select(shape_expr("s", "exact")).to_series()
        out = out.scatter(idx, slow)
    return out


#: Appended before a shape is split into characters, so that no list is empty (the empty string too has a
#: part, `0:`); non-ASCII, so no exact shape holds it.
_END = "\u00b7"


def with_parts(frame: FrameT, col: str, out: str) -> FrameT:
    """`frame` with one row per charset part (`parts`) of its String column `col`, in column `out`."""
    s = pl.col(col)
    n = s.str.len_chars()
    c = pl.col(out)
    return (
        frame.with_columns((shape_expr(s, "exact") + _END).str.split("").list.unique().alias(out))
        .explode(out)
        .filter((c != _END) | (n == 0))
        .with_columns(
            pl.when(n > FORMAT_MAX_LEN)
            .then(pl.lit(LONG))
            .otherwise(pl.concat_str(n.cast(pl.String), pl.lit(":"), c.str.replace(_END, "", literal=True)))
            .alias(out)
        )
        .unique(maintain_order=True)
    )


def charset_keys(shapes: FrameT, col: str = "exact") -> FrameT:
    """(`col`, key) for distinct *exact shapes*: a key names the set of charset parts of every string of
    that shape (`key_parts` explodes it). Built from the shape, not the strings: distinct shapes are far
    fewer than distinct strings (every reservation id has one of a few dozen), and in a shape the letter,
    digit and non-ASCII classes are the literal characters `A`, `a`, `9`, `¤` (literal searches), the rest
    punctuation (the sorted characters of the few distinct residues)."""
    s = pl.col(col)
    base = (
        shapes.select(col)
        .unique()
        .with_columns(s.str.replace_many(["A", "a", "9", NON_ASCII], ["", "", "", ""]).alias("_res"))
    )
    res = base.select("_res").unique()
    res = res.with_columns(
        pl.col("_res").str.split("").list.unique().list.sort().list.join("").alias("_punct")
    )
    flags = pl.concat_str(
        [
            pl.when(s.str.contains(c, literal=True)).then(pl.lit(c)).otherwise(pl.lit(""))
            for c in ("9", "A", "a", NON_ASCII)
        ]
    )
    key = (
        pl.when(s == LONG)
        .then(pl.lit(LONG))
        .otherwise(pl.concat_str(s.str.len_chars().cast(pl.String), pl.lit(":"), flags, pl.col("_punct")))
    )
    return base.join(res, on="_res", how="left").select(col, key.alias("key"))


def key_parts(keys: FrameT) -> FrameT:
    """(key, part) for the distinct keys of `charset_keys`: `6:9A` -> `6:9`, `6:A`; `0:` -> `0:`."""
    k = keys.select("key").unique()
    head = pl.col("key").str.split_exact(":", 1)
    split = k.with_columns(
        head.struct.field("field_0").alias("_n"),
        pl.col("key").str.splitn(":", 2).struct.field("field_1").fill_null("").alias("_cls"),
    )
    return (
        split.with_columns((pl.col("_cls") + _END).str.split("").alias("_c"))
        .explode("_c")
        .filter((pl.col("_c") != _END) | (pl.col("_cls") == ""))
        .with_columns(
            pl.when(pl.col("key") == LONG)
            .then(pl.lit(LONG))
            .otherwise(
                pl.concat_str(pl.col("_n"), pl.lit(":"), pl.col("_c").str.replace(_END, "", literal=True))
            )
            .alias("part")
        )
        .select("key", "part")
        .unique()
    )


#: The characters a shape holds for a class of characters (`output_contracts.codes.format.shapes.shape`), as
#: regular-expression classes (bodies, without brackets).
_CLASS_RE = {"A": "A-Z", "a": "a-z", "9": "0-9", NON_ASCII: "\\x80-\\U0010ffff"}


def _shape_re(sh: str, loose: bool) -> str | None:
    """A regular expression matching exactly the strings (of at most FORMAT_MAX_LEN characters) whose
    shape is `sh`, or None when no string has that shape (a letter, digit or non-ASCII character other
    than the class characters, or, loose, a run of one class that the shape would have collapsed)."""
    out = []
    prev = ""
    for ch in sh:
        if ch in _CLASS_RE:
            if loose and ch == prev:
                return None
            out.append(f"[{_CLASS_RE[ch]}]" + ("+" if loose else ""))
        elif ch.isascii() and not ch.isalnum():
            out.append(re.escape(ch))
        else:
            return None
        prev = ch
    return "".join(out)


def format_breaks(level: str, shapes: Sequence[str]) -> Callable[[str], bool]:
    """FORMAT's test of one string (`shape(s, level) not in shapes`, or for `charset` `not parts(s) <=
    shapes`) without computing the shape: the allowed shapes as one regular expression (per length for
    `charset`). A hypothesis test holds it to `shape` and `parts`."""
    long_ok = LONG in shapes
    if level == "charset":
        by_len: dict[int, set[str]] = {}
        for p in shapes:
            n, sep, c = p.partition(":")
            if sep and n.isdigit() and len(c) <= 1:
                chars = by_len.setdefault(int(n), set())
                if c in _CLASS_RE:
                    chars.add(_CLASS_RE[c])
                elif c and c.isascii() and not c.isalnum():
                    chars.add(re.escape(c))
        rx = {
            n: re.compile(f"[{''.join(sorted(cs))}]+" if n else "")
            for n, cs in by_len.items()
            if cs or n == 0
        }

        def charset(v: str) -> bool:
            n = len(v)
            if n > FORMAT_MAX_LEN:
                return not long_ok
            r = rx.get(n)
            return r is None or r.fullmatch(v) is None

        return charset
    _, one = _shapes_re(level, shapes)

    def shaped(v: str) -> bool:
        if len(v) > FORMAT_MAX_LEN:
            return not long_ok
        return one is None or one.fullmatch(v) is None

    return shaped


def _shapes_re(level: str, shapes: Sequence[str]) -> tuple[bool, re.Pattern[str] | None]:
    """For the `exact` and `loose` levels: whether the long shape is allowed, and one regular expression
    of the other allowed shapes (None when no string has any of them)."""
    alts = [a for sh in shapes if sh != LONG and (a := _shape_re(sh, level == "loose")) is not None]
    return LONG in shapes, (re.compile("|".join(f"(?:{a})" for a in alts)) if alts else None)


class FormatCheck(Format, NodeCheck):
    node_class = 5
    hit_cols = ("cid", "ridx", "path", "kind", "str", "skey")

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        key, prefix = self.at(ops)
        p = self.params(rule)
        allowed, level = frozenset(p.shapes), p.level
        if level == "charset":
            return lambda nodes: [
                prefix + path
                for path, v in nodes.get(key, ())
                if isinstance(v, str) and not parts(v) <= allowed
            ]
        return lambda nodes: [
            prefix + path
            for path, v in nodes.get(key, ())
            if isinstance(v, str) and shape(v, level) not in allowed
        ]

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        p = self.params(rule)
        hit = b.hit(ri, ops[0].side)
        if p.level == "charset":
            breaks = b.const(format_breaks(p.level, p.shapes))

            def test(v: str) -> str:
                return f"{breaks}({v})"
        else:
            long_ok, one = _shapes_re(p.level, p.shapes)
            fm = None if one is None else b.const(one.fullmatch)

            def test(v: str) -> str:
                if fm is None:
                    return f"len({v}) <= {FORMAT_MAX_LEN}" if long_ok else "True"
                if long_ok:
                    return f"(len({v}) <= {FORMAT_MAX_LEN} and {fm}({v}) is None)"
                return f"(len({v}) > {FORMAT_MAX_LEN} or {fm}({v}) is None)"

        inline = InlineTest(
            lambda v, path: [f"if {test(v)}:", f"    {hit(path)}"],
            nothing,
            when(hit, lambda v, t: f"isinstance({v}, str) and {test(v)}"),
            pure=True,
        )
        b.test_at(ops[0], ri, inline)
        return True

    def keep(self) -> pl.Expr:
        return pl.col("kbit") == KIND_BIT["string"]

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        # A string's shape at every level follows from its exact shape (`loosen`; a charset key names
        # its parts), so shapes are computed once per distinct string, judged once per distinct (rule,
        # string) or (rule, charset key), and only the breaking pairs are joined back to the hits: a
        # corpus repeats its ids, codes and dates across many calls. Strings are told apart by their
        # key `skey` (HIT_COLS: an integer on a corpus with a view), not by hashing their text.
        ps = [(e.ridx, self.params(e.rule)) for e in entries]
        level = pl.DataFrame(
            {"ridx": [r for r, _p in ps], "level": [p.level for _r, p in ps]},
            schema={"ridx": pl.UInt32, "level": pl.String},
        )
        allowed = pl.DataFrame(
            {"ridx": [r for r, p in ps for _ in p.shapes], "shape": [v for _r, p in ps for v in p.shapes]},
            schema={"ridx": pl.UInt32, "shape": pl.String},
        )
        strings = hits.filter(pl.col("kind") == "string")
        # collected here: the plan below reads the distinct pairs several times
        packed = rule_string_key(hits)
        pairs = strings.select("ridx", "skey", "str")
        pairs = (
            pairs.unique(subset=["ridx", "skey"])
            if packed is None
            else pairs.filter(packed.is_first_distinct())
        )
        keyed = pairs.collect().join(level, on="ridx")
        keyed = keyed.with_columns(exact_shapes(keyed.get_column("str")).alias("exact"))
        shapes = keyed.select("exact").unique()
        loose = shapes.with_columns(loosen_expr("exact").alias("shape"))
        keys = charset_keys(shapes, "exact")
        lv = pl.col("level")
        whole = (
            pl.concat(
                [
                    keyed.filter(lv == "exact").select("ridx", "skey", pl.col("exact").alias("shape")),
                    keyed.filter(lv == "loose")
                    .join(loose, on="exact", how="left", nulls_equal=True)
                    .select("ridx", "skey", "shape"),
                ]
            )
            .join(allowed, on=["ridx", "shape"], how="anti", nulls_equal=True)
            .select("ridx", "skey")
        )
        # charset: a string breaks the rule when any one of its parts is not allowed
        charset = keyed.filter((lv == "charset") & pl.col("str").is_not_null()).join(
            keys, on="exact", how="left", nulls_equal=True
        )
        bad_keys = (
            charset.select("ridx", "key")
            .unique()
            .join(key_parts(keys), on="key", how="left", nulls_equal=True)
            .join(allowed.rename({"shape": "part"}), on=["ridx", "part"], how="anti", nulls_equal=True)
            .select("ridx", "key")
        )
        each = charset.join(bad_keys, on=["ridx", "key"], how="semi", nulls_equal=True).select("ridx", "skey")
        bad = pl.concat([whole, each]).unique()
        if packed is None:
            return broken(strings.join(bad.lazy(), on=["ridx", "skey"], how="semi", nulls_equal=True))
        return broken(strings.filter(packed.is_in(bad.select(packed).to_series().implode())))


CHECKS = (FormatCheck(),)
