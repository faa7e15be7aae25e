"""Every row of the README's "What you get" from today's code, each by the commands a user types (issue 61).

Twelve settings (:data:`SETTINGS`), each on several seeds (3 by default); a case is one setting and one seed:

* the quickstart's: ``well-upao quickstart --seed S`` (wave2d at stride 5, its data, runs and evaluation, at its own
  defaults: 3 epochs of 24 optimizer steps since 2026-11-29, 6 before);
* every other setting: the data by ``well-upao generate-exact`` (seed S: each seed draws its own trajectories) or
  ``well-upao generate-replica`` (made once; the seed changes the training order and the adapters' initial draw), then
  the quickstart's two runs through The Well's harness with the quickstart's overrides (``well_upao.quickstart.
  harness_command``: UPAO + NSLoRA without labels, ``model=na_nslora trainer=upao``, and supervised LoRA,
  ``model=na_lora trainer=shifted``, the quickstart's backbone and base, ``data.shuffle_seed=S +seed=S``), each
  ``trainer.epochs`` x ``trainer.epoch_steps`` optimizer steps so that the two network rows take the same number
  (:data:`EPOCHS`, :data:`EPOCH_STEPS`, the quickstart's count until 2026-11-29), then ``well-upao evaluate`` of
  both runs beside the classical rows and the solver;
* then, for every case, ``well-upao forecast`` of the UPAO run from evaluate's rollout starts of the validation
  split, without its labels, scored against the stored frames (``studies/forecast_column.py``): the table's
  "forecast (no labels)" column.

Each finished case leaves a compact record in ``reports/what_you_get/<setting>-seed<S>.json`` (:func:`compact`): every
row's one-step VRMSE (both definitions), the Well's rollout windows and the last rollout step, the label-free pick per
window (evaluate's ``trust``), what the UPAO run's ``best.pt`` kept (the network, the start or a prior), the commands,
the optimizer steps and the CPU and wall seconds of each part, the git commit and the date it was made at.
``benchmarks/studies/what_you_get.py`` makes the README's table from those records only. The study is resumable: a case
whose record exists is not run again (``--force SETTING`` reruns its cases from their training on), and a training run
is reused only when an earlier invocation finished it with the same command (``<role>.done.json``, with the command and
the commit it was trained at): one cut short, or made by another command, is trained again.

    python benchmarks/studies/what_you_get_study.py --out outputs/what_you_get --jobs 2 --threads 1

Run it from a checkout whose package is the one installed (its commit is what the records name); a dirty tree is
recorded as such.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from well_upao.harness import runs
from well_upao.harness.metrics_file import read_metrics
from well_upao.quickstart import UPAO_ROW, QuickstartConfig, harness_command

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, Finished, add_study_arguments, run_all, run_logged, study_arguments, thread_env
from harness.readings import portable_paths
from harness.study_data import STUDY_REPLICAS

from studies.forecast_column import forecast_case

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "reports" / "what_you_get"
#: the quickstart's name of its supervised row
SUPERVISED_ROW = "supervised LoRA (reference)"
#: the other settings' epochs and batches per epoch: the quickstart's optimizer steps until 2026-11-29 (6 epochs of
#: 9 training trajectories x 11 windows at stride 5 / batch 4 = 24 batches; the quickstart now runs 3 such epochs)
EPOCHS, EPOCH_STEPS = 6, 24
#: trajectories of each generated exact set: the paper's 90/10 split leaves 3 for validation
EXACT_TRAJECTORIES = 30
#: windows of the Well whose VRMSE the records keep
WINDOWS = ("6:12", "13:30")


@dataclass(frozen=True)
class Setting:
    """One row of the table: how its data are made and at which stride it is trained and evaluated."""

    key: str
    label: str
    dataset: str
    stride: int
    #: ``generate-exact`` arguments (besides --pde, --out, --seed, --n-traj), or None for a replica or the quickstart
    exact: tuple[str, ...] | None = None
    #: ``generate-replica`` arguments of a replica (besides --dataset and --out)
    replica: tuple[str, ...] | None = None

    @property
    def quickstart(self) -> bool:
        return self.exact is None and self.replica is None


def exact(pde: str, label: str, stride: int, *arguments: str) -> Setting:
    return Setting(pde, label, pde, stride, exact=arguments)


def replica(dataset: str, label: str, *arguments: str) -> Setting:
    return Setting(dataset, label, dataset, 1, replica=arguments)


#: the replicas of benchmarks/harness/study_data.py, with enough trajectories for 3 in validation where the study's
#: had 2: shear flow with a third parameter set (Re 1e4, Sc 10), Rayleigh-Benard with 15 trajectories per set (11/2/2)
TABLE_REPLICAS = {
    **{name: tuple(arguments) for name, arguments in STUDY_REPLICAS.items()},
    "shear_flow": tuple("--resolution 64 128 --n-steps 41 --sets 0 2 4 --n-traj 5".split()),
    "rayleigh_benard": tuple("--resolution 128 32 --n-steps 41 --sets 0 1 --n-traj 15".split()),
}

SETTINGS: tuple[Setting, ...] = (
    Setting("quickstart", "wave2d, stride 5 (the quickstart)", "wave2d", 5),
    *(
        exact(pde, f"{pde} (exact set, 64^2), stride 5", 5, "--resolution", "64", "--n-steps", "101")
        for pde in ("wave2d", "advdiff2d", "tg2d", "burgers2d")
    ),
    *(exact(pde, f"{pde} (exact set, 1024 points), stride 1", 1) for pde in ("burgers1d", "adv1d")),
    exact("adv3d", "adv3d (exact set, 32^3), stride 1", 1, "--resolution", "32"),
    *(replica(name, f"{name} (study replica), stride 1", *TABLE_REPLICAS[name]) for name in STUDY_REPLICAS),
)
BY_KEY = {setting.key: setting for setting in SETTINGS}
#: one lock per replica: the first of its cases makes it while the others wait
REPLICA_LOCKS = {name: threading.Lock() for name in TABLE_REPLICAS}


def made_at() -> dict:
    """The commit of this checkout (with ``dirty`` when it has uncommitted changes) and today's date."""

    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()

    return {
        "commit": git("rev-parse", "--short=10", "HEAD"),
        # the study's own records (written as its cases finish) do not make the code it runs dirty
        "dirty": bool(
            git("status", "--porcelain", "--untracked-files=no", "--", ".", f":!{RECORDS.relative_to(ROOT)}")
        ),
        "date": datetime.date.today().isoformat(),
    }


