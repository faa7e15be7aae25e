"""UPAO + NSLoRA runs on the held-out sets, trained as a user trains on their own data (issue 75's model rows).

One run per held-out set (``reports/heldout_sets.md``: made by their own solvers, registered by
``benchmarks/studies/heldout_pdes.py`` as a user registers a system): the quickstart's recipe (the shipped backbone
``shipped_extrap2``, NSLoRA from the start, base ``extrap2``, learning rate 1e-3, batch 4, 6 epochs, the residual's
derivative and time scheme chosen by ``auto``) at stride 1 through The Well's harness, each epoch cut at
``EPOCH_STEPS`` optimizer steps (a held-out set's 12 training trajectories of 128 frames hold about 360 batches an
epoch; the quickstart's epochs hold about 23), the docs' recipe for a user's PDE (docs/your-data.md) otherwise:

    python -m the_well.benchmark.train model=na_nslora trainer=upao 'data.imports=[heldout_pdes]'
        data.well_dataset_name=DATASET ...

No label of the interior is read: the run selects its model by its label-free criterion. Its row in
``well-upao evaluate`` is named ``UPAO_ROW``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from well_upao.harness import runs
from well_upao.quickstart import QuickstartConfig, harness_command

ROOT = Path(__file__).resolve().parents[2]
UPAO_ROW = "UPAO + NSLoRA (no labels)"
EPOCHS, EPOCH_STEPS = 6, 24


def upao_overrides(dataset: str, base: Path, experiments: Path) -> list[str]:
    """The harness's overrides of one held-out run: the quickstart's UPAO run (``well_upao.quickstart.harness_command``
    at stride 1) on the user's dataset instead of a data config (docs/your-data.md), epochs cut at ``EPOCH_STEPS``."""
    config = QuickstartConfig(pde=dataset, stride=1, epochs=EPOCHS)
    recipe = harness_command(config, "na_nslora", "upao", base, experiments)[3:]  # after ``python -m <module>``
    user_data = [
        "data.imports=[heldout_pdes]",
        f"data.well_dataset_name={dataset}",
        "trainer.derivative=auto",
        "trainer.time_scheme=auto",
        f"trainer.epoch_steps={EPOCH_STEPS}",
    ]
    return [o for o in recipe if not o.startswith("data=")] + user_data


def environment(base: Path) -> dict:
    """The user module on the path, the base path, one thread (the study shares its cores), wandb off."""
    return dict(
        os.environ,
        PYTHONPATH=str(ROOT / "benchmarks" / "studies"),
        WELL_BASE_PATH=str(base),
        WANDB_MODE="disabled",
        OMP_NUM_THREADS="1",
    )


def upao_run(dataset: str, base: Path, out: Path) -> Path:
    """The held-out set's UPAO run under ``out/upao/<dataset>`` (trained once; its log beside it): its run folder."""
    base, out = base.resolve(), out.resolve()  # the run starts in ``out``
    experiments = out / "upao" / dataset
    done = runs.latest_run(experiments)
    if done is not None:
        try:
            runs.find_checkpoint(done)
            return done
        except FileNotFoundError:
            pass  # an unfinished run: train again (the harness numbers the new one after it)
    experiments.mkdir(parents=True, exist_ok=True)
    command = runs.harness_command(upao_overrides(dataset, base, experiments), python=sys.executable)
    with open(experiments.with_suffix(".log"), "w") as log:
        finished = subprocess.run(command, env=environment(base), stdout=log, stderr=subprocess.STDOUT, cwd=out)
    run = runs.latest_run(experiments)
    if finished.returncode != 0 or run is None:
        raise RuntimeError(f"the UPAO run on {dataset} exited {finished.returncode}; see {experiments}.log")
    return run
