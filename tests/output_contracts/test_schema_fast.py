"""`output_contracts.schema_fast` says valid exactly when jsonschema does, on the packaged schemas.

`schema_errors` trusts the fast test and skips jsonschema for a document it accepts, so a document it
wrongly accepted would pass without its error. These tests compare the two verdicts on real artifacts
(a corpus manifest ingested here, the golden audit report, receipts, registries, repair score), on
every single change of a manifest (the document every corpus command validates), on random changes
of the others, and on the keyword corner cases where JSON Schema and Python disagree (True == 1,
1 == 1.0, `$` before a final newline).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.schema_fast import compile_schema, json_equal
from output_contracts.schemas import _validator, load_schema, schema_errors, schema_names
from tests.json_tree import locations, subtrees

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"


def _jsonschema_ok(doc: Any, name: str) -> bool:
    return not any(True for _ in _validator(name).iter_errors(doc))


def _fast(name: str) -> Any:
    check = compile_schema(load_schema(name))
    assert check is not None, name
    return check


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from output_contracts.traces.ingest import ingest

    out = tmp_path_factory.mktemp("corpus") / "c"
    ingest([REPO / "sample_traces" / "clean"], out, registry=REPO / "sample_traces" / "tools.json")
    doc: dict[str, Any] = json.loads((out / "corpus.json").read_text())
    return doc


def _documents(manifest: dict[str, Any]) -> list[tuple[str, Any]]:
    """(schema, document) of real artifacts, each valid against its schema."""
    receipts = (GOLDEN / "check-faulty-receipts.jsonl").read_text().splitlines()[:40]
    return [
        ("corpus-manifest", manifest),
        ("audit-report", orjson.loads((GOLDEN / "audit-clean-inject.json").read_bytes())),
        ("tool-registry", orjson.loads((REPO / "sample_traces" / "tools.json").read_bytes())),
        ("tool-registry", orjson.loads((GOLDEN / "registry-infer.json").read_bytes())),
        ("repair-score", orjson.loads((GOLDEN / "repair-score.json").read_bytes())),
        *(("receipt-v2", orjson.loads(line)) for line in receipts),
    ]


def test_which_schemas_have_no_fast_test() -> None:
    """Only the two that use keywords outside the module's set (`format`, `unevaluatedProperties`)."""
    none = {n for n in schema_names() if compile_schema(load_schema(n)) is None}
    assert none == {"bench-results", "compare-report"}


def test_real_artifacts_agree_under_every_schema(manifest: dict[str, Any]) -> None:
    """Each real document against every schema with a fast test: valid for its own, and whatever
    jsonschema says for the others (mostly invalid: the refusing paths run too)."""
    names = [n for n in schema_names() if compile_schema(load_schema(n)) is not None]
    docs = _documents(manifest)
    for own, doc in docs:
        assert _fast(own)(doc) and schema_errors(doc, own) == []
    for name in names:
        for own, doc in docs[:8]:
            assert _fast(name)(doc) == _jsonschema_ok(doc, name), (name, own)


_ODD: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 1.5, -0.5, 2, 3, "", "x", "\n", "a" * 64, "a" * 64 + "\n",
    "0" * 64, "contracts x", "contracts", "tools.json", "flat", "line", "record", "unknown",
    "calls.parquet", "view.parquet", "x.parquet", [], [1], ["a"], [{}], {}, {"rows": 1, "columns": []},
    {"name": "a", "type": "b"}, {"rows": 1, "first_task": "a", "last_task": "b"},
]  # fmt: skip


def _at(doc: Any, at: tuple[Any, ...]) -> Any:
    for k in at:
        doc = doc[k]
    return doc


def _variants(doc: dict[str, Any]) -> Iterator[Any]:
    """`doc` changed in one place every way the pool allows: each value set to each pool value, each
    key or element dropped, a known or unknown key added, each list lengthened."""
    keys = sorted({k for at in locations(doc) for k in at if isinstance(k, str)} | {"extra", "bytes"})
    for at in locations(doc):
        node = _at(doc, at)
        if isinstance(node, dict | list):
            slots = list(node) if isinstance(node, dict) else list(range(len(node)))
            for k in slots:
                for value in _ODD:
                    new = copy.deepcopy(doc)
                    _at(new, at)[k] = copy.deepcopy(value)
                    yield new
                new = copy.deepcopy(doc)
                _at(new, at).pop(k)
                yield new
        if isinstance(node, dict):
            for k in keys:
                if k not in node:
                    new = copy.deepcopy(doc)
                    _at(new, at)[k] = 1
                    yield new
        elif isinstance(node, list) and node:
            new = copy.deepcopy(doc)
            _at(new, at).append(copy.deepcopy(node[0]))
            yield new


@pytest.mark.slow  # a few thousand manifests judged by jsonschema
def test_every_single_change_of_a_manifest(manifest: dict[str, Any]) -> None:
    check = _fast("corpus-manifest")
    doc = copy.deepcopy(manifest)
    doc["sources"] = doc["sources"][:2]  # two sources show every key of one; the rest repeat them
    n = bad = 0
    for variant in _variants(doc):
        ok = _jsonschema_ok(variant, "corpus-manifest")
        assert check(variant) == ok, variant
        n += 1
        bad += not ok
    assert n > 2000 and 0 < bad < n


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_changes_of_real_artifacts(manifest: dict[str, Any], data: st.DataObject) -> None:
    """Up to three random changes (values drawn from the document itself as often as odd ones)."""
    docs = [d for d in _documents(manifest) if d[0] != "audit-report"][:6]
    name, doc = data.draw(st.sampled_from(docs))
    doc = copy.deepcopy(doc)
    values = st.one_of(st.sampled_from(_ODD), st.sampled_from(subtrees(doc))).map(copy.deepcopy)
    for _ in range(data.draw(st.integers(1, 3))):
        places = [at for at in locations(doc) if isinstance(_at(doc, at), dict | list) and _at(doc, at)]
        if not places:
            break
        node = _at(doc, data.draw(st.sampled_from(places)))
        key = data.draw(st.sampled_from(list(node) if isinstance(node, dict) else list(range(len(node)))))
        if data.draw(st.booleans()):
            node[key] = data.draw(values)
        else:
            node.pop(key)
    assert _fast(name)(doc) == _jsonschema_ok(doc, name)