def case_folder(args, setting: Setting, seed: int) -> Path:
    return args.out / setting.key / f"seed{seed}"


def record_path(args, setting: Setting, seed: int) -> Path:
    return args.records / f"{setting.key}-seed{seed}.json"


class CaseFailed(RuntimeError):
    pass


def logged(args, command: list[str], log: Path, **env: str) -> Finished:
    """``command`` niced, wandb off, ``args.threads`` threads, logged to ``log``; raises when it fails."""
    environment = thread_env(dict(os.environ, WANDB_MODE="disabled", **env), args.threads)
    finished = run_logged(["nice", "-n", "10", *command], log, environment)
    if finished.returncode != 0:
        raise CaseFailed(f"{' '.join(command)} exited {finished.returncode}; see {log}")
    return finished


def cost(finished: Finished) -> dict:
    return {"wall_seconds": round(finished.wall_seconds, 1), "cpu_seconds": round(finished.cpu_seconds, 1)}


def training_facts(run: Path) -> dict:
    """From a run's ``metrics.jsonl``: its optimizer steps and what its ``best.pt`` holds (the last validation's
    selection: the trained network, the start or a classical prior)."""
    lines = read_metrics(run)
    validations = [line for line in lines if "valid" in line]
    last = validations[-1] if validations else {}
    if last.get("kept_prior"):
        kept = f"prior ({last.get('kept_prior_name')})"
    elif last.get("kept_start"):
        kept = "start"
    else:
        kept = "network"
    return {
        "optimizer_steps": max((int(line.get("step", 0)) for line in lines), default=0),
        "epochs": max((int(line.get("epoch", 0)) for line in validations), default=0),
        "best_epoch": last.get("best_epoch"),
        "kept": kept,
        "kept_reason": last.get("kept_prior_reason") or last.get("kept_start_reason"),
    }


def data_for(args, setting: Setting, seed: int) -> tuple[Path, list[str]]:
    """The base path holding the case's dataset, made if missing, and the command that made it."""
    if setting.replica is not None:
        base = args.out / "replicas"
        command = [*WELL_UPAO, "generate-replica", "--dataset", setting.dataset, *setting.replica, "--out", str(base),
                   "--quiet"]  # fmt: skip
        with REPLICA_LOCKS[setting.dataset]:  # made once: the seeds of a replica share it
            if not (base / setting.dataset / "stats.yaml").is_file():
                logged(args, command, base / f"{setting.dataset}.log")
        return base, command
    base = case_folder(args, setting, seed) / "datasets"
    command = [*WELL_UPAO, "generate-exact", "--pde", setting.dataset, "--n-traj", str(EXACT_TRAJECTORIES),
               "--seed", str(seed), *setting.exact, "--out", str(base), "--quiet"]  # fmt: skip
    if not (base / setting.dataset / "stats.yaml").is_file():
        logged(args, command, case_folder(args, setting, seed) / "generate.log")
    return base, command


