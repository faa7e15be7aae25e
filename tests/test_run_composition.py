"""``benchmarks/quality/run_composition.py`` (issue 72's counts of how a run is composed) on hand-made modules: the
trainer carried untyped below it, metrics read by their log key, the guard written from outside; each with the
form it must not count beside it (a typed parameter, a write of a key, the file's own reader, a class's own
``self.enabled``)."""

from __future__ import annotations

import ast
import textwrap

from quality import run_composition as rc

LOOP = """
class Trainer(WellTrainer):
    def __init__(self, loss):
        loss.attach(self)
        self.helper = Helper(self, 3)
        self.record = Record(owner=self)
        self.plain = compute(self.model)
"""


def parsed(modules: dict[str, str]) -> dict[str, ast.Module]:
    return {path: ast.parse(textwrap.dedent(text)) for path, text in modules.items()}


def test_the_trainer_carried_untyped_is_counted_and_a_typed_one_is_not():
    modules = parsed(
        {
            rc.LOOP: LOOP,
            "well_upao/trainers/losses.py": """
                class Loss:
                    def attach(self, trainer: Any) -> None:
                        self.trainer = trainer
                class Typed:
                    def attach(self, run: Trainer) -> None:
                        self.run = run
                class Helper:
                    def __init__(self, owner, size: int):
                        self.owner, self.size = owner, size
                @dataclass
                class Record:
                    owner: Any
                    note: str = ""
                def compute(model):
                    return model
                def named(trainer: str, steps):
                    return trainer
            """,
            "well_upao/harness/normalization.py": "def space(trainer):\n    return trainer.model\n",
        }
    )
    places = rc.trainer_carriers(modules)
    assert places == [
        "well_upao/harness/normalization.py:1 space(trainer)",
        "well_upao/trainers/losses.py:3 attach(trainer)",  # handed self by loss.attach(self), typed Any
        "well_upao/trainers/losses.py:4 .trainer = trainer",
        "well_upao/trainers/losses.py:7 .run = run",  # an attribute holding it: untyped though the parameter is typed
        "well_upao/trainers/losses.py:9 __init__(owner)",  # Helper(self, 3): the first parameter after self
        "well_upao/trainers/losses.py:10 .owner = owner",
        "well_upao/trainers/losses.py:13 Record.owner",  # Record(owner=self): a field typed Any
    ]
    # not counted: Typed.attach's ``run: Trainer``, Helper's ``size``, compute(model), named(trainer: str, ...)


def test_an_attribute_declared_with_its_type_is_typed():
    modules = parsed(
        {
            rc.LOOP: LOOP,
            "well_upao/trainers/losses.py": """
                class Loss:
                    trainer: Trainer
                    def attach(self, trainer: Trainer) -> None:
                        self.trainer = trainer
            """,
        }
    )
    assert rc.trainer_carriers(modules) == []


def test_a_metric_read_by_its_key_is_counted_and_a_write_or_the_file_s_reader_is_not():
    modules = parsed(
        {
            "well_upao/trainers/guard.py": """
                def compared(logs, name):
                    model = logs.get("valid_score_window_model", 0.0)
                    other = logs[f"valid_score_window_{name}"]
                    kept = {k: v for k, v in logs.items() if k.startswith(("valid_score_", "x"))}
                    there = "train_loss" in logs
                    logs["valid_paper_VRMSE"] = 1.0
                    logs.get("epoch")
                    return logs["seconds"], model.startswith("valid")
            """,
            "well_upao/quickstart.py": """
                from well_upao.harness.metrics_file import read_metrics
                def verdict(line):
                    return line.get("valid_score_residual_ratio")
            """,
            rc.METRICS_FILE: "def last_value(lines, key):\n    return lines[-1]['valid_x']\n",
        }
    )
    lines = [place.split(" ")[0] for place in rc.metric_key_reads(modules)]
    assert lines == [
        "well_upao/trainers/guard.py:3",
        "well_upao/trainers/guard.py:4",
        "well_upao/trainers/guard.py:5",
        "well_upao/trainers/guard.py:6",
    ]


GUARD = """
@dataclass
class Guard:
    enabled: bool = True
    evidence: object = None
    def __post_init__(self):
        self.enabled = bool(self.enabled)
    def record(self, evidence):
        self.evidence = evidence
    def decision(self):
        return self.enabled
"""


def test_the_guard_written_from_outside_is_counted_and_another_object_s_own_field_is_not():
    modules = parsed(
        {
            rc.GUARD: GUARD,
            "well_upao/trainers/upao.py": """
                class UpaoLoss:
                    def attach(self, trainer):
                        self.judge.priors = True
                        self.enabled = True
                        judge = self.judge
                        judge.evidence["one_step"] = 2.0
                        guard.enabled = False
                    def note(self):
                        self.judge.record(3)
            """,
        }
    )
    assert rc.guard_writes(modules) == [
        "well_upao/trainers/upao.py:4 (UpaoLoss.attach)",
        "well_upao/trainers/upao.py:7 (UpaoLoss.attach)",
        "well_upao/trainers/upao.py:8 (UpaoLoss.attach)",
    ]
    # the functions that change the guard: UpaoLoss.attach and Guard.record (its __post_init__ constructs it)
    assert rc.guard_writers(modules) == [
        "well_upao/trainers/guard.py:Guard.record",
        "well_upao/trainers/upao.py:UpaoLoss.attach",
    ]
