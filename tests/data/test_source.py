"""``WellSource.observed`` at the settings users run: a time stride, float32 time far from 0, a non-square grid with
a wall axis (``tests/advected_mode.py``). Expected values come from how the file was made."""

from __future__ import annotations

import advected_mode
import numpy as np
import pytest

from well_upao.data.source import WellSource


@pytest.mark.parametrize("stride", [1, 5, 10])
def test_frames_at_a_stride_are_that_stride_of_the_file_and_their_step_is_stride_times_its_step(tmp_path, stride):
    """The step of frames ``stride`` apart is ``stride`` times the file's step, fitted to the whole float32 axis
    (to 2e-6 of the exact 0.04; one stored difference is off by up to 1e-3 of it); the frames and their times are
    frames ``1, 1 + stride, ...`` of the file; the grid is the file's, per axis: 24 x 40, dx = 2 pi / 24 on the
    periodic axis, dy = 3 / 39 between the walls."""
    advected_mode.write(tmp_path)
    source = WellSource(tmp_path, advected_mode.NAME)
    stored = np.asarray(advected_mode.T0 + advected_mode.elapsed(), dtype=np.float32).astype(np.float64)
    assert source.layout.time_dtype == "float32"
    assert np.abs(np.diff(stored) / advected_mode.DT - 1).max() > 5e-4  # the file is not exact frame to frame

    observed = source.observed(stride, max_trajectories=2)
    assert abs(observed.step / (stride * advected_mode.DT) - 1) < 2e-6, observed.step
    frames = np.arange(1, advected_mode.FRAMES, stride)[:12]
    np.testing.assert_array_equal(observed.times, stored[frames])
    expected = np.stack([advected_mode.field(*t, advected_mode.elapsed()[frames]) for t in advected_mode.TRAJECTORIES])
    np.testing.assert_allclose(observed.fields["concentration_rho"].numpy(), expected, rtol=0, atol=1e-6)

    assert observed.fields["concentration_rho"].shape == (2, len(frames), advected_mode.NX, advected_mode.NY)
    np.testing.assert_allclose(observed.spacing, (2 * np.pi / 24, 3 / 39), rtol=1e-6)
    assert observed.periodic == (True, False)
    np.testing.assert_allclose(observed.scalars["nu"].numpy(), [t[0] for t in advected_mode.TRAJECTORIES], rtol=1e-6)
