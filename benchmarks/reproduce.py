"""The paper's main-table comparison at CPU scale, on the exact 2D datasets (reports/reproduction.md).

For every dataset and time stride: generate the data (64^2 by default), then train each row through The Well's
harness with a wall-clock share of the budget, and evaluate all rows beside the classical baselines:

* classical: persistence, linear / quadratic extrapolation, one step of a numerical solver of the PDE;
* FNO, TFNO, U-Net, CNextU-Net (supervised, ``experiment=<name>``);
* NA supervised LoRA on the shipped pretrained backbone (``model=na_lora trainer=shifted``);
* NA UPAO with LoRA and with NSLoRA on the shipped backbone (``trainer=upao``, no interior labels);
* NA UPAO from scratch (``model=na trainer=upao model.pretrained=null``, full training).

Every row is one command, printed in the report; results go to ``reports/reproduction.md`` (with the paper's
numbers beside ours) and the evaluation JSON/PNG files to ``--out``.

    python benchmarks/reproduce.py --budget-minutes 120 [--datasets wave2d advdiff2d] [--strides 1 5]

``--study regimes`` maps where adaptation pays: UPAO + NSLoRA and supervised LoRA with the prediction
bases ``last`` and ``extrap2`` on wave2d, advdiff2d and burgers2d at strides 1, 5 and 10, beside the classical rows
and the solver matched to the UPAO (``extrap2``) row in runtime and in accuracy (``evaluate --match-solver``);
report ``reports/regimes.md``.

    python benchmarks/reproduce.py --study regimes --budget-minutes 90 --out regimes --report reports/regimes.md

``--study auto`` compares UPAO + NSLoRA with the default residual discretisation against
``trainer.derivative=auto trainer.time_scheme=auto`` (the lowest residual floor of the training frames), two seeds
each, on the four exact 2D sets and the three replicas. The Well's datasets (``gray_scott_reaction_diffusion``,
``shear_flow``, ``rayleigh_benard``, ``active_matter``) are the replicas of ``benchmarks/study_data.py`` (made by
``well-upao generate-replica`` where ``--data-base`` lacks them) and get the Well's leaderboard and the paper's
numbers beside them. ``--jobs 2 --threads 1`` trains two rows at a time, one core each (the transfer study in two
phases: the diagonal first, then the rows that start from it).

``--study ablations`` runs the paper's ablations under our default normalisation (``norm``): UPAO + NSLoRA
with lambda_BC = 1e2 ... 1e5, full finetuning of the shipped backbone, full training from random weights, and plain
LoRA vs NSLoRA after the paper's LoRA warm-up (``switch_patience=1`` so that the switch fires within a row: both
start from the same seed and share the LoRA phase until the switch), beside the paper's ablation tables.

    python benchmarks/reproduce.py --study ablations --budget-minutes 72 --out ablations --report reports/ablations.md

``--study transfer`` builds the paper's cross-target panels for CNextU-Net and TFNO over burgers2d,
wave2d and tg2d (``--datasets`` adds replicas): supervised on each source, zero-shot and UPAO from each source on
each other target, our backbone's zero-shot and UPAO columns, classical rows.

    python benchmarks/reproduce.py --study transfer --budget-minutes 60 --out transfer --report reports/transfer.md

``--study trust`` is ``benchmarks/trust_study.py`` (issue 29, reports/trust.md): every other argument goes to it.

    python benchmarks/reproduce.py --study trust --out trust --jobs 2 --threads 1 --report reports/trust.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# benchmarks/ is on the path of a script run from it
from jobs import WELL_UPAO, run_all, run_logged, sharing_note, thread_env, write_done
from readings import exit_if_stale, write_keeping_reading
from study_data import STUDY_REPLICAS, ensure_replica, replica_note

from well_upao.evaluate.leaderboard import MODELS, PAPER_MAIN_TABLE, WELL_VALIDATION
from well_upao.harness.metrics_file import first_value, read_metrics
from well_upao.harness.runs import harness_command, latest_run
from well_upao.models.na_transformer import T_IN

#: minutes of CPU instead of 30 GPU epochs: 10x the paper's finetuning lr for our backbone (the baselines keep
#: their own, higher, rates), and NSLoRA's Newton-Schulz forward from the first step: a row gets one or two
#: epochs, too few for the paper's LoRA warm-up to stall and switch (it would measure plain LoRA)
SHORT_RUN = ["optimizer.lr=1e-3"]
SHORT_SWITCH = ["trainer.nslora_schedule=from_start"]
ROWS = [
    ("FNO (supervised)", ["experiment=fno"]),
    ("TFNO (supervised)", ["experiment=tfno"]),
    ("U-Net (supervised)", ["experiment=unet_classic"]),
    ("CNextU-Net (supervised)", ["experiment=unet_convnext"]),
    ("NA supervised LoRA", ["model=na_lora", "trainer=shifted", "model.pretrained=shipped", *SHORT_RUN]),
    ("NA UPAO + LoRA", ["model=na_lora", "trainer=upao", "model.pretrained=shipped", *SHORT_RUN]),
    ("NA UPAO + NSLoRA", ["model=na_nslora", "trainer=upao", "model.pretrained=shipped", *SHORT_RUN, *SHORT_SWITCH]),
    ("NA UPAO from scratch", ["model=na", "trainer=upao", "model.pretrained=null", *SHORT_RUN]),
]
#: the normalisation study (paper table "normalization strategy"): UPAO + NSLoRA on the shipped backbone
NORMALIZATION_ROWS = [
    (
        f"UPAO + NSLoRA, {strategy}",
        [
            "model=na_nslora",
            "trainer=upao",
            "model.pretrained=shipped",
            f"trainer.normalization={strategy}",
            *SHORT_RUN,
            *SHORT_SWITCH,
        ],
    )
    for strategy in ("rescaled_norm", "norm", "no_norm")
]
#: the regimes study: both prediction bases, with and without labels, on the shipped backbone
REGIME_BASES = ("last", "extrap2")
REGIME_ROWS = [
    row
    for base in REGIME_BASES
    for row in (
        (
            f"UPAO + NSLoRA, base {base}",
            ["model=na_nslora", "trainer=upao", f"model.base={base}", *SHORT_RUN, *SHORT_SWITCH],
        ),
        (f"supervised LoRA, base {base}", ["model=na_lora", "trainer=shifted", f"model.base={base}", *SHORT_RUN]),
    )
]
#: the auto study: the default residual discretisation vs the lowest floor of the training frames, two seeds.
#: Base `last` (the model's default, the paper's): with `extrap2` at stride 1 every run returned its untrained
#: start (`validate_start`: training never lowered the UPAO loss of the quadratic extrapolation), so both
#: discretisations measured the extrapolation itself
AUTO_SEEDS = (0, 1)
AUTO_ROWS = [
    (
        f"UPAO + NSLoRA, {label}, seed {seed}",
        [
            "model=na_nslora",
            "trainer=upao",
            "model.base=last",
            f"data.shuffle_seed={seed}",
            *settings,
            *SHORT_RUN,
            *SHORT_SWITCH,
        ],
    )
    for label, settings in (("default", []), ("auto", ["trainer.derivative=auto", "trainer.time_scheme=auto"]))
    for seed in AUTO_SEEDS
]
#: the ablations study (paper: boundary weight, LoRA vs full finetuning, pretraining, NSLoRA vs LoRA), under `norm`
PRETRAINED = ["trainer=upao", "model.pretrained=shipped", *SHORT_RUN]
LAMBDA_BC = ("1e2", "1e3", "1e4", "1e5")
#: the paper's warm-up where its switch fires within a row: one stalled validation, then the NS forward
WARMUP_SWITCH = ["trainer.nslora_schedule=warmup", "trainer.switch_patience=1"]
#: both rows of the warm-up pair validate every 10 batches: a row's budget is about one full epoch at 64^2, too few
#: validations for a stall (the switch never fired with whole epochs)
WARMUP_EPOCHS = ["trainer.epoch_steps=10"]
ABLATION_ROWS = [
    *[
        (
            f"UPAO + NSLoRA, lambda_BC {value}",
            ["model=na_nslora", *PRETRAINED, f"trainer.lambda_bc={value}", *SHORT_SWITCH],
        )
        for value in LAMBDA_BC
    ],
    ("UPAO full finetuning", ["model=na", *PRETRAINED]),
    ("UPAO from scratch (full, random init)", ["model=na", "trainer=upao", "model.pretrained=null", *SHORT_RUN]),
    ("UPAO + LoRA, warm-up run", ["model=na_lora", *PRETRAINED, *WARMUP_EPOCHS]),
    ("UPAO + NSLoRA, after the same warm-up", ["model=na_nslora", *PRETRAINED, *WARMUP_EPOCHS, *WARMUP_SWITCH]),
]
#: the paper's ablation tables (VRMSE, its definition, stride 1, 256^2) by row: "boundary weight sensitivity",
#: "LoRA versus full finetuning", "effect of pretraining", "NSLoRA vs standard LoRA" (--- where not run)
PAPER_ABLATIONS = {
    **{
        f"UPAO + NSLoRA, lambda_BC {value}": {
            "tg2d": tg,
            "wave2d": wave,
            "advdiff2d": advdiff,
            "burgers2d": burgers,
        }
        for value, tg, wave, advdiff, burgers in zip(
            LAMBDA_BC,
            (0.0232, 0.0170, 0.0070, 0.0098),
            (0.0676, 0.0489, 0.0275, 0.0243),
            (0.0123, 0.0046, 0.0049, None),
            (0.0092, 0.0041, 0.0034, 0.0043),
            strict=True,
        )
    },
    "UPAO full finetuning": {"tg2d": 0.0057, "wave2d": 0.0252, "advdiff2d": 0.0053, "burgers2d": 0.0024},
    "UPAO from scratch (full, random init)": {
        "tg2d": 0.3920,
        "wave2d": 0.7903,
        "advdiff2d": 0.0673,
        "burgers2d": 0.0716,
        "rayleigh_benard": 0.2215,
        "shear_flow": 0.5839,
        "gray_scott_reaction_diffusion": 0.3366,
        "active_matter": 0.4588,
    },
    "UPAO + LoRA, warm-up run": {
        "tg2d": 0.0062,
        "wave2d": 0.0224,
        "advdiff2d": 0.0042,
        "burgers2d": 0.0023,
        "gray_scott_reaction_diffusion": 0.1101,
        "active_matter": 0.1249,
        "rayleigh_benard": 0.1870,
        "shear_flow": 0.1141,
    },
    "UPAO + NSLoRA, after the same warm-up": {
        "tg2d": 0.0060,
        "wave2d": 0.0218,
        "advdiff2d": 0.0038,
        "burgers2d": 0.0021,
        "gray_scott_reaction_diffusion": 0.1099,
        "active_matter": 0.1215,
        "rayleigh_benard": 0.1812,
        "shear_flow": 0.1112,
    },
}
#: the Well's datasets we re-make with generate-replica
REPLICA_DATASETS = ("gray_scott_reaction_diffusion", "shear_flow", "rayleigh_benard", "active_matter")
#: the row the regimes study matches the solver to
REGIME_MATCHED = "UPAO + NSLoRA, base extrap2"
STUDY_DEFAULTS = {
    "main": dict(datasets=None, strides=[1, 5]),
    "normalization": dict(datasets=None, strides=[1, 5]),
    "regimes": dict(datasets=["wave2d", "advdiff2d", "burgers2d"], strides=[1, 5, 10]),
    "auto": dict(datasets=["tg2d", "wave2d", "advdiff2d", "burgers2d", *REPLICA_DATASETS], strides=[1]),
    "ablations": dict(datasets=None, strides=[1]),
    "transfer": dict(datasets=["burgers2d", "wave2d", "tg2d"], strides=[1]),
}
#: history frames every sample needs (the backbone's T_in)
HISTORY = T_IN
#: the paper's normalisation table (VRMSE): rescaled_norm, norm, no_norm
PAPER_NORMALIZATION = {
    "tg2d": (0.0070, 0.0294, 0.0875),
    "wave2d": (0.0275, 0.1007, 0.0478),
    "advdiff2d": (0.0049, 0.0133, 0.0102),
    "burgers2d": (0.0034, 0.0109, 0.1303),
}
#: the paper's main table (VRMSE, its definition, stride 1, 256^2): FNO, TFNO, U-Net, CNextU-Net, ours
#: supervised LoRA, ours UPAO (NSLoRA)
PAPER = {
    "tg2d": (0.0029, 0.0033, 0.0197, 0.0178, 0.0014, 0.0060),
    "wave2d": (0.0275, 0.0074, 0.0434, 0.0082, 0.0097, 0.0218),
    "advdiff2d": (0.0296, 0.0040, 0.0357, 0.0062, 0.0023, 0.0038),
    "burgers2d": (0.1875, 0.1615, 0.2066, 0.0165, 0.0022, 0.0021),
}
#: the shipped backbone without adaptation (main study only)
ZERO_SHOT = "NA zero-shot (shipped backbone)"
PAPER_ROW = {
    "FNO (supervised)": 0,
    "TFNO (supervised)": 1,
    "U-Net (supervised)": 2,
    "CNextU-Net (supervised)": 3,
    "NA supervised LoRA": 4,
    "NA UPAO + NSLoRA": 5,
}


def data_base(args: argparse.Namespace) -> Path:
    """The Well base path the study reads and makes its datasets in: ``--data-base``, else ``OUT/datasets``."""
    return (args.data_base or args.out / "datasets").resolve()


def minutes_per_run(args: argparse.Namespace, rows: list) -> float:
    """Each trained row's equal share of ``--budget-minutes``."""
    return args.budget_minutes / (len(args.datasets) * len(args.strides) * len(rows))


