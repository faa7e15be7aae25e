"""The solver's spectral derivatives with each field transformed once (``well_upao.predict.spectral_fields``) against
the reference implementations they replace: ``Stencils(grid, "spectral")`` (one complex transform per derivative,
along one axis) and ``fourier_resample`` (one axis at a time), on random fields with content at every mode (the
Nyquist modes of even axes included), in 1D, 2D and 3D, even and odd sizes, unequal spacings; the de-aliased
right-hand side with its terms summed in Fourier space (``SpectralFields.deferring``) against the same right-hand side
with every term evaluated on the grid, and the transforms each takes."""

from __future__ import annotations

import contextlib

import pytest
import torch

from well_upao.physics import PDE, SubEquation, get_pde
from well_upao.physics.resample import fourier_resample
from well_upao.physics.stencils import Grid, Stencils
from well_upao.predict.solver import PDESolver
from well_upao.predict.spectral_fields import SpectralFields, SpectralTerm, interpolated, truncated_spectrum

SHAPES = [(16,), (15,), (8, 12), (9, 10), (6, 5, 8)]


def grid_of(shape) -> Grid:
    return Grid(tuple(0.1 * (axis + 1) for axis in range(len(shape))), (True,) * len(shape))


@pytest.mark.parametrize("shape", SHAPES)
def test_every_derivative_and_the_laplacian_are_the_one_axis_complex_transforms(shape):
    grid = grid_of(shape)
    field = torch.randn(3, *shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    reference, fast = Stencils(grid, "spectral"), SpectralFields(grid)
    for axis in range(len(shape)):
        torch.testing.assert_close(fast.d(field, axis), reference.d(field, axis), rtol=0, atol=1e-9)
        torch.testing.assert_close(fast.d2(field, axis), reference.d2(field, axis), rtol=0, atol=1e-9)
    torch.testing.assert_close(fast.laplacian(field), reference.laplacian(field), rtol=0, atol=1e-9)


def test_a_remembered_spectrum_is_used_and_a_zero_field_has_zero_derivatives():
    """The cache is read (a spectrum given for a field is what its derivative uses) and dropped by ``forget``."""
    grid = grid_of((16,))
    fast = SpectralFields(grid)
    field = torch.randn(2, 16, dtype=torch.float64)
    fast.remember(field, torch.fft.rfft(2 * field))
    torch.testing.assert_close(fast.d(field, 0), 2 * Stencils(grid, "spectral").d(field, 0))
    fast.forget()
    torch.testing.assert_close(fast.d(field, 0), Stencils(grid, "spectral").d(field, 0))
    zero = torch.zeros(2, 16, dtype=torch.float64)
    fast.remember(zero, None)
    assert torch.equal(fast.laplacian(zero), zero)


@pytest.mark.parametrize(("shape", "fine"), [((16,), (24,)), ((15,), (23,)), ((8, 12), (12, 18)), ((9, 10), (14, 15))])
def test_interpolation_and_truncation_are_fourier_resample(shape, fine):
    field = torch.randn(2, *shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    values, spectrum = interpolated(field, fine)
    torch.testing.assert_close(values, fourier_resample(field, fine), rtol=0, atol=1e-12)
    axes = tuple(range(1, 1 + len(shape)))
    torch.testing.assert_close(spectrum, torch.fft.rfftn(values, dim=axes), rtol=0, atol=1e-9)
    rough = torch.randn(2, *fine, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    back = torch.fft.irfftn(truncated_spectrum(rough, shape), s=shape, dim=axes)
    torch.testing.assert_close(back, fourier_resample(rough, shape), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------- deferred terms
def eager_tendency(solver, state, params):
    """The reference: every term evaluated on the grid and the rate transformed again (``deferring`` a no-op)."""
    original = SpectralFields.deferring
    SpectralFields.deferring = lambda self: contextlib.nullcontext()
    try:
        return solver.tendency(state, params)
    finally:
        SpectralFields.deferring = original


def random_problem(name: str, shape=(16, 24), batch: int = 2):
    pde = get_pde(name) if isinstance(name, str) else name
    generator = torch.Generator().manual_seed(3)
    state = {v: torch.randn(batch, *shape, generator=generator, dtype=torch.float64) for v in pde.variables}
    values = torch.tensor([0.37, 0.8][:batch], dtype=torch.float64)
    params = pde.resolve_parameters({k: values for k in (*pde.parameters, *pde.constants)})
    grid = Grid(tuple(0.1 * (axis + 1) for axis in range(len(shape))), (True,) * len(shape))
    return PDESolver(pde, grid), state, params


def biharmonic_with_a_product(pde_factory):
    """``d_t u = -(nu Lap^2 u + Lap u - u d_x u + (|grad u|^2 - <|grad u|^2>) / 2)`` (Kuramoto-Sivashinsky's terms
    and an advection): a derivative of a derivative (stays in Fourier space), a derivative multiplied by a field and
    squared (read as values), a number times a term, a per-sample mean broadcast over the grid."""

    def flux(f, p, ops):
        u = f["height"]
        squared = sum(g**2 for g in ops.gradient(u))
        return (
            p["nu"] * ops.laplacian(ops.laplacian(u)),
            ops.laplacian(u),
            -u * ops.d(u, 0),
            0.5 * squared,
            -0.5 * squared.mean(dim=(-2, -1), keepdim=True),  # a per-sample constant added to the terms
        )

    return pde_factory(
        name="test_biharmonic",
        variables=("height",),
        parameters=("nu",),
        equations=(SubEquation("u", rate="height", flux=flux),),
    )


@pytest.mark.parametrize(
    ("name", "shape"),
    [("shear_flow", (16, 24)), ("burgers2d", (16, 24)), ("tg2d", (16, 24)), ("biharmonic", (16, 24)),
     ("burgers1d", (32,)), ("adv3d", (8, 10, 12))],
)  # fmt: skip
def test_the_deferred_tendency_is_the_eager_one(name, shape):
    """Summing the terms in Fourier space changes the de-aliased tendency by round-off only, for fluxes that keep
    terms deferred (sums, coefficients, the zero pressure), read them as values (products, powers) and differentiate
    them again, in 1D, 2D and 3D."""
    pde = biharmonic_with_a_product(PDE) if name == "biharmonic" else name
    solver, state, params = random_problem(pde, shape)
    assert solver.dealias == 1.5
    deferred, eager = solver.tendency(state, params), eager_tendency(solver, state, params)
    for field, rate in eager.items():
        scale = float(rate.abs().max())
        torch.testing.assert_close(deferred[field], rate, rtol=0, atol=1e-12 * scale)


def counted_transforms(monkeypatch, run) -> dict[str, int]:
    counts = {"rfftn": 0, "irfftn": 0}
    for name in counts:
        original = getattr(torch.fft, name)

        def counting(*args, _name=name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(torch.fft, name, counting)
    run()
    monkeypatch.undo()
    return counts


def test_a_shear_flow_tendency_takes_fifteen_transforms_not_twenty_seven(monkeypatch):
    """Per de-aliased shear-flow right-hand side (velocity and tracer, the pressure zero): 3 forward transforms on
    the data's grid and 3 inverse onto the finer one (the interpolation), 6 forward of the products ``v_a q``, 3
    inverse back of the rates. Evaluating each term took besides one inverse transform per derivative (6 of the
    products, 3 Laplacians) and one forward per rate (3)."""
    solver, state, params = random_problem("shear_flow")
    deferred = counted_transforms(monkeypatch, lambda: solver.tendency(state, params))
    eager = counted_transforms(monkeypatch, lambda: eager_tendency(solver, state, params))
    assert deferred == {"rfftn": 9, "irfftn": 6}
    assert eager == {"rfftn": 12, "irfftn": 15}


def test_a_term_read_as_values_is_its_inverse_transform_and_arithmetic_stays_exact():
    """``SpectralTerm`` against the values it stands for: sums with terms and with fields, negation, differences on
    either side, per-sample coefficients on either side, division, and a product with a field (read as values)."""
    shape = (2, 8, 12)
    generator = torch.Generator().manual_seed(4)
    a, b, field = (torch.randn(*shape, generator=generator, dtype=torch.float64) for _ in range(3))
    coefficient = torch.tensor([2.0, -3.0], dtype=torch.float64).reshape(2, 1, 1)

    def term(values):
        return SpectralTerm(torch.fft.rfftn(values, dim=(1, 2)), shape, torch.float64, values.device, 2)

    def read(value):
        return value.materialize() if isinstance(value, SpectralTerm) else value

    cases = {
        "sum of terms": (term(a) + term(b), a + b),
        "python sum": (sum([term(a), term(b)]), a + b),
        "term + field": (term(a) + field, a + field),
        "field + term": (field + term(a), field + a),
        "negation": (-(term(a) + field), -(a + field)),
        "term - field": (term(a) - field, a - field),
        "term - term": (term(a) - term(b), a - b),
        "number - term": (1.5 - term(a), 1.5 - a),
        "term + per-sample constant": (term(a) + coefficient, a + coefficient),
        "field - term": (field - term(a), field - a),
        "coefficient * term": (coefficient * (term(a) + field), coefficient * (a + field)),
        "term * number": ((term(a) + field) * 0.5, (a + field) * 0.5),
        "term / coefficient": (term(a) / coefficient, a / coefficient),
        "field * term": (field * term(a), field * a),
        "term ** 2": (term(a) ** 2, a**2),
        "torch function": (torch.tanh(term(a)), torch.tanh(a)),
    }
    for label, (got, expected) in cases.items():
        torch.testing.assert_close(read(got), expected, rtol=0, atol=1e-12, msg=label)
    assert isinstance(coefficient * term(a) - field, SpectralTerm)  # a coefficient and a field keep it deferred
    assert not isinstance(field * term(a), SpectralTerm)
    assert isinstance(term(a) + coefficient, SpectralTerm)  # broadcast over the grid, still deferred
    with pytest.raises(AttributeError, match="in-place"):
        term(a).mul_(2)
    zero = SpectralTerm(None, shape, torch.float64, a.device, 2)
    assert torch.equal(truncated_spectrum(zero, (4, 6)), torch.zeros(2, 4, 4, dtype=torch.complex128))
    assert torch.equal(zero.materialize(), torch.zeros(shape, dtype=torch.float64))
    spectrum = truncated_spectrum(term(a) - 2 * term(b), (4, 6))
    torch.testing.assert_close(spectrum, truncated_spectrum(a - 2 * b, (4, 6)), rtol=0, atol=1e-12)
