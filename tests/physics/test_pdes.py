"""PDE residuals: exact datasets are near zero and converge at second order; the Well's and pretraining PDEs
vanish on solutions we know in closed form; perturbations are caught; users can register their own PDE."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from well_upao.data.datasets import DATASET_SLOTS
from well_upao.datasets_exact import EXACT_PDES
from well_upao.physics import PDE, Grid, Stencils, SubEquation, get_pde, pde_residuals, register_pde
from well_upao.physics.pdes import PDE_REGISTRY
from well_upao.physics.residual import residuals_and_scales
from well_upao.physics.stencils import interior


@pytest.fixture(autouse=True)
def float64():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def slot_fields_from_exact(name, fields):
    """Closed-form arrays ``{field: (T, *S[, D])}`` -> ``{slot: (1, T, *S)}`` through the slot table."""
    out = {}
    for channel, slot in DATASET_SLOTS[name].items():
        field, _, component = channel.rpartition("_")
        if field and component in "xyz" and field in fields:
            array = fields[field][..., "xyz".index(component)]
        else:
            array = fields[channel]
        out[slot] = torch.as_tensor(np.ascontiguousarray(array))[None]
    return out


def relative_residual(pde, old, new, dt, params, ops, dims, scheme="crank_nicolson", scale_states=None):
    """Worst rms residual over sub-equations, relative to the rms size of the equation's terms."""
    residuals = pde_residuals(pde, old, new, dt, params, ops, scheme)
    scales = residuals_and_scales(pde, *(scale_states or (old, new)), dt, params, ops, "crank_nicolson")[1]
    worst = 0.0
    for k, r in residuals.items():
        scale = interior(scales[k], dims).square().mean().sqrt()
        worst = max(worst, (interior(r, dims).square().mean().sqrt() / scale).item())
    return worst


def exact_pair(name, resolution, dt, t0=0.4, index=0, derivative="fd"):
    pde_exact = EXACT_PDES[name]
    params = pde_exact.sample_parameters(np.random.default_rng([3, index]), index)
    axes = pde_exact.grid_axes(resolution)
    fields = pde_exact.evaluate(params, axes, np.array([t0, t0 + dt]))
    slots = slot_fields_from_exact(name, fields)
    old = {k: v[:, :1] for k, v in slots.items()}
    new = {k: v[:, 1:] for k, v in slots.items()}
    spacing = 2 * math.pi / resolution
    grid = Grid((spacing,) * pde_exact.n_spatial_dims, (True,) * pde_exact.n_spatial_dims)
    scalars = {k: torch.tensor([v]) for k, v in params.scalars.items()}
    return get_pde(name), old, new, scalars, Stencils(grid, derivative), pde_exact.n_spatial_dims


RESOLUTIONS = {1: 128, 2: 32, 3: 16}


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_exact_datasets_have_small_residuals_converging_at_second_order(name):
    dims = EXACT_PDES[name].n_spatial_dims
    base_dt = EXACT_PDES[name].default_dt
    for index in range(2):
        sizes = []
        for refinement in (1, 2):
            pde, old, new, scalars, ops, _ = exact_pair(
                name, RESOLUTIONS[dims] * refinement, base_dt / refinement, index=index
            )
            params = pde.resolve_parameters(scalars)
            sizes.append(relative_residual(pde, old, new, torch.tensor([base_dt / refinement]), params, ops, dims))
        order = math.log2(sizes[0] / sizes[1])
        assert sizes[1] < 0.05, f"{name}: relative residual {sizes[1]:.2e}"
        assert 1.7 < order < 2.3, f"{name}: order {order:.2f} ({sizes})"


@pytest.mark.parametrize("scheme, expected_order", [("explicit", 1), ("implicit", 1), ("crank_nicolson", 2)])
def test_time_schemes_have_their_order(scheme, expected_order):
    """dt refinement at a fixed grid with spectral space derivatives (no spatial error) on the wave system."""
    sizes = []
    for dt in (0.02, 0.01):
        pde, old, new, scalars, ops, dims = exact_pair("wave2d", 32, dt, derivative="spectral")
        params = pde.resolve_parameters(scalars)
        sizes.append(relative_residual(pde, old, new, torch.tensor([dt]), params, ops, dims, scheme))
    assert abs(math.log2(sizes[0] / sizes[1]) - expected_order) < 0.15


