"""The Well's validation inside our trainers: a figure numpy cannot draw is skipped, not fatal; short rollouts log no
empty time window."""

import logging
from types import SimpleNamespace

import pytest
import torch
from the_well.benchmark.metrics.plottable_data import field_histograms

from well_upao.harness.well_trainer import WellTrainer, skip_when_undrawable


def uniform_target_case(tmp_path):
    """A prediction and a target whose only field is uniform to float32 resolution, as the active-matter
    concentration becomes at V0 = 0 (one frame, batch 1, 8 x 8, one channel)."""
    meta = SimpleNamespace(field_names={0: ["concentration"]}, constant_field_names={0: []}, dataset_name="am")
    target = torch.full((1, 1, 8, 8, 1), 0.3183099)
    target[0, 0, 0, 0, 0] = torch.nextafter(target[0, 0, 0, 0, 0], torch.tensor(1.0))  # a range of one ulp
    prediction = target + 0.01 * torch.randn_like(target)
    return prediction, target, meta, str(tmp_path), 0


def test_the_wells_histogram_fails_on_a_field_uniform_to_float32(tmp_path):
    """The failure the wrapper exists for (if the Well draws such data one day, the wrapper can go)."""
    with pytest.raises(ValueError, match="Too many bins"):
        field_histograms(*uniform_target_case(tmp_path))


def test_an_undrawable_validation_plot_is_skipped_with_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="well_upao.harness.well_trainer"):
        assert skip_when_undrawable(field_histograms)(*uniform_target_case(tmp_path)) is None
    assert "field_histograms skipped" in caplog.text and "Too many bins" in caplog.text


def test_a_drawable_plot_is_drawn(tmp_path):
    prediction, target, meta, folder, epoch = uniform_target_case(tmp_path)
    target = torch.randn_like(target)
    skip_when_undrawable(field_histograms)(prediction, target, meta, folder, epoch)
    assert list(tmp_path.rglob("*.png")), "the histogram was not written"


def test_other_plot_errors_are_raised(tmp_path):
    """Only numpy's binning failure is skipped: a plot's own bug (here a shape error) still ends the run."""

    def broken_plot(*args):
        raise ValueError("operands could not be broadcast together")

    with pytest.raises(ValueError, match="broadcast"):
        skip_when_undrawable(broken_plot)(*uniform_target_case(tmp_path))


def test_a_three_step_rollout_logs_no_empty_time_window():
    """The Well's trainer splits a 3-step rollout at 0, 1, 1, 3 (``split_up_losses``: ``int(exp(linspace(0, log 3,
    3)))`` after a 0), logging ``T=1:1`` as the nan mean of no step. Ours logs 0:1 and 1:3, with their means."""
    trainer = object.__new__(WellTrainer)  # the method reads nothing of the instance
    losses = torch.tensor([1.0, 2.0, 4.0])
    logged = trainer.temporal_split_losses(losses, [0, 1, 1, 3], "VRMSE", "valid_x", "full")
    assert logged == {
        "valid_x/full_VRMSE_T=all": pytest.approx(7 / 3),
        "valid_x/full_VRMSE_T=0:1": pytest.approx(1.0),
        "valid_x/full_VRMSE_T=1:3": pytest.approx(3.0),
    }
    assert set(trainer.temporal_split_losses(losses, [0, 1, 1], "VRMSE", "valid_x")) == {"valid_x/full_VRMSE_T=all"}