def training_command(args, setting: Setting, seed: int, base: Path, experiments: Path, model: str, trainer: str):
    """The quickstart's harness command for this setting (its dataset, stride and seed) with the fixed step count."""
    epochs = EPOCHS if args.epochs is None else args.epochs
    config = QuickstartConfig(pde=setting.dataset, stride=setting.stride, epochs=epochs, seed=seed)
    command = harness_command(config, model, trainer, base, experiments)
    return [*command, f"trainer.epoch_steps={args.epoch_steps}", f"+seed={seed}"]


def run_harness_case(args, setting: Setting, seed: int) -> dict:
    """Data, the two training runs and the evaluation of a harness case; what its record says of them."""
    folder = case_folder(args, setting, seed)
    base, data_command = data_for(args, setting, seed)
    experiments = folder / "experiments"
    trained, commands, costs = {}, {"data": data_command}, {}
    for role, (model, trainer) in {"upao": ("na_nslora", "upao"), "supervised": ("na_lora", "shifted")}.items():
        name = f"{setting.dataset}-{model}-{trainer}-*"
        command = training_command(args, setting, seed, base, experiments, model, trainer)
        marker = folder / f"{role}.done.json"
        finished = json.loads(marker.read_text()) if marker.is_file() else {}
        if finished.get("command") == shlex.join(command) and runs.latest_run(experiments, name) is not None:
            costs[role] = finished  # finished by an earlier invocation with this command: reused
        else:  # never started, cut short (its best.pt may hold the start only) or another command: trained afresh
            for stale in runs.run_folders(experiments, name):
                shutil.rmtree(stale)
            costs[role] = cost(logged(args, command, folder / f"{role}.log", WELL_BASE_PATH=str(base)))
            costs[role] |= {"trained_at": made_at()["commit"], "command": shlex.join(command)}
            write_record(marker, costs[role])
        trained[role], commands[role] = runs.latest_run(experiments, name), command
    evaluation = folder / "evaluation"
    command = [*WELL_UPAO, "evaluate", f"{UPAO_ROW}={trained['upao']}", f"{SUPERVISED_ROW}={trained['supervised']}",
               "--data", setting.dataset, "--base-path", str(base), "--stride", str(setting.stride),
               "--out", str(evaluation), "--quiet"]  # fmt: skip
    costs["evaluate"] = cost(logged(args, command, folder / "evaluate.log"))
    commands["evaluate"] = command
    result = json.loads(next(evaluation.glob("evaluation_*.json")).read_text())
    forecast = forecast_of(args, trained["upao"], base, setting, result.get("history"), folder)
    return {
        "evaluation": result,
        "forecast": forecast,
        "runs": {
            role: training_facts(run) | {k: v for k, v in costs.get(role, {}).items() if k != "command"}
            for role, run in trained.items()
        },  # the command is in "commands", made portable
        "commands": commands,
        "cost": {"evaluate": costs["evaluate"], "forecast": forecast["cost"]},
    }


def forecast_of(args, run: Path, base: Path, setting: Setting, history: int, folder: Path) -> dict:
    """The forecast column of a case (``studies/forecast_column.py``), its commands run as the study runs them."""
    return forecast_case(
        run, base, setting.dataset, setting.stride, history, folder, lambda command, log: logged(args, command, log)
    )


def run_quickstart_case(args, setting: Setting, seed: int) -> dict:
    """``well-upao quickstart --seed S`` in the case's folder; what its record says of it."""
    folder = case_folder(args, setting, seed)
    command = [*WELL_UPAO, "quickstart", "--seed", str(seed), "--out", str(folder / "quickstart")]
    if args.epochs is not None:  # a rehearsal: the quickstart runs its own default
        command += ["--epochs", str(args.epochs)]
    finished = logged(args, command, folder / "quickstart.log")
    experiments = folder / "quickstart" / "experiments"
    found = {role: runs.latest_run(experiments, f"wave2d-{pattern}-*")
             for role, pattern in (("upao", "na_nslora-upao"), ("supervised", "na_lora-shifted"))}  # fmt: skip
    result = json.loads(next((folder / "quickstart" / "results").glob("evaluation_*.json")).read_text())
    forecast = forecast_of(
        args, found["upao"], folder / "quickstart" / "datasets", setting, result.get("history"), folder
    )
    return {
        "evaluation": result,
        "forecast": forecast,
        "runs": {role: training_facts(run) for role, run in found.items()},
        "commands": {"quickstart": command},
        "cost": {"quickstart": cost(finished), "forecast": forecast["cost"]},
    }


