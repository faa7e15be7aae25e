"""Issue 72's counts of how a run is composed, read from the package's source (``ast``) by
``benchmarks/quality/architecture_metrics.py``. Each takes the package's parsed modules (repository-relative path ->
tree) and returns the places it counts, one string each.

* :func:`trainer_carriers`, **the trainer carried below it, untyped**: outside ``trainers/loop.py`` (the trainer's
  own module, where ``self`` is the trainer),

  - a parameter that carries the trainer, when its annotation is missing or ``Any`` (``Any``, ``Any | None``,
    ``Optional[Any]``): a parameter named ``trainer``, or the parameter a call in the methods of ``loop.py``'s
    ``Trainer`` hands ``self`` to (the callee found by its name: a function or method of that name, a class's
    ``__init__`` or, for a class without one, its annotated fields in order; the position counted after ``self`` /
    ``cls``, or the keyword), e.g. ``attach(self, trainer: Any)`` for ``loss.attach(self)``;
  - an attribute that carries it: an assignment to an attribute (``x.a = v``, tuples paired) of a parameter that
    carries the trainer, typed or not, or to an attribute named ``trainer``; and a class field that receives
    ``self`` as above, typed ``Any`` or untyped. An attribute whose class body declares it with a type other than
    ``Any`` is typed and not counted.

* :func:`metric_key_reads`, **a metric read by its log key**: in the package, outside the modules of the
  ``metrics.jsonl`` file (``harness/metrics_file.py``, and the modules that read the file back: those importing or
  calling its readers ``read_metrics``, ``first_value``, ``last_value``), every

  - subscript read (``logs["valid_x"]``, ``logs[f"valid_{name}"]``; an assignment to it is a write, not counted),
  - ``.get(key, ...)`` or ``.pop(key, ...)``,
  - membership test (``"valid_x" in logs``),
  - ``.startswith(prefix)`` filter (a tuple of prefixes counts once),

  whose key or prefix is a string literal (an f-string: its literal start) beginning with a log key's prefix
  (:data:`LOG_PREFIXES`: ``valid_``, ``train_``, ``test_`` and the Well's ``rollout_valid_``, ``rollout_test_``).

* :func:`guard_writes`, **the run's guard written from outside**: outside ``trainers/guard.py``, every assignment
  (``=``, ``+=``, annotated; into a subscript of it too: ``judge.evidence[k] = v``) to an attribute of the judge
  (``judge.<a>``, ``<x>.judge.<a>``) or to an attribute named as a field of ``guard.py``'s ``Guard`` (its class-body
  annotations and ``self.<a>`` assignments: ``enabled``, ``start_card``, ``priors``, ``evidence``, ...) of anything
  but ``self``. :func:`guard_writers` counts the functions that write the guard's state anywhere: those with such an
  assignment, and ``Guard``'s own methods that assign ``self.<field>`` (``__init__`` and ``__post_init__`` aside:
  construction is no change of state).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

LOOP = "well_upao/trainers/loop.py"
GUARD = "well_upao/trainers/guard.py"
METRICS_FILE = "well_upao/harness/metrics_file.py"
#: the functions of ``harness/metrics_file.py`` that read ``metrics.jsonl`` back
FILE_READERS = {"read_metrics", "first_value", "last_value"}
#: how a log key starts: the loop's ``train_`` / ``valid_`` / ``test_`` lines and the Well's rollout validation
LOG_PREFIXES = ("valid_", "train_", "test_", "rollout_valid_", "rollout_test_")
ANY = {"Any", "typing.Any", "Any|None", "None|Any", "Optional[Any]", "typing.Optional[Any]"}

Modules = Mapping[str, ast.Module]


def called_name(call: ast.Call) -> str | None:
    function = call.func
    return function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)


def by_place(place: str) -> tuple[str, int, str]:
    """Sort key of a place ``module:line ...``: the module, then the line as a number."""
    where, _, rest = place.partition(" ")
    module, _, line = where.rpartition(":")
    return module, int(line) if line.isdigit() else 0, rest


def is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def is_any(annotation: ast.expr | None) -> bool:
    """Whether an annotation is missing or ``Any`` (quoted or not, alone or with ``None``)."""
    return annotation is None or ast.unparse(annotation).replace(" ", "").strip("\"'") in ANY


def owned_functions(tree: ast.AST) -> Iterator[tuple[str | None, ast.FunctionDef]]:
    """Every function of a module with the class it is a method of (``None``: a function)."""
    owners: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                owners[id(item)] = node.name
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield owners.get(id(node)), node


def own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, nested functions and classes left to themselves."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def trainer_handoffs(loop: ast.Module) -> set[tuple[str, int | str]]:
    """``(callee name, position or keyword)`` of every call in ``Trainer``'s methods that hands over ``self``."""
    out: set[tuple[str, int | str]] = set()
    for cls in (n for n in loop.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"):
        for call in (n for n in ast.walk(cls) if isinstance(n, ast.Call)):
            name = called_name(call)
            out |= {(name, i) for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == "self"}
            out |= {(name, k.arg) for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == "self"}
    return out


def explicit_parameters(function: ast.FunctionDef, method: bool) -> list[ast.arg]:
    args = [*function.args.posonlyargs, *function.args.args]
    return args[1:] if method and args and args[0].arg in ("self", "cls") else args


def receiving(function: ast.FunctionDef, owner: str | None, handoffs: set) -> list[ast.arg]:
    """The parameters of ``function`` the trainer is handed to (by its name, or its class's for ``__init__``)."""
    callee = owner if function.name == "__init__" and owner else function.name
    positional = explicit_parameters(function, owner is not None)
    named = {a.arg: a for a in [*positional, *function.args.kwonlyargs]}
    out = []
    for name, where in handoffs:
        if name != callee:
            continue
        if isinstance(where, int) and where < len(positional):
            out.append(positional[where])
        elif isinstance(where, str) and where in named:
            out.append(named[where])
    return out


def declared_types(tree: ast.AST) -> dict[tuple[str, str], ast.expr]:
    """``(class, attribute) -> annotation`` of every class-body annotation."""
    out = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                out[cls.name, item.target.id] = item.annotation
    return out


def paired_assignments(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """``(target, value)`` of an assignment, tuples on both sides paired element by element."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                yield from zip(target.elts, node.value.elts, strict=False)
            elif isinstance(target, ast.Tuple):
                yield from ((t, None) for t in target.elts)
            else:
                yield target, node.value
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        yield node.target, node.value


def attribute_carriers(function, owner, carriers: set[str], declared, relative: str) -> list[str]:
    """The attributes ``function`` gives a trainer-carrying parameter (``carriers``) or names ``trainer``."""
    out = []
    for node in own_nodes(function):
        for target, value in paired_assignments(node):
            if not isinstance(target, ast.Attribute):
                continue
            from_carrier = isinstance(value, ast.Name) and value.id in carriers
            if not (from_carrier or target.attr == "trainer"):
                continue
            if not is_any(declared.get((owner, target.attr))):
                continue
            out.append(f"{relative}:{node.lineno} .{target.attr} = {ast.unparse(value) if value else '...'}")
    return out


def class_fields_receiving(tree: ast.AST, handoffs: set, relative: str) -> list[str]:
    """Fields of a class without ``__init__`` (a dataclass) that ``Trainer`` hands ``self`` to, untyped or ``Any``."""
    out = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if any(isinstance(i, ast.FunctionDef) and i.name == "__init__" for i in cls.body):
            continue
        fields = [i for i in cls.body if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)]
        for name, where in handoffs:
            if name != cls.name:
                continue
            chosen = [f for i, f in enumerate(fields) if where in (i, f.target.id)]
            out += [f"{relative}:{f.lineno} {cls.name}.{f.target.id}" for f in chosen if is_any(f.annotation)]
    return out


def trainer_carriers(modules: Modules) -> list[str]:
    """The parameters and attributes below the trainer that carry it untyped (the module docstring's rule)."""
    handoffs = trainer_handoffs(modules[LOOP]) if LOOP in modules else set()
    out = []
    for relative, tree in modules.items():
        if relative == LOOP:
            continue
        declared = declared_types(tree)
        for owner, function in owned_functions(tree):
            every = [*explicit_parameters(function, owner is not None), *function.args.kwonlyargs]
            carrying = {id(a) for a in receiving(function, owner, handoffs)} | {
                id(a) for a in every if a.arg == "trainer"
            }
            carriers = [a for a in every if id(a) in carrying]
            out += [f"{relative}:{a.lineno} {function.name}({a.arg})" for a in carriers if is_any(a.annotation)]
            out += attribute_carriers(function, owner, {a.arg for a in carriers}, declared, relative)
        out += class_fields_receiving(tree, handoffs, relative)
    return sorted(set(out), key=by_place)


def reads_the_file(tree: ast.AST) -> bool:
    """Whether a module reads ``metrics.jsonl`` back: imports or calls one of :data:`FILE_READERS`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "well_upao.harness.metrics_file":
            if any(a.name in FILE_READERS for a in node.names):
                return True
        if isinstance(node, ast.Call) and called_name(node) in FILE_READERS:
            return True
    return False


def literal_start(node: ast.AST | None) -> str | None:
    """The literal text a string constant or an f-string starts with (``None`` for anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def is_log_key(node: ast.AST | None) -> bool:
    text = literal_start(node)
    return text is not None and text.startswith(LOG_PREFIXES)


def key_read(node: ast.AST) -> bool:
    """Whether ``node`` reads a log key (the module docstring's four forms)."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return is_log_key(node.slice)
    if isinstance(node, ast.Call) and node.args:
        name, first = called_name(node), node.args[0]
        if name in ("get", "pop"):
            return is_log_key(first)
        if name == "startswith":
            return any(is_log_key(e) for e in (first.elts if isinstance(first, ast.Tuple) else [first]))
    if isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
        return is_log_key(node.left)
    return False


def metric_key_reads(modules: Modules) -> list[str]:
    """Every read of a metric by its log key outside the ``metrics.jsonl`` file's modules."""
    out = []
    for relative, tree in modules.items():
        if relative == METRICS_FILE or reads_the_file(tree):
            continue
        out += [f"{relative}:{n.lineno} {ast.unparse(n)[:80]}" for n in ast.walk(tree) if key_read(n)]
    return sorted(out, key=by_place)


def guard_fields(guard: ast.Module) -> set[str]:
    """The fields of ``Guard``: its class-body annotations and the attributes its methods assign on ``self``."""
    fields: set[str] = set()
    for cls in (n for n in guard.body if isinstance(n, ast.ClassDef) and n.name == "Guard"):
        fields |= {i.target.id for i in cls.body if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)}
        for node in ast.walk(cls):
            for target, _ in paired_assignments(node):
                if isinstance(target, ast.Attribute) and is_name(target.value, "self"):
                    fields.add(target.attr)
    return fields


def written_attribute(target: ast.expr) -> ast.Attribute | None:
    """The attribute an assignment target writes (through subscripts: ``a.b[k] = v`` writes ``a.b``)."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target if isinstance(target, ast.Attribute) else None


def writes_guard(target: ast.expr, fields: set[str]) -> bool:
    """Whether an assignment target outside ``guard.py`` writes the guard's state (the module docstring's rule)."""
    attribute = written_attribute(target)
    if attribute is None:
        return False
    owner = attribute.value
    if is_name(owner, "judge") or (isinstance(owner, ast.Attribute) and owner.attr == "judge"):
        return True
    return attribute.attr in fields and not is_name(owner, "self")


def changes_itself(owner: str | None, function: ast.FunctionDef, target: ast.expr, fields: set[str]) -> bool:
    """Whether an assignment target in ``guard.py`` is ``Guard`` changing a field of its own after construction."""
    attribute = written_attribute(target)
    return (
        owner == "Guard"
        and function.name not in ("__init__", "__post_init__")
        and attribute is not None
        and is_name(attribute.value, "self")
        and attribute.attr in fields
    )


def guard_write_places(modules: Modules) -> list[tuple[str, str, int]]:
    """``(module, function, line)`` of every write of the guard's state (outside ``guard.py``, and ``Guard``'s own
    methods changing ``self.<field>`` after construction)."""
    fields = guard_fields(modules[GUARD]) if GUARD in modules else set()
    out = []
    for relative, tree in modules.items():
        for owner, function in owned_functions(tree):
            for node in own_nodes(function):
                for target, _ in paired_assignments(node):
                    if relative == GUARD and changes_itself(owner, function, target, fields):
                        out.append((relative, f"{owner}.{function.name}", node.lineno))
                    elif relative != GUARD and writes_guard(target, fields):
                        out.append((relative, f"{owner + '.' if owner else ''}{function.name}", node.lineno))
    return sorted(set(out), key=lambda place: (place[0], place[2]))


def guard_writes(modules: Modules) -> list[str]:
    """The assignments outside ``trainers/guard.py`` that change the run's guard."""
    return [f"{m}:{line} ({f})" for m, f, line in guard_write_places(modules) if m != GUARD]


def guard_writers(modules: Modules) -> list[str]:
    """The functions, anywhere in the package, that change the guard's state (the goal: one)."""
    return sorted({f"{m}:{f}" for m, f, _ in guard_write_places(modules)})
