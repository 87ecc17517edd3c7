"""A fast yes/no test of a document against one of the packaged JSON Schemas, exact for the keywords
they use, so that a valid document is accepted without importing `jsonschema`.

Why: every command that opens a corpus validates its manifest (`corpus.json`), and the first validation
in a process imports jsonschema and builds its validator: 0.09-0.14 CPU-s, about a tenth of a whole
`contracts mine` of a 3,000-call corpus, paid by every `check DIR`, `audit` and `ingest` too; reports
and repair files validate one record a line. `compile_schema` turns a schema into nested closures once
per process, and a document then costs a few µs.

How it is used (`output_contracts.schemas.schema_errors`): a document this test accepts is valid; one it
refuses goes to jsonschema, which finds and words the errors exactly as before. So a mistake here that
refused a valid document would only cost time, and the one that matters, accepting an invalid one, is
what `tests/output_contracts/test_schema_fast.py` rules out by comparing both on mutated real artifacts.

The keywords are those of Draft 2020-12 as `jsonschema` applies them: `type` (`integer` accepts a float
with an integral value; booleans are neither numbers nor integers), `enum`/`const` (1 and 1.0 equal,
True and 1 not), `pattern` and `patternProperties` by `re.search`, lengths in code points, numeric
bounds only on numbers, `$ref` to a fragment of the same document, `if`/`then`/`else`. A schema using
any other keyword (`format`, `unevaluatedProperties`, a remote `$ref`, a nested `$id`, ...) gets no
fast test (`compile_schema` returns None) and is always validated by jsonschema.

`metaschema_check` is the same kind of test for "is this a valid JSON Schema", used on a tool registry's
parameter and output schemas (`output_contracts.traces.tool_registry`): the Draft 2020-12 metaschema, read
from jsonschema's own copy and bundled into one document, compiled here.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Callable, Mapping, Sequence
from numbers import Number
from pathlib import Path
from typing import Any

Check = Callable[[Any], bool]

#: keywords that never change whether a document is valid
_ANNOTATIONS = frozenset(
    ("$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples", "deprecated")
)


class Unsupported(Exception):
    """The schema uses a keyword this module does not state: no fast test for it."""


def compile_schema(schema: Mapping[str, Any] | bool) -> Check | None:
    """A yes/no test equal to jsonschema's verdict for `schema`, or None if it uses a keyword (or a
    `$ref`) outside this module's set."""
    try:
        return _Compiler(schema).root
    except Unsupported:
        return None


def _is_number(v: Any) -> bool:
    """jsonschema's `number`: any `numbers.Number` but a bool (the types JSON decodes to tested first)."""
    t = type(v)
    if t is int or t is float:
        return True
    return isinstance(v, Number) and not isinstance(v, bool)


