"""One prepared device call for the foundation backbone pretrained across lent GPU sessions (issue 50).

A lent session gets about 15 minutes of device time, starts included, so the paper's pretraining is many calls of
at most about 6 minutes each (a rerun fits), each resuming from the artifact the last one left
(``well_upao.models.resume``: bf16 weights, the step, the schedule's total, the next corpus seed, one entry per
call). Two stages:

* ``profile`` (the first call, about 2 minutes): seconds to simulate one trajectory of each corpus family at the call's
  sizes (all families at once, as a call generates them); seconds per bf16 training step of the candidate presets at a
  few batch sizes on each family's shape; the product's neighborhood-attention backends (``tiles``, ``flex``) and dense
  SDPA at the new token grids (and the backends' largest difference), and the rows of
  ``benchmarks/performance/attention_backends.py`` at the presets' grids in fp32 and bf16 (issue 62's GPU rows);
  Newton-Schulz against SVD orthogonalisation (``benchmarks/performance/ns_vs_svd.py``, timings synchronised with the
  device). Writes ``profile.json``: the sizes of the training calls come from it (``--sizing``).
* ``train``: generates a fresh corpus on the device's cores with seeds that depend on the call (the record's
  ``data_seed``), in at most a quarter of the call; trains the backbone from the artifact (or from scratch on the
  first call) for the rest under bf16 autocast (a stated deviation from the paper's fp32), on the cosine schedule
  whose total the first call fixed (``--schedule-steps``), restarting AdamW's moments with a short re-warm;
  validates on each family's held-out split against persistence, extrap1, extrap2 and the solver where it applies
  (one step and the 6:12 rollout window); writes the new artifact and ``call_record.json`` (within the device's
  return limits: 8 files, 16 MiB each).

``--dry-run`` rehearses either stage on the CPU in seconds (tiny grids, a few trajectories, the ``tiny`` preset
with one layer, a few steps); ``tests/test_foundation_call.py`` runs both in the default suite.

On a lent machine, from this checkout with the wheels of ``benchmarks/device/gpu_wheels.py`` carried (``.gpu_wheels``),
as ``reports/gpu.md`` runs the GPU check:

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-requires-python \\
        --find-links .gpu_wheels/build --target /tmp/site .gpu_wheels/*.whl . && export PYTHONPATH=/tmp/site
    python3 benchmarks/device/foundation_call.py profile --out $OUT
    python3 benchmarks/device/foundation_call.py train --artifact well_upao/weights/na_small_foundation.pt \\
        --sizing reports/foundation_profile.json --minutes 6 --out $OUT

A call returns the artifact in parts of at most 16 MiB (``<name>.part0``, ...) and ``call_record.json``, whose
``join`` line puts the parts back together (its ``artifact_sha256`` checks the result).

Corpus deviations from the paper's PDEBench subsets (its dataset table): our own solvers of the six families
(``well-upao generate-pretrain``), at sizes a call can make: 2D sets at 128^2 (incompressible NS: PDEBench 512^2),
1D CFD at 512 cells (PDEBench 1024: a viscous time-step limit), 3D CFD at 32^3 (PDEBench 64^3); frames as the
paper's (21 for the CFD sets and incompressible NS, 101 for shallow water and diffusion-reaction).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages


#: corpus family -> (resolution per axis, stored frames) of a device call (see the module docstring)
CALL_SIZES = {
    "diffusion_reaction_2d": (128, 101),
    "shallow_water_2d": (128, 101),
    "incompressible_ns_forced_2d": (128, 21),
    "compressible_ns_1d": (512, 21),
    "compressible_ns_2d": (128, 21),
    "compressible_ns_3d": (32, 21),
}
#: the CPU rehearsal's sizes: 21 frames hold a history of 8 and the 12 steps of the 6:12 window
DRY_SIZES = {name: ({1: 32, 2: 16, 3: 8}[dims], 21) for name, dims in (
    ("diffusion_reaction_2d", 2), ("shallow_water_2d", 2), ("incompressible_ns_forced_2d", 2),
    ("compressible_ns_1d", 1), ("compressible_ns_2d", 2), ("compressible_ns_3d", 3),
)}  # fmt: skip
#: seconds to simulate one trajectory at the call sizes on one core, before a profile measured them (issue 50's
#: estimates, the slow end where it gives a range; 3D CFD at 32^3: 9 s measured here): sizes a training call
#: that has no profile
DEFAULT_SECONDS_PER_TRAJECTORY = {
    "diffusion_reaction_2d": 9.0,
    "shallow_water_2d": 5.0,
    "incompressible_ns_forced_2d": 28.0,
    "compressible_ns_1d": 60.0,
    "compressible_ns_2d": 43.0,
    "compressible_ns_3d": 20.0,
}
HISTORY = 8
#: what a device call may return: files under $OUT, each at most this many bytes (and at most 8 of them)
RETURN_FILE_BYTES, RETURN_FILES = 16 * 2**20, 8
#: the Well's rollout window the validation reports beside one step (steps 6 to 11 counted from 0)
WINDOW = (6, 12)
ARTIFACT_DTYPE = "bfloat16"


@dataclass
class CallPlan:
    """What one call does, decided before it starts (``call_record.json`` holds it)."""

    sizes: dict[str, tuple[int, int]]
    preset: str
    layers: int | None
    batch_size: int
    minutes: float
    device: str
    dry_run: bool
    #: the neighborhood-attention backend the train stage runs (the model card says which path trained)
    attention_backend: str = "auto"

    @property
    def generation_seconds(self) -> float:
        return 60.0 * self.minutes / 4  # at most a quarter of the call

    @property
    def amp(self) -> bool:
        return self.device.startswith("cuda")


def plan_of(args: argparse.Namespace) -> CallPlan:
    device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    if args.dry_run:
        return CallPlan(DRY_SIZES, "tiny", 1, 2, args.minutes, device, True, args.attention_backend)
    return CallPlan(CALL_SIZES, args.preset, None, args.batch_size, args.minutes, device, False, args.attention_backend)


# ---------------------------------------------------------------------------- corpus
def generate_family(job: tuple) -> dict:
    """One family's trajectories (a worker process): ``(family, base, n_traj, resolution, frames, seed, threads)``
    -> what was made and how long it took."""
    family, base, n_traj, resolution, frames, seed, threads = job
    torch.set_num_threads(threads)
    from well_upao.data.generate import GenerationRequest, generate_dataset

    start = time.perf_counter()
    request = GenerationRequest(
        pde=family, out=Path(base), n_traj=n_traj, resolution=resolution, n_steps=frames, seed=seed,
        valid_fraction=max(0.1, 1.5 / n_traj), overwrite=True,
    )  # fmt: skip
    summary = generate_dataset(request, progress=False)
    seconds = time.perf_counter() - start
    return {
        "family": family, "n_traj": n_traj, "splits": summary.split_sizes, "seconds": seconds,
        "seconds_per_trajectory": seconds / n_traj, "resolution": resolution, "frames": frames, "seed": seed,
    }  # fmt: skip


def generate_corpus(jobs: list[tuple], workers: int) -> list[dict]:
    """Every family's job at once on ``workers`` processes (spawned: torch is not fork-safe with threads)."""
    import multiprocessing

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(generate_family, jobs))


