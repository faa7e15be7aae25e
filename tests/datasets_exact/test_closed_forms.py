"""The vectorised closed forms against naive per-mode formulas, and the PDE residual of each solution.

The naive references below are written independently of the package (direct sums over modes at every grid
point); the residuals use spectral derivatives in space and central differences in time, and must fall at
second order when dt is halved.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from well_upao.datasets_exact import EXACT_PDES
from well_upao.datasets_exact.burgers1d import Burgers1D
from well_upao.datasets_exact.burgers2d import Burgers2D

RESOLUTION = {1: 96, 2: 24, 3: 10}


def grid(pde, resolution=None):
    n = resolution or RESOLUTION[pde.n_spatial_dims]
    x = np.arange(n) * (2 * math.pi / n)
    return tuple(np.meshgrid(*([x] * pde.n_spatial_dims), indexing="ij")), (x,) * pde.n_spatial_dims


def naive(pde_name, params, mesh, t):
    """Direct evaluation of the paper's formulas at one time t (float64)."""
    s, md = params.scalars, params.modes
    if pde_name == "tg2d":
        X, Y = mesh
        e = math.exp(-2 * s["nu"] * t)
        return {
            "velocity": np.stack([-np.cos(X) * np.sin(Y) * e, np.sin(X) * np.cos(Y) * e], -1),
            "pressure": -0.25 * (np.cos(2 * X) + np.cos(2 * Y)) * math.exp(-4 * s["nu"] * t),
        }
    if pde_name == "wave2d":
        X, Y = mesh
        u = np.zeros_like(X)
        w = np.zeros_like(X)
        for m, n, a, ph in zip(md["m"], md["n"], md["amplitude"], md["phase"], strict=True):
            om = s["c"] * math.hypot(m, n)
            u += a * np.cos(m * X + n * Y + ph) * math.cos(om * t)
            w -= a * om * np.cos(m * X + n * Y + ph) * math.sin(om * t)
        return {"u": u, "w": w}
    if pde_name == "advdiff2d":
        X, Y = mesh
        u = np.zeros_like(X)
        for m, n, a, ph in zip(md["m"], md["n"], md["amplitude"], md["phase"], strict=True):
            u += a * math.exp(-s["nu"] * (m * m + n * n) * t) * np.cos(m * (X - s["a"] * t) + n * (Y - s["b"] * t) + ph)
        return {"u": u}
    if pde_name == "burgers2d":
        X, Y = mesh
        ex = s["eps_x"] * math.exp(-s["nu"] * s["k_x"] ** 2 * t)
        ey = s["eps_y"] * math.exp(-s["nu"] * s["k_y"] ** 2 * t)
        f, fx = 1 + ex * np.cos(s["k_x"] * X), -ex * s["k_x"] * np.sin(s["k_x"] * X)
        g, gy = 1 + ey * np.cos(s["k_y"] * Y), -ey * s["k_y"] * np.sin(s["k_y"] * Y)
        return {"velocity": np.stack([-2 * s["nu"] * fx / f, -2 * s["nu"] * gy / g], -1)}
    if pde_name == "burgers1d":
        (X,) = mesh
        theta, theta_x = np.ones_like(X), np.zeros_like(X)
        for k, eps, ph in zip(md["k"], md["eps"], md["phase"], strict=True):
            e = eps * math.exp(-s["nu"] * k * k * t)
            theta += e * np.cos(k * X + ph)
            theta_x -= e * k * np.sin(k * X + ph)
        return {"velocity": (-2 * s["nu"] * theta_x / theta)[..., None]}
    if pde_name == "adv1d":
        (X,) = mesh
        u = sum(
            a * np.sin(k * (X - s["a"] * t) + ph)
            for k, a, ph in zip(md["k"], md["amplitude"], md["phase"], strict=True)
        )
        return {"u": u}
    if pde_name == "adv3d":
        X, Y, Z = mesh
        u = np.zeros_like(X)
        for l, m, n, a, ph in zip(md["l"], md["m"], md["n"], md["amplitude"], md["phase"], strict=True):
            u += a * np.cos(l * (X - s["a"] * t) + m * (Y - s["b"] * t) + n * (Z - s["c"] * t) + ph)
        return {"u": u}
    raise KeyError(pde_name)


def assert_close_to_max(got: np.ndarray, expected: np.ndarray, dtype, tolerance: float, context) -> None:
    """Same dtype and shape, and every value within ``tolerance`` times the largest |expected|."""
    assert got.dtype == dtype and got.shape == expected.shape, context
    assert np.abs(got - expected).max() <= tolerance * np.abs(expected).max(), context


