"""The reading-cost numbers of issue 52, measured on the package's source (``well_upao/``) by parsing it (``ast``):

* calls of the discretisation choosers (``floor_rows``, ``choose_discretisation``, ``best_row``,
  ``fit_discretised``, ``dataset_defaults``) outside ``physics/``;
* calls that rebuild the physics: ``Stencils(...)`` and ``.resolve_parameters(...)``;
* functions taking three or more of ``pde, params, ops, scheme, dims, dt``, or a PDE and a ``Stencils`` together
  (by annotation, or the parameter names ``pde`` and ``ops``): the argument clump (``dims`` the number of spatial
  dimensions: a ``dims`` annotated with ``str``, the names of stored axes as ``write_dataset`` takes them, is not
  the clump's);
* statements of ``run_evaluation`` after its ``score(...)`` call, the return excepted;
* ``trainers/upao.py``'s lines; the methods of ``UpaoLoss`` and ``TrainingLoss`` with those of their in-package base
  classes; functions or classes named for the guard in ``physics/``;
* package files over 500 lines, functions over 60 lines, imports inside functions (``importlib.import_module`` and
  ``__import__`` calls included);
* issue 63's: ``# fmt: skip`` (and ``# fmt: off``) comments in the package, lines that ruff does not format;
  functions that change an ``Evaluation`` they are given (an assignment to an attribute of a parameter annotated
  ``Evaluation``): the evaluation is built once; PDE lookups, the functions besides the registry's own
  (``get_pde``, ``register_pde``) that read ``PDE_REGISTRY`` or call ``get_pde``; outside ``physics/``, calls that
  decide a physics request past ``physics_of`` (``refuse_time_varying_parameters``, and ``resolve`` where a module
  imports it from ``physics.discretisation``); reads through the loss in the UPAO
  validation and the judge (``loss.<name>`` or ``self.loss``: they take the frozen setup); keys of the prior's
  evidence built from a name in the judge and the selection (``f"valid_score_window_{name}"``: the prior is handed
  on, not found again); what ``bind`` means (the distinct first parameters of functions named ``bind``); the
  parameters of the loop's ``Trainer.__init__`` (``self`` aside, ``*args`` and ``**kwargs`` counted) and the mixins it
  inherits from (bases besides the Well's trainer, ``WellTrainer``); in benchmarks/, files over 500 lines and functions
  over 60 lines;
* issue 72's: the package files that compare a time scheme to its name written as a string (``scheme ==
  "central"``, ``scheme in ("explicit", "central")``; the names are those of the ``TimeScheme(...)`` entries in the
  package): a scheme is a value that says what it needs, not a string special-cased; the physics request types
  (classes named for a request, ``...Request`` or ``Requested``, with a ``scheme`` or ``time_scheme`` field).
* issue 72's too: import cycles, counted here from the files (``import_cycles.py``: the module import graph, imports
  under ``TYPE_CHECKING`` and inside functions included, and its strongly connected components by Tarjan's
  algorithm), for the package (``well_upao/`` with ``datasets_exact/``) and for ``benchmarks/`` apart; and how a run
  is composed (``run_composition.py``, each rule stated there): parameters and attributes below the trainer that
  carry it untyped (``Any`` or no annotation), reads of a metric by its log key (``valid_``, ``train_``, ``test_``)
  outside the modules of ``metrics.jsonl``, assignments to the run's guard outside ``trainers/guard.py``, and the
  functions that change the guard's state anywhere.

    python benchmarks/quality/architecture_metrics.py [--json] [--where]

``tests/test_architecture_metrics.py`` runs it in the default suite against the issue's targets (:data:`TARGETS`).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from quality import import_cycles, run_composition

PACKAGE = Path(__file__).resolve().parents[2] / "well_upao"
#: installed as ``well_upao.datasets_exact``: part of the package's import graph
DATASETS_EXACT = PACKAGE.parent / "datasets_exact"
BENCHMARKS = Path(__file__).resolve().parents[1]
CHOOSERS = {"floor_rows", "choose_discretisation", "best_row", "fit_discretised", "dataset_defaults"}
CLUMP = {"pde", "params", "ops", "scheme", "dims", "dt"}
#: issue 52's "done when", as upper bounds
TARGETS = {
    "chooser_calls_outside_physics": 0,
    "physics_rebuilds": 6,
    "clumped_functions": 2,
    "statements_after_score": 0,
    "upao_py_lines": 350,
    "upao_loss_methods": 12,
    "training_loss_methods": 6,
    "guard_names_in_physics": 0,
    "files_over_500_lines": 0,
    "functions_over_60_lines": 2,
    "imports_inside_functions": 15,
    # issue 63
    "fmt_skips": 10,
    "evaluation_mutations": 0,
    "pde_lookups": 1,
    "physics_decided_outside_physics": 0,
    "loss_reads_in_validation": 0,
    "prior_found_by_key": 0,
    "bind_meanings": 1,
    "trainer_init_parameters": 12,
    "trainer_mixins": 0,
    "benchmark_files_over_500_lines": 0,
    "benchmark_functions_over_60_lines": 5,
    # issue 72
    "files_comparing_a_time_scheme_to_a_string": 1,
    "physics_request_types": 1,
    "import_cycles_package": 0,
    "import_cycles_benchmarks": 0,
    "trainer_carried_untyped": 0,
    "metric_reads_by_key": 0,
    "guard_writes_outside_guard": 0,
    "guard_state_writers": 1,
}
#: the UPAO validation and the judge: they read the setup, never the loss
SETUP_READERS = ("well_upao/trainers/upao_validation.py", "well_upao/trainers/guard.py")
#: where the prior's evidence is read, not written
PRIOR_READERS = ("well_upao/trainers/guard.py", "well_upao/trainers/selection.py")
#: what builds or decides a run's physics request: only ``physics_of`` may, outside ``physics/``
REQUEST_BUILDERS = {"refuse_time_varying_parameters"}
#: the fields that make a request class a physics request
SCHEME_FIELDS = {"scheme", "time_scheme"}


@dataclass
class Module:
    path: Path
    tree: ast.Module
    lines: int
    text: str = ""

    @property
    def relative(self) -> str:
        return str(self.path.relative_to(PACKAGE.parent))


@dataclass
class Metrics:
    values: dict[str, int] = field(default_factory=dict)
    where: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, place: str) -> None:
        self.values[name] = self.values.get(name, 0) + 1
        self.where.setdefault(name, []).append(place)


def modules(folder: Path = PACKAGE) -> list[Module]:
    """Every Python file under ``folder`` (the package, or benchmarks/), parsed."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text()
        out.append(Module(path, ast.parse(text), len(text.splitlines()), text))
    return out