def trajectories_for(plan: CallPlan, seconds_per_trajectory: dict[str, float], threads: int) -> dict[str, int]:
    """Trajectories per family that fit the call's generation budget (``threads`` cores each, taken as a speed-up
    of ``sqrt(threads)``: the solvers are partly serial), at least 3 (two to train on, one held out)."""
    if plan.dry_run:
        return dict.fromkeys(plan.sizes, 3)
    budget = plan.generation_seconds * math.sqrt(threads)
    return {name: max(3, int(budget // seconds_per_trajectory[name])) for name in plan.sizes}


# ---------------------------------------------------------------------------- profile
def step_seconds(preset: str, layers: int | None, dims: int, resolution: int, batch: int, device: str, steps: int):
    """Seconds per optimizer step (forward, shifted MSE, backward, AdamW) of a backbone on random frames of one
    dimensionality, bf16 autocast on CUDA, after one warm-up step; ``None`` when it does not fit in memory."""
    from well_upao.models.na_transformer import NATransformer

    torch.manual_seed(0)
    config = {"preset": preset, "channel_slots": [*[0, 1, 2][:dims], 4], "dims": (dims,)}
    model = NATransformer(**config, **({"layers": layers} if layers else {})).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    frames = torch.zeros(batch, HISTORY + 1, *([resolution] * dims), 18, device=device)
    frames[..., config["channel_slots"]] = torch.randn(batch, HISTORY + 1, *([resolution] * dims), dims + 1,
                                                        device=device)  # fmt: skip

    def step():
        with torch.autocast(device.split(":")[0], enabled=device.startswith("cuda"), dtype=torch.bfloat16):
            predicted = model.forward_sequence(frames[:, :-1])
            loss = (predicted.float() - frames[:, 1:]).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    wait = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    try:
        step()
        wait()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        wait()
    except torch.OutOfMemoryError:
        return None
    return (time.perf_counter() - start) / steps


def attention_comparison(device: str, token_grids: list[tuple[int, ...]], heads: int, head_dim: int) -> list[dict]:
    """The product's neighborhood-attention backends (``tiles``, ``flex``) and dense SDPA on each token grid (time
    first, causal, kernel 5): seconds per call and the largest difference between the two backends' outputs."""
    return [compare_attention(device, grid, heads, head_dim) for grid in token_grids]


def compare_attention(device: str, grid: tuple[int, ...], heads: int, head_dim: int) -> dict:
    """:func:`attention_comparison` on one token grid, through ``benchmarks/performance/attention_backends.py``'s calls
    of the product's backends: forward + backward on CUDA; forward only on the CPU (FlexAttention has no CPU backward,
    and its eager forward stands in for the compiled one, which takes tens of seconds to build there)."""
    from performance.attention_backends import inputs, runner
    from performance.attention_backends import timed as timed_call

    cuda = device.startswith("cuda")
    names = {"tiles": "tiles", "flex": "flex" if cuda else "flex eager", "dense": "dense"}
    row = {"token_grid": list(grid), "kernel": [min(5, n) for n in grid], "backward": cuda}
    outputs = {}
    for key, backend in names.items():
        call = runner(backend, grid, device)
        try:
            with torch.no_grad():
                outputs[key] = call(*inputs(grid, heads, head_dim, 1, torch.float32, device, False))
            row[f"{key}_s"] = timed_call(call, inputs(grid, heads, head_dim, 1, torch.float32, device, cuda), cuda,
                                         device, 5)[1]  # fmt: skip
        except Exception as error:  # FlexAttention is new and device-dependent: record why it did not run
            row[f"{key}_unavailable"] = f"{type(error).__name__}: {str(error)[:200]}"
    if "tiles" in outputs and "flex" in outputs:
        row["max_difference"] = float((outputs["flex"] - outputs["tiles"]).abs().max())
    else:
        row["flex_unavailable"] = row.get("flex_unavailable", "not run")
    return row


def run_profile(plan: CallPlan, out: Path, work: Path, workers: int) -> dict:
    started = time.perf_counter()
    base = work / "profile_corpus"
    threads = max(1, workers // len(plan.sizes))
    jobs = [(name, str(base), 3, res, frames, 1, threads) for name, (res, frames) in plan.sizes.items()]
    generation = generate_corpus(jobs, min(workers, len(jobs)))
    from well_upao.families.simulated import SIMULATED_FAMILIES

    presets = ["tiny"] if plan.dry_run else ["small", "tiny"]
    batches = [2] if plan.dry_run else [8, 32, 64]
    steps = []
    for name, (resolution, _) in plan.sizes.items():
        dims = SIMULATED_FAMILIES[name].n_spatial_dims
        for preset in presets:
            for batch in batches:
                seconds = step_seconds(
                    preset, plan.layers, dims, resolution, batch, plan.device, 2 if plan.dry_run else 5
                )
                steps.append({"family": name, "preset": preset, "batch": batch, "seconds_per_step": seconds})
    patch = 8 if plan.dry_run else 16
    grids = sorted(
        {
            (HISTORY, *([max(4, res // patch)] * SIMULATED_FAMILIES[n].n_spatial_dims))
            for n, (res, _) in plan.sizes.items()
        }
    )
    attention = attention_comparison(plan.device, grids, 2 if plan.dry_run else 6, 32)
    from performance.attention_backends import BACKENDS, GRIDS
    from performance.attention_backends import run as backend_rows

    cuda = plan.device.startswith("cuda")
    backends = backend_rows(
        plan.device, ["fp32", "bf16"] if cuda else ["fp32"], ["tiny"] if plan.dry_run else list(GRIDS),
        8 if cuda else 1, 1 if plan.dry_run else 5, BACKENDS if cuda else ("tiles", "flex eager", "dense"),
    )  # fmt: skip
    ns = []
    if plan.device.startswith("cuda"):
        from performance.ns_vs_svd import layer_timings

        ns = layer_timings(torch.device(plan.device), repeats=5, tokens=1024)
    profile = {
        "stage": "profile", "device": device_name(plan.device), "dry_run": plan.dry_run, "workers": workers,
        "threads_per_family": threads, "sizes": plan.sizes, "generation": generation, "train_steps": steps,
        "attention": attention, "attention_backends": backends, "ns_vs_svd": ns,
        "seconds": time.perf_counter() - started,
    }  # fmt: skip
    write_json(out / "profile.json", profile)
    return profile


# ---------------------------------------------------------------------------- train
def run_train(plan: CallPlan, args: argparse.Namespace, out: Path, work: Path, workers: int) -> dict:
    from well_upao.models.resume import first_record, read_resume_record, write_resume_artifact

    started = time.perf_counter()
    artifact = args.artifact if args.artifact and args.artifact.is_file() else None
    record = read_resume_record(artifact) if artifact else first_record(args.schedule_steps, args.first_seed)
    corpus = work / "corpus"
    threads = max(1, workers // len(plan.sizes))
    seconds = dict(DEFAULT_SECONDS_PER_TRAJECTORY)
    if args.sizing:  # a profile's measured seconds per trajectory (already at ``threads`` cores)
        for entry in json.loads(args.sizing.read_text())["generation"]:
            seconds[entry["family"]] = entry["seconds_per_trajectory"] * math.sqrt(threads)
    counts = trajectories_for(plan, seconds, threads)
    jobs = [(n, str(corpus), counts[n], r, f, record.data_seed, threads) for n, (r, f) in plan.sizes.items()]
    generation = generate_corpus(jobs, min(workers, len(jobs)))
    generated = time.perf_counter() - started

    reserve = 0.5 if plan.dry_run else 1.0  # minutes kept for validation and writing
    train_minutes = max(0.05, plan.minutes - generated / 60 - reserve)
    run = work / "run"
    steps_done = train(plan, corpus, run, artifact, record, train_minutes, args.rewarm_steps, args.max_steps)
    trained = time.perf_counter() - started - generated

    validation = validate(plan, corpus, run / "recent.pt", args.max_trajectories)
    validated = time.perf_counter() - started - generated - trained
    call = {
        "device": device_name(plan.device), "minutes": round((time.perf_counter() - started) / 60, 2),
        "steps": steps_done, "clips": steps_done * plan.batch_size, "preset": plan.preset, "amp": plan.amp,
        "attention_backend": plan.attention_backend,
        "corpus": {e["family"]: {"n_traj": e["n_traj"], "seed": e["seed"]} for e in generation},
    }  # fmt: skip
    new_record = record.after_call(steps_done, call)
    name = args.artifact.name if args.artifact else f"na_{plan.preset}_foundation.pt"
    size = write_resume_artifact(run / "recent.pt", work / name, new_record, ARTIFACT_DTYPE)
    parts = split_for_return(work / name, out)
    summary = {
        "stage": "train", "dry_run": plan.dry_run, "device": call["device"], "preset": plan.preset,
        "attention_backend": plan.attention_backend, "batch_size": plan.batch_size, "generation": generation,
        "generation_seconds": generated,
        "training_seconds": trained, "validation_seconds": validated, "steps": steps_done,
        "start_step": record.step, "schedule_steps": record.schedule_steps, "artifact": name,
        "artifact_bytes": size, "artifact_sha256": sha256(work / name), "artifact_parts": parts,
        "join": f"cat {' '.join(parts)} > {name}" if len(parts) > 1 else f"mv {parts[0]} {name}",
        "validation": validation, "seconds": time.perf_counter() - started,
    }  # fmt: skip
    write_json(out / "call_record.json", summary)
    return summary


def train(plan, corpus: Path, run: Path, artifact, record, minutes: float, rewarm: int, max_steps) -> int:
    """The pretraining loop (``python -m well_upao.train --config-name pretrain``) in this process, from the
    artifact's weights at its place in the schedule; returns the optimizer steps it took."""
    from hydra import compose, initialize_config_module

    from well_upao.models.checkpoint import read_checkpoint
    from well_upao.train import Distributed, run_pretraining

    overrides = [
        f"data.well_base_path={corpus}", f"data.datasets=[{','.join(plan.sizes)}]",
        f"data.batch_size={plan.batch_size}", "data.validation_trajectories=1",
        f"data.clips_per_dataset={8 if plan.dry_run else 4096}", f"data.seed={record.data_seed}",
        f"model.preset={plan.preset}", f"model.pretrained={artifact or 'null'}",
        f"trainer.output_dir={run}", "trainer.epochs=1000", f"trainer.max_minutes={minutes:.3f}",
        f"trainer.schedule_steps={record.schedule_steps}", f"trainer.start_step={record.step}",
        f"trainer.rewarm_steps={0 if artifact is None else rewarm}", f"trainer.enable_amp={str(plan.amp).lower()}",
        "trainer.progress=false", f"model.attention_backend={plan.attention_backend}",
    ]  # fmt: skip
    if plan.layers:
        overrides.append(f"model.layers={plan.layers}")
    if max_steps:
        overrides.append(f"trainer.max_steps={max_steps}")
    os.environ.setdefault("WANDB_MODE", "disabled")
    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        cfg = compose(config_name="pretrain", overrides=overrides)
    run_pretraining(cfg, Distributed(0, 1, 0))
    return int(read_checkpoint(run / "recent.pt")["train"].get("global_step", 0))


def validate(plan: CallPlan, corpus: Path, checkpoint: Path, max_trajectories: int) -> list[dict]:
    """Each family's held-out split: the backbone beside persistence, extrap1, extrap2 and the solver where it
    applies, one step (the paper's VRMSE) and the Well's 6:12 rollout window."""
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
    from well_upao.harness.model_factory import na_transformer
    from well_upao.models.checkpoint import read_checkpoint
    from well_upao.predict.predictors import BackboneModel

    config = read_checkpoint(checkpoint)["model"]["config"]
    rows = []
    for name in plan.sizes:
        model = na_transformer(
            preset=plan.preset, dataset_name=name, well_base_path=str(corpus), pretrained=str(checkpoint),
            **({"layers": config["layers"]} if plan.layers else {}),
        )  # fmt: skip
        request = EvaluationRequest(corpus, name, history=HISTORY, rollout_steps=WINDOW[1], rollout_starts=1,
                                    max_trajectories=max_trajectories, out=None, progress=False)  # fmt: skip
        backbone = BackboneModel("backbone", model)
        backbone.place(plan.device)
        evaluation = run_evaluation(request, models=[backbone]).evaluation
        for score in evaluation.scores:
            steps = score.rollout_vrmse_well
            window = steps[WINDOW[0] : WINDOW[1]] if len(steps) >= WINDOW[1] else []
            rows.append({
                "family": name, "row": score.name, "one_step_paper": score.mean_paper, "one_step_well": score.mean_well,
                "rollout_6_12_well": sum(window) / len(window) if window else None,
            })  # fmt: skip
    return rows


# ---------------------------------------------------------------------------- helpers and entry point
def device_name(device: str) -> str:
    return torch.cuda.get_device_name(device) if device.startswith("cuda") else f"cpu ({os.cpu_count()} cores)"


def split_for_return(path: Path, out: Path, limit: int = RETURN_FILE_BYTES) -> list[str]:
    """``path`` copied to ``out`` in byte parts of at most ``limit`` bytes (``<name>.part0``, ...; one part when it
    fits), the device's return limit per file; ``cat`` of the parts in order is the file (``call_record.json`` gives
    the command and the whole file's sha256)."""
    data = path.read_bytes()
    count = max(1, math.ceil(len(data) / limit))
    if count > RETURN_FILES - 1:  # call_record.json takes one of the returned files
        raise ValueError(f"{path.name} ({len(data)} bytes) needs {count} parts, more than a call returns")
    names = [f"{path.name}.part{i}" for i in range(count)]
    for i, part in enumerate(names):
        tmp = out / f".{part}.tmp"
        tmp.write_bytes(data[i * limit : (i + 1) * limit])
        os.replace(tmp, out / part)
    return names


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1, default=str))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=("profile", "train"))
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(os.environ.get("OUT", "foundation_call")),
        help="what the call returns: the artifact's parts and the JSON record ($OUT on the device)",
    )
    parser.add_argument("--work", type=Path, help="the corpus and the run (default: a temporary folder)")
    parser.add_argument("--dry-run", action="store_true", help="rehearse on the CPU in seconds (tiny sizes)")
    parser.add_argument("--minutes", type=float, default=6.0, help="the whole call's budget (train stage)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes generating the corpus")
    parser.add_argument("--preset", default="small", help="the backbone preset (train stage)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--attention-backend", default="auto", choices=["auto", "tiles", "flex", "natten"],
        help="neighborhood-attention backend of the train stage: the one the profile's attention rows find fastest "
        "at the training grids in bf16 (auto: the product's rule, reports/attention_backends.md)",
    )  # fmt: skip
    parser.add_argument("--artifact", type=Path, help="the resume artifact to start from (absent: the first call)")
    parser.add_argument("--sizing", type=Path, help="a profile.json whose generation times size the corpus")
    parser.add_argument("--schedule-steps", type=int, default=60_000, help="the cosine's total (first call only)")
    parser.add_argument("--first-seed", type=int, default=1000, help="the first call's corpus seed")
    parser.add_argument("--rewarm-steps", type=int, default=50, help="steps re-warming fresh optimizer moments")
    parser.add_argument("--max-steps", type=int, help="stop after this many optimizer steps (rehearsals)")
    parser.add_argument("--max-trajectories", type=int, default=2, help="held-out trajectories validated per family")
    args = parser.parse_args(argv)
    plan = plan_of(args)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="foundation_call_") as scratch:
        work = args.work or Path(scratch)
        if args.stage == "profile":
            profile = run_profile(plan, args.out, work, args.workers)
            print(f"profile on {profile['device']} in {profile['seconds']:.0f} s: {args.out / 'profile.json'}")
            return 0
        summary = run_train(plan, args, args.out, work, args.workers)
    print(
        f"call on {summary['device']}: {summary['steps']} steps from step {summary['start_step']} of "
        f"{summary['schedule_steps']} in {summary['seconds']:.0f} s; {summary['artifact']} "
        f"({summary['artifact_bytes'] / 2**20:.1f} MiB; join: {summary['join']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
