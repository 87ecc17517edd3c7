"""No import circles and no cross-module private imports (DESIGN §1), over the real import graph.

The graph is read from the source with `ast`, one node per module of the package: every `.py` under
`output_contracts/` and under each folder it links to (`output_contracts/F -> ../F`). An edge A -> B means
that running A can import B. What counts as an edge, and why:

- `import a.b`, `from a.b import c` (an edge to `a.b.c` when `c` is a submodule: `a/b/c.py` or
  `a/b/c/__init__.py` exists; to `a.b` otherwise) and relative imports, wherever they stand: at module
  level, in functions and in methods. A function-level import runs when the function does, so it is a
  dependency all the same, and a circle it closes is a circle (deferring an import only hides one).
- `importlib.import_module("output_contracts....")` with a literal string.
- Parent packages: importing `a.b.c` first runs `a/__init__.py` and `a/b/__init__.py`, so the import is
  also an edge to each of them, except to the importer's own ancestors: a module of package `a.b` runs
  only once `a.b`'s `__init__` has started, and that is not run again. So a package's `__init__` that
  imports its own submodule is not a circle with it; an explicit `from a.b import name` inside `a.b.x`
  is still an edge to `a.b` (it reads a name that `__init__` must already have bound).
- Lazy exports (`__getattr__ = lazy_exports(__name__, _EXPORTS)`, a table from a public name to the
  module that defines it): the table is no edge of the package, since its imports run only when someone
  reads the attribute, after the package has finished importing. It is an edge of whoever reads the
  name: `from a.b import name`, or `mod.name` on the package bound to `mod`, imports the module the table
  names at that moment, so the reader gets that edge.
- Imports under `if TYPE_CHECKING:` never run: they are no edge for the circle check. They still count
  for the private-name check, which is about depending on another module's internals, not about run time.

A cross-module private import is `from x import _name` where `x` is one of our modules other than the
importer (importing a private name of one's own package counts), `mod._name` or `getattr(mod, "_name")`
on one of our modules bound to `mod` by an import or `importlib.import_module`, and a private module
(`a/_impl.py`) imported from outside its package. Dunder names (`__version__`) are public. Private
names of third-party modules (click's, polars') are out of scope: they are not ours to move.
"""

from __future__ import annotations

import ast
import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "output_contracts"


@dataclass(frozen=True)
class Edge:
    """`source` can import `target` at `line` of `source`; `via` is what the import names when the edge
    goes elsewhere: the submodule whose parent package `target` is, or the lazily exported name."""

    source: str
    target: str
    line: int
    via: str | None = None


@dataclass(frozen=True)
class PrivateUse:
    """`source` reads `target`'s private `name` at `line`."""

    source: str
    target: str
    name: str
    line: int


@dataclass
class Graph:
    """A package's modules (dotted name -> file), its run-time import edges and its private-name uses."""

    root: Path
    modules: dict[str, Path]
    edges: list[Edge] = field(default_factory=list)
    private: list[PrivateUse] = field(default_factory=list)

    def shown(self, module: str) -> str:
        """A module's file as the repository shows it: `traces/corpus.py` for a linked folder's module."""
        rel = self.modules[module].relative_to(self.root)
        if len(rel.parts) > 2 and (self.root / rel.parts[0] / rel.parts[1]).is_symlink():
            return Path(*rel.parts[1:]).as_posix()
        return rel.as_posix()