def unformatted_lines(text: str) -> list[int]:
    """The numbers of the lines that keep ruff's formatter away (``# fmt: skip``, ``# fmt: off``)."""
    return [n for n, line in enumerate(text.splitlines(), 1) if "# fmt: skip" in line or "# fmt: off" in line]


def mutates_parameter(function: ast.FunctionDef, annotation: str) -> bool:
    """Whether ``function`` assigns to an attribute of a parameter annotated ``annotation`` (``x.a = ...``,
    ``x.a += ...``)."""
    names = {n for n, a in parameter_names(function) if a.split(".")[-1] == annotation}
    for node in ast.walk(function):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in names:
                return True
    return False


def is_pde_lookup(function: ast.FunctionDef) -> bool:
    """Whether ``function`` looks a PDE up by name: it reads ``PDE_REGISTRY`` or calls ``get_pde`` (the registry's
    own ``get_pde`` and ``register_pde`` aside)."""
    if function.name in ("get_pde", "register_pde"):
        return False
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == "PDE_REGISTRY":
            return True
        if isinstance(node, ast.Call) and called_name(node) == "get_pde":
            return True
    return False


def imports_resolver(tree: ast.Module) -> bool:
    """Whether a module imports ``resolve`` from ``well_upao.physics.discretisation``."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "well_upao.physics.discretisation"
        and any(alias.name == "resolve" for alias in node.names)
        for node in ast.walk(tree)
    )


def loss_reads(tree: ast.AST) -> list[int]:
    """Lines reading an attribute through a name ``loss`` or through ``self.loss``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            value = node.value
            if isinstance(value, ast.Name) and value.id == "loss":
                out.append(node.lineno)
            elif node.attr == "loss" and isinstance(value, ast.Name) and value.id == "self":
                out.append(node.lineno)
    return out


