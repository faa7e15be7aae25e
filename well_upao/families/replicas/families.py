"""The Well's simulated datasets as replica families: what the Well's files hold and how to make trajectories.

A replica family knows its dataset's layout in the Well (field names and tensor orders, ``/scalars`` names, axes,
boundary types, frame spacing, file names per parameter set), the Well's full parameter sets and sizes, the CPU
defaults (a resolved subset, smaller grids) and how to simulate one trajectory with our solvers
(``gray_scott``, ``shear_flow``, ``rayleigh_benard``, ``active_matter``). The writer is
``well_upao.data.replicas``.

torch and the solvers are imported when a trajectory is simulated, not with this module.
"""

from __future__ import annotations

import importlib
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from well_upao.families.base import FieldSpec
from well_upao.families.replicas.parameters import (
    ALPHAS,
    DELTA_B0,
    LENGTH,
    N_BLOBS,
    N_SHEAR,
    NOISE_SEEDS,
    PATTERNS,
    PRANDTL,
    RAYLEIGH,
    REYNOLDS,
    SCHMIDT,
    WIDTHS,
    ZETAS,
)

# The solver modules (gray_scott, shear_flow, rayleigh_benard, active_matter) and torch are imported inside
# ``simulate``, not here: this registry is read by the dataset registry and the CLI's parser (`well-upao --help`),
# which must not load torch; a replica's solver is loaded when it simulates.

#: bumped when a replica's numbers would change for the same seed and settings (2: Gray-Scott's initial conditions
#: follow the Well's generator; 3: ``dimensions/time`` stored in float32, as the Well stores it)
REPLICA_VERSION = 3


@dataclass(frozen=True)
class ReplicaSize:
    """Grid points per axis, stored frames per trajectory and trajectories per parameter set."""

    shape: tuple[int, ...]
    n_steps: int
    n_traj_per_set: int