def number(value):
    return None if value is None or value != value else float(f"{value:.6g}")


def compact(setting: Setting, seed: int, made: dict, case: dict) -> dict:
    """The record of a case: only what the table and its sentences read, paths made portable."""
    e = case["evaluation"]
    rows = {}
    for s in e["scores"]:
        if s.get("notes", {}).get("substeps") and s["name"] != "solver":
            continue  # the matched solver ladder's rows
        rollout = s.get("rollout_vrmse_well") or []
        rows[s["name"]] = {
            "kind": s.get("kind"),
            "one_step_paper": number(s["mean_vrmse_paper"]),
            "one_step_well": number(s["mean_vrmse_well"]),
            "windows": {w: number((s.get("rollout_windows") or {}).get(w)) for w in WINDOWS},
            "rollout_last": number(rollout[-1]) if rollout else None,
            # the first step of the rollouts, from the starts the forecast column starts from: its one-step reference
            "rollout_first": number(rollout[0]) if rollout else None,
        }
    trust = {window: {"pick": t.get("pick"), "reach": t.get("reach")} for window, t in (e.get("trust") or {}).items()}

    def portable(command: list[str]) -> str:
        shown = ["python" if part == sys.executable else part for part in command]
        return portable_paths(shlex.join(shown))

    return {
        "setting": setting.key,
        "label": setting.label,
        "dataset": setting.dataset,
        "stride": setting.stride,
        "seed": seed,
        "made": made,
        "validation_trajectories": e["n_trajectories"],
        "history": e["history"],
        "rollout_steps_run": e["rollout_steps_run"],
        "rows": rows,
        "trust": trust,
        "runs": case["runs"],
        "forecast": {
            "windows": {w: number(v) for w, v in case["forecast"]["windows"].items()},
            "cells": [
                {k: number(v) if isinstance(v, float) else v for k, v in cell.items()}
                for cell in case["forecast"]["cells"]
            ],
            "steps": case["forecast"]["steps"],
        },
        "cost": case["cost"],
        "commands": {role: portable(command) for role, command in case["commands"].items()},
    }


def write_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def run_case(args, setting: Setting, seed: int) -> None:
    """One case, skipped when its record exists (unless ``--force`` names its setting)."""
    path = record_path(args, setting, seed)
    if path.is_file() and setting.key not in args.force:
        return
    if args.deadline and time.time() > args.deadline:
        print(f"{setting.key} seed {seed}: deadline reached, not started", flush=True)
        return
    if setting.key in args.force and case_folder(args, setting, seed).exists():
        shutil.rmtree(case_folder(args, setting, seed))  # rerun means retrain, not re-evaluate
    started = time.time()
    made = made_at()
    case = (run_quickstart_case if setting.quickstart else run_harness_case)(args, setting, seed)
    write_record(path, compact(setting, seed, made, case))
    print(f"{setting.key} seed {seed}: done in {(time.time() - started) / 60:.1f} min", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/what_you_get"), help="data and run folders")
    parser.add_argument("--records", type=Path, default=RECORDS, help="where the compact records go")
    parser.add_argument("--settings", nargs="+", default=[s.key for s in SETTINGS], choices=list(BY_KEY))
    parser.add_argument("--seeds", nargs="+", type=int, default=[42, 43, 44])
    parser.add_argument("--force", nargs="*", default=[], choices=list(BY_KEY), help="rerun these settings' cases")
    parser.add_argument(
        "--epochs", type=int, default=None, help=f"epochs of each run ({EPOCHS}; the quickstart: its own default)"
    )
    parser.add_argument("--epoch-steps", type=int, default=EPOCH_STEPS, help=f"batches per epoch ({EPOCH_STEPS})")
    add_study_arguments(parser)
    args = study_arguments(parser, argv)
    args.records = args.records.resolve()
    settings = [BY_KEY[key] for key in args.settings]
    if args.analyse_only:
        return
    cases = [(setting, seed) for setting in settings for seed in args.seeds]
    if args.max_runs is not None:
        cases = [c for c in cases if not record_path(args, *c).is_file() or c[0].key in args.force][: args.max_runs]
    run_all([lambda c=c: run_case(args, *c) for c in cases], args.jobs)


if __name__ == "__main__":
    main()
