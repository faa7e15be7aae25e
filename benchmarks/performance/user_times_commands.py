"""The commands ``user_times.py`` times: each command of the README and the docs' recipes as the docs show it
(``UserCommand``), the harness's runs at two step counts, and ``evaluate`` of each "What you get" setting."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "reports" / "user_times"
REPORT = ROOT / "reports" / "user_times.md"
#: a command whose run takes under this many wall seconds is run three times and its median kept
REPEAT_UNDER = 60.0
REPEATS = 3
#: the harness runs' two step counts: their difference in time over the difference in steps is one step's cost
FEW_STEPS, MORE_STEPS = 4, 24
#: entries of a profile kept in the record (by own time; and the package's functions by cumulative time)
PROFILE_ENTRIES = 12
#: seconds between two readings of the load average while a command runs
LOAD_SAMPLE = 5.0
#: the README's UPAO run of wave2d, as its evaluate and forecast name it
README_RUN = "experiments/wave2d-na_nslora-upao-NATransformer-0.0001/0"
YOUR_DATA = ROOT / "docs" / "your-data.md"


@dataclass(frozen=True)
class UserCommand:
    """One command as the docs show it: ``argv`` with its program as typed (``well-upao``, ``python``, ``pytest``),
    run in a fresh folder holding links to ``links`` of the shared folder that ``prepare`` made."""

    name: str
    page: str
    argv: tuple[str, ...]
    prepare: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    heavy: bool = False
    #: optimizer steps the command takes (the harness's runs)
    steps: int | None = None
    #: run in the repository's root instead of a fresh folder (the suite)
    in_repository: bool = False
    note: str = ""


def harness(model: str, trainer: str, steps: int) -> tuple[str, ...]:
    """The README's harness command (``trainer.max_minutes=10`` replaced by one epoch of ``steps`` steps)."""
    return (
        "python",
        "-m",
        "the_well.benchmark.train",
        f"model={model}",
        f"trainer={trainer}",
        "data=wave2d",
        "trainer.epochs=1",
        f"trainer.epoch_steps={steps}",
    )


def what_you_get_commands() -> list[UserCommand]:
    """``evaluate`` of each "What you get" setting (but the quickstart's, part of its own command) at its size and
    with its rows: both runs, the classical rows, the solver, as the what-you-get study runs it (seed 42)."""
    from studies.what_you_get_study import SETTINGS, SUPERVISED_ROW

    from well_upao.quickstart import UPAO_ROW

    found = []
    for setting in SETTINGS:
        if setting.quickstart:
            continue
        case = f"wyg/{setting.key}/seed42"
        base = "wyg/replicas" if setting.replica is not None else f"{case}/datasets"
        runs = {
            role: f"{case}/experiments/{setting.dataset}-{model}-{trainer}-NATransformer-0.001/0"
            for role, model, trainer in (("upao", "na_nslora", "upao"), ("supervised", "na_lora", "shifted"))
        }
        argv = (
            "well-upao",
            "evaluate",
            f"{UPAO_ROW}={runs['upao']}",
            f"{SUPERVISED_ROW}={runs['supervised']}",
            "--data",
            setting.dataset,
            "--base-path",
            base,
            "--stride",
            str(setting.stride),
            "--out",
            "evaluation",
            "--quiet",
        )
        found.append(
            UserCommand(
                f"evaluate-{setting.key}",
                "README.md (What you get)",
                argv,
                prepare=(f"wyg:{setting.key}",),
                links=("wyg",),
                heavy=True,
                note=setting.label,
            )
        )
    return found


COMMANDS: tuple[UserCommand, ...] = (
    UserCommand(
        "generate-exact",
        "README.md",
        ("well-upao", "generate-exact", "--pde", "wave2d", "--resolution", "64", "--n-traj", "12"),
    ),
    UserCommand(
        "generate-replica",
        "well-upao generate-replica --help",
        tuple("well-upao generate-replica --dataset active_matter --sets 0 --n-traj 3 --n-steps 41".split()),
        heavy=True,
    ),
    UserCommand(
        "import",
        "docs/your-data.md",
        (
            "well-upao",
            "import",
            "heat.npz",
            "--dataset",
            "my_heat",
            "--dims",
            "trajectory",
            "time",
            "y",
            "x",
            "--scalar",
            "kappa",
            "--slots",
            "T=temperature",
        ),
        prepare=("your-data",),
        links=("heat.npz",),
    ),
    UserCommand(
        "validate",
        "docs/your-data.md",
        ("well-upao", "validate", "datasets/my_heat", "--imports", "my_pdes"),
        prepare=("your-data",),
        links=("datasets", "my_pdes.py"),
    ),
    UserCommand(
        "residual-floor",
        "docs/your-data.md",
        ("well-upao", "residual-floor", "--data", "my_heat", "--imports", "my_pdes"),
        prepare=("your-data",),
        links=("datasets", "my_pdes.py"),
    ),
    *(
        UserCommand(
            f"harness-{role}-{steps}",
            "README.md" if role == "upao" else "docs/leaderboard.md",
            harness(model, trainer, steps),
            prepare=("wave2d",),
            links=("datasets",),
            steps=steps,
        )
        for role, model, trainer in (("upao", "na_nslora", "upao"), ("supervised", "na_lora", "shifted"))
        for steps in (FEW_STEPS, MORE_STEPS)
    ),
    UserCommand(
        "evaluate",
        "README.md",
        ("well-upao", "evaluate", README_RUN),
        prepare=("wave2d", "readme-run"),
        links=("datasets", "experiments"),
        note=f"the run: the README's UPAO command with one epoch of {FEW_STEPS} steps",
    ),
    UserCommand(
        "forecast",
        "README.md",
        ("well-upao", "forecast", README_RUN, "--input", "datasets/wave2d", "--steps", "30"),
        prepare=("wave2d", "readme-run"),
        links=("datasets", "experiments"),
        note=f"the run: the README's UPAO command with one epoch of {FEW_STEPS} steps",
    ),
    UserCommand("quickstart", "README.md", ("well-upao", "quickstart"), heavy=True),
    *what_you_get_commands(),
    UserCommand("suite", "README.md", ("pytest",), heavy=True, in_repository=True),
)
BY_NAME = {command.name: command for command in COMMANDS}
