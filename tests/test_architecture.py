"""Imports point one way (DESIGN §1, CONVENTIONS 1): only cli/ touches typer, rich, argv and exits."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIBRARY = ["output_contracts", "traces", "codes", "mining", "checks", "audit", "registry", "repair", "ledger"]
FORBIDDEN_IN_LIBRARY = {"typer", "rich", "click"}


def _modules(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def _type_only(tree: ast.Module) -> set[int]:
    """Ids of the nodes inside `if TYPE_CHECKING:` blocks: imports that never run."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def _imports(path: Path, *, run_time_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_only(tree) if run_time_only else set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
                if top in FORBIDDEN_IN_LIBRARY or name.startswith("output_contracts.cli"):
                    bad.append(f"{f.relative_to(REPO)} imports {name}")
    assert bad == []


def _script_blocks(tree: ast.Module) -> set[int]:
    """Ids of the nodes inside `if __name__ == "__main__":` blocks: a module run as a script (a developer's
    generator) may exit; what the library's functions do may not."""
    out: set[int] = set()
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
        ):
            out.update(id(n) for n in ast.walk(node))
    return out


def test_library_never_exits() -> None:
    bad = []
    for folder in LIBRARY:
        for f in _modules(folder):
            tree = ast.parse(f.read_text(encoding="utf-8"))
            script = _script_blocks(tree)
            for node in ast.walk(tree):
                if id(node) in script:
                    continue
                exits = isinstance(node, ast.Raise) and "SystemExit" in ast.unparse(node.exc or node)
                calls = isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "exit", "quit")
                if exits or calls:
                    bad.append(f"{f.relative_to(REPO)}:{node.lineno}")
    assert bad == []


def test_no_bare_imports_of_top_level_folders() -> None:
    folders = {"cli", "traces", "codes", "mining", "checks", "audit", "registry", "repair", "ledger"}
    bad = []
    for folder in [*LIBRARY, "cli", "tests", "bench", "sample_traces"]:
        for f in _modules(folder):
            for name in _imports(f):
                if name.split(".")[0] in folders:
                    bad.append(f"{f.relative_to(REPO)} imports {name}")
    assert bad == []


#: Which packages each package may import (DESIGN §1): cli -> audit, repair, registry -> checks, mining
#: -> codes -> traces -> output_contracts (the root); ledger on the root only. Every import counts, including
#: those made inside functions (`ast.walk` sees them); the one exception is the root package's TYPE_CHECKING block (below).
ALLOWED: dict[str, set[str]] = {
    "output_contracts": set(),
    "traces": {"output_contracts"},
    "codes": {"traces", "output_contracts"},
    "mining": {"codes", "traces", "output_contracts"},
    "checks": {"codes", "traces", "output_contracts"},
    "ledger": {"output_contracts"},
    "audit": {"checks", "mining", "codes", "traces", "ledger", "output_contracts"},
    "registry": {"checks", "mining", "codes", "traces", "output_contracts"},
    "repair": {"checks", "mining", "codes", "traces", "ledger", "output_contracts"},
    "cli": {
        "audit",
        "repair",
        "registry",
        "checks",
        "mining",
        "codes",
        "traces",
        "ledger",
        "output_contracts",
    },
}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else "output_contracts"


def test_imports_point_one_way() -> None:
    """The one exception: the root package's `if TYPE_CHECKING:` block names the public API it re-exports
    lazily (`contracts.Checker`, ...) so that type checkers see it; those imports never run."""
    bad = []
    for folder, allowed in ALLOWED.items():
        for f in _modules(folder):
            for name in _imports(f, run_time_only=f == REPO / "output_contracts" / "__init__.py"):
                if name != "output_contracts" and not name.startswith("output_contracts."):
                    continue
                target = _package_of(name)
                if target != folder and target not in allowed:
                    bad.append(f"{f.relative_to(REPO)} imports {name} ({folder} -> {target} is not allowed)")
    assert bad == []


def _linked_folders() -> set[str]:
    """The package's folders: output_contracts/F -> ../F for each (the one package rule)."""
    return {p.name for p in (REPO / "output_contracts").iterdir() if p.is_symlink()}


def test_the_allowed_edges_cover_every_package_folder() -> None:
    assert _linked_folders() | {"output_contracts"} == set(ALLOWED)


def test_every_package_folder_is_linked_into_the_package() -> None:
    """One package rule: every top-level folder holding Python code is linked as output_contracts/F ->
    ../F (tests, bench and sample_traces excepted: they are not part of the package), and nothing edits
    `__path__` to reach a folder."""
    for p in (REPO / "output_contracts").iterdir():
        if p.is_symlink():
            assert p.readlink() == Path("..") / p.name, p
    outside = {"tests", "bench", "sample_traces", "docs", "build", "output_contracts"}
    folders = {
        init.parent.name
        for init in REPO.glob("*/__init__.py")
        if init.parent.name not in outside and not init.parent.name.startswith(".")
    }
    assert folders == _linked_folders()
    edits = re.compile(r"__path__\s*(\+?=|\.(append|extend|insert)|\[)")
    for folder in ["output_contracts", *sorted(_linked_folders())]:
        for f in _modules(folder):
            assert not edits.search(f.read_text(encoding="utf-8")), f


def test_each_subpackage_re_exports_its_entry_points() -> None:
    """Docs teach short imports (`from output_contracts.checks import check_call`): every name a subpackage lists
    in `__all__` resolves, and each lists a few (the ledger, a model room of its own, lists its whole API)."""
    import importlib

    for name in ("checks", "codes", "mining", "registry", "repair"):
        mod = importlib.import_module(f"output_contracts.{name}")
        exported = list(mod.__all__)
        assert 2 <= len(exported) <= 16, name
        for attr in exported:
            assert getattr(mod, attr) is not None, f"output_contracts.{name}.{attr}"
