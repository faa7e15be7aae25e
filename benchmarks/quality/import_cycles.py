"""Import cycles of a source tree, counted from its own files: the module import graph and its strongly connected
components (``benchmarks/quality/architecture_metrics.py`` counts them for the package and for ``benchmarks/``).

The graph: one node per module (a file; a package is its ``__init__.py``), named as Python imports it (the package:
``well_upao.trainers.upao``, with ``datasets_exact/`` as the installed ``well_upao.datasets_exact``; benchmarks/:
``device.gpu_check``, since a script puts ``benchmarks/`` on the path). An edge ``a -> b`` for every import statement
of ``a`` that names ``b`` wherever it stands: at the top, under ``if TYPE_CHECKING:``, inside a function; and for
``importlib.import_module("b")`` with a constant name. The module an import names:

* ``import a.b.c``: ``a.b.c`` (the longest prefix that is a node of the tree);
* ``from a.b import c``: ``a.b.c`` when that is a module of the tree, else ``a.b`` (a name defined in it);
* ``from .c import d`` / ``from . import c``: the same, relative to the importing module's package;
* in ``benchmarks/``, an import whose first name is no group but a module beside the importer (``import jobs`` next
  to ``jobs.py``: the script's own folder is first on the path) names that module.

Importing ``a.b.c`` also runs ``a/__init__.py`` and ``a/b/__init__.py``; those implicit edges to the parents are not
in the graph (every package importing its own submodules would be a cycle otherwise); an import that names the
package itself (``from a.b import name``) is. Imports of anything outside the tree (the standard library, torch, the
Well) are not nodes. A cycle is a strongly connected component of two or more modules, or a module importing itself:
found by Tarjan's algorithm (:func:`strongly_connected`), written here rather than taken from networkx, which is no
dependency of the project for one 40-line function.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

Graph = Mapping[str, Iterable[str]]


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The strongly connected components of ``graph`` (node -> successors; a successor that is no key is a node
    without successors), by Tarjan's algorithm, iteratively (no recursion limit): each component's nodes sorted, the
    components in the order Tarjan closes them (every component after those it reaches)."""
    successors = {node: list(after) for node, after in graph.items()}
    for after in list(successors.values()):
        for node in after:
            successors.setdefault(node, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in successors:
        if root in index:
            continue
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            step = next(pending, None)
            if step is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(successors[step])))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return components


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of two or more nodes, and single nodes with
    an edge to themselves."""
    return [c for c in strongly_connected(graph) if len(c) > 1 or c[0] in set(graph.get(c[0], ()))]


def module_names(root: Path, prefix: str = "") -> dict[str, Path]:
    """Every Python file under ``root`` by its module name (``prefix`` + the dotted path; ``__init__.py``: the
    package's name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(p for p in [prefix, *parts] if p)
        out[name] = path
    return out


def named_modules(module: str, is_package: bool, node: ast.AST) -> list[tuple[str, ...]]:
    """What an import statement (or ``import_module("...")`` call) of ``module`` names: one tuple per imported name,
    its candidates in order (``from a import b``: ``("a.b", "a")``, the submodule if there is one, else the module
    that defines ``b``)."""
    if isinstance(node, ast.Import):
        return [(alias.name,) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(p for p in [*package, base] if p)
        return [(f"{base}.{alias.name}", base) if base else (alias.name,) for alias in node.names]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        function = node.func
        called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        name = node.args[0].value
        if called == "import_module" and isinstance(name, str) and not name.startswith("."):
            return [(name,)]
    return []


def resolve(name: str, nodes: Mapping[str, Path]) -> str | None:
    """The node an imported dotted ``name`` runs: itself, or its longest prefix that is a node."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in nodes:
            return candidate
    return None


def target(candidates: tuple[str, ...], nodes: Mapping[str, Path], folder: str) -> str | None:
    """The node the first resolvable candidate names (a ``from`` import's submodule only when it is one exactly),
    looked up beside the importer (``folder``) when not found as named."""
    for prefix in ("", f"{folder}.") if folder else ("",):
        first, *rest = [prefix + c for c in candidates]
        if rest and first in nodes:
            return first
        found = resolve(rest[0] if rest else first, nodes)
        if found is not None and found.startswith(prefix):  # beside: a module in the folder, not the folder
            return found
    return None


def import_graph(nodes: Mapping[str, Path], beside: bool = False) -> dict[str, set[str]]:
    """The import graph of the modules ``nodes`` (name -> file). ``beside``: an import not found as named is looked up
    beside the importer too (benchmarks/' scripts, whose own folder is first on the path)."""
    graph: dict[str, set[str]] = {name: set() for name in nodes}
    for name, path in nodes.items():
        is_package = path.name == "__init__.py"
        folder = name.rsplit(".", 1)[0] if beside and "." in name and not is_package else ""
        for node in ast.walk(ast.parse(path.read_text())):
            for candidates in named_modules(name, is_package, node):
                found = target(candidates, nodes, folder)
                if found is not None:
                    graph[name].add(found)
    return graph
