"""Supervised multi-dataset pretraining (the paper's Stage 1) with its protocol: AdamW (0.9, 0.95), lr 1e-4
cosine to 1e-6 after 200 warm-up steps, weight decay 0.01, gradient clipping 1.0, the dense shifted loss on
active channels, an equal number of clips per dataset per epoch; single process, DDP or FSDP."""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.optim.lr_scheduler import LambdaLR
from tqdm.auto import tqdm

from well_upao.distributed import is_main_process
from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
from well_upao.harness.mixture import MixtureDataModule
from well_upao.models.checkpoint import build_payload, save_checkpoint, unwrap
from well_upao.trainers.common import warmup_cosine
from well_upao.trainers.shifted import masked_mse

logger = logging.getLogger(__name__)


class PretrainTrainer:
    def __init__(
        self,
        model: torch.nn.Module,
        data: MixtureDataModule,
        output_dir: str | Path,
        epochs: int = 10,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.95),
        weight_decay: float = 0.01,
        warmup_steps: int = 200,
        lr_min: float = 1e-6,
        grad_clip: float = 1.0,
        max_minutes: float | None = None,
        max_steps: int | None = None,
        device: torch.device | str = "cpu",
        progress: bool = True,
    ):
        self.model, self.data = model, data
        self.output_dir = Path(output_dir)
        self.epochs, self.grad_clip = int(epochs), float(grad_clip)
        self.max_seconds = None if max_minutes is None else 60.0 * float(max_minutes)
        self.max_steps = max_steps
        self.device = torch.device(device)
        self.progress = progress and is_main_process()
        self.optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad], lr=lr, betas=tuple(betas), weight_decay=weight_decay
        )
        total = max(1, data.steps_per_epoch() * self.epochs)
        warmup = max(1, min(int(warmup_steps), total // 2))
        ratio = min(1.0, lr_min / lr)
        self.scheduler = LambdaLR(self.optimizer, lambda s: warmup_cosine(s, warmup, total, ratio))
        self.step = 0
        self.history: list[dict] = []
        self.best: float | None = None

    def train_step(self, batch) -> float:
        frames = batch.frames.to(self.device)
        mask = batch.mask.to(self.device)
        history = frames.shape[1] - 1
        prediction = self.model(frames[:, :history], mask, sequence=True)
        loss = masked_mse(prediction, frames[:, 1:], mask)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        value = loss.detach()
        if dist.is_initialized():
            dist.all_reduce(value, op=dist.ReduceOp.AVG)
        return float(value)

    @torch.no_grad()
    def validate(self) -> dict[str, float]:
        """One-step VRMSE (both definitions) per dataset on whole validation trajectories."""
        model = unwrap(self.model).eval()
        history = self.data.n_steps_input
        results = {}
        for name in self.data.modules:
            mask = self.data.mask(name).to(self.device)
            active = mask.bool()
            paper, well = [], []
            for trajectory in self.data.validation_trajectories_of(name):
                trajectory = trajectory.to(self.device)
                windows = torch.stack([trajectory[t - history : t] for t in range(history, trajectory.shape[0])])
                prediction = torch.cat([model.forward_sequence(w, mask)[:, -1] for w in windows.split(8)])[..., active]
                truth = trajectory[history:][..., active]
                paper.append(vrmse_paper(prediction, truth, constant_as_nan=True).nanmean())
                well.append(vrmse_well(prediction, truth, truth.ndim - 2).mean())
            results[f"{name}/vrmse_paper"] = float(torch.stack(paper).mean())
            results[f"{name}/vrmse_well"] = float(torch.stack(well).mean())
        self.model.train()
        return results

    def train(self) -> list[dict]:
        start = time.time()
        self.model.train()
        stop = False
        for epoch in range(1, self.epochs + 1):
            losses = []
            batches = self.data.train_batches(epoch)
            bar = tqdm(
                batches,
                total=self.data.steps_per_epoch(),
                desc=f"pretrain {epoch}/{self.epochs}",
                disable=not self.progress,
                leave=False,
            )
            for batch in bar:
                losses.append(self.train_step(batch))
                bar.set_postfix(loss=f"{losses[-1]:.3e}", dataset=batch.dataset[:12])
                out_of_time = self.max_seconds is not None and time.time() - start > self.max_seconds
                if out_of_time or (self.max_steps is not None and self.step >= self.max_steps):
                    stop = True
                    break
            record = {
                "epoch": epoch,
                "step": self.step,
                "train_loss": sum(losses) / max(len(losses), 1),
                "lr": self.optimizer.param_groups[0]["lr"],
                "seconds": time.time() - start,
            }
            record |= self.validate()
            self.history.append(record)
            if is_main_process():
                self.save(record)
                logger.info(json.dumps(record))
            if stop:
                break
        return self.history

    def save(self, record: dict) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        scores = [v for k, v in record.items() if k.endswith("/vrmse_paper")]
        criterion = sum(scores) / len(scores) if scores else math.inf
        payload = build_payload(
            self.model,
            epoch=record["epoch"],
            optimizer=self.optimizer,
            scheduler_state=self.scheduler.state_dict(),
            validation_loss=criterion,
            best_validation_loss=self.best,
            metrics=record,
            extra_train={"global_step": self.step, "datasets": list(self.data.modules), "history": self.history},
        )
        save_checkpoint(self.output_dir / "recent.pt", payload)
        if self.best is None or criterion < self.best:
            self.best = criterion
            save_checkpoint(self.output_dir / "best.pt", payload)
        with open(self.output_dir / "metrics.jsonl", "a") as stream:
            stream.write(json.dumps(record) + "\n")
