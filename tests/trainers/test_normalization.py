"""``data.use_normalization=true`` (the Well's benchmark setting) holds on every path: the model sees the units it
trains in, residuals and metrics stay physical (``well_upao.harness.normalization``)."""

from __future__ import annotations

import json

import harness_command as harness
import torch
from torch.utils.data import default_collate
from trainers.test_upao import make_trainer  # tests/ is on sys.path (conftest)

from well_upao.cli import main


def first_batch(trainer, size: int = 2) -> dict:
    dataset = trainer.datamodule.train_dataset
    return default_collate([dataset[i] for i in range(size)])


def test_the_upao_loss_is_the_same_on_the_same_batch_with_or_without_normalization(small_datasets, tmp_path):
    """An untrained backbone on the extrap2 base predicts the quadratic extrapolation exactly, which commutes with
    the normalisation's affine map: the UPAO loss (physical residual, physical band) must then be the same whether
    the batch comes normalised (training with the Well's normalisation) or raw, and the same on raw validation
    batches of the normalised run."""
    common = dict(dataset="burgers2d", model_kwargs={"base": "extrap2"}, data_kwargs={"n_steps_input": 4})
    raw = make_trainer(small_datasets, tmp_path / "raw", **common)
    normalized = make_trainer(
        small_datasets,
        tmp_path / "normalized",
        **(common | {"data_kwargs": {"n_steps_input": 4, "use_normalization": True}}),
    )
    raw_batch, normalized_batch = first_batch(raw), first_batch(normalized)
    # the batches really differ (z-scores vs physical values), or the test would prove nothing
    assert not torch.allclose(raw_batch["input_fields"], normalized_batch["input_fields"], atol=1e-2)
    assert normalized.loss.setup.space.normalized and not raw.loss.setup.space.normalized
    with torch.no_grad():
        expected = raw.loss.upao_terms(raw_batch)
        on_normalized = normalized.loss.upao_terms(normalized_batch)
        on_raw_validation = normalized.loss.upao_terms(raw_batch, normalized=False)
    for terms in (on_normalized, on_raw_validation):
        torch.testing.assert_close(terms.residual, expected.residual, rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(terms.boundary, expected.boundary, rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(terms.total, expected.total, rtol=1e-4, atol=1e-7)


def test_a_run_on_normalised_fields_evaluates_to_what_its_validation_logged(small_datasets, tmp_path):
    """The Well's FNO under UPAO with the Well's normalisation: `well-upao evaluate` of its best.pt (the epoch-1 model)
    gives the VRMSE its own last validation logged, under both definitions (the Well's, from the harness's
    `rollout_model`; the paper's, from the UPAO loop's predictor), on the whole validation trajectories."""
    small_fno = ["model.modes1=4", "model.modes2=4", "model.hidden_channels=8"]
    result = harness.run_harness(
        tmp_path,
        small_datasets,
        "experiment=fno",
        "trainer=upao",
        "data=burgers2d",
        "data.use_normalization=true",
        "data.n_steps_input=4",
        "trainer.validate_start=false",
        *small_fno,
        *harness.FAST,
        "data.max_rollout_steps=50",  # the whole trajectories, as evaluate reads them
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    logged = json.loads((run / "artifacts" / "metrics.jsonl").read_text().splitlines()[0])
    out = tmp_path / "evaluation"
    assert (
        main(
            ["evaluate", "--no-figures", str(run), "--out", str(out), "--quiet", "--no-solver", "--rollout-steps", "1"]
        )
        == 0
    )
    scores = json.loads(next(out.glob("*.json")).read_text())["scores"]
    row = next(s for s in scores if s["kind"] == "model")
    assert row["notes"]["normalization"] == "ZScoreNormalization"
    assert abs(row["mean_vrmse_well"] / logged["valid_burgers2d/full_VRMSE_T=all"] - 1) < 1e-4, (row, logged)
    assert abs(row["mean_vrmse_paper"] / logged["valid_paper_VRMSE"] - 1) < 1e-4, (row, logged)