#: which row name each run folder name was given to in this process (two rows must never share a folder)
TAG_OWNERS: dict[str, str] = {}


def run_tag(dataset: str, stride: int, name: str) -> str:
    """A run's folder name: only letters, digits, `_` and `-` (a `,` or `=` would break Hydra's override parser),
    without a trailing parenthetical; refused when another row already owns it (`--resume` would read one row's
    run as the other's)."""
    short = name.split(" (")[0].replace("+", "plus")
    tag = f"{dataset}-s{stride}-" + re.sub(r"[^A-Za-z0-9_-]+", "_", short).strip("_")
    owner = TAG_OWNERS.setdefault(tag, name)
    if owner != name:
        raise ValueError(f"rows {owner!r} and {name!r} would share the run folder {tag}: rename one")
    return tag


def run(command: list[str], log: Path, env: dict, jobs: int, threads: int | None) -> float:
    """Run one harness command with its output in `log`; a `<log>.done` marker records that it finished, with its
    wall clock, CPU time and how many rows ran at once with how many threads (JSON, written atomically)."""
    finished = run_logged(command, log, thread_env(env, threads))
    if finished.returncode != 0:
        raise RuntimeError(f"failed ({log}): {' '.join(command)}")
    write_done(log.with_suffix(".done"), finished, jobs, threads)
    return finished.wall_seconds