def keys_built_from_a_name(tree: ast.AST, prefix: str) -> list[int]:
    """Lines of f-strings that start with ``prefix`` and go on with a formatted value (a key built from a name)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and len(node.values) >= 2:
            first, second = node.values[0], node.values[1]
            if isinstance(first, ast.Constant) and str(first.value).endswith(prefix):
                if isinstance(second, ast.FormattedValue):
                    out.append(node.lineno)
    return out


def scheme_names(mods: list[Module]) -> set[str]:
    """The names of the package's time schemes: the first argument, a string, of every ``TimeScheme(...)`` call."""
    names = set()
    for module in mods:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call) and called_name(node) == "TimeScheme" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.add(first.value)
    return names


def scheme_literal_comparisons(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines comparing something to a time scheme's name written as a string literal (``names``): ``x ==
    "central"``, ``x != "central"``, ``x in ("explicit", "central")``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                items = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                if any(isinstance(item, ast.Constant) and item.value in names for item in items):
                    out.append(node.lineno)
                    break
    return out


def request_types(tree: ast.AST) -> list[str]:
    """Classes named for a request (``...Request``, ``Requested``) with a time scheme field (an annotated
    ``scheme`` or ``time_scheme`` in the class body): what a physics request is."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and "Request" in node.name:
            fields = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
            if fields & SCHEME_FIELDS:
                out.append(node.name)
    return out


def called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def parameter_names(function: ast.FunctionDef) -> list[tuple[str, str]]:
    """``(name, annotation text)`` of every parameter."""
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return [(a.arg, ast.unparse(a.annotation) if a.annotation is not None else "") for a in every]


def is_clumped(function: ast.FunctionDef) -> bool:
    params = parameter_names(function)
    names = {n for n, a in params if not (n == "dims" and "str" in a)}  # axes' names are not the physics' dims
    if len(names & CLUMP) >= 3:
        return True
    has_pde = any(n == "pde" or a.split(".")[-1] in ("PDE", "PDE | None") for n, a in params)
    has_stencils = any(n == "ops" or "Stencils" in a for n, a in params)
    return has_pde and has_stencils


def nested_imports(function: ast.FunctionDef) -> int:
    count = 0
    for node in ast.walk(function):
        if isinstance(node, ast.Import | ast.ImportFrom):
            count += 1
        elif isinstance(node, ast.Call) and called_name(node) in ("import_module", "__import__"):
            count += 1
    return count


def class_methods(classes: dict[str, ast.ClassDef], name: str) -> set[str]:
    """Methods of class ``name`` and of its bases defined in the package."""
    node = classes.get(name)
    if node is None:
        return set()
    own = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for base in node.bases:
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if base_name in classes and base_name != name:
            own |= class_methods(classes, base_name)
    return own


def statements_after_score(tree: ast.Module) -> list[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "run_evaluation":
            after, seen = [], False
            for statement in node.body:
                if seen and not isinstance(statement, ast.Return):
                    after.append(ast.unparse(statement).splitlines()[0])
                if any(isinstance(c, ast.Call) and called_name(c) == "score" for c in ast.walk(statement)):
                    seen = True
            return after
    return []


def trainer_shape(tree: ast.Module) -> tuple[int, list[str]]:
    """The parameters of ``Trainer.__init__`` in a module (``self`` aside) and the bases of ``Trainer`` besides
    ``WellTrainer``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Trainer":
            bases = [ast.unparse(b) for b in node.bases if ast.unparse(b) != "WellTrainer"]
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    named = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg != "self"]
                    return len(named) + (args.vararg is not None) + (args.kwarg is not None), bases
            return 0, bases
    return 0, []


