"""Stencils against analytic derivatives, their order, ghost cells, the upwind face rule, periodic vs not."""

from __future__ import annotations

import math

import pytest
import torch

from well_upao.physics.stencils import Grid, Stencils, boundary_band_mask, interior, pad_axis


@pytest.fixture(autouse=True)
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def grid_1d(n, periodic=True, length=2 * math.pi):
    dx = length / n if periodic else length / (n - 1)
    x = torch.arange(n) * dx
    return x, Stencils(Grid((dx,), (periodic,)))


@pytest.mark.parametrize("periodic", [True, False])
def test_central_derivatives_converge_at_second_order(periodic):
    errors = {}
    for n in (32, 64, 128):
        x, ops = grid_1d(n, periodic)
        f = torch.sin(2 * x) + 0.3 * torch.cos(3 * x)
        df = 2 * torch.cos(2 * x) - 0.9 * torch.sin(3 * x)
        d2f = -4 * torch.sin(2 * x) - 2.7 * torch.cos(3 * x)
        errors[n] = (
            (ops.d(f, 0) - df).abs()[1:-1].max().item(),
            (ops.d2(f, 0) - d2f).abs()[1:-1].max().item(),
        )
    for k in range(2):
        assert 1.9 < math.log2(errors[32][k] / errors[64][k]) < 2.1
        assert 1.9 < math.log2(errors[64][k] / errors[128][k]) < 2.1


def test_spectral_derivative_is_exact_for_band_limited_fields():
    n = 32
    dx = 2 * math.pi / n
    x = torch.arange(n) * dx
    X, Y = torch.meshgrid(x, x, indexing="ij")
    f = torch.sin(3 * X) * torch.cos(2 * Y)
    ops = Stencils(Grid((dx, dx), (True, True)), "spectral")
    torch.testing.assert_close(ops.d(f, 0), 3 * torch.cos(3 * X) * torch.cos(2 * Y), atol=1e-12, rtol=0)
    torch.testing.assert_close(ops.laplacian(f), -13 * f, atol=1e-11, rtol=0)


def test_ghost_cells_reproduce_quadratics_exactly():
    x = torch.linspace(0.0, 1.0, 11)
    f = 2 * x**2 - 3 * x + 0.5
    padded = pad_axis(f, 0, periodic=False)
    dx = x[1] - x[0]
    torch.testing.assert_close(padded[0], 2 * (-dx) ** 2 - 3 * (-dx) + 0.5)
    torch.testing.assert_close(padded[-1], 2 * (1 + dx) ** 2 - 3 * (1 + dx) + 0.5)
    ops = Stencils(Grid((float(dx),), (False,)))
    torch.testing.assert_close(ops.d(f, 0), 4 * x - 3)  # exact everywhere, boundary included
    torch.testing.assert_close(ops.d2(f, 0), torch.full_like(x, 4.0))


def test_upwind_matches_a_hand_computed_stencil():
    flux = torch.tensor([1.0, 4.0, 9.0, 16.0, 25.0, 36.0, 49.0])
    dx = 0.5
    ops = Stencils(Grid((dx,), (True,)))
    i = 3
    positive = ops.upwind_derivative(flux, torch.ones(7), 0)
    # faces from the left-biased candidates: F_{i+1/2} = 1.5 F_i - 0.5 F_{i-1}
    expected = ((1.5 * flux[i] - 0.5 * flux[i - 1]) - (1.5 * flux[i - 1] - 0.5 * flux[i - 2])) / dx
    assert positive[i].item() == pytest.approx(expected.item())
    negative = ops.upwind_derivative(flux, -torch.ones(7), 0)
    # right-biased: F_{i+1/2} = 1.5 F_{i+1} - 0.5 F_{i+2}
    expected = ((1.5 * flux[i + 1] - 0.5 * flux[i + 2]) - (1.5 * flux[i] - 0.5 * flux[i + 1])) / dx
    assert negative[i].item() == pytest.approx(expected.item())
    # the face velocity is the mean of the two cell velocities: a sign change picks per face
    mixed_velocity = torch.tensor([1.0, 1.0, 1.0, 0.5, -2.0, -1.0, -1.0])
    mixed = ops.upwind_derivative(flux, mixed_velocity, 0)
    face_right = 1.5 * flux[4] - 0.5 * flux[5]  # face 3+1/2: (0.5 - 2)/2 < 0
    face_left = 1.5 * flux[2] - 0.5 * flux[1]  # face 2+1/2: (1 + 0.5)/2 > 0
    assert mixed[3].item() == pytest.approx(((face_right - face_left) / dx).item())


