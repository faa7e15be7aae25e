"""A harness run: ``python -m the_well.benchmark.train ...`` and the folder it leaves behind.

The Well's harness writes a run to ``<experiment_dir>/<experiment name>/<n>`` (``n`` counts the runs of that name:
0, 1, ...), holding ``checkpoints/best.pt`` and ``checkpoints/recent.pt`` (our schema,
``well_upao.models.checkpoint``), ``artifacts/metrics.jsonl`` (``well_upao.harness.metrics_file``) and
``extended_config.yaml``. This module is the one place that

* builds the training command line (``harness_command``; the quickstart and every benchmark use it),
* globs an experiment folder for its run folders (``run_folders``, ``latest_run``) and a run for its
  checkpoint (``find_checkpoint``, ``checkpoint_file``),
* reads a run's checkpoint once (``RunCheckpoint``) and what it says: the data it trained on
  (``RunCheckpoint.settings``), its history (``run_history``), its initial weights
  (``initial_weights``) and what its selection did (``run_selection``, from ``metrics.jsonl``),
* names the rows of checkpoints given on a command line (``default_row_name``, ``labelled_checkpoints``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from well_upao.harness.metrics_file import first_value, last_value, read_metrics
from well_upao.models.checkpoint import CheckpointError, read_checkpoint

#: the module the Well's harness trains with (``python -m <HARNESS_MODULE> key=value ...``)
HARNESS_MODULE = "the_well.benchmark.train"
#: where a run folder keeps its checkpoints
CHECKPOINTS = "checkpoints"
#: the checkpoint a run's selection kept
BEST = "best.pt"


# --------------------------------------------------------------------------------------------- the command
def harness_command(overrides: Iterable[str], python: str | None = None) -> list[str]:
    """The Well's training command with Hydra ``overrides`` (``key=value``, in the order given):
    ``[python, "-m", "the_well.benchmark.train", *overrides]``; ``python`` defaults to this interpreter."""
    return [python or sys.executable, "-m", HARNESS_MODULE, *overrides]


# --------------------------------------------------------------------------------------------- the folder
def _run_number(folder: Path) -> tuple[str, int]:
    return folder.parent.name, int(folder.name) if folder.name.isdigit() else -1


def run_folders(experiment_dir: str | Path, name: str = "*") -> list[Path]:
    """The run folders ``<experiment_dir>/<name>/<n>`` the harness made (``name`` a glob pattern), by name and
    then by run number (the newest of a name last); empty when there is none."""
    found = [path for path in Path(experiment_dir).glob(f"{name}/*") if path.is_dir()]
    return sorted(found, key=_run_number)


def latest_run(experiment_dir: str | Path, name: str = "*") -> Path | None:
    """The newest run folder under ``experiment_dir`` (``run_folders``), ``None`` when none was made."""
    folders = run_folders(experiment_dir, name)
    return folders[-1] if folders else None


def find_checkpoint(folder: str | Path, file: str = BEST) -> Path:
    """The one ``checkpoints/<file>`` of ``folder``: a run folder, a folder holding ``<file>`` itself, or an
    experiment folder with one run (``<folder>/<name>/<n>``). Refuses, naming ``folder``, when there is none or
    more than one."""
    folder = Path(folder)
    if (folder / CHECKPOINTS / file).is_file():
        return folder / CHECKPOINTS / file
    if (folder / file).is_file():
        return folder / file
    found = [run / CHECKPOINTS / file for run in run_folders(folder) if (run / CHECKPOINTS / file).is_file()]
    if not found:
        raise CheckpointError(f"{folder} has no {CHECKPOINTS}/{file}")
    if len(found) > 1:
        runs = ", ".join(str(path.parent.parent.relative_to(folder)) for path in found)
        raise CheckpointError(f"{folder} holds {len(found)} runs with a {CHECKPOINTS}/{file} ({runs}): name one")
    return found[0]


def checkpoint_file(path: str | Path) -> Path:
    """The checkpoint file behind ``path``: itself, or its run's ``checkpoints/best.pt`` (``find_checkpoint``)."""
    path = Path(path)
    return find_checkpoint(path) if path.is_dir() else path


def default_row_name(checkpoint: Path) -> str:
    """A checkpoint file's row name: ``<experiment>/<n>`` for a run folder's ``checkpoints/best.pt``, else its stem."""
    if checkpoint.parent.name == CHECKPOINTS:
        return f"{checkpoint.parents[2].name}/{checkpoint.parents[1].name}"
    return checkpoint.stem


