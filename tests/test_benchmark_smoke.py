"""The scripts whose reports are not remade often, kept runnable: each is started as ``benchmarks/README.md`` says
(``python benchmarks/<group>/<script>.py``, from the repository root, a fresh interpreter) at a tiny size, into a
temporary folder, and what its main path makes is checked for a property it must have (a regenerated table equal to
the committed one, more memory kept for a longer rollout, a row per module). They take 20 s to a few minutes each:
``slow`` (``.venv/bin/pytest -m slow tests/test_benchmark_smoke.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def script(name: str, *args: str, timeout: float = 900, env: dict[str, str] | None = None) -> str:
    """Run ``benchmarks/<name>.py args`` from the repository root (``env``: added to the environment); its standard
    output (a failure shows its standard error)."""
    done = subprocess.run(
        [sys.executable, f"benchmarks/{name}.py", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"benchmarks/{name}.py {' '.join(args)}:\n{done.stderr[-3000:]}"
    return done.stdout


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]


def test_upao_loss_cost_times_the_objective_against_the_backbone():
    out = script("performance/upao_loss_cost", "--pde", "advdiff2d", "--resolution", "16", "--threads", "1")
    (row,) = [r for r in table_rows(out) if r[0] == "advdiff2d"]
    model_ms, objective_ms, ratio = float(row[3]), float(row[4]), float(row[5].rstrip("%"))
    assert row[2] == "1"  # advdiff2d: one sub-equation
    assert ratio == pytest.approx(100 * objective_ms / model_ms, rel=0.05, abs=0.1)


def test_ns_vs_svd_times_every_module_of_the_paper():
    out = script("performance/ns_vs_svd", "--tokens", "8", "--repeats", "1", "--threads", "1")
    modules = {r[0] for r in table_rows(out)} & {"qkv", "proj", "gate_proj", "up_proj", "down_proj"}
    assert len(modules) == 5
    assert "12 blocks x the 5 module types" in out and "tiny preset, full forward" in out


def test_generation_is_timed_against_writing_zeros_and_per_stage():
    throughput = script("performance/generation_throughput", "--pde", "adv3d", "--repeats", "1")
    (row,) = [r for r in table_rows(throughput) if r[0] == "adv3d"]
    generate_s, zeros_s, ratio = float(row[3]), float(row[5]), float(row[6])
    assert ratio == pytest.approx(generate_s / zeros_s, rel=0.02)
    budget = script("performance/generation_cpu_budget", "--pde", "tg2d", "--repeats", "1")
    (row,) = [r for r in table_rows(budget) if r[0] == "tg2d"]
    assert all(float(cell) > 0 for cell in row[1:])


def test_rollout_memory_keeps_more_for_longer_rollouts(tmp_path):
    arguments = f"--resolution 16 --batch-size 1 --repeats 1 --threads 1 --out {tmp_path / 'm.json'}"
    script("performance/rollout_memory", *arguments.split(), "--report", str(tmp_path / "m.md"))
    rows = json.loads((tmp_path / "m.json").read_text())["rows"]
    saved = {(r["rollout_steps"], r["pushforward"]): r["saved_bytes"] for r in rows}
    assert saved[1, False] < saved[2, False] < saved[4, False]
    assert "| 4 | no |" in (tmp_path / "m.md").read_text()


def test_scaling_compares_the_strategies_and_plans_the_paper_preset(tmp_path):
    report = tmp_path / "scaling.md"
    script("performance/scaling", "--resolution", "16", "--steps", "1", "--batch", "1", "--out", str(report))
    rows = table_rows(report.read_text())
    runs = {r[0] for r in rows}
    assert {"1 process", "DDP, 2 processes", "FSDP2, 2 processes"} <= runs


def test_the_dataset_figure_is_a_png(tmp_path):
    script("physics/dataset_figures", "--pdes", "adv1d", "--out", str(tmp_path))
    assert (tmp_path / "adv1d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_replicas_report_runs_quick(tmp_path):
    script("physics/replicas_report", "--quick", "--out", str(tmp_path), timeout=1800)
    text = (tmp_path / "replicas.md").read_text()
    assert text.startswith("# Replicas of The Well's simulated datasets")
    assert "--quick" in text and table_rows(text)


def test_the_gpu_report_is_regenerated_from_the_committed_runs(tmp_path):
    """reports/gpu.md's tables are what gpu_report.py makes from the committed JSON files, in its command's order."""
    committed = (ROOT / "reports" / "gpu.md").read_text()
    command = next(line for line in committed.splitlines() if "benchmarks/device/gpu_report.py" in line)
    runs = command.split("gpu_report.py", 1)[1].split("--out")[0].split()
    script("device/gpu_report", *runs, "--out", str(tmp_path / "gpu.md"))
    assert table_rows((tmp_path / "gpu.md").read_text()) == table_rows(committed.split("## Reading")[0])


def test_the_residual_floor_report_runs_on_chosen_sets(tmp_path):
    script(
        "physics/residual_floor_report", *f"--datasets adv1d wave2d --work {tmp_path / 'data'} --out {tmp_path}".split()
    )
    rows = [r for r in table_rows((tmp_path / "residual_floor.md").read_text()) if r[0] in ("adv1d", "wave2d")]
    assert sorted((r[0], r[1]) for r in rows) == [("adv1d", "1"), ("adv1d", "5"), ("wave2d", "1"), ("wave2d", "5")]
    assert all(sum(cell.startswith("**") for cell in r[2:]) == 1 for r in rows)  # the lowest floor, in bold, once


def test_the_gray_scott_fit_lowers_the_floor_it_fits(tmp_path):
    arguments = f"--resolutions 32 --sets 0 --work {tmp_path / 'data'} --out {tmp_path}"
    script("physics/gray_scott_fit", *arguments.split(), timeout=1800)
    text = (tmp_path / "gray_scott_fit.md").read_text()
    assert "--sets 0" in text.splitlines()[2]  # the command that made it
    fits = [r for r in table_rows(text.split("## Every fit")[1]) if r[2] == "32^2"]
    assert len(fits) == 4  # two diffusivities x two windows of frames
    for fit in fits:
        documented, fitted = (sum(float(v) for v in cell.split(",")) for cell in fit[-2:])
        assert fitted <= documented * (1 + 1e-6), fit  # least squares on the constants cannot raise the residual


def test_the_reproduction_trains_a_row_and_tabulates_it_beside_the_classical_rows(tmp_path):
    report = tmp_path / "reproduction.md"
    arguments = "--study main --datasets advdiff2d --strides 5 --resolution 16 --n-traj 6 --budget-minutes 0.5"
    arguments += f" --threads 1 --out {tmp_path / 'runs'} --report {report}"
    script("studies/reproduce", *arguments.split(), "--rows", "NA UPAO + NSLoRA", timeout=1800)
    names = {r[0] for r in table_rows(report.read_text())}
    assert {"persistence", "extrap1", "extrap2", "NA UPAO + NSLoRA"} <= names


def test_the_reliability_battery_leaves_nothing_behind():
    rows = table_rows(script("quality/reliability_battery", timeout=1800))
    assert len(rows) > 10
    assert {r[-1] for r in rows[1:]} <= {"0", "n/a"}, [r for r in rows[1:] if r[-1] not in ("0", "n/a")]


def test_the_pretraining_reports_and_budget_run_on_a_tiny_corpus(tmp_path):
    """A corpus of every family (4 trajectories at 16 points per axis), a two-step pretraining run, then its report
    and card, the comparison with the shipped backbone, and the step budget of a second configuration at equal
    compute."""
    corpus, run = tmp_path / "corpus", tmp_path / "run"
    env = {"WELL_BASE_PATH": str(corpus), "WANDB_MODE": "disabled"}
    generate = f"generate-pretrain --out {corpus} --n-traj 4 --resolution 16 --n-steps 12 --quiet"
    train = "--config-name pretrain data.clips_per_dataset=2 data.validation_trajectories=1 trainer.epochs=1"
    train += f" trainer.max_steps=2 trainer.output_dir={run} trainer.progress=false"
    for command in (
        [str(Path(sys.executable).parent / "well-upao"), *generate.split()],
        [sys.executable, "-m", "well_upao.train", *train.split()],
    ):
        done = subprocess.run(
            command, cwd=tmp_path, env={**os.environ, **env}, capture_output=True, text=True, timeout=1800
        )
        assert done.returncode == 0, done.stderr[-3000:]
    card, report, shipped = tmp_path / "MODEL_CARD.md", tmp_path / "pretraining.md", tmp_path / "backbone.pt"
    arguments = f"{run} --corpus {corpus} --command tiny --ship {shipped} --card {card} --report {report}"
    script("studies/pretraining_report", *arguments.split(), "--max-trajectories", "1")
    assert "diffusion_reaction_2d" in {r[0] for r in table_rows(report.read_text())} and card.read_text()
    comparison = tmp_path / "comparison.md"
    arguments = f"--corpus {corpus} --datasets diffusion_reaction_2d --max-trajectories 1 --report {comparison}"
    script(
        "studies/pretraining_comparison", *arguments.split(), "--na", "shipped=shipped", "--na", f"tiny run={shipped}"
    )
    assert {"persistence", "shipped", "tiny run"} <= {r[1] for r in table_rows(comparison.read_text())}
    # the candidate: the same backbone predicting from an extrap2 base (PDE-Transformer, the default candidate, needs
    # the [fm] extra)
    arguments = "--reference-steps 10 --steps 1 --candidate pretrain --candidate-overrides model.base=extrap2"
    budget = script("performance/pretraining_budget", *arguments.split(), env=env)
    steps = int(budget.strip().splitlines()[-1].rsplit(":", 1)[1])
    ratio = float(next(line for line in budget.splitlines() if line.startswith("reference / candidate")).split(":")[1])
    assert steps == round(10 * ratio) and steps > 0
