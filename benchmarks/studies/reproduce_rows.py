"""The studies of ``benchmarks/studies/reproduce.py`` as they are declared: each study's rows (a name and the harness
overrides that make it), its defaults, and the paper's numbers its tables stand beside."""

from __future__ import annotations

from pathlib import Path

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
