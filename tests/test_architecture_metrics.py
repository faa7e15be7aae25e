"""Issue 52's reading-cost numbers, measured on the package's source by ``benchmarks/quality/architecture_metrics.py``,
stay within their targets: no discretisation chosen outside physics/, the physics built in few places, no argument
clump, evaluation as one road, UpaoLoss and TrainingLoss small, no guard in physics/, short files and functions, imports
at the top; and issue 72's (no import cycle in the package or in benchmarks/, and today's counts of the run's
composition as ceilings until the restructuring lowers them). The script itself is checked on a hand-made module (a
negative control for each count it reports); its issue 72 parts in tests/test_import_cycles.py and
tests/test_run_composition.py."""

from __future__ import annotations

import ast

from quality import architecture_metrics


def test_the_package_meets_every_target():
    metrics = architecture_metrics.measure()
    over = {
        name: (metrics.values.get(name, 0), target, metrics.where.get(name, []))
        for name, target in architecture_metrics.TARGETS.items()
        if metrics.values.get(name, 0) > target
    }
    assert not over, over


def test_the_counts_see_what_they_count():
    source = """
def clumped(pde, params, ops, scheme):
    import torch
    return Stencils(ops.grid)
"""
    tree = ast.parse(source)
    (function,) = architecture_metrics.functions(tree)
    assert architecture_metrics.is_clumped(function)
    assert architecture_metrics.nested_imports(function) == 1
    calls = [architecture_metrics.called_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert "Stencils" in calls
    plain = ast.parse("def fine(pde, window):\n    return window\n")
    assert not architecture_metrics.is_clumped(next(architecture_metrics.functions(plain)))


def test_the_clump_counts_dims_as_the_number_of_spatial_dimensions_only():
    """``dims`` with ``pde`` and ``dt`` is the physics' clump where it is the number of spatial dimensions (an
    ``int``, or not annotated); ``dims`` annotated with ``str`` names stored axes (``write_dataset``'s) and is not."""
    for signature, clumped in (
        ("pde, dims, dt", True),
        ("pde, dims: int, dt: float", True),
        ("data, pde: Any = None, dims: str | Sequence[str] | None = None, dt: float | None = None", False),
        ("pde, dims: str, dt, params", True),
    ):
        function = next(architecture_metrics.functions(ast.parse(f"def f({signature}):\n    pass\n")))
        assert architecture_metrics.is_clumped(function) == clumped, signature


def test_the_formatting_count_sees_a_skip():
    assert architecture_metrics.unformatted_lines("x = 1  # fmt: skip\ny = 2\n# fmt: off\n") == [1, 3]
    assert architecture_metrics.unformatted_lines("x = 1  # a comment about fmt\n") == []


def test_the_mutation_count_sees_an_evaluation_changed_after_it_was_built():
    changed = ast.parse("def finish(plan, evaluation: Evaluation):\n    evaluation.scores += []\n")
    built = ast.parse("def build(plan) -> Evaluation:\n    evaluation = Evaluation()\n    return evaluation\n")
    assert architecture_metrics.mutates_parameter(next(architecture_metrics.functions(changed)), "Evaluation")
    assert not architecture_metrics.mutates_parameter(next(architecture_metrics.functions(built)), "Evaluation")


def test_the_lookup_and_request_counts_see_what_they_count():
    lookup = ast.parse("def pde_named(name):\n    return PDE_REGISTRY[name]\n")
    registry = ast.parse("def get_pde(name):\n    return PDE_REGISTRY[name]\n")
    assert architecture_metrics.is_pde_lookup(next(architecture_metrics.functions(lookup)))
    assert not architecture_metrics.is_pde_lookup(next(architecture_metrics.functions(registry)))
    importing = ast.parse("from well_upao.physics.discretisation import resolve\n")
    assert architecture_metrics.imports_resolver(importing)
    assert not architecture_metrics.imports_resolver(ast.parse("from pathlib import Path\n"))


def test_the_validation_counts_see_a_loss_read_and_a_key_built_from_a_name():
    reads = ast.parse("def run(self, loss):\n    a = loss.history\n    return self.loss.rollout\n")
    assert architecture_metrics.loss_reads(reads) == [2, 3]
    assert architecture_metrics.loss_reads(ast.parse("def run(self):\n    return self.setup.history\n")) == []
    keyed = ast.parse('def choice(logs, name):\n    return logs[f"valid_score_window_{name}"]\n')
    assert architecture_metrics.keys_built_from_a_name(keyed, "valid_score_window_") == [2]
    fixed = ast.parse('def model(logs):\n    return logs["valid_score_window_model"]\n')
    assert architecture_metrics.keys_built_from_a_name(fixed, "valid_score_window_") == []


def test_the_bind_count_sees_two_meanings():
    text = "class A:\n    def bind(self, trainer):\n        pass\n"
    text += "class B:\n    def bind(self, grid, scalars):\n        pass\n"
    module = architecture_metrics.Module(architecture_metrics.PACKAGE / "m.py", ast.parse(text), 6, text)
    assert sorted(architecture_metrics.bind_meanings([module])) == ["grid", "trainer"]


def test_the_trainer_count_sees_its_parameters_and_mixins():
    tree = ast.parse(
        "class Trainer(RunFiles, WellTrainer):\n    def __init__(self, *args, loss, a=1, **kwargs):\n        pass\n"
    )
    assert architecture_metrics.trainer_shape(tree) == (4, ["RunFiles"])


def test_the_time_scheme_and_request_counts_see_a_scheme_compared_by_name_and_two_request_types():
    table = ast.parse('SCHEMES = [TimeScheme("central", theta=0.0, span=2), TimeScheme("explicit", theta=0.0)]\n')
    module = architecture_metrics.Module(architecture_metrics.PACKAGE / "m.py", table, 1)
    names = architecture_metrics.scheme_names([module])
    assert names == {"central", "explicit"}
    compared = ast.parse('def f(scheme):\n    if scheme == "central":\n        return scheme in ("explicit", "x")\n')
    assert architecture_metrics.scheme_literal_comparisons(compared, names) == [2, 3]
    asked = ast.parse('def f(scheme):\n    return scheme.span > 1 or scheme == "auto"\n')  # "auto" is no scheme
    assert architecture_metrics.scheme_literal_comparisons(asked, names) == []
    two = ast.parse(
        "class Requested:\n    derivative: str\n    scheme: str\n"
        "class PhysicsRequest:\n    scheme: str | None = None\n"
        "class GenerationRequest:\n    resolution: int\n"
        "class Physics:\n    scheme: str\n"
    )
    assert architecture_metrics.request_types(two) == ["Requested", "PhysicsRequest"]
