"""Distributed entry point over the same Hydra configs: ``torchrun --nproc_per_node=N -m well_upao.train ...``.

The Well's ``train.py`` hard-codes a single process. This entry point reads ``RANK``/``WORLD_SIZE``/
``LOCAL_RANK`` (set by ``torchrun``), initialises the process group (NCCL on CUDA, gloo on CPU), and runs

* the harness flow for our configs (``model=... trainer=... data=...``, primary config ``config``), or
* multi-dataset pretraining (``--config-name pretrain``),

with the model replicated by DDP (``trainer.strategy=ddp``, the default) or sharded per block by FSDP2
(``trainer.strategy=fsdp``, ``well_upao.trainers.sharding``; checkpoints ``well_upao.trainers.sharded_checkpoint``);
``trainer.mixed_precision=bf16`` (FSDP) and ``trainer.activation_checkpointing=true`` are options of both flows.
Several machines: ``torchrun --nnodes=M --nproc_per_node=N --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT ...``
on each. Without ``torchrun`` it runs in one process.
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import dataclass

import hydra
import torch
import torch.distributed as dist
import wandb
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from the_well.benchmark.utils.experiment_utils import configure_experiment
from torch.nn.parallel import DistributedDataParallel

from well_upao.harness.mixture import MixtureDataModule
from well_upao.trainers.pretraining import pretraining_trainer
from well_upao.trainers.sharding import ShardingOptions, checkpoint_layers, shard

logger = logging.getLogger("well_upao.train")


@dataclass
class Distributed:
    rank: int
    world_size: int
    local_rank: int

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def device(self) -> torch.device:
        if torch.cuda.is_available():
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")

    @classmethod
    def from_environment(cls) -> Distributed:
        info = cls(
            int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))
        )
        if info.enabled and not dist.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            if torch.cuda.is_available():
                torch.cuda.set_device(info.local_rank)
            dist.init_process_group(backend=backend, rank=info.rank, world_size=info.world_size)
        return info


def wrap(
    model: torch.nn.Module, info: Distributed, strategy: str = "ddp", options: ShardingOptions | None = None
) -> torch.nn.Module:
    """The model on this process's device, with per-layer activation checkpointing if asked, then DDP
    (``find_unused_parameters``: each batch uses one dimensionality's NA variant) or FSDP2 per block (the same
    module object, its parameters sharded); ``options`` (the trainer config's) override ``strategy``."""
    options = options or ShardingOptions(strategy=strategy)
    model = model.to(info.device)
    if options.activation_checkpointing:
        checkpoint_layers(model)
    if not info.enabled:
        return model
    if options.strategy == "fsdp":
        return shard(model, options, info.device)
    device_ids = [info.local_rank] if torch.cuda.is_available() else None
    return DistributedDataParallel(model, device_ids=device_ids, find_unused_parameters=True)


def run_pretraining(cfg: DictConfig, info: Distributed) -> None:
    """Pretraining in the one loop: the mixture, the model, AdamW with the trainer's ``lr``, ``betas``,
    ``weight_decay``, wrapped for DDP/FSDP2; resumes from ``trainer.output_dir/recent.pt``."""
    torch.manual_seed(int(cfg.seed))
    data = MixtureDataModule(
        **OmegaConf.to_container(cfg.data, resolve=True), world_size=info.world_size, rank=info.rank
    )
    model = instantiate(cfg.model)
    settings = OmegaConf.to_container(cfg.trainer, resolve=True)
    options = ShardingOptions.pop_from(settings)
    output_dir = settings.pop("output_dir")
    lr, betas, weight_decay = settings.pop("lr"), tuple(settings.pop("betas")), settings.pop("weight_decay")
    model = wrap(model, info, options=options)
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=lr, betas=betas, weight_decay=weight_decay
    )
    trainer = pretraining_trainer(
        model, data, optimizer, output_dir, info.device, is_distributed=info.enabled, **settings
    )
    trainer.train()


def run_harness(cfg: DictConfig, info: Distributed) -> None:
    """The flow of ``the_well.benchmark.train.train`` with DDP or FSDP2 (``trainer.strategy``). Rank 0 picks the
    run folder (a new one, or the one to resume); the other processes use it."""
    if info.enabled:
        chosen = [configure_experiment(copy.deepcopy(cfg), logger)[2] if info.rank == 0 else None]
        dist.broadcast_object_list(chosen, src=0)
        with open_dict(cfg):
            cfg.folder_override = chosen[0]
    cfg, name, folder, checkpoints, artifacts, viz = configure_experiment(cfg, logger)
    if info.enabled:
        dist.barrier()  # every process has read the folder's configuration before rank 0 rewrites it
    if info.rank == 0:
        wandb.init(
            dir=folder, project=cfg.wandb_project_name, name=name, config=OmegaConf.to_container(cfg, resolve=True)
        )
        OmegaConf.save(cfg, os.path.join(folder, "extended_config.yaml"))
    if info.enabled:
        dist.barrier()
    trainer = instantiate_trainer(cfg, info, checkpoints, artifacts, viz)
    trainer.validate() if cfg.validation_mode else trainer.train()
    if info.rank == 0:
        wandb.finish()


def instantiate_trainer(cfg: DictConfig, info: Distributed, checkpoints: str, artifacts: str, viz: str):
    """The data module, model (wrapped for DDP / FSDP2), optimizer and trainer of a harness run, as
    ``the_well.benchmark.train`` builds them (``+seed=N`` seeds the initial weights)."""
    if cfg.get("seed") is not None:  # +seed=N: the same initial weights in every run
        torch.manual_seed(int(cfg.seed))
    datamodule = instantiate(cfg.data, world_size=info.world_size, rank=info.rank, data_workers=cfg.data_workers)
    meta = datamodule.train_dataset.metadata
    model = instantiate(
        cfg.model,
        n_spatial_dims=meta.n_spatial_dims,
        spatial_resolution=meta.spatial_resolution,
        dim_in=cfg.data.n_steps_input * meta.n_fields + meta.n_constant_fields,
        dim_out=meta.n_fields,
    )
    model = wrap(model, info, options=ShardingOptions.pop_from(OmegaConf.to_container(cfg.trainer, resolve=True)))
    optimizer = instantiate(cfg.optimizer, params=model.parameters())
    trainer = instantiate(
        cfg.trainer,
        checkpoint_folder=checkpoints,
        artifact_folder=artifacts,
        viz_folder=viz,
        model=model,
        datamodule=datamodule,
        optimizer=optimizer,
        lr_scheduler=None,
        device=info.device,
        is_distributed=info.enabled,
    )
    return trainer


@hydra.main(version_base=None, config_path="configs", config_name="config")
def main(cfg: DictConfig) -> None:
    info = Distributed.from_environment()
    try:
        if "datasets" in cfg.data:
            run_pretraining(cfg, info)
        else:
            run_harness(cfg, info)
    finally:
        if info.enabled and dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