def package_modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of `package` under `root/package`, following the folder links (the one package rule):
    `a/__init__.py` is module `a`, `a/b.py` is `a.b`."""
    out: dict[str, Path] = {}
    pending = [(root / package, package)]
    while pending:
        folder, dotted = pending.pop()
        for path in sorted(folder.iterdir()):
            if path.is_dir() and path.name != "__pycache__":
                pending.append((path, f"{dotted}.{path.name}"))
            elif path.suffix == ".py":
                out[dotted if path.name == "__init__.py" else f"{dotted}.{path.stem}"] = path
    return out


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes on a name (`self.detect` too), else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _type_only(nodes: Iterable[ast.AST]) -> set[int]:
    """Ids of the nodes under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): imports that never run.
    Its `else:` branch does run, so it is not skipped."""
    out: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.If) and _dotted(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}:
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _import_module_name(node: ast.expr) -> str | None:
    """The literal module of an `importlib.import_module("...")` call, else None."""
    if not (
        isinstance(node, ast.Call) and _dotted(node.func) in {"importlib.import_module", "import_module"}
    ):
        return None
    first = node.args[0] if node.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _lazy_table(tree: ast.Module, module: str) -> dict[str, str]:
    """A package's lazy-export table: the mapping passed to `lazy_exports(__name__, ...)`, written as a
    dict literal, or as a module-level name bound to one or to `{name: "module" for name in (...)}`. A
    table the test cannot read fails it, so that no export escapes the graph."""
    assigned: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            assigned[stmt.target.id] = stmt.value
    table: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _dotted(node.func) in {"lazy_exports", "lazy.lazy_exports"}):
            continue
        arg = node.args[1] if len(node.args) == 2 else None
        value = assigned.get(arg.id) if isinstance(arg, ast.Name) else arg
        if isinstance(value, ast.Dict):
            table.update(ast.literal_eval(value))
        elif (
            isinstance(value, ast.DictComp)
            and len(value.generators) == 1
            and not value.generators[0].ifs
            and isinstance(value.key, ast.Name)
            and isinstance(value.generators[0].target, ast.Name)
            and value.key.id == value.generators[0].target.id
        ):
            names = ast.literal_eval(value.generators[0].iter)
            table.update(dict.fromkeys(names, ast.literal_eval(value.value)))
        else:
            raise AssertionError(f"{module}: a lazy-export table the test cannot read (line {node.lineno})")
    return table


@dataclass
class _Reader:
    """Reads one module's imports into `graph`; `lazy` holds every package's lazy-export table."""

    module: str
    graph: Graph
    lazy: Mapping[str, Mapping[str, str]]
    package: str
    bound: dict[str, str] = field(default_factory=dict)  # local name -> the module of ours it holds

    def ours(self, name: str) -> bool:
        return name == self.package or name.startswith(f"{self.package}.")

    def is_package(self, name: str) -> bool:
        return name in self.graph.modules and self.graph.modules[name].name == "__init__.py"

    def own_ancestors(self) -> set[str]:
        """The packages already running when this module runs: its parents, and itself if a package."""
        parts = self.module.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts) + self.is_package(self.module))}

    def edge(self, target: str, line: int, type_only: bool, via: str | None = None) -> None:
        """`module -> target`, and the edges to the target's parent packages the import runs first."""
        assert target in self.graph.modules, f"{self.module}:{line}: {target} is no module of the package"
        self.private_module(target, line)
        if type_only:
            return
        self.graph.edges.append(Edge(self.module, target, line, via))
        running = self.own_ancestors()
        parts = target.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in running:
                self.graph.edges.append(Edge(self.module, parent, line, via or target))

    def private(self, target: str, name: str, line: int) -> None:
        if _is_private(name) and target != self.module:
            self.graph.private.append(PrivateUse(self.module, target, name, line))

    def private_module(self, target: str, line: int) -> None:
        """A private module (`a/_impl.py`) is its package's own: importing it from outside is a private use."""
        parts = target.split(".")
        for i in range(1, len(parts)):
            owner = ".".join(parts[:i])
            if _is_private(parts[i]) and not (self.module == owner or self.module.startswith(f"{owner}.")):
                self.graph.private.append(PrivateUse(self.module, owner, parts[i], line))

    def absolute(self, node: ast.ImportFrom) -> str:
        """The module a `from ... import` names, relative imports resolved."""
        if node.level == 0:
            return node.module or ""
        base = self.module if self.is_package(self.module) else self.module.rpartition(".")[0]
        parts = base.split(".")[: len(base.split(".")) - (node.level - 1)]
        return ".".join([*parts, node.module] if node.module else parts)

    def from_import(self, node: ast.ImportFrom, type_only: bool) -> None:
        source = self.absolute(node)
        if not self.ours(source):
            return
        table = self.lazy.get(source, {})
        reads_names = any(
            f"{source}.{a.name}" not in self.graph.modules and a.name not in table for a in node.names
        )
        if reads_names or source not in self.own_ancestors():
            # (`from P import sub` where P is running already, its own `__init__` for one, imports only
            # the submodule; reading a name P binds is an edge to P)
            self.edge(source, node.lineno, type_only)
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in self.graph.modules:  # (a private submodule is judged by `edge`)
                self.edge(submodule, node.lineno, type_only)
                self.bound[alias.asname or alias.name] = submodule
                continue
            self.private(source, alias.name, node.lineno)
            if alias.name in table:
                self.edge(table[alias.name], node.lineno, type_only, via=submodule)

    def plain_import(self, node: ast.Import, type_only: bool) -> None:
        for alias in node.names:
            if self.ours(alias.name):
                self.edge(alias.name, node.lineno, type_only)
                if alias.asname:
                    self.bound[alias.asname] = alias.name
                else:  # `import a.b.c` binds `a`
                    head = alias.name.split(".")[0]
                    self.bound[head] = head

    def module_of(self, node: ast.expr) -> str | None:
        """The module of ours an expression names through the names this file bound to modules (`mod`,
        `output_contracts.traces.corpus`, `self.detect`), else None."""
        dotted = _dotted(node)
        parts = dotted.split(".") if dotted else []
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in self.bound:
                name = ".".join([self.bound[head], *parts[i:]])
                return name if name in self.graph.modules else None
        return None

    def read(self) -> None:
        path = self.graph.modules[self.module]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nodes = list(ast.walk(tree))
        skip = _type_only(nodes)
        # First the imports and the names they bind, then what is read through those names.
        for node in nodes:
            if isinstance(node, ast.Import):
                self.plain_import(node, id(node) in skip)
            elif isinstance(node, ast.ImportFrom):
                self.from_import(node, id(node) in skip)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                name = _import_module_name(node.value)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    dotted = _dotted(target)
                    if name is not None and self.ours(name) and dotted is not None:
                        self.bound[dotted] = name
        for node in nodes:
            self.read_through(node, id(node) in skip)

    def read_through(self, node: ast.AST, type_only: bool) -> None:
        """An `import_module` call, or a name read from one of our modules bound to a local name."""
        if isinstance(node, ast.Call):
            name = _import_module_name(node)
            if name is not None and self.ours(name):
                self.edge(name, node.lineno, type_only)
            elif _dotted(node.func) == "getattr" and len(node.args) >= 2:
                held = self.module_of(node.args[0])
                attr = node.args[1]
                if held is not None and isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    self.private(held, attr.value, node.lineno)
        elif isinstance(node, ast.Attribute):
            held = self.module_of(node.value)
            if held is None or f"{held}.{node.attr}" in self.graph.modules:
                return  # not ours, or a submodule reached through its package
            self.private(held, node.attr, node.lineno)
            defined_in = self.lazy.get(held, {}).get(node.attr)
            if defined_in is not None:
                self.edge(defined_in, node.lineno, type_only, via=f"{held}.{node.attr}")


