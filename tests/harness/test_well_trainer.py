"""The Well's validation plots inside our trainers: a figure numpy cannot draw is skipped, not fatal."""

import logging
from types import SimpleNamespace

import pytest
import torch
from the_well.benchmark.metrics.plottable_data import field_histograms

from well_upao.harness.well_trainer import skip_when_undrawable


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