def labelled_checkpoints(specs: Sequence[str]) -> list[tuple[str | None, Path]]:
    """``PATH`` or ``LABEL=PATH`` arguments as (label or None, path); an existing path is never split at `=`.

    Rows must have distinct names (they key the table, the JSON and the figure files): two unlabelled run folders
    with the same ``<experiment>/<n>`` name are labelled by the paths given instead; two equal labels are refused.
    """
    parsed = []
    for spec in specs:
        label, separator, rest = spec.partition("=")
        if separator and label and rest and not Path(spec).exists():
            parsed.append((label, Path(rest)))
        else:
            parsed.append((None, Path(spec)))
    default_names = [default_row_name(checkpoint_file(path)) for _, path in parsed]
    clashing = {n for n in default_names if default_names.count(n) > 1}
    out = []
    for (label, path), default in zip(parsed, default_names, strict=True):
        if label is None and default in clashing:
            label = str(path)
        out.append((label, path))
    labels = [label for label, _ in out if label is not None]
    if len(labels) != len(set(labels)):
        raise CheckpointError(f"two checkpoints have the same label: {sorted(labels)}")
    return out


# --------------------------------------------------------------------------------------------- what it says
def run_history(payload: dict) -> int | None:
    """The history length a checkpoint's run trained with: its data's ``n_steps_input``, else the model's own
    setting, else (a harness model saved without its run's data) its input width over its output width."""
    data = (payload.get("train") or {}).get("data") or {}
    config = payload["model"].get("config") or {}
    history = data.get("n_steps_input") or config.get("history") or config.get("n_steps_input")
    harness = payload["model"].get("harness_args") or {}
    if history is None and harness.get("dim_out") and harness["dim_in"] % harness["dim_out"] == 0:
        history = harness["dim_in"] // harness["dim_out"]
    return None if history is None else int(history)


def initial_weights(payload: dict) -> str:
    """What a checkpoint's run started from, for labelling rows: ``random``, ``released <dir>`` (a foundation
    model's published checkpoint), ``pretrained <file>`` (our backbone, a state dict, or ``trainer.init_from``)."""
    model = payload["model"]
    start = (model.get("config") or {}).get("pretrained") or (model.get("hydra") or {}).get("weights")
    start = start or ((payload.get("train") or {}).get("init_from"))
    if not start:
        return "random"
    return f"released {start}" if Path(str(start)).is_dir() else f"pretrained {Path(str(start)).name}"


def run_selection(checkpoint: Path) -> dict:
    """What a run's label-free selection did, from its ``metrics.jsonl`` (``<run>/artifacts``, beside
    ``<run>/checkpoints/<file>``): ``best_epoch``, ``kept_start``, ``kept_start_reason``, ``guard_rejections``,
    ``kept_prior`` (best.pt predicts with a classical prior), ``kept_prior_name`` (which), ``kept_prior_reason`` and
    whether the guard was on (empty for a checkpoint outside a run folder)."""
    lines = read_metrics(checkpoint.parent.parent)
    if not lines:
        return {}
    keys = ("best_epoch", "kept_start", "kept_start_reason", "guard_rejections", "kept_prior")
    keys += ("kept_prior_name", "kept_prior_reason")
    out = {key: last_value(lines, key) for key in keys}
    out["guard"] = first_value(lines, "guard")
    return {k: v for k, v in out.items() if v is not None}


@dataclass
class RunCheckpoint:
    """A checkpoint given to ``evaluate`` (a file or a run folder), read once."""

    label: str | None
    path: Path
    payload: dict

    @classmethod
    def read(cls, label: str | None, path: str | Path) -> RunCheckpoint:
        """Read the checkpoint; this imports the modules the run named in ``data.imports``, so a user's dataset is
        registered."""
        file = checkpoint_file(path)
        return cls(label, file, read_checkpoint(file))

    @property
    def settings(self) -> dict:
        """What the checkpoint says about the data it was trained on: ``dataset``, ``base`` (the Well base path),
        ``stride``, ``history`` (the keys it knows)."""
        payload = self.payload
        data = (payload.get("train") or {}).get("data") or {}
        config = payload["model"].get("config") or {}
        found = {
            "dataset": data.get("well_dataset_name") or payload["model"].get("dataset") or config.get("dataset_name"),
            "base": Path(data["well_base_path"]) if data.get("well_base_path") else None,
            "stride": data.get("min_dt_stride"),
            "history": run_history(payload),
        }
        return {key: value for key, value in found.items() if value is not None}

    @property
    def selection(self) -> dict:
        """What its run's selection did (``run_selection``)."""
        return run_selection(self.path)