def _is_integer(v: Any) -> bool:
    """jsonschema's `integer` (Draft 4 on): an int but a bool, or a float with an integral value."""
    t = type(v)
    if t is int:
        return True
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema's `enum`, `const` and `uniqueItems` mean it, case for case as
    jsonschema's `equal`: strings by `==`, sequences and mappings member by member, a bool equal only
    to the same bool, numbers by value (1 and 1.0 are equal)."""
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and json_equal(x, b[k]) for k, x in a.items())
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _unique(items: list[Any]) -> bool:
    if all(type(x) is str for x in items):
        return len(set(items)) == len(items)
    return not any(json_equal(items[i], items[j]) for i in range(len(items)) for j in range(i))


def _every(checks: Sequence[Check]) -> Check:
    """One test that holds when each of `checks` does (in order, stopping at the first that fails)."""
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda v: a(v) and b(v)
    if len(checks) == 3:
        a, b, c = checks
        return lambda v: a(v) and b(v) and c(v)
    tests = tuple(checks)

    def every(v: Any) -> bool:
        for t in tests:
            if not t(v):
                return False
        return True

    return every


class _Compiler:
    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.doc = schema
        self.refs: dict[str, Check] = {}
        self.root = self.compile(schema, top=True)

    def compile(self, s: Any, top: bool = False) -> Check:
        if s is True:
            return lambda v: True
        if s is False:
            return lambda v: False
        if not isinstance(s, Mapping) or ("$id" in s and not top):
            raise Unsupported(repr(s)[:80])
        checks: list[Check] = []
        for key, arg in s.items():
            if key in _ANNOTATIONS or key in _WITH_SIBLINGS:
                continue
            make = _KEYWORDS.get(key)
            if make is None:
                raise Unsupported(key)
            checks.append(make(self, arg, s))
        # the keywords read with a sibling, where the sibling is absent
        if "properties" not in s and ("patternProperties" in s or "additionalProperties" in s):
            checks.append(self.k_properties({}, s))
        if "items" in s and "prefixItems" not in s:
            checks.append(self.k_prefixItems([], s))
        # (`then` and `else` without `if` do nothing)
        if not checks:
            return lambda v: True
        return _every(checks)

    # -- keywords -----------------------------------------------------------------------------------

    def k_ref(self, ref: str, s: Mapping[str, Any]) -> Check:
        """The test of a `#/...` fragment, compiled once (a cell breaks reference cycles)."""
        if not ref.startswith("#"):
            raise Unsupported(ref)
        if ref not in self.refs:
            cell: list[Check] = []
            self.refs[ref] = lambda v: cell[0](v)
            node: Any = self.doc
            for token in filter(None, ref[1:].split("/")):
                token = token.replace("~1", "/").replace("~0", "~")
                if not isinstance(node, Mapping) or token not in node:
                    raise Unsupported(ref)
                node = node[token]
            cell.append(self.compile(node))
        return self.refs[ref]

    def k_type(self, arg: str | list[str], s: Mapping[str, Any]) -> Check:
        names = [arg] if isinstance(arg, str) else list(arg)
        if not all(n in _TYPES for n in names):
            raise Unsupported(f"type {names}")
        tests = [_TYPES[n] for n in names]
        if len(tests) == 1:
            return tests[0]
        return lambda v: any(t(v) for t in tests)

    def k_enum(self, arg: list[Any], s: Mapping[str, Any]) -> Check:
        if all(type(x) is str for x in arg):
            allowed = frozenset(arg)
            return lambda v: type(v) is str and v in allowed
        return lambda v: any(json_equal(v, x) for x in arg)

    def k_const(self, arg: Any, s: Mapping[str, Any]) -> Check:
        return lambda v: json_equal(v, arg)

    def k_pattern(self, arg: str, s: Mapping[str, Any]) -> Check:
        search = re.compile(arg).search
        return lambda v: not isinstance(v, str) or search(v) is not None

    def k_minLength(self, arg: int, s: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, str) or len(v) >= arg

    def k_maxLength(self, arg: int, s: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, str) or len(v) <= arg

    def k_minimum(self, arg: float, s: Mapping[str, Any]) -> Check:
        return lambda v: not _is_number(v) or v >= arg

    def k_maximum(self, arg: float, s: Mapping[str, Any]) -> Check:
        return lambda v: not _is_number(v) or v <= arg

    def k_exclusiveMinimum(self, arg: float, s: Mapping[str, Any]) -> Check:
        return lambda v: not _is_number(v) or v > arg

    def k_exclusiveMaximum(self, arg: float, s: Mapping[str, Any]) -> Check:
        return lambda v: not _is_number(v) or v < arg

    def k_minItems(self, arg: int, s: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, list) or len(v) >= arg

    def k_maxItems(self, arg: int, s: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, list) or len(v) <= arg

    def k_uniqueItems(self, arg: bool, s: Mapping[str, Any]) -> Check:
        if not arg:
            return lambda v: True
        return lambda v: not isinstance(v, list) or _unique(v)

    def k_minProperties(self, arg: int, s: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, dict) or len(v) >= arg

    def k_maxProperties(self, arg: int, s: Mapping[str, Any]) -> Check:
        return lambda v: not isinstance(v, dict) or len(v) <= arg

    def k_required(self, arg: list[str], s: Mapping[str, Any]) -> Check:
        keys = frozenset(arg)
        return lambda v: not isinstance(v, dict) or keys <= v.keys()

    def k_propertyNames(self, arg: Any, s: Mapping[str, Any]) -> Check:
        test = self.compile(arg)

        def names(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for k in v:
                if not test(k):
                    return False
            return True

        return names

    def k_properties(self, arg: Mapping[str, Any], s: Mapping[str, Any]) -> Check:
        """`properties`, `patternProperties` and `additionalProperties` together (the last applies to
        the keys neither of the others names)."""
        props = {k: self.compile(sub) for k, sub in arg.items()}
        patterns = [(re.compile(p), self.compile(sub)) for p, sub in s.get("patternProperties", {}).items()]
        extra_schema = s.get("additionalProperties", True)
        extra = None if extra_schema is True else self.compile(extra_schema)
        if not patterns and extra is None:
            # only the named keys are tested: look them up (an `if` branch names one key of many)
            named_only = tuple(props.items())
            return lambda v: not isinstance(v, dict) or all(t(v[k]) for k, t in named_only if k in v)
        if not patterns and extra_schema is False:
            # a closed object: its keys are a subset of the named ones, each tested by its own schema
            allowed = frozenset(props)

            def closed(v: Any) -> bool:
                if not isinstance(v, dict):
                    return True
                if not v.keys() <= allowed:
                    return False
                for k, x in v.items():
                    if not props[k](x):
                        return False
                return True

            return closed
        if not patterns and not props and extra is not None:
            # a map: every value tested by the one schema
            each = extra

            def values(v: Any) -> bool:
                if not isinstance(v, dict):
                    return True
                for x in v.values():
                    if not each(x):
                        return False
                return True

            return values

        def test(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            for k, x in v.items():
                named = props.get(k)
                if named is not None and not named(x):
                    return False
                matched = False
                for rx, sub in patterns:
                    if rx.search(k) is not None:
                        matched = True
                        if not sub(x):
                            return False
                if extra is not None and named is None and not matched and not extra(x):
                    return False
            return True

        return test

    def k_prefixItems(self, arg: list[Any], s: Mapping[str, Any]) -> Check:
        """`prefixItems` and `items` together (`items` applies after the prefix)."""
        prefix = [self.compile(sub) for sub in arg]
        rest = self.compile(s["items"]) if "items" in s else None
        n = len(prefix)

        if not prefix and rest is not None:
            each = rest

            def items(v: Any) -> bool:
                if not isinstance(v, list):
                    return True
                for x in v:
                    if not each(x):
                        return False
                return True

            return items

        def test(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            if not all(t(x) for t, x in zip(prefix, v, strict=False)):
                return False
            return rest is None or all(rest(x) for x in v[n:])

        return test

    def k_allOf(self, arg: list[Any], s: Mapping[str, Any]) -> Check:
        dispatch = self._discriminated(arg)
        if dispatch is not None:
            return dispatch
        tests = [self.compile(sub) for sub in arg]
        return lambda v: all(t(v) for t in tests)

    def _discriminated(self, arg: list[Any]) -> Check | None:
        """`allOf` of branches `{"if": {"properties": {K: {"const": c}}}, "then": T}` on one key K, each c
        a string (a contract set's rule: one branch per property code): the branches whose c equals the
        object's K, looked up instead of each `if` tested. Exact: an `if` of `properties` holds for a
        value that is not an object and for an object without K (then every `then` applies), and only a
        string equals a string constant (then none applies to another K). None for any other `allOf`."""
        key: str | None = None
        by_const: dict[str, list[Any]] = {}
        for branch in arg:
            if not isinstance(branch, Mapping) or set(branch) != {"if", "then"}:
                return None
            cond = branch["if"]
            if not isinstance(cond, Mapping) or set(cond) != {"properties"} or len(cond["properties"]) != 1:
                return None
            ((k, when),) = cond["properties"].items()
            if key is not None and k != key:
                return None
            key = k
            if not isinstance(when, Mapping) or set(when) != {"const"} or type(when["const"]) is not str:
                return None
            by_const.setdefault(when["const"], []).append(branch["then"])
        if key is None:
            return None
        thens = {
            c: self.compile(subs[0] if len(subs) == 1 else {"allOf": subs}) for c, subs in by_const.items()
        }
        every = [thens[c] for c in by_const]
        name = key

        def dispatch(v: Any) -> bool:
            if not isinstance(v, dict) or name not in v:
                return all(t(v) for t in every)
            c = v[name]
            if not isinstance(c, str):
                return True
            t = thens.get(c)
            return t is None or t(v)

        return dispatch

    def k_anyOf(self, arg: list[Any], s: Mapping[str, Any]) -> Check:
        tests = [self.compile(sub) for sub in arg]
        return lambda v: any(t(v) for t in tests)

    def k_oneOf(self, arg: list[Any], s: Mapping[str, Any]) -> Check:
        tests = [self.compile(sub) for sub in arg]
        return lambda v: sum(1 for t in tests if t(v)) == 1

    def k_not(self, arg: Any, s: Mapping[str, Any]) -> Check:
        test = self.compile(arg)
        return lambda v: not test(v)

    def k_if(self, arg: Any, s: Mapping[str, Any]) -> Check:
        cond = self.compile(arg)
        then = self.compile(s["then"]) if "then" in s else None
        other = self.compile(s["else"]) if "else" in s else None

        def test(v: Any) -> bool:
            if cond(v):
                return then is None or then(v)
            return other is None or other(v)

        return test


#: keywords read by the method of a sibling keyword (`properties`, `prefixItems`, `if`)
_WITH_SIBLINGS = frozenset(("additionalProperties", "patternProperties", "items", "then", "else"))
_KEYWORDS: dict[str, Callable[[_Compiler, Any, Mapping[str, Any]], Check]] = {
    "$ref": _Compiler.k_ref,
    "allOf": _Compiler.k_allOf,
    "anyOf": _Compiler.k_anyOf,
    "const": _Compiler.k_const,
    "enum": _Compiler.k_enum,
    "exclusiveMaximum": _Compiler.k_exclusiveMaximum,
    "exclusiveMinimum": _Compiler.k_exclusiveMinimum,
    "if": _Compiler.k_if,
    "maxItems": _Compiler.k_maxItems,
    "maxLength": _Compiler.k_maxLength,
    "maxProperties": _Compiler.k_maxProperties,
    "maximum": _Compiler.k_maximum,
    "minItems": _Compiler.k_minItems,
    "minLength": _Compiler.k_minLength,
    "minProperties": _Compiler.k_minProperties,
    "minimum": _Compiler.k_minimum,
    "not": _Compiler.k_not,
    "oneOf": _Compiler.k_oneOf,
    "pattern": _Compiler.k_pattern,
    "prefixItems": _Compiler.k_prefixItems,
    "properties": _Compiler.k_properties,
    "propertyNames": _Compiler.k_propertyNames,
    "required": _Compiler.k_required,
    "type": _Compiler.k_type,
    "uniqueItems": _Compiler.k_uniqueItems,
}


# -- the metaschema ------------------------------------------------------------------------------------

#: Keys of the metaschema documents that assert nothing about a schema they validate: the documents'
#: own identity and vocabulary, annotations, and `format`, which asserts nothing without a format
#: checker (jsonschema's metaschema validator has none).
_META_DROPPED = frozenset(("$vocabulary", "$dynamicAnchor", "format", *(_ANNOTATIONS - {"$defs"})))
#: Keywords whose value is one subschema, a name -> subschema map, or a list of subschemas.
_ONE_SCHEMA = frozenset(
    ("items", "contains", "propertyNames", "additionalProperties", "if", "then", "else", "not")
)
_SCHEMA_MAPS = frozenset(("properties", "patternProperties", "$defs", "dependentSchemas"))
_SCHEMA_LISTS = frozenset(("allOf", "anyOf", "oneOf", "prefixItems"))
#: Where `Draft202012Validator.META_SCHEMA` and its vocabularies lie in `jsonschema_specifications`.
_META_FOLDER = ("schemas", "draft202012")


@functools.cache
def metaschema_check() -> Check | None:
    """A yes/no test of "is this a valid Draft 2020-12 JSON Schema", equal to the verdict of
    `jsonschema.Draft202012Validator(Draft202012Validator.META_SCHEMA)`; None when its files cannot be
    read or use a keyword outside this module's set (then jsonschema decides every schema).

    Why: a tool registry's parameter and output schemas are checked against the metaschema whenever it
    is loaded (`mine` and `audit` of a corpus with `tools.json`, `registry`, `plan-check`); through
    jsonschema that was 2.8 ms a schema plus its import, 0.13 CPU-s for the sample world's ten tools.

    How: the metaschema is read from the files jsonschema validates with (`jsonschema_specifications`,
    located without importing it) and bundled into one document for `compile_schema`: each vocabulary
    (`meta/core`, ...) under `$defs`, references rewritten to point there, and `$dynamicRef: "#meta"` as a
    reference to the root: a schema validated against the metaschema alone has the root as the
    outermost `meta` anchor of its dynamic scope, so that is where every `#meta` resolves."""
    spec = importlib.util.find_spec("jsonschema_specifications")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*_META_FOLDER)
    try:
        root = json.loads((folder / "metaschema.json").read_text(encoding="utf-8"))
        names = [sub["$ref"].removeprefix("meta/") for sub in root["allOf"]]
        vocabularies = {
            name: json.loads((folder / "vocabularies" / name).read_text(encoding="utf-8")) for name in names
        }
        bundle = _bundled(root, "")
        bundle["$defs"] = {name: _bundled(doc, name) for name, doc in vocabularies.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, Unsupported):
        return None
    return compile_schema(bundle)


def _bundled(node: Any, vocabulary: str) -> Any:
    """A schema node of the metaschema document of `vocabulary` ("": the root), as it lies in the
    bundle (see `metaschema_check`)."""
    if isinstance(node, bool):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _META_DROPPED:
            continue
        if key == "$dynamicRef":
            if value != "#meta" or "$ref" in node:
                raise Unsupported(f"$dynamicRef {value}")
            out["$ref"] = "#"
        elif key == "$ref":
            out["$ref"] = _bundled_ref(value, vocabulary)
        elif key in _ONE_SCHEMA:
            out[key] = _bundled(value, vocabulary)
        elif key in _SCHEMA_MAPS:
            out[key] = {name: _bundled(sub, vocabulary) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_bundled(sub, vocabulary) for sub in value]
        else:
            out[key] = value
    return out


def _bundled_ref(ref: str, vocabulary: str) -> str:
    """`ref` of a metaschema document as a reference within the bundle: `#/...` of a vocabulary under
    its `$defs` entry, `meta/<name>#/...` into that entry."""
    if ref.startswith("#"):
        return ref if not vocabulary else f"#/$defs/{vocabulary}{ref[1:]}"
    if ref.startswith("meta/"):
        name, _, fragment = ref.removeprefix("meta/").partition("#")
        return f"#/$defs/{name}{fragment}"
    raise Unsupported(ref)
