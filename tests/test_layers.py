"""The layers of ARCHITECTURE.md: every module imports only from its own layer or lower ones.

    0 package utilities   well_upao/__init__, distributed, configs, weights, tensor_cache, axes
    1 families            how trajectories are made (families/, datasets_exact/)
    2 data                The Well's file format, the dataset registry
    3 physics, models     stencils -> PDEs -> UPAO objective; the backbone, adapters, checkpoints
    4 harness             every contact with the_well's internals
    5 predict             the classical table, predictors, the one rollout, evidence, expected error (no labels)
    5.5 evaluate          scored against the truth (plan, scores, report); forecast (the prediction without labels)
    6 trainers            the one loop and its losses
    7 faces               cli, commands, quickstart, train

Imports inside functions count too (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import well_upao

LAYERS = {
    "distributed": 0,
    "configs": 0,
    "weights": 0,
    "tensor_cache": 0,
    "axes": 0,
    "families": 1,
    "datasets_exact": 1,
    "data": 2,
    "physics": 3,
    "models": 3,
    "harness": 4,
    "predict": 5,
    # evaluate and the forecast stand on predict/ side by side: predict/ never imports either
    "evaluate": 5.5,
    "forecast": 5.5,
    "trainers": 6,
    "cli": 7,
    "commands": 7,
    "quickstart": 7,
    "train": 7,
}


def layer_of(module: str) -> float | None:
    """Layer of a dotted ``well_upao...`` module name (``None`` outside the package)."""
    parts = module.split(".")
    if parts[0] != "well_upao":
        return None
    if len(parts) == 1:
        return 0
    if parts[1] not in LAYERS:
        raise AssertionError(f"{module}: {parts[1]!r} has no layer; add it to LAYERS and to ARCHITECTURE.md")
    return LAYERS[parts[1]]


def module_name(path: Path, package_root: Path) -> str:
    relative = path.relative_to(package_root.parent).with_suffix("")
    parts = list(relative.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, name: str) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import of a file (relative ones resolved against ``name``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.append((node.lineno, target))
            # "from well_upao import harness" names a subpackage too
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names if target == "well_upao"]
    return found


def layer_violations(package_root: Path) -> list[str]:
    problems = []
    for path in sorted(package_root.rglob("*.py")):
        name = module_name(path, package_root)
        own = layer_of(name)
        for line, target in imported_modules(path, name):
            other = layer_of(target)
            if other is not None and other > own:
                problems.append(f"{name}:{line} (layer {own}) imports {target} (layer {other})")
    return problems


def test_no_module_imports_from_a_higher_layer():
    assert layer_violations(Path(well_upao.__file__).parent) == []


def test_the_check_finds_an_upward_import(tmp_path):
    package = tmp_path / "well_upao"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / "__init__.py").write_text("")
    (package / "data" / "reader.py").write_text("def f():\n    from well_upao.trainers import loop\n")
    (package / "data" / "writer.py").write_text("from . import reader\nfrom well_upao.families import base\n")
    assert layer_violations(package) == ["well_upao.data.reader:2 (layer 2) imports well_upao.trainers (layer 6)"]