# -- keyword corner cases, each held to jsonschema ----------------------------------------------------

CASES: list[tuple[dict[str, Any], list[Any]]] = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None, -0.0, 2**64]),
    ({"type": "number"}, [1, 1.5, True, False, "1", None]),
    ({"type": ["string", "null"]}, ["", None, 0, False]),
    ({"enum": [1, "a", None]}, [1, 1.0, True, "a", None, False, 0, [1]]),
    ({"enum": [True, [1, {"a": 1}]]}, [True, 1, [1, {"a": 1}], [1.0, {"a": 1.0}], [True, {"a": 1}], [1, {}]]),
    ({"const": 0}, [0, 0.0, False, -0.0, None]),
    ({"const": {"a": [1, False]}}, [{"a": [1, False]}, {"a": [1.0, False]}, {"a": [1, 0]}, {"a": [1]}]),
    ({"pattern": "^[0-9a-f]{4}$"}, ["abcd", "abcd\n", "abcde", "ABCD", 1234, None]),
    ({"minLength": 2, "maxLength": 3}, ["ab", "a", "abcd", "ééé", ["a"], 5]),
    ({"minimum": 0, "exclusiveMaximum": 10}, [0, -1, 9.5, 10, True, "5", None]),
    ({"uniqueItems": True}, [[1, 2], [1, 1.0], [1, True], [[1], [1.0]], [{"a": 1}, {"a": 1}], ["a", "a"], "aa"]),
    ({"required": ["a"], "properties": {"a": {"type": "string"}}, "additionalProperties": False}, [
        {"a": "x"}, {"a": 1}, {}, {"a": "x", "b": 1}, [], "a"]),
    ({"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": {"type": "string"}}, [
        {"x1": 1, "y": "s"}, {"x1": "s"}, {"y": 1}, {}]),
    ({"propertyNames": {"pattern": "^[a-z]+$"}, "minProperties": 1}, [{"ab": 1}, {"Ab": 1}, {}, [1]]),
    ({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "minItems": 1}, [
        ["a", 1, 2], ["a", "b"], [], [1], ["a"]]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, [1, -1, 0.5, -0.5, "x"]),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}], "not": {"const": 3}}, [1, None, 3, 3.0, "x"]),
    ({"if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["x"]}, "else": {"required": ["y"]}}, [
        {"k": "a", "x": 1}, {"k": "a", "y": 1}, {"k": "b", "y": 1}, {"y": 1}, {"x": 1}]),
    ({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}, [
        [], [[]], [[[]], []], [1], [[1]]]),
]  # fmt: skip


@pytest.mark.parametrize("schema, instances", CASES)
def test_keyword_corner_cases_agree_with_jsonschema(schema: dict[str, Any], instances: list[Any]) -> None:
    from output_contracts.schemas import jsonschema_module

    js = jsonschema_module()
    full = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    validator = js.Draft202012Validator(full, format_checker=js.Draft202012Validator.FORMAT_CHECKER)
    check = compile_schema(full)
    assert check is not None
    verdicts = [check(v) for v in instances]
    assert verdicts == [validator.is_valid(v) for v in instances]
    assert True in verdicts and False in verdicts  # each case has both answers


@pytest.mark.parametrize(
    "schema",
    [{"format": "date"}, {"unevaluatedProperties": False}, {"$ref": "other.json"}, {"contains": {}},
     {"properties": {"a": {"$id": "x"}}}, {"type": "decimal"}],
)  # fmt: skip
def test_other_keywords_get_no_fast_test(schema: dict[str, Any]) -> None:
    assert compile_schema(schema) is None


def test_json_equal_as_jsonschema_means_it() -> None:
    assert json_equal(1, 1.0) and json_equal([1, {"a": 2}], [1.0, {"a": 2.0}])
    assert not json_equal(True, 1) and not json_equal(0, False) and not json_equal([True], [1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal("1", 1)


def test_opening_a_corpus_does_not_import_jsonschema(tmp_path: Path) -> None:
    """The point of the fast test: a valid manifest is accepted without jsonschema (0.09-0.14 CPU-s a
    process), in a fresh interpreter that opens a corpus and reads its leaves. (A tool registry still
    imports it: its tools' parameter and output schemas are checked against the JSON Schema
    metaschema, which only jsonschema states.)"""
    from output_contracts.traces.ingest import ingest

    ingest([REPO / "sample_traces" / "clean"], tmp_path / "c")
    code = (
        "import json, sys\n"
        "from output_contracts.traces.corpus import Corpus\n"
        f"c = Corpus.open({str(tmp_path / 'c')!r})\n"
        "n = c.scan_leaves().collect().height\n"
        "print(json.dumps([n, 'jsonschema' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    rows, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert rows > 0 and imported is False
