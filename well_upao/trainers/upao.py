"""``trainer=upao``: unsupervised adaptation from the PDE residual and the boundary band (paper section 3.3).

Training never reads interior ground truth: the loss sees the observed history (the "windows" regime of
INTERFACES.md section 5), the model's shifted predictions, and only the boundary band of the next frame,
gathered by index before any other use of it. Model selection (``best.pt``), early stopping and the LoRA ->
NSLoRA switch use the validation UPAO loss (label-free) unless ``paper_protocol=true`` (then the paper's
VRMSE). VRMSE under both definitions is still computed on the validation split and logged, labelled.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import torch

from well_upao.evaluate.metrics import vrmse_paper
from well_upao.evaluate.predictors import BackboneModel
from well_upao.evaluate.run import one_step_all
from well_upao.harness.samples import batch_dt, batch_grid, named_scalars
from well_upao.physics.objective import UpaoObjective, UpaoTerms, band_values
from well_upao.physics.pdes import pde_for_dataset
from well_upao.trainers.common import WellUpaoTrainer

logger = logging.getLogger(__name__)


class UpaoTrainer(WellUpaoTrainer):
    """The Well's trainer driven by the UPAO objective.

    Extra arguments: ``pde`` (registry name; default: the dataset's), ``lambda_bc`` (1e4),
    ``normalization`` (``rescaled_norm`` | ``norm`` | ``no_norm``), ``time_scheme`` (``crank_nicolson`` |
    ``explicit`` | ``implicit``), ``derivative`` (``fd`` | ``spectral``), ``floor_rel``, ``pde_constants``
    (fixed coefficients), ``paper_protocol`` (select by VRMSE), ``vrmse_trajectories`` (trajectories used
    for the paper's VRMSE per validation; the whole split at the last epoch). User PDEs are registered by the
    modules listed in the data config's ``imports``.
    """

    def __init__(
        self,
        *args,
        pde: str | None = None,
        lambda_bc: float = 1e4,
        normalization: str = "norm",
        time_scheme: str = "crank_nicolson",
        derivative: str = "fd",
        floor_rel: float = 1e-4,
        pde_constants: Mapping[str, float] | None = None,
        paper_protocol: bool = False,
        vrmse_trajectories: int = 2,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.require_backbone()
        dataset = self.dset_metadata.dataset_name
        self.objective = UpaoObjective(
            pde=pde_for_dataset(pde or dataset),
            lambda_bc=float(lambda_bc),
            normalization=normalization,
            scheme=time_scheme,
            derivative=derivative,
            floor_rel=float(floor_rel),
            constants=dict(pde_constants or {}),
        )
        self.objective.check_slots(self.bare_model.channel_slots)
        self.paper_protocol = bool(paper_protocol)
        self.vrmse_trajectories = int(vrmse_trajectories)
        self.scalar_names = list(self.dset_metadata.constant_scalar_names)
        self.history = self.datamodule.train_dataset.n_steps_input
        logger.info(
            f"UPAO on {dataset}: PDE {self.objective.pde.name} ({len(self.objective.pde.equations)} sub-equations), "
            f"{normalization}, lambda_BC={lambda_bc:g}, {time_scheme}; selection by "
            f"{'validation VRMSE (paper protocol)' if self.paper_protocol else 'validation UPAO loss (label-free)'}"
        )

    # ------------------------------------------------------------------ the objective on a batch
    def _physical(self, fields: torch.Tensor) -> torch.Tensor:
        """Undo the dataset's normalisation (when the data config turns it on): residuals need physical units."""
        if getattr(self.datamodule.train_dataset, "use_normalization", False) and getattr(self, "dset_norm", None):
            return self.dset_norm.denormalize_flattened(fields, "variable")
        return fields

    def upao_terms(self, batch: Mapping[str, torch.Tensor], normalized: bool = True) -> UpaoTerms:
        """UPAO loss of a batch. Reads the history, the next frame's *band* only, and the sample's metadata."""
        model = self.bare_model
        dims = self.dset_metadata.n_spatial_dims
        inputs = batch["input_fields"].to(self.device)
        if normalized:
            inputs = self._physical(inputs)
        # the only access to the target frame: gather its boundary band by index
        next_band = band_values(batch["output_fields"][:, 0].to(self.device), dims, self.objective.band_width)
        if normalized:
            next_band = self._physical(next_band)
        inputs = model.to_slots(inputs)
        next_band = model.to_slots(next_band)
        prediction = self.model(inputs, sequence=True)
        scalars = named_scalars(batch.get("constant_scalars"), self.scalar_names)
        return self.objective(
            prediction,
            inputs,
            next_band,
            batch_dt(batch).to(self.device, torch.float32),
            {name: value.to(self.device, torch.float32) for name, value in scalars.items()},
            batch_grid(batch, self.objective.derivative),
            self.slot_mask(),
        )

    def training_loss(self, batch):
        terms = self.upao_terms(batch)
        logs = {
            "L_BC": terms.boundary.item(),
            "L_PDE": terms.residual.item(),
            "lambda_BC": terms.lambda_bc.mean().item(),
        }
        logs |= {f"residual_mse_{k}": v.item() for k, v in terms.residual_mse.items()}
        return terms.total, logs

    # ------------------------------------------------------------------ validation
    @torch.no_grad()
    def upao_validation(self, dataloader, full: bool) -> dict[str, float]:
        """Mean UPAO loss and its parts on the validation split (no labels beyond the band)."""
        self.model.eval()
        totals = {"upao_loss": 0.0, "L_BC": 0.0, "L_PDE": 0.0}
        count = 0
        for i, batch in enumerate(dataloader):
            if not full and i >= self.short_validation_length:
                break
            terms = self.upao_terms(batch, normalized=False)
            totals["upao_loss"] += terms.total.item()
            totals["L_BC"] += terms.boundary.item()
            totals["L_PDE"] += terms.residual.item()
            count += 1
        return {k: v / max(count, 1) for k, v in totals.items()}

    @torch.no_grad()
    def paper_vrmse(self, full: bool) -> dict[str, float]:
        """The paper's VRMSE (one-step predictions over whole validation trajectories), per channel and mean."""
        self.model.eval()
        dataset = self.datamodule.rollout_val_dataset
        count = len(dataset) if full else min(self.vrmse_trajectories, len(dataset))
        per_channel = []
        for index in range(count):
            sample = dataset[index]
            trajectory = torch.cat([sample["input_fields"], sample["output_fields"]]).to(self.device)
            prediction = one_step_all(BackboneModel("model", self.bare_model), trajectory, self.history, None)
            per_channel.append(vrmse_paper(prediction, trajectory[self.history :]))
        values = torch.stack(per_channel).mean(0)
        names = [n for names in self.dset_metadata.field_names.values() for n in names]
        logs = {f"valid_paper_VRMSE_{name}": v.item() for name, v in zip(names, values, strict=True)}
        logs["valid_paper_VRMSE"] = values.mean().item()
        return logs

    def validation_loop(self, dataloader, valid_or_test: str = "valid", full: bool = False, epoch: int = 0):
        loss, logs = super().validation_loop(dataloader, valid_or_test, full, epoch)  # the Well's metrics
        if valid_or_test != "valid":
            return loss, logs
        upao = self.upao_validation(dataloader, full)
        logs |= {f"valid_{k}": v for k, v in upao.items()}
        logs |= self.paper_vrmse(full)
        selection = logs["valid_paper_VRMSE"] if self.paper_protocol else upao["upao_loss"]
        return selection, logs

    def checkpoint_payload(self, epoch: int, validation_loss: float) -> dict[str, Any]:
        payload = super().checkpoint_payload(epoch, validation_loss)
        payload["train"]["selection"] = "paper_vrmse" if self.paper_protocol else "upao_loss"
        payload["train"]["regime"] = "windows"
        return payload
