"""The registry of property codes is the one list: every code folder registers its spec, its checks and its
miners, and what every other part reads (thresholds, table columns, per-node classes) comes from it."""

from __future__ import annotations

import dataclasses
import pkgutil

import output_contracts.codes as package
from output_contracts.codes.evaluation import Check
from output_contracts.codes.mine_params import MineParams, default_min_support, default_min_tasks
from output_contracts.codes.spec import Code
from output_contracts.codes.table import NOT_CODES, checks, episode_codes, miners, names, specs, subsumed_by
from output_contracts.schemas import jsonschema_module


def test_every_code_folder_registers_at_least_one_spec() -> None:
    folders = {m.name for m in pkgutil.iter_modules(package.__path__) if m.ispkg} - NOT_CODES
    registered = {c.__module__.rpartition(".")[2] for c in specs()}
    assert folders == registered
    assert len(names()) == len(set(names())) >= 14


def test_orders_short_names_and_node_classes_are_distinct() -> None:
    assert [c.order for c in specs()] == sorted(c.order for c in specs())
    assert len({c.order for c in specs()}) == len(specs())
    assert len({c.short for c in specs()}) == len(specs())  # the columns of `contracts mine`'s table
    node_classes = [c.node_class for c in checks().values() if c.node_class]
    assert len(node_classes) == len(set(node_classes))  # one per-node class number per code


def test_each_check_is_its_code_s_spec_evaluated() -> None:
    found = checks()
    assert list(found) == list(names())
    for spec in specs():
        check = found[spec.name]
        assert isinstance(check, Check) and isinstance(check, spec), spec.name


def test_every_code_is_emitted_by_its_own_folder_s_miners() -> None:
    emitted: dict[str, set[str]] = {}
    for m in miners():
        for code in m.codes:
            emitted.setdefault(code, set()).add(type(m).__module__.rpartition(".")[0])
    assert set(emitted) == set(names())
    for spec in specs():
        assert emitted[spec.name] == {spec.__module__}, spec.name


def test_thresholds_come_from_the_specs() -> None:
    assert default_min_support() == {c.name: c.min_support for c in specs()}
    assert default_min_tasks() == {c.name: c.min_tasks for c in specs()}
    params = MineParams().to_json()
    assert params["min_support"] == dict(sorted(default_min_support().items()))
    # every constant a folder's chance argument states is recorded under the folder's name
    assert {"domain", "echo", "relation", "format", "range"} <= set(params)


def test_the_one_per_episode_code_and_the_subsumed_one() -> None:
    assert episode_codes() == {"CONSISTENT"}  # the engine keeps one episode memory
    assert subsumed_by() == {"FORMAT": ("DOMAIN",)}


def test_each_spec_s_schema_branch_is_a_valid_schema() -> None:
    jsonschema = jsonschema_module()
    for spec in specs():
        branch = spec.schema_branch()
        jsonschema.Draft202012Validator.check_schema(branch)
        fields = dataclasses.fields(spec.params_type)
        params = branch["then"]["properties"]["params"]
        assert set(params.get("properties", {})) == {f.name for f in fields}
        assert issubclass(spec, Code)


def test_every_spec_has_its_reference_text() -> None:
    for spec in specs():
        doc = spec.docs()
        assert doc and "*Rule*" in doc and "*Witness*" in doc, spec.name


def test_listing_the_codes_loads_no_polars() -> None:
    """The specs are light: `contracts codes`, the docs generator and a contract set's schema branches read
    them without loading polars (a code's `check.py` and `mine.py` load only when asked for)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from output_contracts.codes.table import specs\n"
        "assert len(specs()) >= 14\n"
        "print(sorted(m for m in ('polars', 'numpy', 'pyarrow') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
