"""The GPU check's product stages (``benchmarks/device/gpu_check.py`` stages 5 and 6): the product's path once, small,
and rollout UPAO on the device (what K steps cost, and K = 4 through the harness)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from device.gpu_common import Sizes, median_seconds

if TYPE_CHECKING:
    from device.gpu_results import Results


# --------------------------------------------------------------------------------------------- product steps
class StepRunner:
    """Runs the product's commands in ``work`` and records each in ``steps`` (its command with ``work`` written
    as ``<work>``, exit code, seconds and output tail); a failed command raises with its output."""

    def __init__(self, work: Path, base: Path, steps: list[dict]):
        self.work = work
        self.env = dict(os.environ, WANDB_MODE="disabled", WELL_BASE_PATH=str(base), HYDRA_FULL_ERROR="1")
        self.steps = steps

    def __call__(self, label: str, command: list[str], timeout: float) -> subprocess.CompletedProcess:
        """``well-upao ...`` runs in this process (its ``main``, as the console script calls it: no second
        interpreter start), anything else as a subprocess."""
        work = self.work
        start = time.time()
        if command[0] == "well-upao":
            from well_upao.cli import main as well_upao_main

            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.chdir(work), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = well_upao_main(command[1:])
            done = subprocess.CompletedProcess(command, code, stdout.getvalue(), stderr.getvalue())
        else:
            done = subprocess.run(command, cwd=work, env=self.env, capture_output=True, text=True, timeout=timeout)
        self.steps.append(
            {
                "step": label,
                "command": shlex.join([Path(command[0]).name, *command[1:]]).replace(str(work), "<work>"),
                "returncode": done.returncode,
                "seconds": round(time.time() - start, 1),
                "output_tail": (done.stdout + done.stderr)[-1500:].replace(str(work), "<work>"),
            }
        )
        if done.returncode != 0:
            raise RuntimeError(f"{label} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
        return done


# --------------------------------------------------------------------------------------------- 5: product
#: the product stage's harness run: one UPAO + NSLoRA epoch on wave2d (its data and folders added after the third)
PRODUCT_RUN = [
    "model=na_nslora",
    "trainer=upao",
    "data=wave2d",
    "model.pretrained=shipped_extrap2",
    "model.base=extrap2",
    "trainer.epochs=1",
    "data.batch_size=2",
    "optimizer.lr=0.001",
    "trainer.nslora_schedule=from_start",
    "trainer.max_rollout_steps=2",
    "data.max_rollout_steps=3",
    "trainer.rollout_val_frequency=1000",
    "trainer.short_validation_length=2",
    "trainer.progress=false",
    "auto_resume=false",
]


def run_facts(lines: list[dict]) -> dict:
    """Where the product's run computed and what its validations said, from its ``metrics.jsonl`` lines."""
    validations = [line for line in lines if "valid" in line]
    return {
        "run_device": lines[0].get("device"),
        "run_device_name": lines[0].get("device_name"),
        "epochs_logged": [line.get("epoch") for line in lines],
        "prior_verdict": validations[0].get("prior_verdict") if validations else None,
        "kept_prior": validations[-1].get("kept_prior") if validations else None,
    }


