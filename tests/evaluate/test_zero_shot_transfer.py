"""Zero-shot transfer of a one-frame model to a dataset with fewer channels (``evaluate --zero-shot-from``)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from the_well.benchmark.models import FNO

from well_upao.cli import main
from well_upao.data.source import WellSource
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.models.checkpoint import build_payload, save_checkpoint
from well_upao.predict.predictors import ChannelSubsetModel, transfer_predictors


class PointwiseLinear(torch.nn.Module):
    """A one-frame model whose re-shaped weights have a closed form: a 1x1 convolution."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, 1)

    def forward(self, x):
        return self.conv(x)


def test_a_channel_assignment_equals_the_re_shaped_weights():
    """Target channel j read as source channel a[j] is the model whose input columns (per history step) and output
    rows are the source's at a: W_t[j, t*C_t + i] = W_s[a[j], t*C_s + a[i]], b_t[j] = b_s[a[j]]."""
    history, c_src, assignment = 2, 3, (0, 2)
    torch.manual_seed(0)
    source = PointwiseLinear(history * c_src, c_src)
    window = torch.randn(4, history, 8, 8, len(assignment))  # (B, T, H, W, C_tgt)
    predicted = ChannelSubsetModel("zs", source, "channels_first_default", history, c_src, assignment).predict(
        window, None
    )
    weight = source.conv.weight[:, :, 0, 0].view(c_src, history, c_src)
    rows = torch.tensor(assignment)
    target_weight = weight[rows][:, :, rows].reshape(len(assignment), history * len(assignment), 1, 1)
    x = window.permute(0, 1, 4, 2, 3).reshape(4, history * len(assignment), 8, 8)  # time-major channels-first
    expected = F.conv2d(x, target_weight, source.conv.bias[rows]).permute(0, 2, 3, 1)
    torch.testing.assert_close(predicted, expected)


def fno_checkpoint(path, dataset: str, channels: int, history: int = 8):
    node = {"_target_": "the_well.benchmark.models.FNO", "modes1": 4, "modes2": 4, "modes3": 4, "hidden_channels": 8}
    sizes = {"n_spatial_dims": 2, "spatial_resolution": [16, 16], "dim_in": history * channels, "dim_out": channels}
    torch.manual_seed(0)
    model = FNO(modes1=4, modes2=4, modes3=4, hidden_channels=8, **sizes)
    extra = {"hydra": node, "harness_args": sizes, "dataset": dataset, "formatter": "channels_first_default"}
    save_checkpoint(path, build_payload(model, extra_model=extra))
    return path


def test_evaluate_keeps_the_best_subset_and_refuses_fewer_source_channels(small_datasets, tmp_path, capsys):
    tg = fno_checkpoint(tmp_path / "tg.pt", "tg2d", 3)
    out = tmp_path / "out"
    common = ["--base-path", str(small_datasets), "--rollout-steps", "2", "--no-solver", "--quiet", "--out", str(out)]
    assert (
        main(["evaluate", "--no-figures", "--data", "burgers2d", "--zero-shot-from", f"from tg2d={tg}", *common]) == 0
    )
    scores = json.loads((out / "evaluation_burgers2d_valid_stride1.json").read_text())["scores"]
    rows = [s for s in scores if s["name"].startswith("from tg2d")]
    assert len(rows) == 1 and rows[0]["name"] == "from tg2d"
    assert rows[0]["notes"]["assignments tried"] == 3  # C(3, 2)
    assert "from tg2d" in capsys.readouterr().out
    # every assignment scored on its own (as plain model rows, none dropped): the kept row is the lowest
    request = EvaluationRequest(small_datasets, "burgers2d", rollout_steps=2, solver=False, out=None, progress=False)
    candidates = transfer_predictors(tg, WellSource(small_datasets, "burgers2d", "valid"), "each")
    scores_each = {
        s.notes["source channels"]: s.mean_paper
        for s in run_evaluation(request, models=candidates).evaluation.scores
        if s.name.startswith("each [")
    }
    assert len(scores_each) == 3 and len(set(scores_each.values())) == 3, scores_each
    best = min(scores_each, key=scores_each.get)
    assert rows[0]["notes"]["source channels"] == best, scores_each
    assert rows[0]["mean_vrmse_paper"] == pytest.approx(scores_each[best], rel=1e-6)
    bg = fno_checkpoint(tmp_path / "bg.pt", "burgers2d", 2)
    assert (
        main(["evaluate", "--no-figures", "--data", "tg2d", "--zero-shot-from", f"from burgers2d={bg}", *common]) == 2
    )
    assert "no zero-shot transfer" in capsys.readouterr().err


def test_the_expected_errors_follow_the_kept_assignment(small_datasets, tmp_path):
    """A transferred model that can start from the backtests' 3 frames (trained on a history of 3, evaluated at 4)
    has expected errors; they are the kept assignment's, under its label, and the dropped assignments have none:
    every row of ``expected`` is a row of the table."""
    tg = fno_checkpoint(tmp_path / "tg.pt", "tg2d", 3, history=3)
    out = tmp_path / "out"
    common = ["--base-path", str(small_datasets), "--history", "4", "--rollout-steps", "2", "--no-solver", "--quiet"]
    assert (
        main(
            [
                "evaluate",
                "--no-figures",
                "--data",
                "burgers2d",
                "--zero-shot-from",
                f"from tg2d={tg}",
                *common,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    data = json.loads((out / "evaluation_burgers2d_valid_stride1.json").read_text())
    names = {s["name"] for s in data["scores"]}
    assert "from tg2d" in data["expected"]["one_step"]
    for window, estimates in data["expected"].items():
        assert set(estimates) <= names, (window, set(estimates) - names)
