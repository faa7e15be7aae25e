"""The pretraining families of the paper (its PDEBench subsets), as simulated trajectory families.

Each family samples one trajectory's parameters and random initial condition (seeded per trajectory) and
integrates it with ``well_upao.families.pdebench_solvers``; the generator writes them in the Well's format like the
exact datasets (``well-upao generate-pretrain``). Dataset names equal the PDE registry names, so the UPAO
residual of every family is available too. Defaults are small enough for a 2-core CPU; PDEBench's own sizes are
larger (see the paper's dataset table) and can be requested with ``--resolution`` / ``--n-steps``.

torch and the solvers are imported when a trajectory is simulated, not with this module (the dataset registry
lists these families, and listing them should not cost a torch import).
"""

from __future__ import annotations

import importlib
import math

import numpy as np

from well_upao.families.base import TWO_PI, FieldSpec, TrajectoryFamily, TrajectoryParameters


def _torch_and_solvers():
    """torch and our solvers (which import torch), imported on first use (the module docstring says why)."""
    solvers = importlib.import_module("well_upao.families.pdebench_solvers")
    return solvers.torch, solvers


def smooth_random_field(rng: np.random.Generator, shape: tuple[int, ...], max_k: int, length: float) -> np.ndarray:
    """A random periodic field: sum of Fourier modes ``|k_i| <= max_k`` with 1/|k| amplitudes, unit rms."""
    axes = [np.arange(n) * (length / n) for n in shape]
    mesh = np.meshgrid(*axes, indexing="ij")
    field = np.zeros(shape)
    for k in np.ndindex(*([2 * max_k + 1] * len(shape))):
        wave = np.array(k) - max_k
        if not wave.any():
            continue
        amplitude = rng.normal() / np.linalg.norm(wave)
        phase = rng.uniform(0, TWO_PI)
        field += amplitude * np.cos(sum(2 * math.pi * w * x / length for w, x in zip(wave, mesh, strict=True)) + phase)
    return field / (np.sqrt((field**2).mean()) + 1e-12)


class SimulatedFamily(TrajectoryFamily):
    kind = "simulation"
    streams_in_time = False
    mode_columns = ("seed",)
    domain_length = 1.0
    domain_start = 0.0

    def grid_axes(self, resolution: int) -> tuple[np.ndarray, ...]:
        """Cell centres ``x_i = a + (i + 1/2) L / N`` (finite volumes) on ``[a, a + L]``."""
        dx = self.domain_length / resolution
        x = self.domain_start + (np.arange(resolution) + 0.5) * dx
        return tuple(x for _ in range(self.n_spatial_dims))

    def seed_of(self, params: TrajectoryParameters) -> np.random.Generator:
        return np.random.default_rng(int(params.modes["seed"][0]))

    def evaluate(self, params, axes, times, dtype=np.float64):
        fields = self.simulate(params, axes, np.asarray(times, dtype=np.float64))
        return {k: np.asarray(v, dtype=dtype) for k, v in fields.items()}

    def simulate(self, params: TrajectoryParameters, axes, times) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _draw_seed(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"seed": np.array([float(rng.integers(0, 2**31 - 1))])}


class DiffusionReaction2D(SimulatedFamily):
    name = "diffusion_reaction_2d"
    equation = "u_t = Du Lap u + u - u^3 - k - v, v_t = Dv Lap v + u - v (FitzHugh-Nagumo), Neumann walls"
    n_spatial_dims = 2
    fields = (FieldSpec("u", 0), FieldSpec("v", 0))
    scalar_names = ("D_u", "D_v", "k")
    domain_start, domain_length = -1.0, 2.0
    default_resolution, default_n_steps, default_dt, default_n_traj = 64, 21, 0.25, 24

    @property
    def boundary_types(self):
        return ("WALL", "WALL")

    def sample_parameters(self, rng, index):
        return TrajectoryParameters({"D_u": 1e-3, "D_v": 5e-3, "k": 5e-3}, self._draw_seed(rng))

    def simulate(self, params, axes, times):
        torch, solvers = _torch_and_solvers()
        rng = self.seed_of(params)
        shape = tuple(len(a) for a in axes)
        u0, v0 = (torch.as_tensor(rng.normal(size=shape)) for _ in range(2))
        s = params.scalars
        u, v = solvers.fitzhugh_nagumo(u0, v0, s["D_u"], s["D_v"], s["k"], self.domain_length / shape[0], times)
        return {"u": u.numpy(), "v": v.numpy()}


