"""``benchmarks/quality/import_cycles.py``: the strongly connected components of an import graph (Tarjan's algorithm,
written there) on hand-made graphs with known cycles and without, against a reference that needs no algorithm
(components as the classes of mutual reachability), and the import graph read from a hand-made tree of files
(imports under ``TYPE_CHECKING`` and inside functions count; the implicit edge to a parent package does not)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from quality import import_cycles


def reachable(graph: dict[str, list[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for after in graph.get(todo.pop(), []):
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return seen


def mutual_reachability_classes(graph: dict[str, list[str]]) -> set[frozenset[str]]:
    """The reference: a and b share a component when each reaches the other (a node reaches itself)."""
    reach = {node: reachable(graph, node) for node in graph}
    return {frozenset(b for b in graph if b in reach[a] and a in reach[b]) for a in graph}


def test_a_known_cycle_is_found_and_a_chain_into_it_is_not_part_of_it():
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "entry": ["a"], "self": ["self"]}
    assert sorted(import_cycles.cycles(graph)) == [["a", "b", "c"], ["self"]]
    components = import_cycles.strongly_connected(graph)
    assert sorted(map(tuple, components)) == [("a", "b", "c"), ("d",), ("entry",), ("self",)]
    # Tarjan closes a component after every component it reaches: d before a-b-c before entry
    order = [c[0] for c in components]
    assert order.index("d") < order.index("a") < order.index("entry")


def test_a_graph_without_cycles_has_none():
    """Negative control: a diamond and a chain (every node reachable from 'top', none back) have no cycle."""
    graph = {"top": ["left", "right"], "left": ["bottom"], "right": ["bottom"], "bottom": ["leaf"], "leaf": []}
    assert import_cycles.cycles(graph) == []
    assert len(import_cycles.strongly_connected(graph)) == len(graph)


@pytest.mark.parametrize("seed", range(20))
def test_the_components_are_the_classes_of_mutual_reachability(seed):
    rng = random.Random(seed)
    nodes = [f"m{i}" for i in range(rng.randint(1, 25))]
    graph = {n: sorted({rng.choice(nodes) for _ in range(rng.randint(0, 3))}) for n in nodes}
    found = {frozenset(c) for c in import_cycles.strongly_connected(graph)}
    assert found == mutual_reachability_classes(graph)


def test_a_long_chain_needs_no_recursion():
    graph = {f"m{i}": [f"m{i + 1}"] for i in range(5000)} | {"m5000": ["m0"]}
    (cycle,) = import_cycles.cycles(graph)
    assert len(cycle) == 5001


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_through_type_checking_and_a_function_import_is_found(tmp_path):
    write(
        tmp_path / "pkg",
        {
            "__init__.py": "from pkg.api import run\n",
            "api.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store import Store\n",
            "store.py": "def save():\n    from pkg import api\n",
            "sub/__init__.py": "",
            "sub/deep.py": "import pkg.store\nimport torch\n",
        },
    )
    nodes = import_cycles.module_names(tmp_path / "pkg", "pkg")
    graph = import_cycles.import_graph(nodes)
    assert graph["pkg.api"] == {"pkg.store"}  # the TYPE_CHECKING import, relative to the package
    assert graph["pkg.store"] == {"pkg.api"}  # ``from pkg import api``: the submodule, not the package
    assert graph["pkg"] == {"pkg.api"}  # ``from pkg.api import run``: a name of pkg.api
    assert graph["pkg.sub.deep"] == {"pkg.store"}  # no edge to torch, none to the parents pkg and pkg.sub
    assert import_cycles.cycles(graph) == [["pkg.api", "pkg.store"]]


def test_the_same_tree_without_the_import_back_has_no_cycle(tmp_path):
    """Negative control: store.py no longer imports api."""
    write(
        tmp_path / "pkg",
        {
            "__init__.py": "from pkg.api import run\n",
            "api.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store import Store\n",
            "store.py": "def save():\n    import json\n",
        },
    )
    graph = import_cycles.import_graph(import_cycles.module_names(tmp_path / "pkg", "pkg"))
    assert import_cycles.cycles(graph) == []


def test_scripts_importing_beside_themselves_are_resolved_in_their_folder(tmp_path):
    """benchmarks/: a group's scripts import each other as ``group.module`` or, run from their folder, by the bare
    name; both resolve to the module in the folder, and a bare name that is only the folder's own name does not."""
    write(
        tmp_path,
        {
            "device/__init__.py": "",
            "device/check.py": "from device.stages import stage\nimport argparse\n",
            "device/stages.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from check import Results\n",
            "harness/__init__.py": "",
            "harness/jobs.py": "import device\n",
        },
    )
    graph = import_cycles.import_graph(import_cycles.module_names(tmp_path), beside=True)
    assert graph["device.check"] == {"device.stages"}
    assert graph["device.stages"] == {"device.check"}
    assert graph["harness.jobs"] == {"device"}
    assert import_cycles.cycles(graph) == [["device.check", "device.stages"]]
