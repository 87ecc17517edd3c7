"""Every file that lists the property codes is what `python -m output_contracts.codes.generate` writes from
the registered specs: the contract-set and receipt schemas' code enums and per-code branches, docs/codes.md's
code sections, docs/rules.md's support table and rule classes. A stale file fails here, naming the command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from output_contracts.codes import generate
from output_contracts.codes.table import names, specs

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted(generate.rendered(REPO)), ids=lambda p: p.name)
def test_generated_file_is_current(path: Path) -> None:
    want = generate.rendered(REPO)[path]
    assert path.read_text(encoding="utf-8") == want, (
        f"{path.relative_to(REPO)} is stale: run `python -m output_contracts.codes.generate`"
    )


def test_the_schemas_list_every_code_and_branch() -> None:
    schema = json.loads((REPO / "output_contracts/schemas/contract-set.schema.json").read_text())
    rule = schema["$defs"]["rule"]
    assert rule["properties"]["code"]["enum"] == list(names())
    assert [b["if"]["properties"]["code"]["const"] for b in rule["allOf"]] == list(names())
    for name in generate.RECEIPT_SCHEMAS:
        receipt = json.loads((REPO / f"output_contracts/schemas/{name}.schema.json").read_text())
        violation = receipt["properties"]["outcome_contract"]["properties"]["violations"]["items"]
        assert violation["properties"]["code"]["enum"] == list(names())


def test_the_docs_hold_every_code() -> None:
    codes_md = (REPO / "docs/codes.md").read_text(encoding="utf-8")
    rules_md = (REPO / "docs/rules.md").read_text(encoding="utf-8")
    for spec in specs():
        assert f"\n## {spec.name}\n\n{spec.docs()}" in codes_md, spec.name
        assert f"`{spec.name}`" in rules_md, spec.name


def _copy(tmp_path: Path) -> Path:
    """A checkout's generated files (and nothing else they need) in `tmp_path`."""
    for rel in ["docs/codes.md", "docs/rules.md", "output_contracts/schemas"]:
        src, dst = REPO / rel, tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    return tmp_path


def test_check_names_a_stale_file_and_a_run_mends_it(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    codes_md = root / "docs/codes.md"
    codes_md.write_text(codes_md.read_text().replace("## RANGE\n", "## RANGE (edited by hand)\n"))
    cmd = [sys.executable, "-m", "output_contracts.codes.generate", "--root", str(root)]
    stale = subprocess.run([*cmd, "--check"], capture_output=True, text=True)
    assert stale.returncode == 1 and stale.stderr == "stale: docs/codes.md\n"
    fixed = subprocess.run(cmd, capture_output=True, text=True)
    assert fixed.returncode == 0 and fixed.stderr == "wrote: docs/codes.md\n"
    assert codes_md.read_text() == (REPO / "docs/codes.md").read_text()
    again = subprocess.run([*cmd, "--check"], capture_output=True, text=True)
    assert again.returncode == 0 and again.stderr == ""


def test_a_page_without_its_markers_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    codes_md = root / "docs/codes.md"
    codes_md.write_text(codes_md.read_text().replace(generate.END.format(what="code sections"), ""))
    with pytest.raises(ValueError, match="needs one pair of markers for 'code sections'"):
        generate.rendered(root)