def bind_meanings(mods: list[Module]) -> dict[str, list[str]]:
    """The first parameter (after ``self``) of every function named ``bind``, with where: one name, one meaning."""
    out: dict[str, list[str]] = {}
    for module in mods:
        for function in functions(module.tree):
            if function.name == "bind":
                names = [n for n, _ in parameter_names(function) if n != "self"]
                out.setdefault(names[0] if names else "", []).append(f"{module.relative}:{function.lineno}")
    return out


def count_calls(metrics: Metrics, module: Module) -> None:
    """The counts read from a module's calls and names: choosers, rebuilds, decisions past ``physics_of``, the
    guard's names in physics/."""
    in_physics = module.relative.startswith("well_upao/physics/")
    resolver = imports_resolver(module.tree)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call):
            name = called_name(node)
            place = f"{module.relative}:{node.lineno}"
            if name in CHOOSERS and not in_physics:
                metrics.add("chooser_calls_outside_physics", place)
            if name == "Stencils" or (name == "resolve_parameters" and isinstance(node.func, ast.Attribute)):
                metrics.add("physics_rebuilds", place)
            deciding = name in REQUEST_BUILDERS or (name == "resolve" and isinstance(node.func, ast.Name))
            if deciding and not in_physics and (name != "resolve" or resolver):
                metrics.add("physics_decided_outside_physics", place)
        if in_physics and isinstance(node, ast.FunctionDef | ast.ClassDef) and "guard" in node.name.lower():
            metrics.add("guard_names_in_physics", f"{module.relative}:{node.name}")


def count_functions(metrics: Metrics, module: Module, prefix: str = "") -> None:
    """The counts read from a module's functions (``prefix``: the measures' prefix, ``benchmark_`` for
    benchmarks/, where only the length is counted)."""
    for function in functions(module.tree):
        place = f"{module.relative}:{function.name}"
        length = (function.end_lineno or function.lineno) - function.lineno + 1
        if length > 60:
            metrics.add(f"{prefix}functions_over_60_lines", f"{place} ({length})")
        if prefix:
            continue
        if is_clumped(function):
            metrics.add("clumped_functions", place)
        if mutates_parameter(function, "Evaluation"):
            metrics.add("evaluation_mutations", place)
        if is_pde_lookup(function):
            metrics.add("pde_lookups", place)
    top_functions = [n for n in module.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    methods = [
        m for c in module.tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, ast.FunctionDef)
    ]
    for function in top_functions + methods if not prefix else []:  # outermost: nested ones are counted inside
        for _ in range(nested_imports(function)):
            metrics.add("imports_inside_functions", f"{module.relative}:{function.name}")


def count_places(metrics: Metrics, module: Module) -> None:
    """The counts of particular files: upao.py's length, the trainer's shape, what the validation and the judge
    read, the statements after ``score``."""
    relative = module.relative
    if relative == "well_upao/trainers/upao.py":
        metrics.values["upao_py_lines"] = module.lines
    if relative == "well_upao/trainers/loop.py":
        parameters, mixins = trainer_shape(module.tree)
        metrics.values["trainer_init_parameters"] = parameters
        for base in mixins:
            metrics.add("trainer_mixins", f"{relative}:Trainer({base})")
    if relative in SETUP_READERS:
        for line in loss_reads(module.tree):
            metrics.add("loss_reads_in_validation", f"{relative}:{line}")
    if relative in PRIOR_READERS:
        for line in keys_built_from_a_name(module.tree, "valid_score_window_"):
            metrics.add("prior_found_by_key", f"{relative}:{line}")
    if relative == "well_upao/evaluate/pipeline.py":
        for statement in statements_after_score(module.tree):
            metrics.add("statements_after_score", statement)