@pytest.mark.parametrize("name", ["tg2d", "burgers2d", "advdiff2d", "burgers1d"])
def test_perturbed_fields_give_large_residuals(name):
    dims = EXACT_PDES[name].n_spatial_dims
    pde, old, new, scalars, ops, _ = exact_pair(name, 2 * RESOLUTIONS[dims], EXACT_PDES[name].default_dt)
    params = pde.resolve_parameters(scalars)
    dt = torch.tensor([EXACT_PDES[name].default_dt])
    clean = relative_residual(pde, old, new, dt, params, ops, dims)
    generator = torch.Generator().manual_seed(0)
    noisy = {k: v * (1 + 0.01 * torch.randn(v.shape, generator=generator)) for k, v in new.items()}
    assert relative_residual(pde, old, noisy, dt, params, ops, dims, scale_states=(old, new)) > 10 * clean


# ---------------------------------------------------------------------------- known solutions of other PDEs
def periodic_grid(n, dims, length=2 * math.pi):
    dx = length / n
    x = torch.arange(n) * dx
    return torch.meshgrid(*([x] * dims), indexing="ij"), Stencils(Grid((dx,) * dims, (True,) * dims))


def residual_norm(pde, old, new, dt, params, ops, dims):
    residuals = pde_residuals(pde, old, new, torch.tensor([dt]), pde.resolve_parameters(params), ops)
    return {k: interior(r, dims).abs().max().item() for k, r in residuals.items()}


def taylor_green(X, Y, nu, t):
    e = math.exp(-2 * nu * t)
    return (
        -torch.cos(X) * torch.sin(Y) * e,
        torch.sin(X) * torch.cos(Y) * e,
        -0.25 * (torch.cos(2 * X) + torch.cos(2 * Y)) * math.exp(-4 * nu * t),
    )


def test_shear_flow_and_forced_ns_converge_on_taylor_green():
    """Taylor-Green with nu = 1/Reynolds solves both; the tracer cos x cos y (the stream function) is constant
    along streamlines
    (a steady solution when the Schmidt number makes diffusion negligible). Residuals converge at 2nd order."""
    reynolds = 20.0
    nu = 1 / reynolds
    for name, scalars in (
        ("shear_flow", {"Rayleigh": torch.tensor([reynolds]), "Schmidt": torch.tensor([1e8])}),
        ("incompressible_ns_forced_2d", {"nu": torch.tensor([nu])}),
    ):
        pde = get_pde(name)
        sizes = []
        for n in (64, 128):
            (X, Y), ops = periodic_grid(n, 2)
            dt = 0.64 / n
            states = []
            for t in (0.3, 0.3 + dt):
                u, v, p = taylor_green(X, Y, nu, t)
                states.append(
                    {
                        "Vx": u[None, None],
                        "Vy": v[None, None],
                        "pressure": p[None, None],
                        "passive_tracer": (torch.cos(X) * torch.cos(Y))[None, None],
                        "buoyancy": torch.zeros_like(u)[None, None],
                    }
                )
            sizes.append(relative_residual(pde, *states, torch.tensor([dt]), pde.resolve_parameters(scalars), ops, 2))
        assert sizes[1] < 0.01, (name, sizes)
        assert math.log2(sizes[0] / sizes[1]) > 1.7, (name, sizes)  # at least second order


def test_rayleigh_benard_hydrostatic_state_with_walls():
    nx, nz = 32, 17
    x = torch.arange(nx) * (4.0 / nx)
    z = torch.linspace(0.0, 1.0, nz)
    X, Z = torch.meshgrid(x, z, indexing="ij")
    b = 1.0 - Z  # conductive profile, steady: kappa b_zz = 0
    p = Z - 0.5 * Z**2  # dp/dz = b
    state = {
        "Vx": torch.zeros_like(X)[None, None],
        "Vy": torch.zeros_like(X)[None, None],
        "pressure": p[None, None],
        "buoyancy": b[None, None],
    }
    ops = Stencils(Grid((4.0 / nx, 1.0 / (nz - 1)), (True, False)))
    values = residual_norm(
        get_pde("rayleigh_benard"),
        state,
        state,
        0.25,
        {"Rayleigh": torch.tensor([1e6]), "Prandtl": torch.tensor([1.0])},
        ops,
        2,
    )
    assert max(values.values()) < 1e-12
    wrong = dict(state, pressure=(Z + 0.1 * Z**2)[None, None])
    bad = residual_norm(
        get_pde("rayleigh_benard"),
        state,
        wrong,
        0.25,
        {"Rayleigh": torch.tensor([1e6]), "Prandtl": torch.tensor([1.0])},
        ops,
        2,
    )
    assert bad["momentum_y"] > 0.1