@pytest.mark.parametrize("speed", [0.7, -0.7])
def test_upwind_of_a_linear_flux_is_the_one_sided_difference_from_the_upwind_side(speed):
    """Flux ``F = c u`` with a constant velocity ``c``: the faces are all upwinded from the same side, so the
    conservative derivative is the classic second-order one-sided difference, written out here:
    ``c > 0``: ``(3 F_i - 4 F_{i-1} + F_{i-2}) / (2 dx)``; ``c < 0``: ``(-3 F_i + 4 F_{i+1} - F_{i+2}) / (2 dx)``.
    Random values (not a polynomial, for which both candidates coincide) make the side visible."""
    n, dx = 12, 0.25
    u = torch.rand(n, generator=torch.Generator().manual_seed(3))
    flux = speed * u
    got = Stencils(Grid((dx,), (True,))).upwind_derivative(flux, torch.full((n,), speed), 0)
    f = flux.tolist()
    for i in range(n):
        if speed > 0:
            expected = (3 * f[i] - 4 * f[i - 1] + f[i - 2]) / (2 * dx)
        else:
            expected = (-3 * f[i] + 4 * f[(i + 1) % n] - f[(i + 2) % n]) / (2 * dx)
        assert got[i].item() == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # the negative control: the downwind one-sided difference is a different number on these values
    downwind = (-3 * f[5] + 4 * f[6] - f[7]) / (2 * dx) if speed > 0 else (3 * f[5] - 4 * f[4] + f[3]) / (2 * dx)
    assert abs(got[5].item() - downwind) > 1e-3


@pytest.mark.parametrize("speed", [1.0, -1.0])
def test_each_upwind_side_converges_at_second_order_for_a_linear_flux(speed):
    """``d(c u)/dx`` for ``u = sin x + 0.3 cos 3x`` on a periodic grid: second order from either side."""
    errors = []
    for n in (32, 64, 128):
        x, ops = grid_1d(n, True)
        u = torch.sin(x) + 0.3 * torch.cos(3 * x)
        exact = speed * (torch.cos(x) - 0.9 * torch.sin(3 * x))
        errors.append((ops.upwind_derivative(speed * u, torch.full_like(x, speed), 0) - exact).abs().max().item())
    assert 1.9 < math.log2(errors[0] / errors[1]) < 2.1
    assert 1.9 < math.log2(errors[1] / errors[2]) < 2.1


@pytest.mark.parametrize("periodic", [True, False])
def test_upwind_is_second_order(periodic):
    errors = []
    for n in (32, 64, 128):
        x, ops = grid_1d(n, periodic)
        u = 1.5 + torch.sin(x)  # positive velocity
        flux = 0.5 * u**2
        exact = u * torch.cos(x)
        errors.append((ops.upwind_derivative(flux, u, 0) - exact).abs()[1:-1].max().item())
    assert 1.8 < math.log2(errors[0] / errors[1]) < 2.2
    assert 1.8 < math.log2(errors[1] / errors[2]) < 2.2


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_periodic_and_non_periodic_paths_agree_in_the_interior(dims):
    n = 12
    generator = torch.Generator().manual_seed(0)
    f = torch.randn(2, *([n] * dims), generator=generator)
    v = torch.randn(2, *([n] * dims), generator=generator)
    periodic = Stencils(Grid((0.1,) * dims, (True,) * dims))
    walls = Stencils(Grid((0.1,) * dims, (False,) * dims))
    torch.testing.assert_close(interior(periodic.laplacian(f), dims), interior(walls.laplacian(f), dims))
    torch.testing.assert_close(interior(periodic.d(f, dims - 1), dims), interior(walls.d(f, dims - 1), dims))
    for a in range(dims):
        torch.testing.assert_close(
            interior(periodic.upwind_derivative(f * v, v, a), dims, 2),
            interior(walls.upwind_derivative(f * v, v, a), dims, 2),
        )


def test_multidimensional_operators_on_analytic_fields():
    n = 64
    dx = 2 * math.pi / n
    x = torch.arange(n) * dx
    X, Y, Z = torch.meshgrid(x, x, x, indexing="ij")
    f = torch.sin(X) * torch.sin(2 * Y) * torch.cos(Z)
    ops = Stencils(Grid((dx,) * 3, (True,) * 3))
    # central Laplacian of sin(kx): -4 sin^2(k dx / 2) / dx^2 per axis (the discrete symbol), exactly
    symbol = sum(-4 * math.sin(k * dx / 2) ** 2 / dx**2 for k in (1, 2, 1))
    torch.testing.assert_close(ops.laplacian(f), symbol * f, atol=1e-10, rtol=1e-10)

    # central first derivative of sin(k x + c): sin(k dx) / dx * cos(k x + c), exactly; each component varies along
    # every axis with a different wavenumber, so a derivative along the wrong axis or a dropped term shows
    def d(k):
        return math.sin(k * dx) / dx

    vx = torch.sin(X) * torch.cos(2 * Y) * torch.cos(3 * Z)
    vy = torch.cos(3 * X) * torch.sin(2 * Y + 1) * torch.cos(Z)
    vz = torch.cos(2 * X) * torch.cos(Y) * torch.sin(3 * Z)
    expected = (
        d(1) * torch.cos(X) * torch.cos(2 * Y) * torch.cos(3 * Z)
        + d(2) * torch.cos(3 * X) * torch.cos(2 * Y + 1) * torch.cos(Z)
        + d(3) * torch.cos(2 * X) * torch.cos(Y) * torch.cos(3 * Z)
    )
    torch.testing.assert_close(ops.divergence([vx, vy, vz]), expected, atol=1e-10, rtol=1e-10)