class ShallowWater2D(SimulatedFamily):
    name = "shallow_water_2d"
    equation = "h_t + div(h v) = 0, (h v)_t + div(h v v + g h^2/2) = 0 (radial dam break), open borders"
    n_spatial_dims = 2
    fields = (FieldSpec("height", 0), FieldSpec("velocity", 1))
    scalar_names = ("g", "h_in", "radius")
    domain_start, domain_length = -2.5, 5.0
    default_resolution, default_n_steps, default_dt, default_n_traj = 64, 21, 0.05, 24

    @property
    def boundary_types(self):
        return ("OPEN", "OPEN")

    def sample_parameters(self, rng, index):
        scalars = {"g": 1.0, "h_in": float(rng.uniform(1.5, 2.5)), "radius": float(rng.uniform(0.3, 0.7))}
        return TrajectoryParameters(scalars, self._draw_seed(rng))

    def simulate(self, params, axes, times):
        torch, solvers = _torch_and_solvers()
        x, y = np.meshgrid(*axes, indexing="ij")
        s = params.scalars
        h0 = torch.as_tensor(np.where(np.hypot(x, y) < s["radius"], s["h_in"], 1.0))
        h, u, v = solvers.shallow_water(h0, self.domain_length / len(axes[0]), times, g=s["g"])
        return {"height": h.numpy(), "velocity": torch.stack([u, v], -1).numpy()}


class IncompressibleNSForced2D(SimulatedFamily):
    name = "incompressible_ns_forced_2d"
    equation = "w_t + v.grad w = nu Lap w + f (vorticity), periodic; f stored as 'forcing'"
    n_spatial_dims = 2
    fields = (FieldSpec("forcing", 0), FieldSpec("velocity", 1))
    scalar_names = ("nu",)
    default_resolution, default_n_steps, default_dt, default_n_traj = 64, 21, 0.1, 24

    @property
    def boundary_types(self):
        return ("PERIODIC", "PERIODIC")

    def grid_axes(self, resolution):
        x = np.arange(resolution) * (self.domain_length / resolution)  # spectral grid
        return (x, x)

    def sample_parameters(self, rng, index):
        return TrajectoryParameters({"nu": float(rng.choice([1e-3, 3e-3, 1e-2]))}, self._draw_seed(rng))

    def simulate(self, params, axes, times):
        torch, solvers = _torch_and_solvers()
        rng = self.seed_of(params)
        shape = (len(axes[0]), len(axes[1]))
        w0 = torch.as_tensor(2.0 * smooth_random_field(rng, shape, 4, self.domain_length))
        forcing = torch.as_tensor(smooth_random_field(rng, shape, 2, self.domain_length))
        u, v = solvers.vorticity_ns(w0, forcing, params.scalars["nu"], self.domain_length, times)
        forcing_series = np.broadcast_to(forcing.numpy(), (len(times), *shape))
        return {"forcing": np.array(forcing_series), "velocity": torch.stack([u, v], -1).numpy()}


class CompressibleNS(SimulatedFamily):
    equation = "rho_t + div(rho v) = 0, (rho v)_t + div(rho v v + p) = div sigma', E_t + div((E + p) v) = div(v.sigma')"
    fields = (FieldSpec("density", 0), FieldSpec("pressure", 0), FieldSpec("velocity", 1))
    scalar_names = ("eta", "zeta")
    default_n_steps, default_dt, default_n_traj = 21, 0.02, 24

    def __init__(self, dims: int):
        self.n_spatial_dims = dims
        self.name = f"compressible_ns_{dims}d"
        #: 3D at 32^3 (PDEBench's is 64^3): about 9 s a trajectory of 21 frames on one core (measured 2026-11-27)
        self.default_resolution = {1: 256, 2: 64, 3: 32}[dims]

    @property
    def boundary_types(self):
        return ("PERIODIC",) * self.n_spatial_dims

    def sample_parameters(self, rng, index):
        viscosity = float(rng.choice([1e-3, 1e-2]))
        return TrajectoryParameters({"eta": viscosity, "zeta": viscosity}, self._draw_seed(rng))

    def simulate(self, params, axes, times):
        torch, solvers = _torch_and_solvers()
        rng = self.seed_of(params)
        shape = tuple(len(a) for a in axes)

        def field(scale, offset=0.0):
            return torch.as_tensor(offset + scale * smooth_random_field(rng, shape, 3, self.domain_length))

        rho0, p0 = field(0.2, 1.0), field(0.2, 1.0)
        velocity0 = [field(0.3) for _ in range(self.n_spatial_dims)]
        s = params.scalars
        rho, velocity, p = solvers.compressible_ns(
            rho0, velocity0, p0, s["eta"], s["zeta"], self.domain_length / shape[0], times
        )
        return {"density": rho.numpy(), "pressure": p.numpy(), "velocity": torch.stack(velocity, -1).numpy()}


SIMULATED_FAMILIES: dict[str, SimulatedFamily] = {
    family.name: family
    for family in (
        DiffusionReaction2D(),
        ShallowWater2D(),
        IncompressibleNSForced2D(),
        CompressibleNS(1),
        CompressibleNS(2),
        CompressibleNS(3),
    )
}