def rk4(rhs, y, t_end, steps=2000):
    h = t_end / steps
    for _ in range(steps):
        k1 = rhs(y)
        k2 = rhs([a + h / 2 * b for a, b in zip(y, k1, strict=True)])
        k3 = rhs([a + h / 2 * b for a, b in zip(y, k2, strict=True)])
        k4 = rhs([a + h * b for a, b in zip(y, k3, strict=True)])
        y = [a + h / 6 * (b1 + 2 * b2 + 2 * b3 + b4) for a, b1, b2, b3, b4 in zip(y, k1, k2, k3, k4, strict=True)]
    return y


@pytest.mark.parametrize(
    "name, slots, rhs, params",
    [
        (
            "gray_scott_reaction_diffusion",
            ("concentration_u", "concentration_v"),
            lambda y: [-y[0] * y[1] ** 2 + 0.03 * (1 - y[0]), y[0] * y[1] ** 2 - 0.092 * y[1]],
            {"F": torch.tensor([0.03]), "k": torch.tensor([0.062])},
        ),
        (
            "diffusion_reaction_2d",
            ("concentration_u", "concentration_v"),
            lambda y: [y[0] - y[0] ** 3 - 5e-3 - y[1], y[0] - y[1]],
            {},
        ),
    ],
)
def test_reaction_terms_on_spatially_uniform_ode_solutions(name, slots, rhs, params):
    """Uniform fields make the Laplacian vanish: the residual is then the ODE's CN truncation, O(dt^2)."""
    _, ops = periodic_grid(8, 2)
    sizes = []
    for dt in (0.2, 0.1):
        y0 = [0.4, 0.3]
        y1 = rk4(rhs, y0, dt)
        old = {s: torch.full((1, 1, 8, 8), y0[i]) for i, s in enumerate(slots)}
        new = {s: torch.full((1, 1, 8, 8), y1[i]) for i, s in enumerate(slots)}
        sizes.append(max(residual_norm(get_pde(name), old, new, dt, params, ops, 2).values()))
    assert sizes[1] < 1e-3 and 1.8 < math.log2(sizes[0] / sizes[1]) < 2.2


@pytest.mark.parametrize("dims", [1, 2])
def test_compressible_ns_uniform_translation(dims):
    """rho(x - U t), constant p and U: every compressible-NS residual is the advection error only."""
    sizes = []
    for n in (32, 64):
        mesh, ops = periodic_grid(n, dims)
        speed, dt = 0.7, 0.4 / n
        states = []
        for t in (0.0, dt):
            rho = 1.0 + 0.2 * torch.sin(mesh[0] - speed * t)
            state = {
                "density": rho[None, None],
                "pressure": torch.ones_like(rho)[None, None],
                "Vx": torch.full_like(rho, speed)[None, None],
            }
            if dims == 2:
                state["Vy"] = torch.zeros_like(rho)[None, None]
            states.append(state)
        values = residual_norm(
            get_pde(f"compressible_ns_{dims}d"),
            *states,
            dt,
            {"eta": torch.tensor([0.01]), "zeta": torch.tensor([0.01])},
            ops,
            dims,
        )
        assert set(values) >= {"mass", "momentum_x", "energy"}
        sizes.append(max(values.values()))
    assert 1.7 < math.log2(sizes[0] / sizes[1]) < 2.3


def test_compressible_ns_viscous_terms_have_the_papers_coefficients():
    """1D, rho = p = 1, u = A sin x, frames equal (no rate), spectral derivatives: the viscous part of the residual
    (eta, zeta on minus off) is, from the paper's momentum equation ``... = eta u_xx + (zeta + eta / 3) d_x div u``,
    ``-(zeta + 4 eta / 3) u_xx = (zeta + 4 eta / 3) A sin x``, and from its energy flux ``(E + p) u - u sigma'``
    with ``sigma'_xx = (zeta + 4 eta / 3) u_x``, ``-(zeta + 4 eta / 3) d_x(u u_x) = -(zeta + 4 eta / 3) A^2 cos 2x``."""
    n, amplitude, eta, zeta = 64, 0.3, 0.03, 0.05
    x = torch.arange(n, dtype=torch.float64) * (2 * math.pi / n)
    ops = Stencils(Grid((2 * math.pi / n,), (True,)), "spectral")
    state = {"density": torch.ones(1, 1, n, dtype=torch.float64), "pressure": torch.ones(1, 1, n, dtype=torch.float64),
             "Vx": amplitude * torch.sin(x)[None, None]}  # fmt: skip
    pde = get_pde("compressible_ns_1d")

    def residuals(eta_value, zeta_value):
        params = pde.resolve_parameters({"eta": torch.tensor([eta_value]), "zeta": torch.tensor([zeta_value])})
        return pde_residuals(pde, state, state, torch.tensor([0.1]), params, ops)

    viscous, inviscid = residuals(eta, zeta), residuals(0.0, 0.0)
    coefficient = zeta + 4 * eta / 3
    expected = {
        "momentum_x": coefficient * amplitude * torch.sin(x),
        "energy": -coefficient * amplitude**2 * torch.cos(2 * x),
    }
    for name, value in expected.items():
        torch.testing.assert_close((viscous[name] - inviscid[name])[0, 0], value, rtol=0, atol=1e-12)
    torch.testing.assert_close(viscous["mass"], inviscid["mass"], rtol=0, atol=0)  # no viscosity in the mass


