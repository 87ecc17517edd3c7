"""Imports point one way (DESIGN §1, CONVENTIONS 1): only cli/ touches typer, rich, argv and exits."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIBRARY = ["contracts", "traces", "rules", "mining", "checks", "repair", "ledger"]
FORBIDDEN_IN_LIBRARY = {"typer", "rich", "click"}


def _modules(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_library_does_not_import_cli_typer_or_rich() -> None:
    bad = []
    for folder in LIBRARY:
        for f in _modules(folder):
            for name in _imports(f):
                top = name.split(".")[0]
                if top in FORBIDDEN_IN_LIBRARY or name.startswith("contracts.cli"):
                    bad.append(f"{f.relative_to(REPO)} imports {name}")
    assert bad == []


def test_library_never_exits() -> None:
    bad = []
    for folder in LIBRARY:
        for f in _modules(folder):
            text = f.read_text(encoding="utf-8")
            if "sys.exit(" in text or "raise SystemExit" in text:
                bad.append(str(f.relative_to(REPO)))
    assert bad == []


def test_no_bare_imports_of_top_level_folders() -> None:
    folders = {"cli", "traces", "rules", "mining", "checks", "repair", "ledger"}
    bad = []
    for folder in [*LIBRARY, "cli", "tests", "bench", "sample_traces"]:
        for f in _modules(folder):
            for name in _imports(f):
                if name.split(".")[0] in folders:
                    bad.append(f"{f.relative_to(REPO)} imports {name}")
    assert bad == []


def test_ledger_depends_only_on_root_package() -> None:
    bad = []
    for f in _modules("ledger"):
        for name in _imports(f):
            if name.startswith("contracts.") and name.split(".")[1] in {
                "traces",
                "rules",
                "mining",
                "checks",
                "repair",
                "cli",
            }:
                bad.append(f"{f.relative_to(REPO)} imports {name}")
    assert bad == []


def test_every_package_folder_is_mapped_in_pyproject() -> None:
    text = (REPO / "pyproject.toml").read_text()
    for init in sorted(REPO.glob("*/**/__init__.py")):
        rel = init.parent.relative_to(REPO)
        if rel.parts[0] in {"tests", "bench", "sample_traces", "build", ".venv", "docs"}:
            continue
        pkg = "contracts" if rel.parts[0] == "contracts" else "contracts." + ".".join(rel.parts)
        assert f'"{pkg}"' in text, f"{rel} is not listed as package {pkg} in pyproject.toml"
