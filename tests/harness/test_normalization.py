"""Model units and physical units (``well_upao.harness.normalization``) against the formulas of the Well's
normalisations, on a dataset whose ``stats.yaml`` says mean 0.25, std 1.5, rms 1.6 (``tests/advected_mode.py``)."""

from __future__ import annotations

import dataclasses

import advected_mode
import pytest
import torch

from well_upao.data.source import WellSource
from well_upao.harness.normalization import model_space_for
from well_upao.physics.floor import observed_residual, relative_residuals
from well_upao.physics.pdes import get_pde

MEAN, STD, RMS = 0.25, 1.5, 1.6


@pytest.fixture()
def source(tmp_path) -> WellSource:
    advected_mode.write(tmp_path)
    return WellSource(tmp_path, advected_mode.NAME)


@pytest.mark.parametrize(
    "settings, to_model",
    [
        ({"use_normalization": True}, lambda u: (u - MEAN) / STD),  # the Well's default: z-scores
        ({"use_normalization": True, "normalization_type": "ZScoreNormalization"}, lambda u: (u - MEAN) / STD),
        ({"use_normalization": True, "normalization_type": "RMSNormalization"}, lambda u: u / RMS),
        ({"use_normalization": False, "normalization_type": "RMSNormalization"}, lambda u: u),
    ],
)
def test_model_units_are_the_stats_formula_and_physical_units_come_back(source, settings, to_model):
    space = model_space_for(source, settings)
    fields = torch.linspace(-3, 3, 2 * 5 * 24 * 40).reshape(2, 5, 24, 40, 1)
    torch.testing.assert_close(space.to_model(fields), to_model(fields), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(space.to_physical(space.to_model(fields)), fields, rtol=1e-6, atol=1e-6)
    assert space.normalized == settings["use_normalization"]


def test_a_residual_is_physical_after_the_round_trip_and_not_on_model_units(source):
    """Exact frames at stride 5: their residual after normalise -> de-normalise is the physical one (the floor's
    closed form); on z-scores the residual is 1 / std of the physical one (the PDE is linear and the mean has no
    derivative), so its relative floor alone could not tell the units apart (both checked)."""
    space = model_space_for(source, {"use_normalization": True})
    pde = get_pde(advected_mode.NAME)
    observed = source.observed(5, max_trajectories=2)
    physical = observed.fields["concentration_rho"]

    def with_field(values):
        return dataclasses.replace(observed, fields={"concentration_rho": values})

    def residual_norm(frames) -> float:
        fields = frames.fields["concentration_rho"]
        bound = observed_residual(frames, pde, "spectral", "crank_nicolson")
        old, new = {"concentration_rho": fields[:, :-1]}, {"concentration_rho": fields[:, 1:]}
        residuals, _ = bound.residuals_and_scales(old, new, torch.tensor(frames.step, dtype=torch.float64))
        return float(residuals["advection"][..., 1:-1, 1:-1].norm())

    round_trip = with_field(space.to_physical(space.to_model(physical[..., None]))[..., 0])
    model_units = with_field(space.to_model(physical[..., None])[..., 0])
    expected = advected_mode.crank_nicolson_floor(5, len(observed.times))
    for frames in (round_trip, model_units):
        assert relative_residuals(frames, pde, "spectral", "crank_nicolson")["advection"] == pytest.approx(
            expected, rel=1e-3
        )
    assert residual_norm(round_trip) == pytest.approx(residual_norm(observed), rel=1e-4)
    assert residual_norm(model_units) == pytest.approx(residual_norm(observed) / STD, rel=1e-4)