def build_graph(root: Path, package: str = PACKAGE) -> Graph:
    """The import graph of `package`, whose folder is `root/package`."""
    graph = Graph(root, package_modules(root, package))
    lazy: dict[str, dict[str, str]] = {}
    for name, path in graph.modules.items():
        if path.name == "__init__.py":
            table = _lazy_table(ast.parse(path.read_text(encoding="utf-8")), name)
            if table:
                lazy[name] = table
    for name in sorted(graph.modules):
        _Reader(name, graph, lazy, package).read()
    return graph


def _components(nodes: Iterable[str], succ: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iterative (no recursion limit), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def enter(node: str) -> tuple[str, Iterator[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return node, iter(sorted(succ.get(node, ())))

    for root in sorted(nodes):
        if root in index:
            continue
        work = [enter(root)]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    out.append(sorted(component))
            elif child not in index:
                work.append(enter(child))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def _shortest_cycle(start: str, members: set[str], succ: Mapping[str, set[str]]) -> list[str]:
    """The shortest path start -> ... -> start inside one component (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(succ.get(node, set()) & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is on no cycle")


def circles(graph: Graph) -> dict[tuple[str, ...], list[str]]:
    """Each import circle, a strongly connected component of more than one module or a module importing
    itself (its sorted modules) -> readable chains `a (a.py:3) -> b (b.py:12) -> a`: the shortest cycle
    through each member, with the lines of the imports that make each step."""
    succ: dict[str, set[str]] = defaultdict(set)
    lines: dict[tuple[str, str], list[str]] = defaultdict(list)
    for e in graph.edges:
        succ[e.source].add(e.target)
        note = str(e.line) if e.via is None else f"{e.line} via {e.via}"
        if note not in lines[e.source, e.target]:
            lines[e.source, e.target].append(note)
    out: dict[tuple[str, ...], list[str]] = {}
    for component in _components(graph.modules, succ):
        if len(component) == 1 and component[0] not in succ[component[0]]:
            continue
        chains: list[str] = []
        seen: set[tuple[str, ...]] = set()
        for member in component:
            cycle = _shortest_cycle(member, set(component), succ)
            ring = cycle[:-1]
            rotation = min(tuple(ring[i:] + ring[:i]) for i in range(len(ring)))
            if rotation not in seen:
                seen.add(rotation)
                steps = [
                    f"{a} ({graph.shown(a)}:{', '.join(lines[a, b])})" for a, b in itertools.pairwise(cycle)
                ]
                chains.append(" -> ".join([*steps, cycle[-1]]))
        out[tuple(component)] = chains
    return out


def private_uses(graph: Graph) -> dict[tuple[str, str, str], list[int]]:
    """(importing module, imported module, private name) -> the lines where it is read."""
    out: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for use in graph.private:
        key = (use.source, use.target, use.name)
        if use.line not in out[key]:
            out[key].append(use.line)
    return dict(out)


# ---- the package ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(REPO)


def test_the_graph_holds_every_module_and_its_function_level_imports(graph: Graph) -> None:
    """The walk sees the linked folders' modules and the imports made inside functions (a known one:
    `traces/sources.py` loads ingest inside a function, through the package's lazy `ingest`)."""
    files = {p.resolve() for p in (REPO / PACKAGE).rglob("*.py")}
    for link in (REPO / PACKAGE).iterdir():
        if link.is_symlink():
            files |= {p.resolve() for p in link.resolve().rglob("*.py")}
    assert {p.resolve() for p in graph.modules.values()} == files
    assert f"{PACKAGE}.traces.ingest.read" in graph.modules
    pairs = {(e.source, e.target) for e in graph.edges}
    assert (f"{PACKAGE}.traces.sources", f"{PACKAGE}.traces.ingest.api") in pairs


def test_no_import_circles(graph: Graph) -> None:
    found = circles(graph)
    report = [
        f"circle of {len(members)}: {chain}" for members, chains in sorted(found.items()) for chain in chains
    ]
    assert report == [], "\n".join(report)


def test_no_cross_module_private_imports(graph: Graph) -> None:
    found = private_uses(graph)
    report = [
        f"{graph.shown(source)}:{','.join(map(str, lines))}: {source} reads {target}.{name}"
        for (source, target, name), lines in sorted(found.items())
    ]
    assert report == [], "\n".join(report)


# ---- the checks catch what they should, on a small package of their own ------------------------------


def _package(root: Path, files: Mapping[str, str]) -> Graph:
    """A package `pkg` under `root` from {relative path: source}, and its graph."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").touch()
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in {(root / "pkg" / rel).parent for rel in files}:
        (folder / "__init__.py").touch()
    return build_graph(root, "pkg")


def test_a_circle_closed_inside_a_function_is_found_with_its_lines(tmp_path: Path) -> None:
    g = _package(
        tmp_path,
        {
            "a.py": "from pkg.b import thing\n",
            "b.py": "def thing():\n    from pkg import c\n    return c\n",
            "c.py": "import pkg.a\n",
        },
    )
    assert circles(g) == {
        ("pkg.a", "pkg.b", "pkg.c"): [
            "pkg.a (pkg/a.py:1) -> pkg.b (pkg/b.py:2) -> pkg.c (pkg/c.py:1) -> pkg.a"
        ]
    }


def test_a_module_importing_itself_is_a_circle_of_one(tmp_path: Path) -> None:
    g = _package(tmp_path, {"a.py": "def f():\n    from pkg.a import f\n    return f\n"})
    assert circles(g) == {("pkg.a",): ["pkg.a (pkg/a.py:2) -> pkg.a"]}


def test_type_checking_imports_make_no_circle_but_still_count_as_private(tmp_path: Path) -> None:
    g = _package(
        tmp_path,
        {
            "a.py": "import pkg.b\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import _Hidden\n",
        },
    )
    assert circles(g) == {}
    assert private_uses(g) == {("pkg.b", "pkg.a", "_Hidden"): [3]}


def test_an_init_importing_its_submodules_is_no_circle_but_a_submodule_reading_it_is(tmp_path: Path) -> None:
    g = _package(
        tmp_path,
        {
            "sub/__init__.py": "from pkg.sub import x\nfrom . import y\n",
            "sub/x.py": "import pkg.sub.y\n",
            "sub/y.py": "X = 1\n",
            "other/__init__.py": "from pkg.other.z import Z\nZ2 = Z\n",
            "other/z.py": "from pkg.other import Z2\nZ = 1\n",
        },
    )
    assert list(circles(g)) == [("pkg.other", "pkg.other.z")]


def test_a_parent_package_that_imports_back_is_a_circle(tmp_path: Path) -> None:
    """Importing `pkg.q.m` runs `pkg/q/__init__.py` first: when that imports the importer, it is a circle."""
    g = _package(
        tmp_path,
        {"p.py": "from pkg.q.m import M\n", "q/__init__.py": "import pkg.p\n", "q/m.py": "M = 1\n"},
    )
    assert circles(g) == {
        ("pkg.p", "pkg.q"): ["pkg.p (pkg/p.py:1 via pkg.q.m) -> pkg.q (pkg/q/__init__.py:1) -> pkg.p"]
    }


def test_a_lazy_export_is_an_edge_of_its_reader_not_of_its_package(tmp_path: Path) -> None:
    g = _package(
        tmp_path,
        {
            "lazy.py": "def lazy_exports(package, exports): ...\n",
            "api/__init__.py": (
                "from pkg.lazy import lazy_exports\n"
                '_EXPORTS = {name: "pkg.api.impl" for name in ("run",)}\n'
                "__getattr__ = lazy_exports(__name__, _EXPORTS)\n"
            ),
            "api/impl.py": "import pkg.user\ndef run(): ...\n",
            "user.py": "def go():\n    from pkg.api import run\n    return run\n",
            "other.py": "import importlib\nmod = importlib.import_module('pkg.api')\ndef f():\n    return mod.run\n",
        },
    )
    assert circles(g) == {
        ("pkg.api.impl", "pkg.user"): [
            "pkg.api.impl (pkg/api/impl.py:1) -> pkg.user (pkg/user.py:2 via pkg.api.run) -> pkg.api.impl"
        ]
    }
    assert Edge("pkg.other", "pkg.api.impl", 4, "pkg.api.run") in g.edges
    assert not any(e.source == "pkg.api" and e.target == "pkg.api.impl" for e in g.edges)


def test_private_imports_are_found_every_way_they_are_written(tmp_path: Path) -> None:
    g = _package(
        tmp_path,
        {
            "owner/__init__.py": "_SHARED = 1\n",
            "owner/m.py": "_X = 1\n__all__ = []\n",
            "owner/_impl.py": "Y = 1\n",
            "owner/sibling.py": (
                "from pkg.owner import _SHARED\n"  # its own package's private name: counts
                "from pkg.owner import _impl\n"  # a private module of its own package: allowed
                "from pkg.owner.m import __all__\n"  # a dunder: public
            ),
            "user.py": (
                "import importlib\n"
                "import pkg.owner.m\n"
                "import pkg.owner.m as mm\n"
                "from pkg.owner import m\n"
                "from click import _private\n"  # third party: out of scope
                "from pkg.owner._impl import Y\n"  # a private module from outside its package
                "def f(self):\n"
                "    self.mod = importlib.import_module('pkg.owner.m')\n"
                "    return (pkg.owner.m._X, mm._X, m._X, getattr(m, '_X'), self.mod._X, Y, _private)\n"
            ),
        },
    )
    assert private_uses(g) == {
        ("pkg.owner.sibling", "pkg.owner", "_SHARED"): [1],
        ("pkg.user", "pkg.owner", "_impl"): [6],
        ("pkg.user", "pkg.owner.m", "_X"): [9],
    }
    assert sorted(u.line for u in g.private if u.name == "_X") == [9] * 5
