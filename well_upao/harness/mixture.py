"""Multi-dataset pretraining data: heterogeneous Well datasets (1D/2D/3D, any resolution and channel set)
mapped to the 18-slot representation, an equal number of clips per dataset per epoch.

Every epoch draws ``clips_per_dataset`` windows from each dataset (with replacement when a dataset has fewer),
groups them into *global* batches of one dataset each (shapes differ between datasets), and shuffles the batch
order; the draw depends only on ``(seed, epoch)``, so every process sees the same global batches and rank ``r``
of ``world_size`` takes rows ``r * b .. (r + 1) * b - 1`` of each (``b = batch_size``). A global batch is thus
identical whatever the number of processes, which the distributed test relies on.

For the training loop (``well_upao.trainers.loop``) the mixture is a datamodule like a Well one:
``train_dataloader()`` gives a loader whose ``set_epoch`` selects the epoch's batches, each a dict with the
history and next frame already in the 18 slots and the dataset's ``slot_mask``; ``train_dataset`` is the first
dataset's (the Well's ``Trainer`` reads its metadata, which the loop does not use for a mixture), and
``checkpoint_info`` names the datasets in every checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from well_upao.data.slot_inventory import N_SLOTS
from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.models.na_transformer import T_IN


@dataclass
class SlotBatch:
    dataset: str
    frames: torch.Tensor  # (B, T_in + 1, *space, 18)
    mask: torch.Tensor  # (18,)


def to_slot_tensor(fields: torch.Tensor, slots: Sequence[int]) -> torch.Tensor:
    out = fields.new_zeros(*fields.shape[:-1], N_SLOTS)
    out[..., list(slots)] = fields
    return out


class MixtureDataModule:
    def __init__(
        self,
        well_base_path: str,
        datasets: Sequence[str],
        batch_size: int = 4,
        n_steps_input: int = T_IN,
        clips_per_dataset: int = 64,
        validation_trajectories: int = 2,
        seed: int = 0,
        world_size: int = 1,
        rank: int = 0,
        data_workers: int = 0,
        imports: Sequence[str] = (),
    ):
        if not datasets:
            raise ValueError("a mixture needs at least one dataset")
        self.batch_size, self.world_size, self.rank = int(batch_size), int(world_size), int(rank)
        self.global_batch = self.batch_size * self.world_size
        self.clips_per_dataset, self.seed = int(clips_per_dataset), int(seed)
        self.n_steps_input = int(n_steps_input)
        self.validation_trajectories = int(validation_trajectories)
        self.settings = {
            "well_base_path": os.path.abspath(well_base_path),
            "datasets": list(datasets),
            "n_steps_input": self.n_steps_input,
            "imports": list(imports),
        }
        self.modules = {
            name: WellUpaoDataModule(
                well_base_path,
                name,
                batch_size=self.batch_size,
                n_steps_input=n_steps_input,
                n_steps_output=1,
                data_workers=data_workers,
                imports=imports,
                max_rollout_steps=10**6,
            )
            for name in datasets
        }
        self.slots = {name: module.source.channel_slots for name, module in self.modules.items()}

    @property
    def train_dataset(self):
        return next(iter(self.modules.values())).train_dataset

    def train_dataloader(self) -> MixtureLoader:
        return MixtureLoader(self)

    def checkpoint_info(self) -> dict:
        """What checkpoints record about the data: the settings (``train.data``) and the datasets."""
        return {"data": dict(self.settings), "datasets": list(self.modules)}

    def mask(self, name: str) -> torch.Tensor:
        mask = torch.zeros(N_SLOTS)
        mask[self.slots[name]] = 1
        return mask

    def global_batches(self, epoch: int) -> list[tuple[str, np.ndarray]]:
        """The epoch's global batches: ``(dataset, sample indices)``, identical on every process."""
        rng = np.random.default_rng([self.seed, epoch])
        batches = []
        for name, module in self.modules.items():
            size = len(module.train_dataset)
            clips = rng.choice(size, self.clips_per_dataset, replace=self.clips_per_dataset > size)
            usable = len(clips) - len(clips) % self.global_batch
            batches += [(name, clips[i : i + self.global_batch]) for i in range(0, usable, self.global_batch)]
        order = rng.permutation(len(batches))
        return [batches[i] for i in order]

    def steps_per_epoch(self) -> int:
        return len(self.global_batches(0))

    def train_batches(self, epoch: int) -> Iterator[SlotBatch]:
        """This process's share of each global batch, as 18-slot frames."""
        for name, indices in self.global_batches(epoch):
            mine = indices[self.rank * self.batch_size : (self.rank + 1) * self.batch_size]
            dataset = self.modules[name].train_dataset
            samples = [dataset[int(i)] for i in mine]
            fields = torch.stack([torch.cat([s["input_fields"], s["output_fields"]]) for s in samples])
            yield SlotBatch(name, to_slot_tensor(fields, self.slots[name]), self.mask(name))

    def validation_trajectories_of(self, name: str) -> Iterator[torch.Tensor]:
        """Whole validation trajectories ``(T, *space, 18)`` of a dataset (at most ``validation_trajectories``)."""
        dataset = self.modules[name].rollout_val_dataset
        for index in range(min(self.validation_trajectories, len(dataset))):
            sample = dataset[index]
            yield to_slot_tensor(torch.cat([sample["input_fields"], sample["output_fields"]]), self.slots[name])


class MixtureLoader:
    """One epoch of a mixture's training batches as dicts: ``input_fields`` ``(B, T_in, *space, 18)``,
    ``output_fields`` ``(B, 1, *space, 18)``, ``slot_mask`` ``(18,)``, ``dataset``."""

    def __init__(self, mixture: MixtureDataModule):
        self.mixture, self.epoch, self.skipped = mixture, 1, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def skip_batches(self, count: int) -> None:
        """Leave out the first ``count`` batches of the next pass (an interrupted epoch's)."""
        self.skipped = count

    def __len__(self) -> int:
        return self.mixture.steps_per_epoch()

    def __iter__(self) -> Iterator[dict]:
        skipped, self.skipped = self.skipped, 0
        for number, batch in enumerate(self.mixture.train_batches(self.epoch)):
            if number < skipped:
                continue
            history = batch.frames.shape[1] - 1
            yield {
                "input_fields": batch.frames[:, :history],
                "output_fields": batch.frames[:, history:],
                "slot_mask": batch.mask,
                "dataset": batch.dataset,
            }