def count_composition(metrics: Metrics, mods: list[Module]) -> None:
    """Issue 72's counts of a run's composition (``run_composition.py``: each rule in its docstring)."""
    trees = {module.relative: module.tree for module in mods}
    for name, places in (
        ("trainer_carried_untyped", run_composition.trainer_carriers(trees)),
        ("metric_reads_by_key", run_composition.metric_key_reads(trees)),
        ("guard_writes_outside_guard", run_composition.guard_writes(trees)),
        ("guard_state_writers", run_composition.guard_writers(trees)),
    ):
        for place in places:
            metrics.add(name, place)


def count_cycles(metrics: Metrics) -> None:
    """The import cycles of the package and of benchmarks/ (``import_cycles.py``), each as its modules."""
    package = import_cycles.module_names(PACKAGE, "well_upao")
    package |= import_cycles.module_names(DATASETS_EXACT, "well_upao.datasets_exact")
    for name, graph in (
        ("import_cycles_package", import_cycles.import_graph(package)),
        ("import_cycles_benchmarks", import_cycles.import_graph(import_cycles.module_names(BENCHMARKS), beside=True)),
    ):
        for cycle in import_cycles.cycles(graph):
            metrics.add(name, " <-> ".join(cycle))


def measure() -> Metrics:
    metrics = Metrics(dict.fromkeys(TARGETS, 0))
    mods = modules()
    classes: dict[str, ast.ClassDef] = {}
    for module in mods:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)
    names = scheme_names(mods)
    for module in mods:
        if module.lines > 500:
            metrics.add("files_over_500_lines", f"{module.relative} ({module.lines})")
        lines = scheme_literal_comparisons(module.tree, names)
        if lines:
            metrics.add("files_comparing_a_time_scheme_to_a_string", f"{module.relative}:{lines}")
        for name in request_types(module.tree):
            metrics.add("physics_request_types", f"{module.relative}:{name}")
        for number in unformatted_lines(module.text):
            metrics.add("fmt_skips", f"{module.relative}:{number}")
        count_calls(metrics, module)
        count_functions(metrics, module)
        count_places(metrics, module)
    for module in modules(BENCHMARKS):
        if module.lines > 500:
            metrics.add("benchmark_files_over_500_lines", f"{module.relative} ({module.lines})")
        count_functions(metrics, module, prefix="benchmark_")
    count_composition(metrics, mods)
    count_cycles(metrics)
    meanings = bind_meanings(mods)
    metrics.values["bind_meanings"] = len(meanings)
    metrics.where["bind_meanings"] = [f"{first}: {', '.join(places)}" for first, places in meanings.items()]
    metrics.values["upao_loss_methods"] = len(class_methods(classes, "UpaoLoss"))
    metrics.values["training_loss_methods"] = len(class_methods(classes, "TrainingLoss"))
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the numbers and where they come from as JSON")
    parser.add_argument("--where", action="store_true", help="list where each count comes from")
    args = parser.parse_args()
    metrics = measure()
    if args.json:
        print(json.dumps({"values": metrics.values, "where": metrics.where, "targets": TARGETS}, indent=1))
        return
    print("| measure | value | target (at most) | met |")
    print("|---|---|---|---|")
    for name, target in TARGETS.items():
        value = metrics.values.get(name, 0)
        print(f"| {name} | {value} | {target} | {'yes' if value <= target else 'no'} |")
    if args.where:
        for name, places in metrics.where.items():
            print(f"\n{name}:\n  " + "\n  ".join(places))


if __name__ == "__main__":
    main()