def run_folder(args: argparse.Namespace, dataset: str, stride: int, name: str) -> Path | None:
    """The run folder of a row (``experiments/<tag>/<experiment>/<n>``), ``None`` when it was not trained."""
    return latest_run(args.out.resolve() / "experiments" / run_tag(dataset, stride, name))


def ensure_dataset(args: argparse.Namespace, dataset: str, base: Path, env: dict) -> None:
    """Generate ``dataset`` under ``base`` unless it is there: a Well replica as ``benchmarks/study_data.py`` makes it,
    or an exact set at ``--resolution`` with enough frames for several windows at the largest stride."""
    if dataset in STUDY_REPLICAS:
        ensure_replica(dataset, base)
        return
    if (base / dataset).exists():
        return
    steps = max(51, (HISTORY + 1) * max(args.strides) + 11)
    command = [*WELL_UPAO, "generate-exact", "--pde", dataset, "--n-traj", str(args.n_traj)]
    command += ["--resolution", str(args.resolution), "--n-steps", str(steps)]
    subprocess.run([*command, "--out", str(base), "--quiet"], check=True, env=env)


def train_row(
    args, name: str, overrides: list[str], dataset: str, stride: int, minutes: float, commands, env, train=True
):
    """Train one row through the harness (unless ``--evaluate-only``, or ``--resume`` and it finished, or not
    ``train``); its run folder, or None when there is none. Its command goes into ``commands`` either way (a first
    pass with ``train=False`` fixes the order in which a report lists them when rows then train in parallel)."""
    out = args.out.resolve()
    experiments = out / "experiments"
    tag = run_tag(dataset, stride, name)
    command = harness_command(
        [
            *overrides,
            f"data={dataset}",
            f"data.min_dt_stride={stride}",
            f"data.max_dt_stride={stride}",
            *([] if any(o.startswith("trainer.epochs=") for o in overrides) else ["trainer.epochs=30"]),
            f"trainer.max_minutes={minutes:.2f}",
            "trainer.max_rollout_steps=5",
            "data.max_rollout_steps=5",
            "trainer.rollout_val_frequency=1000",
            "trainer.short_validation_length=8",
            "trainer.progress=false",
            "auto_resume=false",
            f"experiment_dir={experiments / tag}",
        ]
    )
    commands[(dataset, stride, name)] = " ".join(command[1:])
    log = out / f"{tag}.log"
    finished = args.resume and log.with_suffix(".done").exists()
    if train and not (args.evaluate_only or finished):
        shutil.rmtree(experiments / tag, ignore_errors=True)  # a half-trained earlier attempt
        print(f"training {tag} ({minutes:.2f} min)", flush=True)
        run(command, log, env, args.jobs, args.threads)
    return latest_run(experiments / tag)