def test_band_and_interior_partition_the_grid():
    mask = boundary_band_mask((5, 6))
    assert mask.sum() == 5 * 6 - 3 * 4
    assert interior(torch.zeros(2, 5, 6), 2).shape == (2, 3, 4)
    assert not mask[1:-1, 1:-1].any() and mask[0].all() and mask[:, -1].all()


def test_fourth_order_differences_converge_at_fourth_order_on_periodic_axes_only():
    errors = {}
    for n in (16, 32, 64):
        dx = 2 * math.pi / n
        x = torch.arange(n) * dx
        ops = Stencils(Grid((dx,), (True,)), "fd4")
        f = torch.sin(2 * x) + 0.3 * torch.cos(3 * x)
        df = 2 * torch.cos(2 * x) - 0.9 * torch.sin(3 * x)
        d2f = -4 * torch.sin(2 * x) - 2.7 * torch.cos(3 * x)
        errors[n] = ((ops.d(f, 0) - df).abs().max().item(), (ops.d2(f, 0) - d2f).abs().max().item())
    for k in range(2):
        assert 3.8 < math.log2(errors[32][k] / errors[64][k]) < 4.2, errors
    # a wall axis keeps the second-order stencil (and its ghost cells)
    x, second = grid_1d(32, periodic=False)
    fourth = Stencils(Grid(second.grid.spacing, (False,)), "fd4")
    f = torch.sin(2 * x)
    torch.testing.assert_close(fourth.d(f, 0), second.d(f, 0))
    with pytest.raises(ValueError, match="derivative must be one of"):
        Stencils(Grid((0.1,), (True,)), "fd6")


@pytest.mark.parametrize("derivative", ["fd", "fd4", "spectral"])
def test_a_non_square_grid_with_one_wall_axis_differentiates_each_axis_with_its_own_spacing(derivative):
    """24 x 40 points, x periodic on [0, 2 pi) (dx = 0.262), y between walls on [0, 3] (dy = 0.077), frames with a
    batch and a time axis in front: f = sin(3 x + 0.4) q(y), q quadratic. Along x each derivative has its discrete
    symbol in closed form (fd: sin(k dx) / dx and -4 sin^2(k dx / 2) / dx^2; fd4: (8 sin(k dx) - sin(2 k dx)) /
    (6 dx) and (32 cos(k dx) - 2 cos(2 k dx) - 30) / (12 dx^2); spectral: k and -k^2); along y the second-order
    stencil with its ghost cells is exact for a quadratic, at the walls too. Negative controls: the spacings
    exchanged, the periodic axis taken for the wall one."""
    nx, ny, k = 24, 40, 3
    dx, dy = 2 * math.pi / nx, 3 / (ny - 1)
    x, y = torch.meshgrid(torch.arange(nx) * dx, torch.linspace(0, 3, ny), indexing="ij")
    wave, slope = torch.sin(k * x + 0.4), torch.cos(k * x + 0.4)
    q, dq, d2q = 0.5 * y**2 - 1.2 * y + 0.3, y - 1.2, torch.ones_like(y)
    amplitude = torch.tensor([1.0, -0.5, 2.0]).reshape(1, 3, 1, 1)
    f = amplitude * wave * q  # (1, 3, 24, 40)
    first, second = {
        "fd": (math.sin(k * dx) / dx, -4 * math.sin(k * dx / 2) ** 2 / dx**2),
        "fd4": (
            (8 * math.sin(k * dx) - math.sin(2 * k * dx)) / (6 * dx),
            (32 * math.cos(k * dx) - 2 * math.cos(2 * k * dx) - 30) / (12 * dx**2),
        ),
        "spectral": (k, -(k**2)),
    }[derivative]
    expected = {
        "d_x": amplitude * first * slope * q,
        "d_y": amplitude * wave * dq,
        "laplacian": amplitude * (second * wave * q + wave * d2q),
    }
    ops = Stencils(Grid((dx, dy), (True, False)), derivative)
    got = {"d_x": ops.d(f, 0), "d_y": ops.d(f, 1), "laplacian": ops.laplacian(f)}
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, atol=1e-10, rtol=1e-10, msg=name)
    torch.testing.assert_close(ops.d2(f, 1), amplitude * wave * d2q, atol=1e-10, rtol=1e-10)
    exchanged = Stencils(Grid((dy, dx), (True, False)), derivative)
    assert not torch.allclose(exchanged.d(f, 0), expected["d_x"], atol=1e-3)
    assert not torch.allclose(exchanged.d(f, 1), expected["d_y"], atol=1e-3)
    flipped = Stencils(Grid((dx, dy), (False, True)), derivative)
    assert not torch.allclose(flipped.laplacian(f), expected["laplacian"], atol=1e-3)