@pytest.mark.parametrize("name", list(EXACT_PDES))
@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-12), (np.float32, 4e-7)])
def test_vectorised_evaluation_matches_naive_formula(name, dtype, tolerance):
    pde = EXACT_PDES[name]
    mesh, axes = grid(pde)
    times = np.array([0.0, 0.37, 1.0])
    for index in range(3):
        params = pde.sample_parameters(np.random.default_rng([7, index]), index)
        fields = pde.evaluate(params, axes, times, dtype=dtype)
        for k, t in enumerate(times):
            reference = naive(name, params, mesh, t)
            for field, expected in reference.items():
                assert_close_to_max(fields[field][k], expected, dtype, tolerance, (name, field, t))


# ---------------------------------------------------------------------------- residuals
def d(f, axis, order=1):
    """Spectral derivative on the periodic [0, 2 pi) grid along ``axis``."""
    n = f.shape[axis]
    k = np.fft.fftfreq(n, d=1.0 / n)
    shape = [1] * f.ndim
    shape[axis] = n
    multiplier = ((1j * k) ** order).reshape(shape)
    if order % 2 == 1 and n % 2 == 0:  # drop the Nyquist mode for odd derivatives
        nyquist = np.ones(n)
        nyquist[n // 2] = 0
        multiplier = multiplier * nyquist.reshape(shape)
    return np.real(np.fft.ifft(np.fft.fft(f, axis=axis) * multiplier, axis=axis))


def lap(f, dims):
    return sum(d(f, a, 2) for a in range(dims))


def residuals(name, s, fields_prev, fields_now, fields_next, dt):
    """PDE residual(s) at the middle time: central difference in time, spectral in space."""

    def dt_(key, comp=None):
        a, b = fields_next[key], fields_prev[key]
        if comp is not None:
            a, b = a[..., comp], b[..., comp]
        return (a - b) / (2 * dt)

    f = fields_now
    if name == "tg2d":
        u, v, p = f["velocity"][..., 0], f["velocity"][..., 1], f["pressure"]
        return {
            "momentum_x": dt_("velocity", 0) + u * d(u, 0) + v * d(u, 1) + d(p, 0) - s["nu"] * lap(u, 2),
            "momentum_y": dt_("velocity", 1) + u * d(v, 0) + v * d(v, 1) + d(p, 1) - s["nu"] * lap(v, 2),
        }
    if name == "wave2d":
        return {"u": dt_("u") - f["w"], "w": dt_("w") - s["c"] ** 2 * lap(f["u"], 2)}
    if name == "advdiff2d":
        u = f["u"]
        return {"u": dt_("u") + s["a"] * d(u, 0) + s["b"] * d(u, 1) - s["nu"] * lap(u, 2)}
    if name == "burgers2d":
        u, v = f["velocity"][..., 0], f["velocity"][..., 1]
        return {
            "u": dt_("velocity", 0) + u * d(u, 0) + v * d(u, 1) - s["nu"] * lap(u, 2),
            "v": dt_("velocity", 1) + u * d(v, 0) + v * d(v, 1) - s["nu"] * lap(v, 2),
        }
    if name == "burgers1d":
        u = f["velocity"][..., 0]
        return {"u": dt_("velocity", 0) + u * d(u, 0) - s["nu"] * d(u, 0, 2)}
    if name == "adv1d":
        return {"u": dt_("u") + s["a"] * d(f["u"], 0)}
    if name == "adv3d":
        u = f["u"]
        return {"u": dt_("u") + s["a"] * d(u, 0) + s["b"] * d(u, 1) + s["c"] * d(u, 2)}
    raise KeyError(name)


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_residual_is_small_and_second_order_in_dt(name):
    pde = EXACT_PDES[name]
    resolution = {1: 256, 2: 64, 3: 24}[pde.n_spatial_dims]
    _, axes = grid(pde, resolution)
    t0 = 0.5
    for index in range(3):
        params = pde.sample_parameters(np.random.default_rng([11, index]), index)
        sizes = {}
        for dt in (pde.default_dt, pde.default_dt / 2):
            prev, now, nxt = (pde.evaluate(params, axes, np.array([t])) for t in (t0 - dt, t0, t0 + dt))
            prev, now, nxt = ({k: v[0] for k, v in f.items()} for f in (prev, now, nxt))
            scale = max(np.abs((nxt[k] - prev[k]) / (2 * dt)).max() for k in now)
            res = residuals(name, params.scalars, prev, now, nxt, dt)
            sizes[dt] = max(np.abs(r).max() for r in res.values()) / scale
        coarse, fine = sizes[pde.default_dt], sizes[pde.default_dt / 2]
        assert coarse < 2e-2, f"{name}: relative residual {coarse:.2e} at the dataset's dt"
        order = math.log2(coarse / fine)
        assert 1.85 < order < 2.15, f"{name}: residual order {order:.2f} (residuals {coarse:.2e}, {fine:.2e})"


def test_taylor_green_is_divergence_free():
    pde = EXACT_PDES["tg2d"]
    _, axes = grid(pde, 64)
    params = pde.sample_parameters(np.random.default_rng(3), 0)
    velocity = pde.evaluate(params, axes, np.array([0.0, 0.5, 1.0]))["velocity"]
    for k in range(3):
        divergence = d(velocity[k, ..., 0], 0) + d(velocity[k, ..., 1], 1)
        assert np.abs(divergence).max() < 1e-12


def test_burgers_cole_hopf_potential_stays_positive():
    pde1, pde2 = Burgers1D(), Burgers2D()
    x = np.arange(512) * (2 * math.pi / 512)
    times = np.linspace(0.0, 1.0, 11)
    lowest = np.inf
    for index in range(300):
        params = pde1.sample_parameters(np.random.default_rng([5, index]), index)
        total = params.modes["eps"].sum()
        assert 0.3 - 1e-12 <= total <= 0.9 + 1e-12
        theta = pde1.theta(params, x, times)
        lowest = min(lowest, theta.min())
    assert lowest >= 0.1 - 1e-12  # theta >= 1 - sum eps >= 0.1
    for index in range(50):
        params = pde2.sample_parameters(np.random.default_rng([5, index]), index)
        theta = pde2.theta(params, (x[::8], x[::8]), times)
        assert theta.min() >= (1 - params.scalars["eps_x"]) * (1 - params.scalars["eps_y"]) - 1e-12 > 0


# ---------------------------------------------------------------------------- distributions
def draws(name, count=200):
    pde = EXACT_PDES[name]
    return [pde.sample_parameters(np.random.default_rng([1, i]), i) for i in range(count)]


def test_parameter_distributions_follow_the_paper():
    tg = draws("tg2d")
    assert all(0.01 <= p.scalars["nu"] <= 0.1 for p in tg)

    wave = draws("wave2d")
    for p in wave:
        assert 1.0 <= p.scalars["c"] <= 3.0
        modes = set(zip(p.modes["m"], p.modes["n"], strict=True))
        assert len(modes) == 48 and (0, 0) not in modes  # every mode with |m|, |n| <= 3 (ruling 13)
        raw = p.modes["amplitude"] * np.hypot(p.modes["m"], p.modes["n"])
        assert raw.min() >= 0.1 and raw.max() <= 1.0

    for p in draws("advdiff2d"):
        assert 8 <= p.n_modes <= 15
        assert len(set(zip(p.modes["m"], p.modes["n"], strict=True))) == p.n_modes  # without replacement
        assert (p.scalars["a"], p.scalars["b"]) == (1.0, 0.5)
        assert np.all(np.abs(p.modes["m"]) <= 3) and np.all(np.abs(p.modes["n"]) <= 3)

    burgers2d = draws("burgers2d", 18)
    pairs = [(p.scalars["k_x"], p.scalars["k_y"]) for p in burgers2d]
    assert pairs[:9] == pairs[9:] and len(set(pairs)) == 9  # cycles through {1,2,3}^2 (ruling 12)

    b1 = draws("burgers1d")
    assert {p.n_modes for p in b1} == set(range(3, 9))
    assert any(len(set(p.modes["k"])) < p.n_modes for p in b1)  # independent draws: repeats occur (ruling 14)

    a1 = draws("adv1d")
    assert {p.n_modes for p in a1} == set(range(5, 13))
    assert all(0.5 <= p.scalars["a"] <= 3.0 and set(p.modes["k"]) <= set(range(1, 9)) for p in a1)

    for p in draws("adv3d", 50):
        assert 8 <= p.n_modes <= 15
        assert all(0.5 <= p.scalars[c] <= 2.0 for c in "abc")
        assert len(set(zip(p.modes["l"], p.modes["m"], p.modes["n"], strict=True))) == p.n_modes


@pytest.mark.parametrize("name", list(EXACT_PDES))
@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-13), (np.float32, 2e-7)])
def test_batched_evaluation_equals_one_trajectory_at_a_time(name, dtype, tolerance):
    """evaluate_many over trajectories with different mode counts and wavenumbers stacks evaluate's results."""
    pde = EXACT_PDES[name]
    _, axes = grid(pde)
    times = np.array([0.0, 0.25, 0.8])
    params = [pde.sample_parameters(np.random.default_rng([11, index]), index) for index in range(4)]
    batched = pde.evaluate_many(params, axes, times, dtype=dtype)
    for b, p in enumerate(params):
        for field, expected in pde.evaluate(p, axes, times, dtype=dtype).items():
            assert_close_to_max(batched[field][b], expected, dtype, tolerance, (name, field, b))
