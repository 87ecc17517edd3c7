"""A fast, exact test of `contract-set.schema.json`: does a decoded contract set conform, yes or no.

Why: `jsonschema` validating a mined contract set costs about 0.5-0.7 CPU-s at every start of `check`
(a 100k-call sample world's set: 505 rules, 590 KB), more than the rest of loading together, and
`check -` pays it before its first line. This module states the same schema as plain Python (type,
key and pattern tests, the per-code parameter shapes of the `allOf` branches), at a few ms a set.

How it is used (`ContractSet.load`): a set this test accepts is valid; one it refuses goes to the full
`jsonschema` validation, which finds the error and words it exactly as before. So the messages and
exit codes of a bad file are unchanged, and a mistake here could only make a valid file pay the slow
path, unless this test accepted an invalid file, which `tests/rules/test_set_schema.py` rules out by
comparing the two on mutated real contract sets. It is used only while the shipped schema file is the
one it was written for (`SCHEMA_SHA256`); after an edit of the schema every load takes the full path
until this module is brought in step (the test fails first).

Semantics kept from JSON Schema 2020-12 as `jsonschema` applies them: `integer` accepts a float with
an integral value; booleans are not numbers; `const`/`enum` compare 1 and 1.0 alike but not True and 1;
`pattern` is `re.search` (so `$` also matches before a final newline); `if` with `properties` holds
vacuously when the key is missing (then `required` fails anyway).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import re
from typing import Any

#: sha256 of the `contract-set.schema.json` bytes this module states.
SCHEMA_SHA256 = "25d553796bcceda67d916b83780933bdc474ebed77607388f0deaceb5fbc395e"

_RULE_ID = re.compile(r"^r-[0-9a-f]{12}$")
_PATH = re.compile(r"^(\$args)?(/[^/]*)*$")
_EXAMPLE = re.compile(r"^[0-9a-f]{16}$")
_SHA = re.compile(r"^[0-9a-f]{64}$")
_SLASH = re.compile(r"^/")
_WILD = re.compile(r"(^|/)(\*|~\*)(/|$)")
_STAR_LIST = re.compile(r"^/.*(^|/)\*(/|$)")
_MAP_WILD = re.compile(r"(^|/)~\*(/|$)")
_ARGS = re.compile(r"^\$args")
_ARGS_PATH = re.compile(r"^\$args/")

_CODES = frozenset(
    (
        "REQUIRED", "TYPE", "POSITIVE", "NONNEG", "DOMAIN", "ECHO", "DATE_ORDER",
        "RELATION", "FORMAT", "LENGTH", "RANGE", "UNIQUE", "CONSISTENT", "CONDITIONAL",
    )
)  # fmt: skip
_RULE_KEYS = frozenset(
    (
        "id",
        "tool",
        "code",
        "paths",
        "params",
        "support",
        "source",
        "examples",
        "max_violation_rate",
        "in_full",
    )
)
_RULE_REQUIRED = ("id", "tool", "code", "paths", "params", "support", "source", "examples")
_TOOL_KEYS = frozenset(("substitutes", "substitutes_inferred", "immutable", "maps", "rules"))
_TOP_KEYS = frozenset(("version", "params", "corpus", "tools", "folds"))


@functools.cache
def _schema_is_known() -> bool:
    ref = importlib.resources.files("output_contracts") / "schemas" / "contract-set.schema.json"
    return hashlib.sha256(ref.read_bytes()).hexdigest() == SCHEMA_SHA256


def _int(v: Any) -> bool:
    """JSON Schema `integer`: an int that is not a bool, or a float with an integral value."""
    t = type(v)
    return t is int or (t is float and v.is_integer())


def _num(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


def _strings(v: Any, unique: bool = False) -> bool:
    """An array of strings (pairwise distinct when `unique`)."""
    return type(v) is list and all(type(s) is str for s in v) and (not unique or len(set(v)) == len(v))


def _in(v: Any, allowed: frozenset[str]) -> bool:
    """`enum` of strings."""
    return type(v) is str and v in allowed


def _support(v: Any) -> bool:
    return (
        type(v) is dict
        and v.keys() == {"calls", "tasks"}
        and _int(v["calls"])
        and v["calls"] >= 0
        and _int(v["tasks"])
        and v["tasks"] >= 0
    )


def _rule_id(v: Any) -> bool:
    return type(v) is str and _RULE_ID.search(v) is not None


def _params_exactly(p: dict[str, Any], required: tuple[str, ...], allowed: frozenset[str]) -> bool:
    return all(k in p for k in required) and all(k in allowed for k in p)


_TYPE_KINDS = frozenset(("null", "bool", "int", "string", "array", "object", "number"))
_LEVELS = frozenset(("exact", "loose", "charset"))
_OF = frozenset(("number", "magnitude", "year"))
_THEN_WORDS = frozenset(("present", "absent", "nonempty", "empty"))
_SUM = frozenset(("exact", "cent", "rel"))
_SIGNS = frozenset(("negative", "zero", "positive"))
_TZ = frozenset(("aware", "naive", "date"))
_FORMS = frozenset(("linear", "product", "sum_over", "count_of"))


def _scalar_path(v: Any) -> bool:
    """A CONSISTENT / CONDITIONAL path to one scalar: `^/`, no `*` or `~*` step."""
    return type(v) is str and _SLASH.search(v) is not None and _WILD.search(v) is None


def _when(w: Any) -> bool:
    if type(w) is not dict or len(w) != 1:
        return False
    if "in" in w:
        v = w["in"]
        return type(v) is list and len(v) >= 1 and all(x is None or type(x) in (str, bool) for x in v)
    if "sign" in w:
        v = w["sign"]
        return type(v) is list and len(v) >= 1 and all(_in(x, _SIGNS) for x in v) and len(set(v)) == len(v)
    return False


def _then(t: Any) -> bool:
    if type(t) is str:
        return t in _THEN_WORDS
    if type(t) is not dict or len(t) != 1:
        return False
    if "equals" in t:
        v = t["equals"]
        return v is None or type(v) in (str, int, float, bool)
    if "sum" in t:
        return _in(t["sum"], _SUM)
    return False


def _code_shape(code: str, paths: list[Any], p: dict[str, Any]) -> bool:
    """The `allOf` branch of `code`: how many paths, and the exact shape of `params`."""
    n = len(paths)
    if code in ("REQUIRED", "POSITIVE", "NONNEG"):
        return n <= 1 and not p
    if code == "UNIQUE":
        return n <= 16 and not p
    if code == "TYPE":
        return n <= 1 and p.keys() == {"kind"} and _in(p["kind"], _TYPE_KINDS)
    if code == "DOMAIN":
        v: Any = p.get("values")
        return n <= 1 and p.keys() == {"values"} and _strings(v, unique=True) and len(v) >= 1
    if code == "FORMAT":
        v = p.get("shapes")
        return (
            n <= 1
            and p.keys() == {"level", "shapes"}
            and _in(p["level"], _LEVELS)
            and _strings(v, unique=True)
            and len(v) >= 1
        )
    if code == "RANGE":
        return (
            n <= 1
            and p.keys() == {"of", "min", "max"}
            and _in(p["of"], _OF)
            and (p["min"] is None or _num(p["min"]))
            and _num(p["max"])
        )
    if code == "LENGTH":
        v = p.get("min")
        return n <= 1 and p.keys() == {"min"} and _int(v) and 1 <= v <= 255
    if code == "CONSISTENT":
        return n == 2 and all(_scalar_path(x) for x in paths) and not p
    if code == "CONDITIONAL":
        if not 2 <= n <= 3 or not (_scalar_path(paths[0]) and _scalar_path(paths[1])):
            return False
        if n == 3:
            x = paths[2]
            if type(x) is not str or _STAR_LIST.search(x) is None or _MAP_WILD.search(x) is not None:
                return False
        return p.keys() == {"when", "then"} and _when(p["when"]) and _then(p["then"])
    if code == "ECHO":
        return n == 2 and _ARGS.search(paths[0]) is None and _ARGS_PATH.search(paths[1]) is not None and not p
    if code == "DATE_ORDER":
        return n == 2 and p.keys() == {"tz"} and _in(p["tz"], _TZ)
    if code == "RELATION":
        if not 2 <= n <= 4 or not _params_exactly(p, ("form", "tol"), frozenset(("form", "tol", "coef"))):
            return False
        if not (_in(p["form"], _FORMS) and _in(p["tol"], _SUM)):
            return False
        if "coef" in p:
            c = p["coef"]
            return type(c) is list and 1 <= len(c) <= 3 and all(_num(x) and x in (1, -1) for x in c)
        return True
    return False  # pragma: no cover - every code of `_CODES` has a branch above


def _rule(r: Any) -> bool:
    if type(r) is not dict or not all(k in r for k in _RULE_REQUIRED) or not all(k in _RULE_KEYS for k in r):
        return False
    paths, params, source, examples = r["paths"], r["params"], r["source"], r["examples"]
    code = r["code"]
    if not (
        _rule_id(r["id"])
        and type(r["tool"]) is str
        and _in(code, _CODES)
        and type(paths) is list
        and len(paths) >= 1
        and all(type(x) is str and _PATH.search(x) is not None for x in paths)
        and type(params) is dict
        and _support(r["support"])
        and type(source) is list
        and len(source) >= 1
        and all(_in(s, frozenset(("mined", "schema"))) for s in source)
        and len(set(source)) == len(source)
        and type(examples) is list
        and len(examples) <= 3
        and all(type(e) is str and _EXAMPLE.search(e) is not None for e in examples)
    ):
        return False
    if "max_violation_rate" in r:
        v = r["max_violation_rate"]
        if v is not None and not (_num(v) and 0 <= v <= 1):
            return False
    if "in_full" in r and type(r["in_full"]) is not bool:
        return False
    return _code_shape(code, paths, params)


def _min_counts(v: Any) -> bool:
    """`min_support` / `min_tasks`: an object of integers >= 1."""
    return type(v) is dict and all(_int(x) and x >= 1 for x in v.values())


def _params(p: Any) -> bool:
    if type(p) is not dict:
        return False
    for key, ok in (
        ("k", lambda v: _int(v) and v >= 1),
        ("seed", _int),
        ("clean", lambda v: _in(v, frozenset(("ok", "reward")))),
        ("max_domain", lambda v: _int(v) and v >= 1),
        ("min_support", _min_counts),
        ("min_tasks", _min_counts),
        ("max_violation_rate", lambda v: v is None or (_num(v) and 0 < v < 1)),
        ("tools", lambda v: v is None or _strings(v)),
        ("rule_source", lambda v: _in(v, frozenset(("mined", "schema")))),
    ):
        if key in p and not ok(p[key]):
            return False
    return True


def _corpus(c: Any) -> bool:
    if type(c) is not dict:
        return False
    if "sha256" in c and not (type(c["sha256"]) is str and _SHA.search(c["sha256"]) is not None):
        return False
    return all(k not in c or (_int(c[k]) and c[k] >= 0) for k in ("clean_calls", "tasks"))


def _tool(t: Any) -> bool:
    if type(t) is not dict or "rules" not in t or not all(k in _TOOL_KEYS for k in t):
        return False
    for key, unique in (
        ("substitutes", False),
        ("substitutes_inferred", True),
        ("immutable", False),
        ("maps", True),
    ):
        if key in t and not _strings(t[key], unique):
            return False
    rules = t["rules"]
    return type(rules) is list and all(_rule(r) for r in rules)


def _fold(f: Any) -> bool:
    if (
        type(f) is not dict
        or "fold" not in f
        or "rules" not in f
        or not all(k in ("fold", "rules", "support") for k in f)
    ):
        return False
    if not (_int(f["fold"]) and f["fold"] >= 0):
        return False
    if not (type(f["rules"]) is list and all(_rule_id(i) for i in f["rules"])):
        return False
    if "support" in f:
        s = f["support"]
        if type(s) is not dict or not all(_rule_id(k) and _support(v) for k, v in s.items()):
            return False
    return True


def conforms(data: Any) -> bool:
    """True when `data` is valid against the shipped `contract-set` schema, by this module's test;
    False when it is not, or when the schema is not the one this module states (then ask jsonschema)."""
    if not _schema_is_known():
        return False
    if type(data) is not dict or data.keys() != _TOP_KEYS:
        return False
    version = data["version"]
    if not (_num(version) and version == 1):
        return False
    tools, folds = data["tools"], data["folds"]
    return (
        _params(data["params"])
        and _corpus(data["corpus"])
        and type(tools) is dict
        and all(_tool(t) for t in tools.values())
        and type(folds) is list
        and all(_fold(f) for f in folds)
    )