def stage_product(results: Results, device: torch.device, sizes: Sizes) -> dict:
    # imported by the stage that needs it, as the other stages do: the env stage reports a broken import chain
    from well_upao.harness.metrics_file import read_metrics
    from well_upao.harness.runs import harness_command, run_folders

    work = Path(tempfile.mkdtemp(prefix="gpu_check_product_"))
    base, experiments = work / "datasets", work / "experiments"
    cli = ["well-upao"]
    steps = []
    run = StepRunner(work, base, steps)

    out = {"steps": steps}
    try:
        generate = [*cli, "generate-exact", "--pde", "wave2d", "--out", str(base), "--quiet"]
        generate += ["--n-traj", str(sizes.product_traj), "--resolution", str(sizes.product_resolution)]
        generate += ["--n-steps", str(sizes.product_steps), "--time-dtype", "float32"]  # as the Well's files store it
        run("generate", generate, timeout=300)
        places = [f"data.well_base_path={base}", f"experiment_dir={experiments}"]
        run("train", harness_command([*PRODUCT_RUN[:3], *places, *PRODUCT_RUN[3:]]), timeout=600)
        (folder,) = run_folders(experiments)
        out |= run_facts(read_metrics(folder))
        evaluation = work / "evaluation"
        done = run(
            "evaluate",
            [*cli, "evaluate", str(folder), "--device", "auto", "--out", str(evaluation), "--rollout-steps", "3"],
            timeout=600,
        )
        out["table"] = done.stdout.split("\nwrote ")[0].replace(str(work), "<work>")[-6000:]
        (json_path,) = sorted(evaluation.glob("*.json"))
        scores = json.loads(json_path.read_text())["scores"]
        out["rows"] = [
            {
                "name": s["name"],
                "mean_paper_vrmse": statistics.fmean(s["one_step_vrmse_paper"].values()),
                "device": s.get("notes", {}).get("device", "cpu"),
                "ms_per_prediction": 1e3 * s["seconds_per_prediction"],
            }
            for s in scores
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# --------------------------------------------------------------------------------------------- 6: rollout
#: the two harness runs of the rollout stage: UPAO and its supervised counterpart, both K = 4 (issue 41)
ROLLOUT_RUNS = {
    "upao_4step": [
        "model=na_nslora",
        "trainer=upao",
        "trainer.nslora_schedule=from_start",
        "trainer.rollout_vrmse_steps=12",
    ],
    "supervised_4step": ["model=na_lora", "trainer=shifted"],
}


def rollout_cost(base: Path, work: Path, steps: int, pushforward: bool, batch: int, device, repeats: int) -> dict:
    """One K-step UPAO loss on the device (``benchmarks/performance/rollout_memory.measure``, the harness's own
    constructors): the bytes autograd saves for its backward (device independent: the CPU report's column), the peak
    memory the forward + backward adds on the device, and the median forward + backward time (CUDA events). The trainer
    sits where the harness puts it (CUDA when present, whatever ``--device`` says): ``ran_on`` records where."""
    from performance.rollout_memory import measure

    def timing(step, n: int) -> float:
        return median_seconds(step, device, repeats=n, warmup=1)

    row = measure(base, work, steps, pushforward, batch, repeats, timing=timing)
    return {"rollout_steps": steps, "pushforward": pushforward, "batch": batch, "saved_bytes": row["saved_bytes"],
            "peak_added_bytes": row["peak_added_bytes"], "step_s": row["step_seconds"], "repeats": repeats,
            "ran_on": row["device"]}  # fmt: skip


def rollout_overrides(row: list[str], base: Path, experiments: Path, sizes: Sizes) -> list[str]:
    """One K = 4 harness run of the rollout stage (``ROLLOUT_RUNS``) on the wave2d set at ``base``."""
    overrides = [*row, "trainer.rollout_steps=4", "data=wave2d", f"data.well_base_path={base}"]
    overrides += [f"experiment_dir={experiments}", "model.pretrained=shipped_extrap2", "model.base=extrap2"]
    overrides += ["optimizer.lr=1e-3", "data.n_steps_input=8", "data.min_dt_stride=1", "data.max_dt_stride=1"]
    overrides += ["data.batch_size=4", "trainer.epochs=1", f"trainer.epoch_steps={sizes.rollout_train_steps}"]
    overrides += ["trainer.warmup_steps=5", "trainer.max_rollout_steps=2", "data.max_rollout_steps=30"]
    overrides += ["trainer.rollout_val_frequency=100000", "trainer.short_validation_length=2"]
    return [*overrides, "trainer.progress=false", "auto_resume=false", "+seed=0"]


def last_validation(lines: list[dict]) -> dict:
    """Where a rollout run computed and its last validation's facts, from its ``metrics.jsonl`` lines."""
    last = [line for line in lines if "valid" in line][-1]
    return {
        "device": lines[0].get("device"),
        "device_name": lines[0].get("device_name"),
        "steps": last.get("step"),
        "seconds": last.get("seconds"),
        "valid_rollout_6_12": last.get("valid_rollout_VRMSE_6:12"),
        "prior_rollout_6_12": last.get("valid_prior_rollout_VRMSE_6:12"),
        "kept_prior": last.get("kept_prior"),
    }


def stage_rollout(results: Results, device: torch.device, sizes: Sizes) -> dict:
    """Issue 41 on the device: what a K-step UPAO step costs (K = 1, 2, 4, with and without pushforward, at each
    of ``sizes.rollout_settings``), then K = 4 UPAO and supervised K = 4 through the harness on one wave2d set
    of ``sizes.rollout_frames`` steps at stride 1 and ``well-upao evaluate`` of both: one-step, 6:12 and 13:30."""
    from performance.rollout_memory import CASES

    from well_upao.harness.metrics_file import read_metrics
    from well_upao.harness.runs import harness_command, run_folders

    work = Path(tempfile.mkdtemp(prefix="gpu_check_rollout_"))
    steps: list[dict] = []
    out: dict = {"costs": [], "steps": steps, "runs": {}}
    previous_base = os.environ.get("WELL_BASE_PATH")
    try:
        for resolution, batch in sizes.rollout_settings:
            base = work / f"datasets_{resolution}"
            generate = ["well-upao", "generate-exact", "--pde", "wave2d", "--out", str(base), "--quiet"]
            generate += ["--n-traj", str(sizes.product_traj), "--resolution", str(resolution)]
            generate += ["--n-steps", str(sizes.rollout_frames), "--time-dtype", "float32"]
            StepRunner(work, base, steps)(f"generate {resolution}^2", generate, timeout=300)
            for k, pushforward in CASES:
                row = rollout_cost(base, work, k, pushforward, batch, device, sizes.rollout_repeats)
                out["costs"].append({"resolution": resolution, **row})
                results.data["stages"]["rollout"] = {"status": "running", **out}  # kept if the machine is lost
                results.write()
        base = work / f"datasets_{sizes.rollout_settings[0][0]}"
        run = StepRunner(work, base, steps)
        folders = {}
        for name, row in ROLLOUT_RUNS.items():
            experiments = work / "experiments" / name
            run(f"train {name}", harness_command(rollout_overrides(row, base, experiments, sizes)), timeout=600)
            (folder,) = run_folders(experiments)
            folders[name] = folder
            out["runs"][name] = last_validation(read_metrics(folder))
        evaluation = work / "evaluation"
        labelled = [f"{name}={folder}" for name, folder in folders.items()]
        done = run("evaluate", ["well-upao", "evaluate", *labelled, "--device", "auto", "--out", str(evaluation)], 600)
        out["table"] = done.stdout.split("\nwrote ")[0].replace(str(work), "<work>")[-8000:]
        (json_path,) = sorted(evaluation.glob("*.json"))
        evaluated = json.loads(json_path.read_text())
        out["rollout_steps_run"] = evaluated.get("rollout_steps_run")
        out["rollout_starts"] = evaluated.get("rollout_starts")
        out["rows"] = [
            {
                "name": s["name"],
                "one_step": statistics.fmean(s["one_step_vrmse_paper"].values()),
                "windows": s.get("rollout_windows", {}),
                "device": s.get("notes", {}).get("device", "cpu"),
                "ms_per_prediction": 1e3 * s["seconds_per_prediction"],
            }
            for s in evaluated["scores"]
        ]
    finally:
        if previous_base is None:
            os.environ.pop("WELL_BASE_PATH", None)
        else:
            os.environ["WELL_BASE_PATH"] = previous_base
        shutil.rmtree(work, ignore_errors=True)
    return out