#: the transfer study's models (the paper's cross-target panels) and their harness experiments
TRANSFER_MODELS = {"CNextU-Net": "experiment=unet_convnext", "TFNO": "experiment=tfno"}
#: the paper's UPAO finetuning from another dataset's checkpoint: 5 epochs, lambda_BC = 1e4
TRANSFER_FINETUNE = ["trainer=upao", "trainer.epochs=5", "trainer.lambda_bc=1e4"]
#: our backbone in the panels: zero-shot (the shipped backbone) and UPAO + NSLoRA on each target
OURS_UPAO = ["model=na_nslora", "trainer=upao", "model.pretrained=shipped", *SHORT_RUN, *SHORT_SWITCH]
#: PDE-Transformer adapted by UPAO (the paper's "unsup FM" row), at the size pretrained on our corpus
FM_UPAO = ["model=pde_transformer", "model.size=XS", "trainer=upao", *SHORT_RUN]


def foundation_rows(weights: Path | None) -> list[tuple[str, list[str]]]:
    """The foundation-model rows of the transfer study, labelled by their weights: PDE-Transformer UPAO from
    random weights and from ``weights`` (a ``pretrain_pde_transformer`` checkpoint); none without ``weights``."""
    if weights is None:
        return []
    return [
        ("PDE-Transformer UPAO, random weights", FM_UPAO),
        ("PDE-Transformer UPAO, our corpus weights", [*FM_UPAO, f"model.weights={weights.resolve()}"]),
    ]