class ReplicaFamily(ABC):
    """One of the Well's simulated datasets (see the module docstring)."""

    name: str
    equation: str
    fields: tuple[FieldSpec, ...]
    scalar_names: tuple[str, ...]
    boundary_types: tuple[str, ...]
    #: spacing of the stored frames (the Well's)
    frame_dt: float
    #: the Well's own sizes, and ours for a CPU
    well_size: ReplicaSize
    cpu_size: ReplicaSize
    #: how the solver works, for the file's ``well_upao_replica`` attribute
    method: str

    @abstractmethod
    def parameter_sets(self, full: bool) -> list[dict[str, float]]:
        """The Well's parameter sets (``full``) or the resolved subset of the CPU defaults."""

    @abstractmethod
    def file_stem(self, scalars: dict[str, float]) -> str:
        """The Well's file name (without ``.hdf5``) of one parameter set."""

    @abstractmethod
    def axes(self, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        """Coordinates of the stored grid, one array per axis."""

    @abstractmethod
    def initial_condition(self, rng: np.random.Generator) -> dict[str, float]:
        """Knobs of one trajectory's initial condition (stored in the file, so it can be re-made)."""

    @abstractmethod
    def simulate(
        self, scalars: dict[str, float], initial: dict[str, float], shape: tuple[int, ...], times: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Every field at ``times``: ``(T, *shape)`` for scalars, ``(T, *shape, 2)`` for vectors, ``(T, *shape, 2, 2)``
        for tensors (float64). A family may note in ``initial`` how the trajectory was made (Gray-Scott's
        ``redraws``); the writer stores ``initial`` after the simulation."""

    @property
    def n_spatial_dims(self) -> int:
        return len(self.boundary_types)

    def check_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The simulation's sizes from ``--resolution``: one grid size per spatial axis (``ValueError`` otherwise).
        Families with more resolution axes than spatial ones (active matter's orientations) override this."""
        if len(shape) != self.n_spatial_dims or min(shape) < 8:
            raise ValueError(f"{self.name} needs {self.n_spatial_dims} grid sizes of at least 8, got {shape}")
        return tuple(shape)

    def spatial_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The stored grid of a simulation's sizes."""
        return tuple(shape[: self.n_spatial_dims])

    def field_shape(self, spec: FieldSpec, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape) + (self.n_spatial_dims,) * spec.order


def exponent_tag(value: float) -> str:
    """``1e4``, ``5e-1``, ``1e0``: the Well's spelling of parameters in file names (mantissa, ``e``, exponent)."""
    exponent = math.floor(math.log10(abs(value)) + 1e-12)
    mantissa = round(value / 10**exponent, 6)
    mantissa_text = f"{mantissa:g}"
    return f"{mantissa_text}e{exponent}"


def prandtl_tag(value: float) -> str:
    """Rayleigh-Bénard's Prandtl numbers: integers as such (``1``, ``10``), fractions as ``1e-1``."""
    return f"{int(value)}" if value >= 1 and float(value).is_integer() else exponent_tag(value)


def _solver(name: str):
    """The replica solver module ``name`` (``gray_scott``, ``shear_flow``, ...), imported when a replica simulates:
    it loads torch (see the note at the imports)."""
    return importlib.import_module(f"well_upao.families.replicas.{name}")


def _torch():
    """torch, as the solvers load it (``well_upao.families.replicas.gray_scott`` imports it)."""
    return _solver("gray_scott").torch


class GrayScottReplica(ReplicaFamily):
    name = "gray_scott_reaction_diffusion"
    equation = "d_t A = delta_A Lap A - A B^2 + F (1 - A), d_t B = delta_B Lap B + A B^2 - (F + k) B, periodic"
    fields = (FieldSpec("A", 0), FieldSpec("B", 0))
    scalar_names = ("F", "k")
    boundary_types = ("PERIODIC", "PERIODIC")
    frame_dt = 10.0
    well_size = ReplicaSize((128, 128), 1001, 200)
    cpu_size = ReplicaSize((128, 128), 101, 10)
    method = "Fourier pseudo-spectral, ETDRK4 with 1 s steps (the Well's method)"

    def parameter_sets(self, full):
        return [{"F": f, "k": k} for f, k in PATTERNS.values()]

    def file_stem(self, scalars):
        pattern = next(name for name, fk in PATTERNS.items() if fk == (scalars["F"], scalars["k"]))
        return f"{self.name}_{pattern}_F_{scalars['F']:g}_k_{scalars['k']:g}"

    def axes(self, shape):
        return tuple(-1 + np.arange(n) * (2.0 / n) for n in shape)

    def initial_condition(self, rng):
        return {"kind": float(rng.integers(0, 2)), "seed": float(rng.integers(0, 2**31 - 1))}

    def simulate(self, scalars, initial, shape, times):
        """One trajectory from the knobs ``kind`` (0 Fourier series, 1 Gaussian clusters) and ``seed``. A
        trajectory that decays into the trivial state (``decays_to_trivial_state``) teaches
        nothing: its knobs are redrawn from ``default_rng([seed, attempt])`` (attempt = 1, 2, ..; deterministic, so
        the stored knobs re-make the same trajectory) and the number of redraws is recorded in ``initial``
        (``redraws``), which the writer stores. The Well keeps such trajectories (its README lists 89 gliders and
        6 spirals trajectories that reach a stationary state)."""
        torch = _torch()
        gray_scott = _solver("gray_scott")

        grid = gray_scott.square_grid(shape[0])
        kind, seed = int(initial["kind"]), int(initial["seed"])
        for attempt in range(gray_scott.MAX_DRAWS):
            if attempt:
                redraw = np.random.default_rng([int(initial["seed"]), attempt])
                kind, seed = int(redraw.integers(0, 2)), int(redraw.integers(0, 2**31 - 1))
            rng = np.random.default_rng(seed)
            if kind == 0:
                a0, b0 = gray_scott.random_fourier_state(rng, grid, feed=scalars["F"], kill=scalars["k"])
            else:
                a0, b0 = gray_scott.gaussian_cluster_state(rng, grid)
            a, b = gray_scott.simulate_gray_scott(
                torch.as_tensor(a0), torch.as_tensor(b0), scalars["F"], scalars["k"], times, grid
            )
            if not gray_scott.decays_to_trivial_state(b, scalars["F"], scalars["k"]):
                if attempt:
                    initial["redraws"] = float(attempt)
                return {"A": a.numpy(), "B": b.numpy()}
        raise FloatingPointError(
            f"Gray-Scott F = {scalars['F']:g}, k = {scalars['k']:g}: {gray_scott.MAX_DRAWS} initial conditions in a "
            "row decayed to the trivial state A = 1, B = 0"
        )


class ShearFlowReplica(ReplicaFamily):
    name = "shear_flow"
    equation = "d_t u + u.grad u + grad p = Lap u / Re, div u = 0, d_t s + u.grad s = Lap s / (Re Sc), periodic"
    fields = (FieldSpec("tracer", 0), FieldSpec("pressure", 0), FieldSpec("velocity", 1))
    scalar_names = ("Reynolds", "Schmidt")
    boundary_types = ("PERIODIC", "PERIODIC")
    frame_dt = 0.1
    well_size = ReplicaSize((256, 512), 200, 40)
    #: the Well's generating code's own grid (its layers are thin: on 64 x 128 the tracer's filaments are not resolved)
    cpu_size = ReplicaSize((128, 256), 200, 10)
    method = "Fourier pseudo-spectral vorticity form, 2/3 de-aliasing, ETDRK4 at CFL 0.5"

    def parameter_sets(self, full):
        reynolds = REYNOLDS if full else (1e4, 5e4)
        schmidt = SCHMIDT if full else (0.1, 1.0, 10.0)
        return [{"Reynolds": r, "Schmidt": s} for r in reynolds for s in schmidt]

    def file_stem(self, scalars):
        return f"{self.name}_Reynolds_{exponent_tag(scalars['Reynolds'])}_Schmidt_{exponent_tag(scalars['Schmidt'])}"

    def axes(self, shape):
        return (np.arange(shape[0]) * (1.0 / shape[0]), -1 + np.arange(shape[1]) * (2.0 / shape[1]))

    def initial_condition(self, rng):
        return {
            "n_shear": float(rng.choice(N_SHEAR)),
            "n_blobs": float(rng.choice(N_BLOBS)),
            "width": float(rng.choice(WIDTHS)),
        }

    def simulate(self, scalars, initial, shape, times):
        torch = _torch()
        shear_flow = _solver("shear_flow")

        grid = shear_flow.shear_grid(*shape)
        state = shear_flow.initial_state(grid, int(initial["n_shear"]), int(initial["n_blobs"]), initial["width"])
        out = shear_flow.simulate_shear_flow(state, scalars["Reynolds"], scalars["Schmidt"], times, grid)
        velocity = torch.stack([out["u_x"], out["u_y"]], dim=-1)
        return {"tracer": out["tracer"].numpy(), "pressure": out["pressure"].numpy(), "velocity": velocity.numpy()}


class RayleighBenardReplica(ReplicaFamily):
    name = "rayleigh_benard"
    equation = "d_t b + u.grad b = kappa Lap b, d_t u + u.grad u + grad p = nu Lap u + b e_z, walls at z = 0, 1"
    fields = (FieldSpec("buoyancy", 0), FieldSpec("pressure", 0), FieldSpec("velocity", 1))
    scalar_names = ("Rayleigh", "Prandtl")
    boundary_types = ("PERIODIC", "WALL")
    frame_dt = 0.25
    well_size = ReplicaSize((512, 128), 200, 50)
    cpu_size = ReplicaSize((128, 32), 200, 10)
    method = "Fourier x Chebyshev collocation (n_z + 1 points inside), SBDF2, stream function + mean flow"

    def parameter_sets(self, full):
        rayleigh = RAYLEIGH if full else (1e6,)  # Ra = 1e7 blows up on the CPU grid in most trajectories
        prandtl = PRANDTL if full else (1.0, 10.0)
        return [{"Rayleigh": r, "Prandtl": p} for r in rayleigh for p in prandtl]

    def file_stem(self, scalars):
        return f"{self.name}_Rayleigh_{exponent_tag(scalars['Rayleigh'])}_Prandtl_{prandtl_tag(scalars['Prandtl'])}"

    def axes(self, shape):
        return (np.arange(shape[0]) * (4.0 / shape[0]), np.linspace(0.0, 1.0, shape[1]))

    def initial_condition(self, rng):
        return {"delta_b0": float(rng.choice(DELTA_B0)), "noise_seed": float(rng.choice(NOISE_SEEDS))}

    def simulate(self, scalars, initial, shape, times):
        torch = _torch()
        rayleigh_benard = _solver("rayleigh_benard")

        # as many Chebyshev points as stored ones: the same vertical resolution, spectral inside
        grid = rayleigh_benard.ChannelGrid(shape[0], shape[1])
        out = rayleigh_benard.simulate_rayleigh_benard(
            grid,
            scalars["Rayleigh"],
            scalars["Prandtl"],
            times,
            shape[1],
            delta_b0=initial["delta_b0"],
            noise_seed=int(initial["noise_seed"]),
        )
        velocity = torch.stack([out["u_x"], out["u_z"]], dim=-1)
        return {"buoyancy": out["buoyancy"].numpy(), "pressure": out["pressure"].numpy(), "velocity": velocity.numpy()}


def well_number(value: float) -> str:
    """Active matter's spelling of parameters in file names: Python's float text (``10.0``, ``-1.0``)."""
    return repr(float(value))


class ActiveMatterReplica(ReplicaFamily):
    """The kinetic theory of ``active_matter``; ``--resolution N`` or ``N N`` (orientations = N, as the Well's
    256^2 x 256) or ``N N N_theta``. At 64 orientations the distribution stays resolved for zeta = 1 only (the
    alignment sharpens it in theta as zeta grows; reports/replicas.md), so the CPU default keeps zeta = 1."""

    name = "active_matter"
    equation = (
        "d_t psi + div(u psi) + d_theta(theta_dot psi) = d_T Lap psi + d_R d_theta^2 psi, "
        "theta_dot = p_perp.(grad u + 2 zeta D).p; -Lap u + grad q = div sigma(psi, E), div u = 0; periodic"
    )
    fields = (FieldSpec("concentration", 0), FieldSpec("velocity", 1), FieldSpec("D", 2), FieldSpec("E", 2))
    scalar_names = ("L", "zeta", "alpha")
    boundary_types = ("PERIODIC", "PERIODIC")
    frame_dt = 0.25
    well_size = ReplicaSize((256, 256, 256), 81, 5)
    cpu_size = ReplicaSize((64, 64, 64), 81, 5)
    method = (
        "Fourier pseudo-spectral in x, y, theta with 2/3 de-aliasing, SBDF2 (step 3.90625e-4 x 256 / N), "
        "Stokes solved self-consistently (conjugate gradients)"
    )

    def check_shape(self, shape):
        shape = tuple(shape)
        if len(shape) == 1:
            shape = (shape[0], shape[0])
        if len(shape) == 2:
            shape = (*shape, shape[0])
        if len(shape) != 3 or shape[0] != shape[1] or min(shape) < 8 or any(n % 2 for n in shape):
            raise ValueError(
                f"active_matter needs a square grid and an orientation count, even and at least 8: "
                f"--resolution N [N [N_theta]], got {shape}"
            )
        return shape

    def parameter_sets(self, full):
        zetas = ZETAS if full else (1.0,)
        alphas = ALPHAS if full else (-1.0, -3.0, -5.0)
        return [{"L": LENGTH, "zeta": z, "alpha": a} for z in zetas for a in alphas]

    def file_stem(self, scalars):
        return (
            f"{self.name}_L_{well_number(scalars['L'])}_zeta_{well_number(scalars['zeta'])}"
            f"_alpha_{well_number(scalars['alpha'])}"
        )

    def axes(self, shape):
        return tuple(np.arange(n) * (LENGTH / n) for n in shape[:2])

    def initial_condition(self, rng):
        return {"seed": float(rng.integers(0, 2**31 - 1))}

    def simulate(self, scalars, initial, shape, times):
        active_matter = _solver("active_matter")

        n, _, n_theta = self.check_shape(shape)
        grid = active_matter.KineticGrid(n, n_theta, scalars["L"])
        parameters = active_matter.ActiveMatterParameters(alpha=scalars["alpha"], zeta=scalars["zeta"])
        psi0 = active_matter.initial_distribution(grid, int(initial["seed"]))
        out = active_matter.simulate_active_matter(grid, parameters, psi0, times)
        return {name: value.numpy() for name, value in out.items()}


REPLICAS: dict[str, ReplicaFamily] = {
    family.name: family
    for family in (GrayScottReplica(), ShearFlowReplica(), RayleighBenardReplica(), ActiveMatterReplica())
}
