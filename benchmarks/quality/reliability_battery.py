"""The reliability battery: bad inputs and kills, through the installed commands, as a markdown table.

Every case runs in a fresh folder; "left behind" counts the files and folders a failed command left where it was
writing (0 is the promise). Kills are SIGKILL at a moment the case chooses, then the same command again.

    python benchmarks/quality/reliability_battery.py
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
import torch

from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.runs import find_checkpoint, harness_command, latest_run

BIN = Path(sys.executable).parent
CLI = str(BIN / "well-upao")
ROWS: list[tuple[str, str, str, str]] = []


def run(command: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def last_error_line(result: subprocess.CompletedProcess) -> str:
    """The last line of stderr (the first ``problem:`` line of stdout for ``validate``, which reports there)."""
    if not result.stderr.strip():
        return next((line for line in result.stdout.splitlines() if line.startswith("problem:")), "")[:160]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def contents(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def bad_input(case: str, command: list[str], work: Path, target: Path, expected: list[str] | None = None) -> None:
    """A command that must fail with one line and a non-zero exit, leaving ``target`` as ``expected``."""
    result = run(command, work)
    left = [n for n in contents(target) if n not in (expected or [])]
    lines = len([line for line in result.stderr.splitlines() if line.strip()])
    verdict = f"exit {result.returncode}, {lines} line{'s' if lines != 1 else ''}"
    ROWS.append((case, verdict, last_error_line(result), str(len(left))))


def wait_for(condition, process: subprocess.Popen, seconds: float = 300) -> bool:
    deadline = time.time() + seconds
    while process.poll() is None and time.time() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def kill_when(command: list[str], cwd: Path, env: dict, condition) -> bool:
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hit = wait_for(condition, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return hit


def resume_point(path: Path) -> dict | None:
    try:
        return torch.load(path, map_location="cpu", weights_only=False)["train"].get("resume")
    except Exception:
        return None


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = root / "datasets"
        gen = [CLI, "generate-exact", "--quiet"]
        run([*gen, "--pde", "tg2d", "--n-traj", "6", "--resolution", "16", "--n-steps", "12", "--out", str(base)], root)

        # ---- bad inputs of generate-exact
        for case, extra in (
            ("unknown PDE", ["--pde", "heat9d"]),
            ("too few trajectories", ["--pde", "tg2d", "--n-traj", "1"]),
            ("resolution below 4", ["--pde", "tg2d", "--resolution", "2"]),
            ("negative dt", ["--pde", "tg2d", "--dt", "-1"]),
        ):
            work = root / case.replace(" ", "_")
            work.mkdir()
            bad_input(f"generate-exact: {case}", [*gen, *extra, "--out", str(work / "out")], work, work / "out")
        work = root / "under_a_file"
        work.mkdir()
        (work / "file").write_text("x")
        under_file = [*gen, "--pde", "tg2d", "--out", str(work / "file" / "x")]
        bad_input("generate-exact: output under a regular file", under_file, work, work, expected=["file"])
        work = root / "existing"
        shutil.copytree(base / "tg2d", work / "tg2d")
        exists = [*gen, "--pde", "tg2d", "--out", str(work)]
        bad_input("generate-exact: destination exists (no --overwrite)", exists, work, work, expected=["tg2d"])

        # ---- bad datasets and checkpoints
        nan_base = root / "nan"
        shutil.copytree(base, nan_base)
        train_file = sorted((nan_base / "tg2d" / "data" / "train").glob("*.hdf5"))[0]
        with h5py.File(train_file, "r+") as f:
            f["t0_fields"]["pressure"][1, 5, 3, 3] = np.nan
        bad_input("validate: a NaN in a field", [CLI, "validate", str(nan_base / "tg2d")], root, root / "nan_left")
        harness_env = dict(os.environ, WELL_BASE_PATH=str(nan_base), WANDB_MODE="disabled")
        fast = ["model=na", "model.layers=1", "data=tg2d", "data.batch_size=2", "trainer.epochs=1"]
        fast.append("trainer.progress=false")
        work = root / "nan_run"
        work.mkdir()
        result = run(harness_command(fast), work, harness_env)
        message = next((line for line in result.stderr.splitlines() if "non-finite" in line), last_error_line(result))
        ROWS.append(("harness: training on data with a NaN", f"exit {result.returncode}", message[-160:], "n/a"))

        checkpoint = root / "model.pt"
        from well_upao.models.checkpoint import build_payload, save_checkpoint
        from well_upao.models.na_transformer import NATransformer

        save_checkpoint(checkpoint, build_payload(NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=[0])))
        truncated = root / "truncated.pt"
        truncated.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])
        foreign = root / "foreign.pt"
        torch.save({"model_state_dict": {}}, foreign)
        out = root / "export"
        out.mkdir()
        for name, path in (("truncated", truncated), ("foreign", foreign)):
            export = [CLI, "export-backbone", str(path), str(out / "x.pt")]
            bad_input(f"export-backbone: {name} checkpoint", export, root, out)
            evaluate = [CLI, "evaluate", str(path), "--data", "tg2d", "--base-path", str(base), "--out", str(out / "e")]
            bad_input(f"evaluate: {name} checkpoint", [*evaluate, "--quiet"], root, out)
        missing_module = [CLI, "evaluate", "--data", "tg2d", "--imports", "no_such_mod"]
        bad_input("evaluate: --imports of a missing module", missing_module, root, out)
        bad_input("evaluate: no dataset and no run", [CLI, "evaluate"], root, out)

        # ---- kills
        work = root / "gen_kill"
        work.mkdir()
        big = [*gen, "--pde", "burgers1d", "--n-traj", "3000", "--out", str(work)]
        hit = kill_when(big, work, dict(os.environ), lambda: bool(list(work.glob(".burgers1d.partial-*"))))
        half = bool(list(work.glob(".burgers1d.partial-*")))
        run([*gen, "--pde", "burgers1d", "--n-traj", "4", "--out", str(work)], work)
        left = [n for n in contents(work) if n != "burgers1d"]
        outcome = f"killed: {hit}; staging folder until rerun: {half}"
        ROWS.append(("generate-exact SIGKILLed mid-write, then rerun", outcome, "no half dataset", str(len(left))))

        env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
        resumable = [*fast, "data.batch_size=1", "trainer.epochs=3", "trainer.checkpoint_steps=1"]
        resumable += ["trainer.rollout_val_frequency=1000", "trainer.short_validation_length=1"]
        whole, killed = root / "whole", root / "killed"
        whole.mkdir()
        killed.mkdir()
        run(harness_command(resumable), whole, env)

        def mid_epoch() -> bool:
            folder = latest_run(killed / "experiments")
            recent = None if folder is None else folder / "checkpoints" / "recent.pt"
            return recent is not None and recent.is_file() and resume_point(recent) is not None

        hit = kill_when(harness_command(resumable), killed, env, mid_epoch)
        result = run(harness_command(resumable), killed, env)

        def steps(folder: Path) -> tuple[list[int], int]:
            lines = read_metrics(latest_run(folder / "experiments"))
            epochs = [x for x in lines if "train_loss" in x]
            return [x["epoch"] for x in epochs], epochs[-1]["step"]

        (whole_epochs, whole_steps), (killed_epochs, killed_steps) = steps(whole), steps(killed)
        logged = f"epochs logged {killed_epochs} (uninterrupted {whole_epochs}); steps {killed_steps} vs {whole_steps}"
        outcome = f"killed mid-epoch: {hit}; rerun exit {result.returncode}"
        ROWS.append(("harness run SIGKILLed mid-epoch, same command again", outcome, logged, "0"))
        recent = find_checkpoint(killed / "experiments", "recent.pt")
        recent.write_bytes(recent.read_bytes()[:1000])
        result = run(harness_command([*resumable, "trainer.epochs=4"]), killed, env)
        lines = result.stderr.splitlines()
        message = next((line for line in lines if "cannot resume" in line), last_error_line(result))
        ROWS.append(("harness resume from a truncated recent.pt", f"exit {result.returncode}", message[:160], "n/a"))

    print("| case | outcome | message (last line) | left behind |")
    print("|---|---|---|---|")
    for case, outcome, message, left in ROWS:
        print(f"| {case} | {outcome} | {message.replace('|', '/')} | {left} |")


if __name__ == "__main__":
    main()