def run_transfer_study(args: argparse.Namespace) -> None:
    """The paper's cross-target panels (appendix "Construction of the cross-target panels") at CPU scale: per model,
    a supervised run on every source (the diagonal), and on every other target the source's zero-shot transfer
    (the best subset of its channels, ``evaluate --zero-shot-from``; "---" with fewer source than target channels)
    and UPAO finetuning from it (``trainer.init_from``, missing channels zero); our backbone's zero-shot and UPAO
    beside them; classical rows per target."""
    from well_upao.data.source import WellSource

    out = args.out.resolve()
    base = data_base(args)
    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    stride, datasets = args.strides[0], args.datasets
    n = len(datasets)
    minutes = args.budget_minutes / (len(TRANSFER_MODELS) * n * n + n)  # diagonal + off-diagonal, + ours
    commands: dict[tuple, str] = {}
    for dataset in datasets:
        ensure_dataset(args, dataset, base, env)
    channels = {d: len(WellSource(base, d).channels) for d in datasets}
    # (label, overrides, dataset) of every row, in the report's order; the off-diagonal rows start from the
    # diagonal's best.pt, so they train after all diagonals (two phases, each --jobs at a time)
    diagonal, rest = [], []
    for model, experiment in TRANSFER_MODELS.items():
        for source in datasets:
            diagonal.append(((model, source, source), f"{model} supervised", [experiment], source))
        for target in datasets:
            for source in datasets:
                if source != target:
                    start = out / "experiments" / run_tag(source, stride, f"{model} supervised")
                    overrides = [experiment, *TRANSFER_FINETUNE, f"trainer.init_from={{best:{start}}}"]
                    rest.append(((model, source, target), f"{model} UPAO from {source}", overrides, target))
    for target in datasets:
        rest.append((("ours", target, target), "ours UPAO + NSLoRA", OURS_UPAO, target))
        for name, overrides in foundation_rows(args.fm_weights):  # same minutes per row as the panels
            rest.append(((name, target, target), name, overrides, target))

    def resolved(overrides: list[str]) -> list[str]:
        """``{best:<experiments>}`` -> the diagonal run's ``checkpoints/best.pt`` (known once it trained)."""
        out_overrides = []
        for item in overrides:
            if "{best:" in item:
                head, experiments = item.split("{best:")
                folder = latest_run(experiments.rstrip("}"))
                item = head + (str(folder / "checkpoints" / "best.pt") if folder else "<not trained>")
            out_overrides.append(item)
        return out_overrides

    for _, name, overrides, dataset in diagonal + rest:  # fixes the order of the report's commands
        train_row(args, name, resolved(overrides), dataset, stride, minutes, commands, env, train=False)
    for phase in (diagonal, rest):
        run_all(
            [
                lambda row=row: train_row(args, row[1], resolved(row[2]), row[3], stride, minutes, commands, env)
                for row in phase
            ],
            args.jobs,
        )
        for _, name, overrides, dataset in phase:  # the commands of the off-diagonal rows now name best.pt
            train_row(args, name, resolved(overrides), dataset, stride, minutes, commands, env, train=False)
    trained: dict[tuple, Path] = {}
    for key, name, overrides, dataset in diagonal + rest:
        if key[0] in TRANSFER_MODELS:
            trained[key] = train_row(args, name, resolved(overrides), dataset, stride, minutes, commands, env, False)
    results: dict[tuple, dict] = {}
    for target in datasets:
        ours = train_row(args, "ours UPAO + NSLoRA", OURS_UPAO, target, stride, minutes, commands, env, False)
        rows = [(ZERO_SHOT, write_zero_shot_checkpoint(target, base, out / f"zero_shot-{target}.pt"))]
        rows += [("ours UPAO + NSLoRA", ours)] if ours is not None else []
        for name, overrides in foundation_rows(args.fm_weights):
            folder = train_row(args, name, overrides, target, stride, minutes, commands, env, False)
            rows += [(name, folder)] if folder is not None else []
        zero_shot = []
        for (model, source, tgt), folder in trained.items():
            if tgt != target or folder is None:
                continue
            if source == target:
                rows.append((f"{model} supervised (in-domain)", folder))
                continue
            rows.append((f"{model} UPAO from {source}", folder))
            if channels[source] >= channels[target]:
                source_run = trained[(model, source, source)]
                zero_shot += ["--zero-shot-from", f"{model} zero-shot from {source}={source_run}"]
        eval_out = out / "evaluation" / f"{target}-s{stride}"
        command = [*WELL_UPAO, "evaluate", *[f"{label}={path}" for label, path in rows], *zero_shot]
        command += ["--data", target, "--stride", str(stride), "--out", str(eval_out), "--quiet"]
        subprocess.run([*command, "--rollout-steps", "5"], check=True, env=env, stdout=subprocess.DEVNULL)
        collect_scores(eval_out, target, stride, results)
        write_transfer_report(args, results, commands, channels, minutes)
    exit_if_stale(args.report)


def cpu_note(args, commands: dict[tuple, str]) -> str:
    """How the rows shared the CPU and the CPU time they took (from their ``.done`` markers)."""
    records = []
    for dataset, stride, name in commands:
        done = args.out.resolve() / f"{run_tag(dataset, stride, name)}.done"
        try:
            records.append(json.loads(done.read_text()))
        except (OSError, ValueError):
            continue
    cpu = [r["cpu_seconds"] / 60 for r in records if isinstance(r, dict) and "cpu_seconds" in r]
    note = sharing_note([r for r in records if isinstance(r, dict)], args.jobs, args.threads)
    if cpu:
        note += f"; measured CPU time {min(cpu):.2g}-{max(cpu):.2g} minutes a row, {sum(cpu) / 60:.2g} hours in all"
    return note


