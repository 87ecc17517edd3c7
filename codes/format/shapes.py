"""A string's shape, in plain Python: what FORMAT judges and how people read it.

A string's *shape* maps each character to its class: an ASCII capital to `A`, a small letter to `a`, a
digit to `9`, any non-ASCII character to `¤`; everything else (punctuation, spaces) stays itself. The
`exact` shape keeps the length (`#W0174651` -> `#A9999999`), the `loose` one collapses each run of one
class into a single character (`Yusuf Rossi` -> `Aa Aa`, `yusuf.rossi7301@example.com` -> `a.a9@a.a`).
A string longer than FORMAT_MAX_LEN characters has the shape `…` (a character no shape can contain),
so a field of short ids that suddenly holds a page of text breaks the rule.

The `charset` level is for random identifiers (`4WQ150`, `Q-3FA9C01B2E`), whose exact and loose shapes are
as many as their values: a string's *parts* are its length with each character class it holds
(`4WQ150` -> `6:9`, `6:A`; the exact shape's distinct characters), and the rule allows a set of parts,
so a string is allowed when every one of its parts is (any mix of the classes seen at a length seen).
`shape(s, "charset")` is the merged form (`6:9A`) a witness shows; `parts` is what is judged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Strings longer than this have the one shape LONG (ids and codes are short; free text is not a format).
FORMAT_MAX_LEN = 64


LONG = "\u2026"


NON_ASCII = "\u00a4"


_ASCII = str.maketrans(
    {
        **{chr(c): "A" for c in range(ord("A"), ord("Z") + 1)},
        **{chr(c): "a" for c in range(ord("a"), ord("z") + 1)},
        **{chr(c): "9" for c in range(ord("0"), ord("9") + 1)},
    }
)


_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


_RUNS_RE = re.compile("([Aa9" + NON_ASCII + r"])\1+")


def shape(s: str, level: str) -> str:
    """The shape of `s` at `level` (see the module docstring)."""
    if len(s) > FORMAT_MAX_LEN:
        return LONG
    t = s.translate(_ASCII)
    if not t.isascii():
        t = _NON_ASCII_RE.sub(NON_ASCII, t)
    if level == "charset":
        return f"{len(s)}:{''.join(sorted(set(t)))}"
    return loosen(t) if level == "loose" else t


def parts(s: str) -> frozenset[str]:
    """The charset parts of `s`: `<length>:<class>` for each character class it holds (`…` if long; the
    empty string's one part is `0:`)."""
    merged = shape(s, "charset")
    if merged == LONG:
        return frozenset((LONG,))
    n, classes = merged.split(":", 1)
    return frozenset(f"{n}:{c}" for c in classes) if classes else frozenset((merged,))


def merge_parts(ps: Sequence[str]) -> list[str]:
    """Parts merged per length (`6:9`, `6:A` -> `6:9A`), in length order: how people read a set of parts."""
    by_len: dict[int, set[str]] = {}
    other: list[str] = []
    for p in ps:
        n, sep, c = p.partition(":")
        if sep and n.isdigit():
            by_len.setdefault(int(n), set()).update(c)
        else:
            other.append(p)
    return [f"{n}:{''.join(sorted(cs))}" for n, cs in sorted(by_len.items())] + sorted(other)


def loosen(exact: str) -> str:
    """The loose shape of an exact shape: each run of one class collapsed (`LONG` stays itself), so
    `loosen(shape(s, "exact")) == shape(s, "loose")` for every string."""
    return _RUNS_RE.sub(r"\1", exact)


def shown(sh: str, level: str) -> str:
    """A shape as people read it: runs of three or more written `9{7}` (exact), a run as `a+` (loose),
    `[9A]{6}` (charset: the classes a string of that length may mix)."""
    if level == "charset":
        n, sep, c = sh.partition(":")
        return f"[{c}]{{{n}}}" if sep else sh
    if level == "loose":
        return re.sub("([Aa9" + NON_ASCII + "])", r"\1+", sh)
    return re.sub("([Aa9" + NON_ASCII + r"])\1{2,}", lambda m: f"{m.group(1)}{{{len(m.group(0))}}}", sh)
