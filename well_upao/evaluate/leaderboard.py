"""Published numbers to compare with, for the Well's four datasets of the paper.

* The Well's leaderboard (its documentation; VRMSE, the Well's definition): one-step on the test split and on
  the validation split, for FNO, TFNO, U-Net and CNextU-Net.
* The paper's main table (its own runs; VRMSE, the paper's definition) for the same datasets.

Ours come from ``well-upao evaluate`` JSON files: the Well's definition is the column to compare with its
leaderboard, the paper's definition the one to compare with the paper. The documentation's page of each replica
shows its dataset's published rows from here (`published_markdown`, through the site's build hook).
"""

from __future__ import annotations

import json
from pathlib import Path

DATASETS = ("active_matter", "gray_scott_reaction_diffusion", "rayleigh_benard", "shear_flow")
MODELS = ("FNO", "TFNO", "U-Net", "CNextU-Net")

WELL_ONE_STEP_TEST = {
    "active_matter": (0.3691, 0.3598, 0.2489, 0.1034),
    "gray_scott_reaction_diffusion": (0.1365, 0.3633, 0.2252, 0.1761),
    "rayleigh_benard": (0.8395, 0.6566, 1.4860, 0.6699),
    "shear_flow": (1.189, 1.472, 3.447, 0.8080),
}
WELL_VALIDATION = {
    "active_matter": (0.3157, 0.3342, 0.2609, 0.0953),
    "gray_scott_reaction_diffusion": (0.2044, 0.1784, 0.5870, 0.3596),
    "rayleigh_benard": (0.6049, 0.8568, 0.8448, 0.4807),
    "shear_flow": (0.4450, 0.3626, 0.836, 0.3972),
}
#: the paper's main table: FNO, TFNO, U-Net, CNextU-Net (supervised), ours supervised LoRA, ours UPAO
PAPER_MAIN_TABLE = {
    "active_matter": (0.1584, 0.1390, 0.2133, 0.1248, 0.0639, 0.1215),
    "gray_scott_reaction_diffusion": (0.0073, 0.0033, 0.0182, 0.0054, 0.0754, 0.1099),
    "rayleigh_benard": (0.2139, 0.1762, 0.1423, 0.1022, 0.1660, 0.1812),
    "shear_flow": (0.3782, 0.2234, 0.2439, 0.0455, 0.0446, 0.1112),
}


#: the columns of a published row: the Well's four models, then the paper's supervised LoRA and UPAO (its own runs)
COLUMNS = (*MODELS, "ours supervised LoRA", "ours UPAO")


def published_rows(name: str) -> list[tuple[str, str, tuple[float, ...]]]:
    """The published rows of dataset ``name``: (source, split and VRMSE definition, values by `COLUMNS`; the
    Well's rows have the four models only)."""
    return [
        ("the Well", "test, one-step (Well VRMSE)", WELL_ONE_STEP_TEST[name]),
        ("the Well", "validation (Well VRMSE)", WELL_VALIDATION[name]),
        ("the paper", "validation (paper VRMSE)", PAPER_MAIN_TABLE[name]),
    ]


def _cells(values: tuple[float, ...]) -> str:
    return " | ".join(map(str, values)) + " |" + " |" * (len(COLUMNS) - len(values))


def published_markdown(name: str) -> str:
    """The published rows of dataset ``name`` as a markdown table narrow enough for a page (one dataset, its source
    and split in one column, "-" where a source has no number); the last two columns are the paper's own runs of
    supervised LoRA and UPAO."""
    header = ["published", *MODELS, "LoRA (paper)", "UPAO (paper)"]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for source, split, values in published_rows(name):
        cells = [*map(str, values), *["-"] * (len(COLUMNS) - len(values))]
        lines.append(f"| {source}: {split} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_ours(paths: list[Path]) -> dict[str, list[dict]]:
    ours: dict[str, list[dict]] = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        source = data.get("data_source") or "the dataset's files"
        for score in data["scores"]:
            notes = score.get("notes") or {}
            label = f"{score['name']} [data: {source}"
            label += f"; trained {notes['training']}" if notes.get("training") else ""
            label += f"; weights: {notes['initial weights']}" if notes.get("initial weights") else ""
            label += "]"
            ours.setdefault(data["dataset"], []).append(
                {
                    "name": label,
                    "split": data["split"],
                    "well": score["mean_vrmse_well"],
                    "paper": score["mean_vrmse_paper"],
                }
            )
    return ours


def leaderboard_markdown(paths: list[Path]) -> str:
    ours = load_ours(paths)
    lines = [
        "| dataset | source | split / definition | " + " | ".join(COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(COLUMNS),
    ]
    for name in DATASETS:
        for source, split, values in published_rows(name):
            lines.append(f"| {name} | {source} | {split} | " + _cells(values))
        for row in ours.get(name, []):
            lines.append(
                f"| {name} | ours: {row['name']} | {row['split']}: Well VRMSE {row['well']:.4g}, "
                f"paper VRMSE {row['paper']:.4g} |" + " |" * (len(MODELS) + 2)
            )
    unlisted = sorted(set(ours) - set(DATASETS))
    if unlisted:
        counts = ", ".join(f"{name} ({len(ours[name])} rows)" for name in unlisted)
        lines += [
            "",
            f"Not shown: evaluations of {counts}, which have no published leaderboard here (only "
            f"{', '.join(DATASETS)} do); `well-upao evaluate` prints their tables with the classical baselines.",
        ]
    lines += [
        "",
        "The Well revised its shear_flow test numbers on 2024-12-09 (the_well commit c923631); the rows above are the "
        "revised ones. Ours are labelled with their data (a well-upao replica and its grid, or the files given) and "
        "training budget; the Well's and the paper's come from GPU runs on the full-size data.",
    ]
    return "\n".join(lines)