def write_transfer_report(args, results, commands, channels, minutes) -> None:
    """One panel per model: rows = source, columns = target; a cell is "zero-shot / UPAO" (mean paper VRMSE),
    the diagonal the supervised in-domain run; our backbone's row and the classical rows below."""
    stride, datasets = args.strides[0], args.datasets

    def value(target, name):
        score = results.get((target, stride, name))
        return f"{score['mean_vrmse_paper']:.3g}" if score else "n/a"

    header = "| source \\ target | " + " | ".join(datasets) + " |"
    rule = "|---|" + "---|" * len(datasets)
    lines = [
        "# Cross-target transfer panels at CPU scale",
        "",
        "Command: `python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]) + "`",
        "",
        *[f"Data: {d}, {replica_note(d)}." for d in datasets if d in STUDY_REPLICAS],
        "",
        "Mean one-step VRMSE (the paper's definition) on each target's validation split. Off the diagonal a cell is",
        "*zero-shot / UPAO*: the source's supervised checkpoint evaluated on the target through the best subset of",
        "its channels (`evaluate --zero-shot-from`; --- where the source has fewer channels than the target), then",
        "finetuned on the target with UPAO from that checkpoint (`trainer.init_from`, missing channels zero, 5",
        f"epochs, lambda_BC = 1e4). The diagonal is the supervised in-domain run. Every run had {minutes:.3g} minutes",
        f"of wall clock on this CPU ({cpu_note(args, commands)}). Channels: "
        f"{', '.join(f'{d} {c}' for d, c in channels.items())}.",
        "",
    ]
    for model in TRANSFER_MODELS:
        lines += [f"## {model}", "", header, rule]
        for source in datasets:
            cells = []
            for target in datasets:
                if source == target:
                    cells.append(f"**{value(target, f'{model} supervised (in-domain)')}**")
                    continue
                zero = value(target, f"{model} zero-shot from {source}")
                zero = "---" if channels[source] < channels[target] else zero
                cells.append(f"{zero} / {value(target, f'{model} UPAO from {source}')}")
            lines.append(f"| {source} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Our backbone, foundation models and the classical rows", ""]
    if args.fm_weights is not None:
        lines += [
            "PDE-Transformer (size XS) is adapted with UPAO from random weights and from its pretraining on our",
            f"corpus (`{args.fm_weights}`, `--config-name pretrain_pde_transformer`), as many minutes per row.",
            "",
        ]
    lines += ["| row | " + " | ".join(datasets) + " |", rule]
    fm_names = [name for name, _ in foundation_rows(args.fm_weights)]
    for name in (ZERO_SHOT, "ours UPAO + NSLoRA", *fm_names, "persistence", "extrap2", "solver"):
        lines.append(f"| {name} | " + " | ".join(value(t, name) for t in datasets) + " |")
    lines += ["", "## Commands", ""]
    lines += [f"- {d}, stride {s}, {name}: `{command}`" for (d, s, name), command in commands.items()]
    write_keeping_reading(args.report, lines)


def main() -> None:
    study = argparse.ArgumentParser(add_help=False)
    study.add_argument("--study")
    known, rest = study.parse_known_args()
    if known.study == "trust":  # its own command line: benchmarks/trust_study.py
        import trust_study

        trust_study.main(rest)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-minutes", type=float, default=120.0, help="total training time over all rows")
    parser.add_argument(
        "--datasets", nargs="+", help="default: the four paper sets (regimes: wave2d advdiff2d burgers2d)"
    )
    parser.add_argument("--strides", nargs="+", type=int, help="default: 1 5 (regimes: 1 5 10)")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--n-traj", type=int, default=12)
    parser.add_argument(
        "--data-base",
        type=Path,
        help="the Well base path holding (or to make) the datasets (default: OUT/datasets); replicas missing there "
        "are made as benchmarks/study_data.py defines them",
    )
    parser.add_argument("--jobs", type=int, default=1, help="rows trained at once")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per row (default: torch's)")
    parser.add_argument("--rows", nargs="*", help="subset of row names (default: all)")
    parser.add_argument(
        "--study",
        choices=["main", "normalization", "regimes", "auto", "ablations", "transfer", "trust"],
        default="main",
        help="main: the paper's main table; normalization: the three UPAO normalisations; regimes: prediction "
        "bases x strides beside extrapolation and matched solvers; auto: default vs auto residual discretisation; "
        "ablations: lambda_BC, LoRA vs full finetuning, scratch vs pretrained, NSLoRA vs LoRA after a warm-up; "
        "transfer: the cross-target panels of CNextU-Net and TFNO beside our backbone; trust: the label-free "
        "scorecard against the truth (benchmarks/trust_study.py, with that script's arguments)",
    )
    parser.add_argument(
        "--fm-weights",
        type=Path,
        help="transfer: a PDE-Transformer checkpoint pretrained on our corpus; adds PDE-Transformer UPAO rows from "
        "it and from random weights (needs the extra well-upao[fm])",
    )
    parser.add_argument("--out", type=Path, default=Path("reproduction"))
    parser.add_argument("--report", type=Path, default=Path("reports/reproduction.md"))
    parser.add_argument(
        "--evaluate-only",
        action="store_true",
        help="train nothing: evaluate the run folders already in --out again and rewrite the report",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows that finished in an earlier call with the same --out; rerun the others from scratch",
    )
    args = parser.parse_args()
    defaults = STUDY_DEFAULTS[args.study]
    args.datasets = args.datasets or defaults["datasets"] or list(PAPER)
    args.strides = args.strides or defaults["strides"]

    if args.study == "transfer":
        run_transfer_study(args)
        return
    study_rows = {
        "main": ROWS,
        "normalization": NORMALIZATION_ROWS,
        "regimes": REGIME_ROWS,
        "auto": AUTO_ROWS,
        "ablations": ABLATION_ROWS,
    }[args.study]
    rows = [r for r in study_rows if not args.rows or r[0] in args.rows]
    out = args.out.resolve()
    base = data_base(args)
    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    minutes = minutes_per_run(args, rows)
    commands: dict[tuple, str] = {}
    results: dict[tuple, dict] = {}
    cells = [(dataset, stride, name, overrides) for dataset in args.datasets for stride in args.strides
             for name, overrides in rows]  # fmt: skip
    for dataset in args.datasets:
        ensure_dataset(args, dataset, base, env)
    for dataset, stride, name, overrides in cells:  # fixes the order of the report's commands
        train_row(args, name, overrides, dataset, stride, minutes, commands, env, train=False)
    run_all([lambda c=c: train_row(args, c[2], c[3], c[0], c[1], minutes, commands, env) for c in cells], args.jobs)
    for dataset in args.datasets:
        for stride in args.strides:
            folders = []
            for name, overrides in rows:
                folder = train_row(args, name, overrides, dataset, stride, minutes, commands, env, train=False)
                if folder is not None:
                    folders.append((name, folder))
            if args.study == "main":
                folders.insert(
                    0, (ZERO_SHOT, write_zero_shot_checkpoint(dataset, base, out / f"zero_shot-{dataset}.pt"))
                )
            eval_out = out / "evaluation" / f"{dataset}-s{stride}"
            command = [
                *WELL_UPAO,
                "evaluate",
                *[f"{name}={folder}" for name, folder in folders],  # rows named by label: run names can clash
                "--data",
                dataset,
                "--stride",
                str(stride),
                "--out",
                str(eval_out),
                "--quiet",
                "--rollout-steps",
                "5",
            ]
            if args.study == "regimes" and any(name == REGIME_MATCHED for name, _ in folders):
                command += ["--match-solver", REGIME_MATCHED]
            subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
            collect_scores(eval_out, dataset, stride, results)
            write_report(args, rows, commands, results)  # after every dataset: partial results survive
    exit_if_stale(args.report)  # the reading kept from the last report must cite the new tables


def regimes_summary(args, results) -> list[str]:
    """Per dataset and stride: extrapolation, the best UPAO and supervised rows (and their base), and the solver
    matched to the UPAO extrap2 row in cost and in accuracy (mean paper VRMSE, ms / prediction)."""

    def best(dataset, stride, prefix):
        found = [(n, v) for (d, s, n), v in results.items() if (d, s) == (dataset, stride) and n.startswith(prefix)]
        return min(found, key=lambda item: item[1]["mean_vrmse_paper"], default=(None, None))

    def cell(score):
        if score is None:
            return "n/a"
        return f"{score['mean_vrmse_paper']:.3g} ({score['seconds_per_prediction'] * 1e3:.3g} ms)"

    lines = [
        "## Summary",
        "",
        "Mean one-step VRMSE (paper's definition) and ms / prediction. Solvers are matched to the UPAO + NSLoRA, "
        "base extrap2 row: *cost-matched* is the most accurate fixed-step solver no slower than it (or the cheapest, "
        "marked \\*, when every solver is slower), *accuracy-matched* the cheapest one as accurate.",
        "",
        "| dataset | stride | extrap2 | best UPAO (base) | best supervised (base) | cost-matched solver "
        "| accuracy-matched solver | UPAO beats extrap2 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dataset in args.datasets:
        for stride in args.strides:
            extrap2 = results.get((dataset, stride, "extrap2"))
            upao_name, upao = best(dataset, stride, "UPAO")
            supervised_name, supervised = best(dataset, stride, "supervised")
            cost_name, cost = best(dataset, stride, "solver, cost-matched")
            if cost is None:
                cost_name, cost = best(dataset, stride, "solver, slower")
            _, accuracy = best(dataset, stride, "solver, accuracy-matched")
            if extrap2 is None or upao is None:
                continue
            wins = "yes" if upao["mean_vrmse_paper"] < extrap2["mean_vrmse_paper"] else "no"
            lines.append(
                f"| {dataset} | {stride} | {cell(extrap2)} | {cell(upao)} ({upao_name.rsplit(' ', 1)[-1]}) "
                f"| {cell(supervised)} ({supervised_name.rsplit(' ', 1)[-1] if supervised_name else ''}) "
                f"| {cell(cost)}{'*' if cost_name and 'slower' in cost_name else ''} | {cell(accuracy)} | {wins} |"
            )
    return [*lines, ""]


def auto_summary(args, results) -> list[str]:
    """Per dataset: mean paper VRMSE over the seeds of the default and the auto rows, and what auto chose."""
    lines = [
        "## Summary",
        "",
        "Mean one-step VRMSE (paper's definition) over the seeds; `auto` chooses per run from the training frames "
        "(its choice is in the run's metrics.jsonl: `upao_derivative`, `upao_time_scheme`).",
        "",
        "| dataset | stride | default (fd / crank_nicolson) | auto | auto chose | auto better |",
        "|---|---|---|---|---|---|",
    ]
    for dataset in args.datasets:
        for stride in args.strides:
            means = {}
            for label in ("default", "auto"):
                values = [
                    results[(dataset, stride, f"UPAO + NSLoRA, {label}, seed {seed}")]["mean_vrmse_paper"]
                    for seed in AUTO_SEEDS
                    if (dataset, stride, f"UPAO + NSLoRA, {label}, seed {seed}") in results
                ]
                means[label] = sum(values) / len(values) if values else None
            if None in means.values():
                continue
            folder = run_folder(args, dataset, stride, f"UPAO + NSLoRA, auto, seed {AUTO_SEEDS[0]}")
            lines = read_metrics(folder) if folder else []
            derivative, scheme = first_value(lines, "upao_derivative"), first_value(lines, "upao_time_scheme")
            choice = f"{derivative}/{scheme}" if derivative else ""
            better = "yes" if means["auto"] < means["default"] else "no"
            lines.append(
                f"| {dataset} | {stride} | {means['default']:.4g} | {means['auto']:.4g} | {choice} | {better} |"
            )
    return [*lines, ""]


def ablations_summary(args) -> list[str]:
    """Whether the NSLoRA row's LoRA -> NS switch fired within its budget (else it measured plain LoRA)."""
    name = ABLATION_ROWS[-1][0]
    lines = [
        "## The LoRA -> NSLoRA switch",
        "",
        f'"{name}" differs from the LoRA row only after its switch; where the switch did not fire within the '
        "row's budget, the two rows measured the same method.",
        "",
        "| dataset | stride | switch |",
        "|---|---|---|",
    ]
    for dataset in args.datasets:
        for stride in args.strides:
            folder = run_folder(args, dataset, stride, name)
            if folder is None:
                continue
            switched = first_value(read_metrics(folder), "nslora_switch_epoch")
            fired = "did not fire" if switched is None else f"after epoch {switched}"
            lines.append(f"| {dataset} | {stride} | {fired} |")
    return [*lines, ""]


def write_zero_shot_checkpoint(dataset: str, base: Path, path: Path) -> Path:
    """The shipped backbone as it is, saved as a checkpoint for `dataset` (the no-adaptation reference row)."""
    from well_upao.harness.model_factory import na_transformer
    from well_upao.models.checkpoint import build_payload, save_checkpoint

    model = na_transformer(preset="tiny", dataset_name=dataset, well_base_path=str(base), pretrained="shipped")
    save_checkpoint(path, build_payload(model))
    return path


def collect_scores(eval_out: Path, dataset: str, stride: int, results: dict) -> None:
    """Read `well-upao evaluate`'s JSON in `eval_out` (its rows carry our table's labels)."""
    evaluation = json.loads(next(eval_out.glob("evaluation_*.json")).read_text())
    for score in evaluation["scores"]:
        results[(dataset, stride, score["name"])] = score


def write_report(args, rows, commands, results) -> None:
    titles = {
        "main": "# Reproduction of the paper's main table at CPU scale",
        "normalization": "# UPAO normalisation strategies at CPU scale",
        "regimes": "# Where adaptation pays: prediction bases, strides, extrapolation and matched solvers",
        "auto": "# UPAO with the default residual discretisation vs auto (the lowest residual floor)",
        "ablations": "# UPAO ablations at CPU scale: boundary weight, LoRA vs full finetuning, pretraining, NSLoRA",
    }
    lines = [
        titles[args.study],
        "",
        f"Command: `python benchmarks/reproduce.py --study {args.study} --budget-minutes {args.budget_minutes:g} "
        "--datasets "
        f"{' '.join(args.datasets)} --strides {' '.join(map(str, args.strides))} --resolution {args.resolution} "
        f"--n-traj {args.n_traj}`",
        "",
        "VRMSE on the validation split, one-step from true histories (the paper's protocol), regime `windows`.",
        '"paper def." is the paper\'s VRMSE (per trajectory, temporal-mean normalisation), "Well def." The Well\'s '
        "(per frame). The paper's numbers are at stride 1 and 256^2 with a GPU-scale pretrained backbone. Each "
        f"trained row had {minutes_per_run(args, rows):.3g} minutes of wall clock on this machine's CPU. "
        '"rollout step n" is the Well\'s VRMSE at the last step of a 5-step rollout that feeds predictions back '
        "as history, n the steps the validation trajectories held at that stride (fewer than 5 where they end "
        'sooner); "ms / prediction" is the wall clock per predicted '
        "frame on this CPU. NSLoRA rows run the Newton-Schulz forward from the first step (`schedule=from_start`): "
        "the paper's LoRA warm-up needs more epochs than a row gets here.",
        "",
    ]
    if args.study == "regimes":
        lines += regimes_summary(args, results)
    if args.study == "auto":
        lines += auto_summary(args, results)
    if args.study == "ablations":
        lines += ablations_summary(args)
    names = ["persistence", "extrap1", "extrap2", "solver", ZERO_SHOT, *[r[0] for r in rows]]
    for dataset in args.datasets:
        for stride in args.strides:
            matched = sorted(n for d, s, n in results if (d, s) == (dataset, stride) and n.startswith("solver, "))
            here = [v for k, v in results.items() if k[:2] == (dataset, stride)]
            held = max((len(v.get("rollout_vrmse_well") or []) for v in here), default=0)
            lines += [
                f"## {dataset}, stride {stride}",
                "",
                "| row | paper def. | Well def. | paper (stride 1, 256^2) "
                f"| rollout step {held} (Well) | ms / prediction |",
                "|---|---|---|---|---|---|",
            ]
            for name in names[:4] + matched + names[4:]:
                score = results.get((dataset, stride, name))
                if score is None:
                    continue
                reference = ""
                if args.study == "main" and name in PAPER_ROW and dataset in PAPER:
                    reference = PAPER[dataset][PAPER_ROW[name]]
                elif args.study == "main" and name in PAPER_ROW and dataset in PAPER_MAIN_TABLE:
                    reference = PAPER_MAIN_TABLE[dataset][PAPER_ROW[name]]
                    if PAPER_ROW[name] < len(MODELS):  # the Well's own leaderboard (validation, Well VRMSE)
                        reference = f"{reference}; the Well {WELL_VALIDATION[dataset][PAPER_ROW[name]]} (Well def.)"
                elif args.study == "ablations" and name in PAPER_ABLATIONS:
                    value = PAPER_ABLATIONS[name].get(dataset, "")
                    reference = "---" if value is None else value
                elif args.study == "normalization" and dataset in PAPER_NORMALIZATION:
                    strategies = [r[0] for r in NORMALIZATION_ROWS]
                    if name in strategies:
                        reference = PAPER_NORMALIZATION[dataset][strategies.index(name)]
                rollout = score.get("rollout_vrmse_well") or [float("nan")]
                lines.append(
                    f"| {name} | {score['mean_vrmse_paper']:.4g} | {score['mean_vrmse_well']:.4g} | {reference} "
                    f"| {rollout[-1]:.4g} | {score['seconds_per_prediction'] * 1e3:.3g} |"
                )
            lines.append("")
    lines += ["## Commands", ""]
    for (dataset, stride, name), command in commands.items():
        lines.append(f"- {dataset}, stride {stride}, {name}: `{command}`")
    write_keeping_reading(args.report, lines)


if __name__ == "__main__":
    main()
