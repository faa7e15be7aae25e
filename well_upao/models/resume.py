"""The resume artifact of a backbone pretrained across lent device calls (``benchmarks/device/foundation_call.py``).

A lent GPU session gets about 15 minutes of device time, so the paper's pretraining schedule is many calls, each
starting from the weights the last one left. The artifact is a well-upao checkpoint (INTERFACES.md section 4, so
``model.pretrained=`` loads it like any backbone) with its weights stored in ``dtype`` (bf16 by default: half the
bytes of fp32, the carry-in budget of a device call is about 31 MiB) and no optimizer state, plus a
``train.resume`` record (``ResumeRecord``): the optimizer steps done over all calls, the total of the cosine
schedule fixed up front, the seed of the next call's corpus, and one entry per call (device, minutes, steps, clips,
corpus). A call restarts AdamW's moments with a short re-warm (``trainer.rewarm_steps``) at the schedule's position
(``trainer.start_step`` of ``trainer.schedule_steps``): the model card states it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from well_upao.models.checkpoint import CheckpointError, read_checkpoint, save_checkpoint

#: the key of the record inside the checkpoint's ``train`` section
RESUME_KEY = "resume"
STORED_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass
class ResumeRecord:
    """Where a backbone pretrained across calls stands (see the module docstring)."""

    #: optimizer steps done over every call so far (the next call's ``trainer.start_step``)
    step: int
    #: the cosine schedule's total over all calls, fixed by the first call
    schedule_steps: int
    #: the seed of the next call's corpus (each call draws a fresh one: ``data_seed + 1`` after it)
    data_seed: int
    #: one entry per call: ``device``, ``minutes``, ``steps``, ``clips``, ``corpus`` (families, trajectories, seed)
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def schedule_left(self) -> int:
        return max(0, self.schedule_steps - self.step)

    def after_call(self, steps: int, call: dict[str, Any]) -> ResumeRecord:
        """The record once a call has done ``steps`` more optimizer steps (``call``: its entry)."""
        return dataclasses.replace(
            self, step=self.step + int(steps), data_seed=self.data_seed + 1, calls=[*self.calls, dict(call)]
        )


def first_record(schedule_steps: int, data_seed: int = 1000) -> ResumeRecord:
    """The record before the first call: nothing done, the whole schedule ahead."""
    if schedule_steps < 1:
        raise ValueError(f"the schedule needs at least one step, got {schedule_steps}")
    return ResumeRecord(step=0, schedule_steps=int(schedule_steps), data_seed=int(data_seed))


def write_resume_artifact(
    source: str | Path, destination: str | Path, record: ResumeRecord, dtype: str = "bfloat16"
) -> int:
    """The backbone of checkpoint ``source`` as a resume artifact at ``destination`` (written to a temporary name and
    renamed): floating-point weights in ``dtype``, no optimizer state, ``train`` = the source's epoch / metrics /
    datasets plus ``resume`` = ``record``. Returns the file size."""
    if dtype not in STORED_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(STORED_DTYPES)}, got {dtype!r}")
    payload = read_checkpoint(source)
    if payload.get("adapters"):
        raise CheckpointError(f"{source} holds adapters: export the plain backbone (export-backbone --merge) first")
    stored = STORED_DTYPES[dtype]
    state = {k: v.to(stored) if v.is_floating_point() else v for k, v in payload["state_dict"].items()}
    train = payload.get("train") or {}
    slim = {k: v for k, v in payload.items() if k not in ("optimizer_state_dit", "model_state_dict")}
    slim["state_dict"] = state
    slim["train"] = {k: train[k] for k in ("epoch", "metrics", "global_step", "datasets") if k in train}
    slim["train"][RESUME_KEY] = dataclasses.asdict(record) | {"weights_dtype": dtype}
    save_checkpoint(destination, slim)
    return Path(destination).stat().st_size


def read_resume_record(path: str | Path) -> ResumeRecord:
    """The ``ResumeRecord`` of a resume artifact (``CheckpointError`` when the file has none)."""
    train = read_checkpoint(path).get("train") or {}
    stored = train.get(RESUME_KEY)
    if stored is None:
        raise CheckpointError(f"{path} has no resume record (train.{RESUME_KEY}): it is not a resume artifact")
    names = {f.name for f in dataclasses.fields(ResumeRecord)}
    return ResumeRecord(**{k: v for k, v in stored.items() if k in names})
