"""`schema_fast.metaschema_check`: its verdict on "is this a valid Draft 2020-12 schema" equals
jsonschema's (`Draft202012Validator(META_SCHEMA)`, the test registries are held to) on real tool
schemas, on the packaged schemas, on every single change of real schemas, and on random schema-like
documents; and loading a registry no longer imports jsonschema."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.schema_fast import metaschema_check
from tests.conftest import REPO
from tests.json_tree import locations

META = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
FAST = metaschema_check()

#: Values put in every place of a real schema: each breaks some keyword's rule or sits at its edge.
ODD = [
    None, True, False, 0, -1, 1.0, 1.5, -0.5, 2**70, "", "x", "1bad", "a#b", "a\n", "dict", "integer",
    [], ["a", "a"], ["string", "string"], ["string", 5], [1, 1.0], {}, {"type": 5}, {"type": "dict"},
    {"minimum": "0"}, {"$ref": 5}, {"properties": []},
]  # fmt: skip
#: The odd values each added keyword gets: one of each JSON kind, and the edges of the keywords' rules.
ADDED = [None, True, 0, -1, 1.0, 1.5, "x", "1bad", [], ["a", "a"], {}, {"type": 5}]
#: Keywords of the metaschema's vocabularies (and those it keeps from older drafts), added with odd values.
KEYWORDS = [
    "$id", "$schema", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
    "$defs", "prefixItems", "items", "contains", "additionalProperties", "properties",
    "patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf",
    "oneOf", "not", "unevaluatedItems", "unevaluatedProperties", "type", "const", "enum", "multipleOf",
    "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
    "minProperties", "required", "dependentRequired", "title", "description", "default", "deprecated",
    "readOnly", "writeOnly", "examples", "format", "contentEncoding", "contentMediaType",
    "contentSchema", "definitions", "dependencies", "$recursiveAnchor", "$recursiveRef", "x-custom",
]  # fmt: skip


def same(doc: Any) -> None:
    assert FAST is not None
    assert FAST(doc) == META.is_valid(doc), json.dumps(doc)[:300]


def test_the_metaschema_compiles() -> None:
    assert FAST is not None


def real_schemas(shared: Path) -> Iterator[tuple[str, Any]]:
    """Every tool's parameter and output schema of the sample world and the real registries, BFCL's
    function parameters (their `"type": "dict"` is not JSON Schema), and the packaged schemas."""
    regs = [REPO / "sample_traces" / "tools.json", shared / "tau_bench" / "retail" / "tools.json"]
    regs += [
        shared / "tau_bench" / "airline" / "tools.json",
        shared / "tau2_bench" / "telecom" / "tools.json",
    ]
    for reg in regs:
        doc = json.loads(reg.read_text())
        for tool in doc["tools"] if isinstance(doc, dict) else doc:
            for key in ("parameters", "output"):
                if tool.get(key) is not None:
                    yield f"{reg.parent.name}/{tool['name']}/{key}", tool[key]
    for path in sorted((shared / "bfcl").glob("BFCL_v3_*.json"))[:2]:
        for line in path.read_text().splitlines()[:40]:
            for fn in json.loads(line)["function"]:
                yield f"{path.name}/{fn['name']}", fn["parameters"]
    for path in sorted((REPO / "output_contracts" / "schemas").glob("*.json")):
        yield path.name, json.loads(path.read_text())


def test_real_schemas(shared_data: Path) -> None:
    verdicts = []
    for _name, schema in real_schemas(shared_data):
        same(schema)
        verdicts.append(META.is_valid(schema))
    # both kinds are there: the registries' and packaged schemas are valid, BFCL's "dict" ones are not
    assert verdicts.count(True) >= 100 and verdicts.count(False) >= 20


def _set(doc: Any, at: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    if not at:
        return value
    node = out
    for k in at[:-1]:
        node = node[k]
    node[at[-1]] = value
    return out


def _drop(doc: Any, at: tuple[Any, ...]) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for k in at[:-1]:
        node = node[k]
    del node[at[-1]]
    return out


@pytest.mark.parametrize("which", [0, 1])
def test_every_single_change_of_real_schemas(shared_data: Path, which: int) -> None:
    """Each place of a real schema set to each odd value or dropped; each keyword added, with each of
    `ADDED`, at the root and at a nested object. (jsonschema takes 3-10 ms a schema against the
    metaschema: the two schemas are small ones, a τ-bench tool's parameters and the packaged plan
    schema, which has `$ref`, `$defs`, `anyOf` and `pattern`.)"""
    pool = dict(real_schemas(shared_data))
    schema = [pool["retail/exchange_delivered_order_items/parameters"], pool["plan.schema.json"]][which]
    n = 0
    for at in locations(schema):
        for value in ODD:
            same(_set(schema, at, value))
            n += 1
        if at:
            same(_drop(schema, at))
            n += 1
    objects = [at for at in locations(schema) if isinstance(_get(schema, at), dict)]
    for at in [objects[0], objects[min(3, len(objects) - 1)]]:
        for key in KEYWORDS:
            for value in ADDED:
                node = copy.deepcopy(_get(schema, at))
                node[key] = value
                same(_set(schema, at, node))
                n += 1
    assert n > 2000


def _get(doc: Any, at: tuple[Any, ...]) -> Any:
    for k in at:
        doc = doc[k]
    return doc


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(ODD[10:18]),
)


def _schemas() -> st.SearchStrategy[Any]:
    return st.recursive(
        st.one_of(_scalars, st.dictionaries(st.sampled_from(KEYWORDS), _scalars, max_size=3)),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(KEYWORDS) | st.text(max_size=3), inner, max_size=4),
        ),
        max_leaves=12,
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas())
def test_random_schema_like_documents(doc: Any) -> None:
    same(doc)


def test_loading_a_registry_does_not_import_jsonschema() -> None:
    code = (
        "import sys\n"
        "from output_contracts.traces.tool_registry import load_registry\n"
        f"r = load_registry({str(REPO / 'sample_traces' / 'tools.json')!r})\n"
        "assert len(r.names()) == 10, r.names()\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
