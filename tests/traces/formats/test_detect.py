"""The lists that name every format agree with the adapter table (`traces/formats/detect.py`): a format
added there and forgotten elsewhere would be refused by the corpus manifest's schema at the first ingest
(`E_SCHEMA_INVALID`), or be missing from `--format` and the docs."""

from __future__ import annotations

from pathlib import Path

import orjson

from output_contracts.traces.formats.detect import ADAPTERS, FORMAT_NAMES

REPO = Path(__file__).resolve().parents[3]


def test_every_adapter_is_a_format_choice_and_back() -> None:
    assert sorted(ADAPTERS) == sorted(FORMAT_NAMES)


def test_the_manifest_schema_names_every_format() -> None:
    schema = orjson.loads(
        (REPO / "output_contracts" / "schemas" / "corpus-manifest.schema.json").read_bytes()
    )
    source = schema["$defs"]["source"]["properties"]["format"]["enum"]
    assert source == [*FORMAT_NAMES, "unknown"]


def test_formats_page_has_a_section_for_every_format() -> None:
    page = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    missing = [name for name in FORMAT_NAMES if f"`{name}`" not in page]
    assert missing == []


def test_every_adapter_says_what_a_record_lacks() -> None:
    """Detection by positive evidence: each adapter names what a record that is not its format lacks."""
    for name, adapter in ADAPTERS.items():
        assert adapter.lacks({}) not in (None, ""), name
        assert isinstance(adapter.lacks([]), str), name


def test_readme_table_names_every_format() -> None:
    """The README's front-door table is where a user looks first for their producer."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = [line for line in readme.splitlines() if line.startswith("| `") and "`--format`" not in line]
    named = {name.strip().strip("`") for line in table for name in line.split("|")[1].split(",")}
    assert sorted(named) == sorted(FORMAT_NAMES)


def test_every_adapter_has_marks_for_closeness() -> None:
    """An adapter without `marks` scores 0 and is never named among the closest formats of a file."""
    assert [name for name, a in ADAPTERS.items() if not a.marks] == []