def test_active_matter_concentration_transport_and_incompressibility():
    (X, _), ops = periodic_grid(64, 2)
    speed, d_t, dt = 0.5, 0.05, 0.01
    states = []
    for t in (0.2, 0.2 + dt):
        c = 1 + 0.3 * math.exp(-d_t * 4 * t) * torch.sin(2 * (X - speed * t))
        states.append(
            {
                "concentration_rho": c[None, None],
                "Vx": torch.full_like(c, speed)[None, None],
                "Vy": torch.zeros_like(c)[None, None],
            }
        )
    values = residual_norm(get_pde("active_matter"), *states, dt, {}, ops, 2)
    assert values["continuity"] < 1e-12 and values["concentration"] < 5e-3


def test_shallow_water_lake_at_rest_and_uniform_flow():
    (X, _), ops = periodic_grid(16, 2)
    h = torch.full_like(X, 2.0)[None, None]
    for u in (0.0, 0.3):
        state = {"height": h, "Vx": torch.full_like(h, u), "Vy": torch.zeros_like(h)}
        assert max(residual_norm(get_pde("shallow_water_2d"), state, state, 0.1, {}, ops, 2).values()) < 1e-12


def test_every_registered_pde_reads_known_slots_and_parameters():
    from well_upao.data.slots import SLOT_INDEX

    for pde in PDE_REGISTRY.values():
        assert set(pde.variables) <= set(SLOT_INDEX), pde.name
        assert len({e.name for e in pde.equations}) == len(pde.equations)


def test_users_register_their_own_pde_in_a_few_lines():
    heat = register_pde(
        PDE(
            name="test_heat",
            variables=("temperature",),
            parameters=("kappa",),
            equations=(
                SubEquation(
                    "heat",
                    rate=lambda f, p, ops: f["temperature"],
                    flux=lambda f, p, ops: -p["kappa"] * ops.laplacian(f["temperature"]),
                ),
            ),
        ),
        overwrite=True,
    )
    (X,), ops = periodic_grid(64, 1)
    kappa, dt = 0.1, 0.01
    old = {"temperature": (torch.sin(X) * math.exp(-kappa * 0.0))[None, None]}
    new = {"temperature": (torch.sin(X) * math.exp(-kappa * dt))[None, None]}
    assert residual_norm(heat, old, new, dt, {"kappa": torch.tensor([kappa])}, ops, 1)["heat"] < 1e-4
    with pytest.raises(KeyError, match="needs parameter 'kappa'"):
        heat.resolve_parameters({})
    with pytest.raises(ValueError, match="already registered"):
        register_pde(PDE(name="test_heat", variables=(), parameters=(), equations=()))
    with pytest.raises(KeyError, match="no PDE registered"):
        get_pde("nonexistent")
    del PDE_REGISTRY["test_heat"]


def test_the_central_time_scheme_is_second_order_and_needs_three_frames():
    """Linear advection u_t + a u_x = 0 with exact spatial derivatives: the residual of the exact solution is the
    time scheme's error alone, O(dt^2) for central differences over two steps (and it needs the older frame)."""
    n, a = 32, 0.7
    dx = 2 * math.pi / n
    x = torch.arange(n, dtype=torch.float64) * dx
    pde = get_pde("adv1d")
    ops = Stencils(Grid((dx,), (True,)), "spectral")
    params = {"a": torch.tensor([a], dtype=torch.float64)}

    def frame(t):
        return {"concentration_rho": torch.sin(x - a * t)[None, None]}

    errors = []
    for dt in (0.2, 0.1, 0.05):
        residual = pde_residuals(pde, frame(0.0), frame(dt), dt, params, ops, "central", older=frame(-dt))
        errors.append(float(next(iter(residual.values())).abs().max()))
    assert all(3.8 < e0 / e1 < 4.2 for e0, e1 in itertools.pairwise(errors)), errors
    with pytest.raises(ValueError, match="needs the frames before"):
        pde_residuals(pde, frame(0.0), frame(0.1), 0.1, params, ops, "central")
