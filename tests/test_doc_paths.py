"""The docs cite only paths that exist: every repository path and `output_contracts.…` module name in
README.md and docs/*.md resolves, and every relative link lands on a file.

A page that names `traces/mining_view.py` after the module moved sends a reader to nothing; renames are
frequent, so this is checked rather than remembered. What counts as a citation:
- an inline code span (outside fenced blocks) that is a path whose first part is a tracked top-level
  entry of the repository (`bench/floors.py`, `output_contracts/schemas/`, `Makefile`); spans holding a
  pattern (`*`, `…`, `<name>`, `{a,b}`) are shapes, not paths, and are left alone;
- an inline code span that is a dotted name under `output_contracts`: its longest prefix must be a module
  or package, and a name after it must be defined at the top level of that module;
- a Markdown link to a relative target (anchors and queries dropped; web links left alone).
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted(p.relative_to(REPO).as_posix() for p in [REPO / "README.md", *(REPO / "docs").glob("*.md")])

FENCE = re.compile(r"^\s*(```|~~~)")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATHLIKE = re.compile(r"^[\w.@+-]+(/[\w.@+-]*)*$")
MODULE = re.compile(r"^output_contracts(\.\w+)+$")
PATTERN_CHARS = set("*…<>{}[]$")


@cache
def top_level() -> frozenset[str]:
    """The tracked entries at the repository's root (`cli`, `Makefile`, ...): what a cited path starts with."""
    out = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return frozenset(line.split("/", 1)[0] for line in out if line)


def prose(text: str) -> str:
    """The page without its fenced blocks (commands and outputs there name generated files)."""
    lines, inside = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            inside = not inside
            lines.append("")
            continue
        lines.append("" if inside else line)
    return "\n".join(lines)


def cited_paths(text: str) -> list[str]:
    """The repository paths a page's prose cites in code spans (a `:line` suffix dropped)."""
    found = []
    for span in SPAN.findall(prose(text)):
        s = re.sub(r":\d+(-\d+)?$", "", span.strip())
        if PATTERN_CHARS & set(s) or not PATHLIKE.match(s) or MODULE.match(s):
            continue
        head, _, rest = s.partition("/")
        if head in top_level() and (rest or "." in head or head == "Makefile"):
            found.append(s)
        elif head == "contracts" and rest.split("/", 1)[0] in top_level():
            found.append(s)  # the package's old name: `contracts/checks/proxy.py` is `checks/proxy.py` now
    return found


def cited_modules(text: str) -> list[str]:
    return [s.strip() for s in SPAN.findall(prose(text)) if MODULE.match(s.strip())]


def cited_links(text: str) -> list[str]:
    out = []
    for target in LINK.findall(prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a web address, a mail address, an anchor on the same page
        out.append(target.split("#", 1)[0].split("?", 1)[0])
    return out


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation but `-` and `_` dropped,
    spaces as `-`, a repeated heading numbered (`-1`, `-2`)."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(text).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def linked_anchors(text: str) -> list[tuple[str, str]]:
    """(target file, anchor) of each relative link with an anchor; an anchor alone is on the page itself."""
    out = []
    for target in LINK.findall(prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or "#" not in target:
            continue
        path, _, anchor = target.partition("#")
        out.append((path, anchor))
    return out


def _defines(source: Path, name: str) -> bool:
    """Whether module `source` binds `name` at its top level: a def, class, assignment or import (those
    under `if TYPE_CHECKING:` included), or a lazy export (a key of its `_EXPORTS` table)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    body = list(tree.body)
    for node in tree.body:
        if isinstance(node, ast.If):
            body += node.body
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if name in names:
                return True
            lazy = node.value if "_EXPORTS" in names and isinstance(node.value, ast.Dict) else None
            if lazy is not None and any(isinstance(k, ast.Constant) and k.value == name for k in lazy.keys):
                return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return True
    return False


def module_problem(dotted: str) -> str | None:
    """Why `output_contracts.a.b[.name]` does not resolve, or None."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:k])
        for source in (base.with_suffix(".py"), base / "__init__.py"):
            if source.is_file():
                rest = parts[k:]
                if not rest or _defines(source, rest[0]):
                    return None
                return f"{'.'.join(parts[:k])} defines no {rest[0]!r}"
    return "no such module"


@pytest.mark.parametrize("page", PAGES)
def test_cited_paths_exist(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    missing = sorted({p for p in cited_paths(text) if not (REPO / p).exists()})
    assert missing == [], f"{page} cites paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_cited_modules_resolve(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    bad = sorted({f"{m}: {why}" for m in cited_modules(text) if (why := module_problem(m)) is not None})
    assert bad == [], f"{page} names modules that do not resolve: {bad}"


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_land(page: str) -> None:
    base = (REPO / page).parent
    text = (REPO / page).read_text(encoding="utf-8")
    missing = sorted(
        {
            t
            for t in cited_links(text)
            if (base / t).resolve().is_relative_to(REPO) and not (base / t).exists()
        }
    )
    assert missing == [], f"{page} links to files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_link_anchors_land(page: str) -> None:
    """A link to `page.md#section` names a heading that page has."""
    text = (REPO / page).read_text(encoding="utf-8")
    bad = []
    for path, anchor in linked_anchors(text):
        target = (REPO / page).parent / path if path else REPO / page
        if (
            target.suffix == ".md"
            and target.is_file()
            and anchor not in anchors(target.read_text(encoding="utf-8"))
        ):
            bad.append(f"{path}#{anchor}")
    assert bad == [], f"{page} links to sections that do not exist: {sorted(set(bad))}"


def test_the_scanner_finds_what_it_should() -> None:
    """Paths, modules and links are told apart from shapes, commands and generated files."""
    text = "\n".join(
        [
            "Read `bench/floors.py`, `output_contracts/schemas/` and `Makefile`; `demo/corpus` is made by",
            "a command, `calls.parquet` is a file name, `atif/*.trajectory.json` a shape, `rules/<code>.py`",
            "a pattern, `contracts/checks/proxy.py` an old name. `output_contracts.ledger.verify` and",
            "`output_contracts.nope` are modules;",
            "[a page](docs/tour.md#the-parquet-corpus), [the web](https://example.org/x.md).",
            "```console",
            "$ cat `tests/nowhere.py` [x](nowhere.md)",
            "```",
        ]
    )
    assert cited_paths(text) == [
        "bench/floors.py",
        "output_contracts/schemas/",
        "Makefile",
        "contracts/checks/proxy.py",
    ]
    assert cited_modules(text) == ["output_contracts.ledger.verify", "output_contracts.nope"]
    assert cited_links(text) == ["docs/tour.md"]
    assert module_problem("output_contracts.ledger.verify") is None
    assert module_problem("output_contracts.ledger") is None
    assert module_problem("output_contracts.nope") == "output_contracts defines no 'nope'"
    assert module_problem("output_contracts.mining.mine") is None  # a lazy export
    assert linked_anchors(text) == [("docs/tour.md", "the-parquet-corpus")]
    headings = "# `contracts ledger verify`\n## Real tool output: τ-bench's own tools\n## Notes\n## Notes\n"
    assert anchors(headings) == {
        "contracts-ledger-verify",
        "real-tool-output-τ-benchs-own-tools",
        "notes",
        "notes-1",
    }
    assert (
        module_problem("output_contracts.ledger.no_such_name")
        == "output_contracts.ledger defines no 'no_such_name'"
    )
