"""Steps of axes stored as the Well's specification stores them (float32): ``well_upao.axes``. Expected values are
the exact spacings the axes were made from, not the code's own."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from well_upao.axes import UnevenAxisError, fit_uniform, uniform_step, window_steps


def float32_axis(start: float, step: float, n: int) -> np.ndarray:
    return (start + np.arange(n) * step).astype(np.float32)


@pytest.mark.parametrize("start, step", [(0.0, 0.05), (100.0, 0.1), (1000.0, 0.1), (-3.0, 0.01)])
def test_a_float32_axis_is_accepted_and_its_step_is_exact_to_float32_rounding(start, step):
    axis = float32_axis(start, step, 41)
    differences = np.diff(axis.astype(np.float64))
    # the axis the issue names: its float32 steps differ from each other (numpy's default allclose refused them)
    assert differences.max() - differences.min() > 1e-9
    fitted = uniform_step(axis, np.float32)
    # a single difference is off by up to eps * max|t|; the whole-axis fit is far closer to the exact step
    assert abs(fitted - step) < 0.1 * np.finfo(np.float32).eps * max(abs(start), abs(start + 40 * step)) + 1e-12
    if start >= 100:
        assert abs(differences[0] - step) > 10 * abs(fitted - step)


def test_an_uneven_axis_is_refused_with_its_steps_and_where_they_are():
    times = np.arange(41) * 0.05
    times[20:] += 0.002  # one step 4% long
    with pytest.raises(UnevenAxisError) as error:
        fit_uniform(times.astype(np.float32), np.float32, "time", "run.hdf5")
    message = str(error.value)
    assert "run.hdf5" in message and "points 19-20" in message and "0.05199" in message and "resample" in message


def test_equal_spacing_is_judged_at_the_precision_the_file_stores():
    """Far from t = 0, where float32 rounding (~5e-4 at t = 1e4) exceeds the 1e-3-of-a-step allowance, a float32
    axis passes as float32 and is refused if the file claims float64; a deviation twice float32's tolerance is
    refused as float32 too."""
    axis = float32_axis(1e4, 0.05, 41)
    fit_uniform(axis, np.float32)
    with pytest.raises(UnevenAxisError):
        fit_uniform(axis.astype(np.float64), np.float64)
    shifted = axis.astype(np.float64)
    shifted[7] += 2 * 4 * np.finfo(np.float32).eps * 1e4
    with pytest.raises(UnevenAxisError, match="points"):
        fit_uniform(shifted, np.float32)


def test_a_step_the_stored_precision_cannot_resolve_is_refused():
    with pytest.raises(UnevenAxisError, match="cannot resolve"):
        fit_uniform(float32_axis(1e6, 0.01, 20), np.float32)


def test_non_increasing_and_too_short_axes_are_refused():
    with pytest.raises(UnevenAxisError, match="does not increase"):
        fit_uniform(np.array([0.0, 0.1, 0.1, 0.3]), np.float64)
    with pytest.raises(UnevenAxisError, match="1 point"):
        fit_uniform(np.array([0.5]), np.float32)


def test_windows_of_the_loader_snap_to_whole_strides_of_the_files_step():
    """The Well's loader hands windows as float32, min-subtracted: each window's dt is its stride times the file's
    float64 step, whatever the time origin; a window off the file's grid is refused."""
    stored = float32_axis(1000.0, 0.1, 60)
    axis = fit_uniform(stored, np.float32)
    windows = []
    for first, stride in ((0, 1), (5, 3), (11, 4)):
        frames = torch.tensor(stored[first : first + 9 * stride : stride][:9])
        windows.append(frames - frames[0])  # float32 subtraction, as the loader does
    steps = window_steps(torch.stack(windows), axis)
    assert steps.dtype == torch.float64
    torch.testing.assert_close(steps, torch.tensor([1.0, 3.0, 4.0], dtype=torch.float64) * axis.step, rtol=0, atol=0)
    torch.testing.assert_close(steps, torch.tensor([0.1, 0.3, 0.4], dtype=torch.float64), rtol=2e-6, atol=0)
    # one difference of the loader's float32 values: off by ~1e-4 relative at t = 1000
    assert abs(float(windows[0][1]) - 0.1) > 1e-6
    off_grid = windows[0] + torch.arange(9) * 0.03
    with pytest.raises(UnevenAxisError, match="not a whole number"):
        window_steps(off_grid, axis)
    # without the file's axis: the window's own least-squares step
    torch.testing.assert_close(window_steps(windows[1]), torch.tensor([0.3], dtype=torch.float64), rtol=1e-4, atol=0)


def test_an_axis_summed_step_by_step_in_float32_and_an_integer_axis_are_accepted():
    summed = np.cumsum(np.full(200, np.float32(0.1), dtype=np.float32), dtype=np.float32)
    assert abs(uniform_step(summed, np.float32) - 0.1) < 1e-5  # drift ~1e-4 of a step: under STEP_TOLERANCE
    assert uniform_step(np.arange(0, 50, 5), np.int64) == 5.0  # integers are exact


def test_sample_varying_time_snaps_the_windows_of_every_trajectory():
    """Trajectories stored with different time origins (0 and 1000) share one step; a window of the later one
    carries float32 rounding at its own magnitude and must still snap."""
    from well_upao.data.source import Layout

    times = np.stack([np.arange(60) * 0.05, 1000 + np.arange(60) * 0.05]).astype(np.float32)
    layout = Layout("d", ("x",), (8,), (0.1,), (True,), (("PERIODIC",),), 60, ((), (), ()), (), (), None,
                    times.astype(np.float64), "float32", "file.hdf5")  # fmt: skip
    axis = layout.time_axis
    windows = torch.stack([torch.tensor(times[1, i : i + 9]) - torch.tensor(times[1, i]) for i in range(0, 50, 7)])
    torch.testing.assert_close(window_steps(windows, axis), torch.full((8,), axis.step, dtype=torch.float64))


def test_uneven_axes_in_a_file_are_refused_where_a_step_is_needed_not_when_it_is_read(tmp_path):
    """A file whose x coordinate is stretched still opens (its layout, channels, non-physics training need no step);
    the frames a residual needs are refused with the axis named. An uneven time axis gives evaluate no file step
    (each window's own fit instead) while ``Layout.time_axis`` refuses it with its numbers."""
    import h5py
    from well_synthetic import write_well_dataset

    from well_upao.data.source import WellSource
    from well_upao.harness.samples import file_time_axis

    dataset = write_well_dataset(tmp_path, "gray_scott_reaction_diffusion", n_steps=12)
    for path in sorted((dataset / "data").glob("*/*.hdf5")):
        with h5py.File(path, "r+") as f:
            x = f["dimensions"]["x"]
            x[...] = np.asarray(x) ** 2  # stretched
            time = f["dimensions"]["time"]
            values = np.asarray(time)
            values[6:] += 0.1  # one step 40% long
            time[...] = values
    source = WellSource(tmp_path, "gray_scott_reaction_diffusion")
    assert source.channels == ["A", "B"] and math.isnan(source.layout.spacing[0])
    with pytest.raises(UnevenAxisError, match="x coordinate"):
        source.layout.require_spacing()
    with pytest.raises(UnevenAxisError, match="points 5-6"):
        _ = source.layout.time_axis
    assert file_time_axis(source) is None
    with pytest.raises(UnevenAxisError):
        source.observed(1, max_trajectories=1, max_frames=4)
