"""The one-step and rollout protocol hands every batch the trajectory's whole context."""

from __future__ import annotations

import torch

from well_upao.harness.samples import Context
from well_upao.physics.stencils import Grid
from well_upao.predict.predictors import HarnessModel
from well_upao.predict.rollout import batch_context, one_step_all, rollout


class OneFrameModel(torch.nn.Module):
    """A channels-first one-frame model as the Well's harness builds it: ``dim_in = history * C + C_const``."""

    def __init__(self, dim_in: int, dim_out: int):
        super().__init__()
        self.dim_in = dim_in
        self.conv = torch.nn.Conv2d(dim_in, dim_out, 1)

    def forward(self, x):
        if x.shape[1] != self.dim_in:  # what a Conv2d would say, explicitly
            raise RuntimeError(f"expected input to have {self.dim_in} channels, but got {x.shape[1]}")
        return self.conv(x)


def test_a_one_frame_model_reads_the_constant_fields_in_every_batch():
    """Training appends the constant fields after the frames; the evaluation's batches dropped them (a model trained
    with one constant field got 16 channels instead of 17). The constants reach the model: its prediction changes
    with them (negative control: a context with other constants predicts otherwise)."""
    history, channels = 4, 2
    torch.manual_seed(0)
    model = OneFrameModel(history * channels + 1, channels)
    row = HarnessModel("fno", model, "channels_first_default", history)
    frames = torch.randn(10, 8, 8, channels)
    constants = torch.randn(8, 8, 1)
    context = Context(torch.tensor([0.1]), Grid((1.0, 1.0), (True, True)), {}, [0, 1], constants)
    assert batch_context(context, 3).constant_fields is constants
    predicted = one_step_all(row, frames, history, context, batch=4)  # two batches of windows
    assert predicted.shape == (6, 8, 8, channels) and torch.isfinite(predicted).all()
    assert rollout(row, frames, history, 3, context, starts=(0, 2)).shape == (2, 3, 8, 8, channels)
    other = Context(context.dt, context.grid, {}, [0, 1], constants + 1)
    assert not torch.allclose(one_step_all(row, frames, history, other), predicted)


def test_the_loop_slides_or_grows_the_window_and_feeds_back_what_feed_makes():
    """``autoregress``: each step sees the window its predecessor left, the newest frame what ``feed`` made of the
    last prediction; a sliding window keeps its length, a growing one gains a frame a step. Written out by hand on
    windows of integers (the step predicts the window's sum, ``feed`` adds 100)."""
    from well_upao.predict.rollout import autoregress

    seen = []

    def step(window):
        seen.append(window[0].tolist())
        return window.sum(1)

    start = torch.tensor([[1.0, 2.0]])
    slid = autoregress(step, start, 3, feed=lambda frame: frame + 100)
    assert seen == [[1.0, 2.0], [2.0, 103.0], [103.0, 205.0]] and slid[0].tolist() == [3.0, 105.0, 308.0]
    seen.clear()
    grown = autoregress(step, start, 3, slide=False)
    assert seen == [[1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 6.0]] and grown[0].tolist() == [3.0, 6.0, 12.0]
