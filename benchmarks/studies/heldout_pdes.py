"""Held-out PDEs of issue 75, registered as a user registers their own (docs/your-data.md): PDE, solver, family.

Three 2D equations the project does not ship, each on a periodic square, each made by its own solver
(``heldout_solvers``: numpy, pseudo-spectral, written for this study; nothing imported from ``well_upao.families``):

* ``heldout_allen_cahn``: ``d_t u = epsilon^2 Lap u + u - u^3`` (phase separation, then coarsening), SBDF2;
* ``heldout_kuramoto_sivashinsky``: ``d_t u + Lap u + nu Lap^2 u + (|grad u|^2 - <|grad u|^2>) / 2 = 0``
  (spatiotemporal chaos), ETDRK4. ``<.>`` is the mean over the domain: the zero-mean form of the equation, whose
  solutions keep the mean of their initial state (zero here) instead of drifting at the rate ``-<|grad u|^2> / 2``;
* ``heldout_swift_hohenberg``: ``d_t u = r u - (1 + Lap)^2 u + g u^2 - u^3`` (stripes and hexagons forming from
  noise), ETDRK4.

The parameters are named as the equations name them and stored per trajectory in ``/scalars``. Each trajectory starts
from a smooth random field (Fourier modes ``0 < |k| <= k_max`` with normal coefficients, its own seed in the file's
mode table), is integrated for ``spin_up`` time units unobserved, then stored every ``dt``. The solver runs on a grid
``refine`` (2) times finer than the stored one with the 2/3 rule, and the stored frames are its Fourier truncation,
so the data are not the discretisation of any grid the project's residual or solver baseline uses.

Import this module (``--imports heldout_pdes`` / ``data.imports=[heldout_pdes]``, with ``benchmarks/`` on
``PYTHONPATH``) and the three datasets can be generated, trained on and evaluated as built-in ones.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from heldout_solvers import Etdrk4, Nonlinear, Sbdf2, SpectralGrid, Stepper, integrate, restrict

from well_upao.data.datasets import DatasetSpec, register_dataset
from well_upao.families.base import FieldSpec, TrajectoryFamily, TrajectoryParameters
from well_upao.physics import PDE, SubEquation


def _spatial_mean(f: torch.Tensor) -> torch.Tensor:
    """The mean over the two spatial axes (the last two), kept as axes of one point."""
    return f.mean(dim=(-2, -1), keepdim=True)


def _grad_squared(f, ops) -> torch.Tensor:
    return sum(g**2 for g in ops.gradient(f["height"]))


ALLEN_CAHN = PDE(
    name="heldout_allen_cahn",
    variables=("concentration_rho",),
    parameters=("epsilon",),
    equations=(
        SubEquation(
            "u",
            rate="concentration_rho",
            flux=lambda f, p, ops: (
                -(p["epsilon"] ** 2) * ops.laplacian(f["concentration_rho"]),
                -f["concentration_rho"],
                f["concentration_rho"] ** 3,
            ),
        ),
    ),
    description="Allen-Cahn: d_t u = epsilon^2 Lap u + u - u^3 (u in 'concentration_rho')",
)

KURAMOTO_SIVASHINSKY = PDE(
    name="heldout_kuramoto_sivashinsky",
    variables=("height",),
    parameters=("nu",),
    equations=(
        SubEquation(
            "u",
            rate="height",
            flux=lambda f, p, ops: (
                ops.laplacian(f["height"]),
                p["nu"] * ops.laplacian(ops.laplacian(f["height"])),
                0.5 * _grad_squared(f, ops),
                -0.5 * _spatial_mean(_grad_squared(f, ops)),
            ),
        ),
    ),
    description="Kuramoto-Sivashinsky, zero mean: d_t u + Lap u + nu Lap^2 u + (|grad u|^2 - <|grad u|^2>)/2 = 0",
    notes="u in 'height' (a flame front's or a thin film's height); <.> is the mean over the periodic domain.",
)

SWIFT_HOHENBERG = PDE(
    name="heldout_swift_hohenberg",
    variables=("temperature",),
    parameters=("r", "g"),
    equations=(
        SubEquation(
            "u",
            rate="temperature",
            # d_t u - r u + u + 2 Lap u + Lap^2 u - g u^2 + u^3 = 0, the terms of (1 + Lap)^2 u kept apart
            flux=lambda f, p, ops: (
                -p["r"] * f["temperature"],
                f["temperature"],
                2.0 * ops.laplacian(f["temperature"]),
                ops.laplacian(ops.laplacian(f["temperature"])),
                -p["g"] * f["temperature"] ** 2,
                f["temperature"] ** 3,
            ),
        ),
    ),
    description="Swift-Hohenberg: d_t u = r u - (1 + Lap)^2 u + g u^2 - u^3 (u in 'temperature')",
    notes="u in 'temperature': the equation models the temperature perturbation of convection near its onset.",
)


def smooth_random_state(rng: np.random.Generator, grid: SpectralGrid, k_max: float, rms: float) -> np.ndarray:
    """A random real periodic field on ``grid``: the Fourier modes ``0 < |k| <= k_max`` of the square, each with a
    standard normal complex coefficient, scaled to root-mean-square ``rms`` (zero mean).

    The coefficients are drawn mode by mode in a fixed order of the integer wave vectors (``m_x`` then ``m_y``), not
    per grid point, so a seed gives the same field on every grid that resolves ``k_max``."""
    unit = 2 * math.pi / grid.length
    m = int(k_max / unit)
    if m >= grid.n // 2:
        raise ValueError(f"a {grid.n}-point grid of side {grid.length:g} cannot hold the modes up to |k| = {k_max:g}")
    spectrum = np.zeros(grid.k2.shape, dtype=complex)
    for mx in range(-m, m + 1):
        for my in range(0, m + 1):
            if (my == 0 and mx <= 0) or unit * math.hypot(mx, my) > k_max:
                continue
            spectrum[mx % grid.n, my] = rng.normal() + 1j * rng.normal()
    field = grid.to_grid(spectrum)
    return field * (rms / np.sqrt(np.mean(field**2)))


class HeldoutFamily(TrajectoryFamily):
    """A held-out equation on a periodic square, simulated by its own solver (see the module docstring).

    Subclasses give the equation in Fourier space (``linear``: ``L`` of ``d_t v = L v + N(v)``, ``nonlinear``:
    ``N``), the scheme (``stepper``), the parameter ranges (``ranges``), the initial field (``k_max``, ``rms``) and
    the solver's largest step between stored frames and in the spin-up (``max_step``, ``spin_up_step``). ``spin_up``
    and ``refine`` may be set per instance (the tests use small values)."""

    kind = "simulation"
    streams_in_time = False
    n_spatial_dims = 2
    fields = (FieldSpec("u", 0),)
    mode_columns = ("seed",)
    stepper: type[Stepper] = Etdrk4
    #: uniform ranges of the parameters, ``(name, low, high)``, drawn per trajectory in this order
    ranges: tuple[tuple[str, float, float], ...]
    k_max: float
    rms: float
    max_step: float
    spin_up_step: float
    default_spin_up: float
    default_refine = 2

    def __init__(self, spin_up: float | None = None, refine: int | None = None):
        self.spin_up = self.default_spin_up if spin_up is None else spin_up
        self.refine = self.default_refine if refine is None else refine

    @property
    def scalar_names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.ranges)

    def linear(self, grid: SpectralGrid, scalars: dict[str, float]) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def nonlinear(self, grid: SpectralGrid, scalars: dict[str, float]) -> Nonlinear:
        raise NotImplementedError

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        scalars = {name: float(rng.uniform(low, high)) for name, low, high in self.ranges}
        return TrajectoryParameters(scalars, {"seed": np.array([float(rng.integers(0, 2**31 - 1))])})

    def make_stepper(self, grid: SpectralGrid, scalars: dict[str, float], h: float) -> Stepper:
        return self.stepper(self.linear(grid, scalars), self.nonlinear(grid, scalars), h)

    def steps_per_frame(self, dt: float) -> int:
        """Solver steps per stored frame: the fewest that keep the step at most ``max_step``."""
        return max(1, math.ceil(dt / self.max_step - 1e-9))

    def solve(
        self, params: TrajectoryParameters, n: int, times: np.ndarray, steps_per_frame: int | None = None
    ) -> np.ndarray:
        """The field ``(len(times), n, n)`` on the solver's own ``n x n`` grid at ``times``, ``t = 0`` being the end
        of the spin-up. The spin-up runs at steps of at most ``spin_up_step`` (where the state goes matters, not how
        accurately it gets there), the stored frames at ``steps_per_frame`` steps a frame (default: at most
        ``max_step``)."""
        times = np.asarray(times, dtype=np.float64)
        dt = float(times[1] - times[0]) if len(times) > 1 else self.max_step
        substeps = steps_per_frame or self.steps_per_frame(dt)
        grid = SpectralGrid(n, self.domain_length)
        rng = np.random.default_rng(int(params.modes["seed"][0]))
        v = grid.to_spectral(smooth_random_state(rng, grid, self.k_max, self.rms))[None]
        if self.spin_up > 0:
            spin_steps = math.ceil(self.spin_up / self.spin_up_step - 1e-9)
            v = self.make_stepper(grid, params.scalars, self.spin_up / spin_steps).advance(v, spin_steps)
        states = integrate(self.make_stepper(grid, params.scalars, dt / substeps), v, times, substeps, start=0.0)
        return np.stack([grid.to_grid(state[0]) for state in states])

    def evaluate(self, params, axes, times, dtype=np.float64):
        n = len(axes[0])
        fine = self.solve(params, self.refine * n, times)
        return {"u": np.stack([restrict(frame, n) for frame in fine]).astype(dtype)}


class AllenCahn(HeldoutFamily):
    """``d_t u = epsilon^2 Lap u + u - u^3``: implicit diffusion, explicit reaction (SBDF2)."""

    name = "heldout_allen_cahn"
    equation = "d_t u = epsilon^2 Lap u + u - u^3"
    stepper = Sbdf2
    ranges = (("epsilon", 0.1, 0.15),)
    k_max, rms, max_step, spin_up_step, default_spin_up = 6.0, 0.2, 0.025, 0.05, 3.0
    default_resolution, default_n_steps, default_dt, default_n_traj = 64, 128, 0.5, 24

    def linear(self, grid, scalars):
        return (-(scalars["epsilon"] ** 2) * grid.k2,)

    def nonlinear(self, grid, scalars):
        def n(v):
            u = grid.product_grid(v)
            return grid.project(u - u**3)

        return n


class KuramotoSivashinsky(HeldoutFamily):
    """``d_t u = -Lap u - nu Lap^2 u - (|grad u|^2 - <|grad u|^2>) / 2`` on ``[0, 8 pi)^2`` (ETDRK4)."""

    name = "heldout_kuramoto_sivashinsky"
    equation = "d_t u + Lap u + nu Lap^2 u + (|grad u|^2 - <|grad u|^2>) / 2 = 0"
    domain_length = 8 * math.pi
    ranges = (("nu", 0.7, 1.0),)
    k_max, rms, max_step, spin_up_step, default_spin_up = 1.0, 0.1, 0.025, 0.05, 40.0
    default_resolution, default_n_steps, default_dt, default_n_traj = 48, 128, 0.05, 24

    def linear(self, grid, scalars):
        return (grid.k2 - scalars["nu"] * grid.k2**2,)

    def nonlinear(self, grid, scalars):
        def n(v):
            ux, uy = grid.gradient(v)
            q = ux**2 + uy**2
            return -0.5 * grid.project(q - q.mean(axis=(-2, -1), keepdims=True))

        return n


class SwiftHohenberg(HeldoutFamily):
    """``d_t u = r u - (1 + Lap)^2 u + g u^2 - u^3`` on ``[0, 12 pi)^2`` (six critical wavelengths; ETDRK4)."""

    name = "heldout_swift_hohenberg"
    equation = "d_t u = r u - (1 + Lap)^2 u + g u^2 - u^3"
    domain_length = 12 * math.pi
    ranges = (("r", 0.1, 0.4), ("g", 0.0, 0.8))
    k_max, rms, max_step, spin_up_step, default_spin_up = 2.0, 0.05, 0.1, 0.1, 5.0
    default_resolution, default_n_steps, default_dt, default_n_traj = 48, 128, 1.0, 24

    def linear(self, grid, scalars):
        return (scalars["r"] - (1.0 - grid.k2) ** 2,)

    def nonlinear(self, grid, scalars):
        g = scalars["g"]

        def n(v):
            u = grid.product_grid(v)
            return grid.project(g * u**2 - u**3)

        return n


FAMILIES = {family.name: family for family in (AllenCahn(), KuramotoSivashinsky(), SwiftHohenberg())}
PDES = {pde.name: pde for pde in (ALLEN_CAHN, KURAMOTO_SIVASHINSKY, SWIFT_HOHENBERG)}
SLOTS = {
    "heldout_allen_cahn": {"u": "concentration_rho"},
    "heldout_kuramoto_sivashinsky": {"u": "height"},
    "heldout_swift_hohenberg": {"u": "temperature"},
}

for _name, _family in FAMILIES.items():
    register_dataset(DatasetSpec(_name, SLOTS[_name], pde=PDES[_name], family=_family))
