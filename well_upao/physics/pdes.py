"""PDE registry: each PDE is a list of sub-equations ``R_k = d_t Q_k(u) + N_k(u) = 0`` on slot fields.

Fields are named by their slot (``Vx, Vy, Vz, pressure, height, ...``, see ``well_upao.data.slots``), in
physical units, with leading ``(batch, time)`` dimensions. ``Q_k`` is the conserved quantity whose time
derivative appears (``None`` for a constraint such as ``div v = 0``), ``N_k`` the spatial operator. Parameters
come from the sample's ``constant_scalars`` (the dataset's own names, see each entry) or from a PDE's fixed
``constants``. Convective terms use the conservative second-order upwind flux derivative, diffusion and
gradients central differences (paper section "PDE residual term").

Register your own PDE without editing the package:

    from well_upao.physics import PDE, SubEquation, register_pde

    def heat_flux(f, p, ops):
        return -p["kappa"] * ops.laplacian(f["temperature"])

    register_pde(PDE(
        name="my_heat", variables=("temperature",), parameters=("kappa",),
        equations=(SubEquation("heat", rate="temperature", flux=heat_flux),),
    ))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from well_upao.physics.stencils import Stencils

Fields = Mapping[str, torch.Tensor]
Params = Mapping[str, torch.Tensor]
Term = Callable[[Fields, Params, Stencils], torch.Tensor]
VELOCITY = ("Vx", "Vy", "Vz")


@dataclass(frozen=True)
class SubEquation:
    """``R = (Q(u_new) - Q(u_old)) / dt + N(u_theta)``; ``rate=None`` makes it a constraint ``R = N(u_theta)``.

    ``rate`` is a slot name when ``Q`` is that field, or a function ``(fields, params, ops) -> Q``.

    ``flux`` may return one tensor or a tuple of the operator's separate terms (summed into ``N``); the terms'
    magnitudes ``|d_t Q| + sum |term|`` give the equation's natural scale (used for the normalisation floor
    and to report relative residuals), so return the terms separately when they can cancel each other.
    """

    name: str
    rate: str | Term | None
    flux: Term

    @property
    def evolves(self) -> str | None:
        """The slot whose time derivative the equation gives when ``Q_k`` is that field itself (``rate`` given
        as a slot name); lets the solver baseline step ``d_t u = -N(u)``. ``None`` otherwise."""
        return self.rate if isinstance(self.rate, str) else None

    def conserved(self, fields: Fields, params: Params, ops: Stencils) -> torch.Tensor:
        """``Q_k`` of the state."""
        return fields[self.rate] if isinstance(self.rate, str) else self.rate(fields, params, ops)


#: the 3/2 rule: how much finer the grid on which the ``solver`` baseline evaluates a periodic right-hand side
DEALIAS = 1.5


@dataclass(frozen=True)
class PDE:
    name: str
    variables: tuple[str, ...]
    parameters: tuple[str, ...]
    equations: tuple[SubEquation, ...]
    constants: Mapping[str, float] = field(default_factory=dict)
    #: alternative scalar names accepted for a parameter (datasets are not always consistent)
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""
    notes: str = ""
    #: the refinement of the grid on which the ``solver`` baseline (``well_upao.predict.solver``) evaluates the
    #: right-hand side on a periodic grid: 3/2, the rule that makes quadratic products exact, or 1 (the data's grid)
    #: for a dataset whose generator evaluates its nonlinear terms on the grid, so that the baseline steps the
    #: discretisation that made the data (Gray-Scott: its cubic reaction, on the grid in the Well's generator and in
    #: our replica, Chebfun spin2's ETDRK4)
    solver_dealias: float = DEALIAS

    def resolve_parameters(self, available: Mapping[str, torch.Tensor], overrides: Mapping[str, float] = ()) -> dict:
        """Pick this PDE's parameters from the sample's scalars (by name or alias) plus its constants."""
        out: dict[str, torch.Tensor | float] = dict(self.constants)
        out.update(dict(overrides))
        for name in self.parameters:
            if name in out:
                continue
            for candidate in (name, *self.aliases.get(name, ())):
                if candidate in available:
                    out[name] = available[candidate]
                    break
            else:
                raise KeyError(
                    f"PDE {self.name!r} needs parameter {name!r} but the sample only has {sorted(available)}; "
                    "set it with trainer.pde_constants"
                )
        return out


PDE_REGISTRY: dict[str, PDE] = {}


def register_pde(pde: PDE, overwrite: bool = False) -> PDE:
    if pde.name in PDE_REGISTRY and not overwrite and PDE_REGISTRY[pde.name] is not pde:
        raise ValueError(f"a PDE named {pde.name!r} is already registered (pass overwrite=True)")
    PDE_REGISTRY[pde.name] = pde
    return pde


def get_pde(name: str) -> PDE:
    if name not in PDE_REGISTRY:
        raise KeyError(f"no PDE registered as {name!r}; known: {sorted(PDE_REGISTRY)}")
    return PDE_REGISTRY[name]


# ---------------------------------------------------------------------------- building blocks
def advection(ops: Stencils, quantity: torch.Tensor, velocities: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Conservative upwind ``div(v q) = sum_a d_a(v_a q)`` as its per-axis terms (face velocity ``v_a``);
    equals ``v . grad q`` when ``div v = 0``."""
    return tuple(ops.upwind_derivative(v * quantity, v, a) for a, v in enumerate(velocities))


def velocities(f: Fields, dims: int) -> list[torch.Tensor]:
    return [f[name] for name in VELOCITY[:dims]]


def continuity(dims: int) -> SubEquation:
    """``div v = 0`` (central differences); terms ``d_a v_a``."""
    return SubEquation(
        "continuity",
        rate=None,
        flux=lambda f, p, ops: tuple(ops.d(v, a) for a, v in enumerate(velocities(f, dims))),
    )


def incompressible_momentum(dims: int, viscosity: Callable[[Params], torch.Tensor], buoyancy_axis: int | None = None):
    """``d_t v_a + div(v v_a) + d_a p - nu Lap v_a [- b e_a] = 0`` for each component ``a``."""

    def make(a: int) -> SubEquation:
        def flux(f, p, ops):
            vel = velocities(f, dims)
            terms = (*advection(ops, vel[a], vel), ops.d(f["pressure"], a), -viscosity(p) * ops.laplacian(vel[a]))
            if buoyancy_axis == a:
                terms = (*terms, -f["buoyancy"])
            return terms

        return SubEquation(f"momentum_{'xyz'[a]}", rate=VELOCITY[a], flux=flux)

    return tuple(make(a) for a in range(dims))


def advection_diffusion(name: str, quantity: str, dims: int, diffusivity: Callable[[Params], torch.Tensor]):
    return SubEquation(
        name,
        rate=quantity,
        flux=lambda f, p, ops: (
            *advection(ops, f[quantity], velocities(f, dims)),
            -diffusivity(p) * ops.laplacian(f[quantity]),
        ),
    )


def reaction_diffusion(
    name: str, quantity: str, diffusivity: str, *reactions: Callable[[Fields, Params], torch.Tensor]
) -> SubEquation:
    """``d_t c = D Lap c + sum_i r_i(c, ...)``: the terms ``-D Lap c`` and each ``-r_i`` kept apart (their sizes
    set the equation's scale)."""
    return SubEquation(
        name,
        rate=quantity,
        flux=lambda f, p, ops: (
            -p[diffusivity] * ops.laplacian(f[quantity]),
            *(-reaction(f, p) for reaction in reactions),
        ),
    )


def constant_velocity_advection(quantity: str, speed_names: Sequence[str], diffusivity: str | None = None):
    """``d_t u + sum_a c_a d_a u [- nu Lap u] = 0`` with per-trajectory constant speeds ``c_a``."""

    def flux(f, p, ops):
        u = f[quantity]
        speeds = [p[s] * torch.ones_like(u) for s in speed_names]
        if diffusivity is None:
            return advection(ops, u, speeds)
        return (*advection(ops, u, speeds), -p[diffusivity] * ops.laplacian(u))

    return SubEquation("advection", rate=quantity, flux=flux)


# ---------------------------------------------------------------------------- exact-solution datasets
register_pde(
    PDE(
        name="tg2d",
        variables=("Vx", "Vy", "pressure"),
        parameters=("nu",),
        equations=(*incompressible_momentum(2, lambda p: p["nu"]), continuity(2)),
        description="incompressible Navier-Stokes: d_t v + (v.grad) v = -grad p + nu Lap v, div v = 0",
    )
)
register_pde(
    PDE(
        name="wave2d",
        variables=("height", "Vz"),
        parameters=("c",),
        equations=(
            SubEquation("u", rate="height", flux=lambda f, p, ops: -f["Vz"]),
            SubEquation("w", rate="Vz", flux=lambda f, p, ops: -(p["c"] ** 2) * ops.laplacian(f["height"])),
        ),
        description="first-order wave system: d_t u = w, d_t w = c^2 Lap u (u in 'height', w in 'Vz')",
    )
)


def _scalar_transport(name: str, speeds: tuple[str, ...], description: str, diffusivity: str | None = None) -> PDE:
    """An advected (and diffused) scalar in ``concentration_rho`` with per-trajectory constant speeds."""
    parameters = (*((diffusivity,) if diffusivity else ()), *speeds)
    equation = constant_velocity_advection("concentration_rho", speeds, diffusivity)
    return PDE(name, ("concentration_rho",), parameters, (equation,), description=description)


register_pde(
    _scalar_transport("advdiff2d", ("a", "b"), "advection-diffusion: d_t u + a d_x u + b d_y u = nu Lap u", "nu")
)


def _burgers2d_momentum(a: int) -> SubEquation:
    # irrotational (d_x v = d_y u), so u d_x u + v d_y u = d_x((u^2 + v^2) / 2): exact conservative form
    def flux(f, p, ops):
        kinetic = 0.5 * (f["Vx"] ** 2 + f["Vy"] ** 2)
        own = f[VELOCITY[a]]
        return ops.upwind_derivative(kinetic, own, a), -p["nu"] * ops.laplacian(own)

    return SubEquation(f"momentum_{'xy'[a]}", rate=VELOCITY[a], flux=flux)


register_pde(
    PDE(
        name="burgers2d",
        variables=("Vx", "Vy"),
        parameters=("nu",),
        equations=(_burgers2d_momentum(0), _burgers2d_momentum(1)),
        description="viscous Burgers system, irrotational: d_t v_a + d_a(|v|^2 / 2) = nu Lap v_a",
        notes="u d_x u + v d_y u = d_x(|v|^2/2) holds because the Cole-Hopf velocity is a gradient "
        "(paper appendix, 2D Burgers).",
    )
)
register_pde(
    PDE(
        name="burgers1d",
        variables=("Vx",),
        parameters=("nu",),
        equations=(
            SubEquation(
                "momentum_x",
                rate="Vx",
                flux=lambda f, p, ops: (
                    ops.upwind_derivative(0.5 * f["Vx"] ** 2, f["Vx"], 0),
                    -p["nu"] * ops.d2(f["Vx"], 0),
                ),
            ),
        ),
        description="viscous Burgers: d_t u + d_x(u^2 / 2) = nu d_xx u",
    )
)
register_pde(_scalar_transport("adv1d", ("a",), "linear advection: d_t u + a d_x u = 0"))
register_pde(_scalar_transport("adv3d", ("a", "b", "c"), "linear advection: d_t u + a d_x u + b d_y u + c d_z u = 0"))

# ---------------------------------------------------------------------------- the Well's datasets
register_pde(
    PDE(
        name="gray_scott_reaction_diffusion",
        variables=("concentration_u", "concentration_v"),
        parameters=("F", "k"),
        constants={"delta_A": 2e-5, "delta_B": 1e-5},
        aliases={"F": ("f",)},
        equations=(
            reaction_diffusion(
                "A",
                "concentration_u",
                "delta_A",
                lambda f, p: -f["concentration_u"] * f["concentration_v"] ** 2,
                lambda f, p: p["F"] * (1 - f["concentration_u"]),
            ),
            reaction_diffusion(
                "B",
                "concentration_v",
                "delta_B",
                lambda f, p: f["concentration_u"] * f["concentration_v"] ** 2,
                lambda f, p: -(p["F"] + p["k"]) * f["concentration_v"],
            ),
        ),
        description="Gray-Scott: d_t A = dA Lap A - A B^2 + F(1 - A), d_t B = dB Lap B + A B^2 - (F + k) B",
        notes="delta_A = 2e-5, delta_B = 1e-5 (the Well's documentation); A -> concentration_u, B -> concentration_v.",
        # the generator evaluates A B^2 on the grid: de-aliasing it moved the solver baseline's one-step VRMSE on the
        # Gray-Scott study replica from 1.7e-07 to 0.13 (paper definition, history 4, one trajectory)
        solver_dealias=1.0,
    )
)


def _shear_viscosity(p):
    return 1.0 / p["Reynolds"]


register_pde(
    PDE(
        name="shear_flow",
        variables=("Vx", "Vy", "pressure", "passive_tracer"),
        parameters=("Reynolds", "Schmidt"),
        aliases={"Reynolds": ("Rayleigh",)},  # the Well's metadata calls the Reynolds number "Rayleigh" here
        equations=(
            *incompressible_momentum(2, _shear_viscosity),
            continuity(2),
            advection_diffusion("tracer", "passive_tracer", 2, lambda p: _shear_viscosity(p) / p["Schmidt"]),
        ),
        description="incompressible NS + passive tracer: nu = 1/Reynolds, D = nu/Schmidt",
    )
)
register_pde(
    PDE(
        name="rayleigh_benard",
        variables=("Vx", "Vy", "pressure", "buoyancy"),
        parameters=("Rayleigh", "Prandtl"),
        equations=(
            advection_diffusion("buoyancy", "buoyancy", 2, lambda p: (p["Rayleigh"] * p["Prandtl"]) ** -0.5),
            *incompressible_momentum(2, lambda p: (p["Rayleigh"] / p["Prandtl"]) ** -0.5, buoyancy_axis=1),
            continuity(2),
        ),
        description="Boussinesq: d_t b + v.grad b = kappa Lap b, d_t v + v.grad v + grad p - nu Lap v = b e_z",
        notes="kappa = (Ra Pr)^-1/2, nu = (Ra/Pr)^-1/2; the second axis is vertical (walls, ghost cells).",
    )
)
register_pde(
    PDE(
        name="active_matter",
        variables=("concentration_rho", "Vx", "Vy"),
        parameters=(),
        constants={"d_T": 0.05},
        equations=(continuity(2), advection_diffusion("concentration", "concentration_rho", 2, lambda p: p["d_T"])),
        description="incompressibility div v = 0 and concentration transport d_t c + div(v c) = d_T Lap c (exact)",
        notes=(
            "Both hold exactly in the kinetic theory the Well's files come from (Maddu, Weady & Shelley 2024, eqs "
            "(1)-(5); well_upao/families/replicas/active_matter.py): the theta-integral of the Smoluchowski "
            "equation is the transport of c with the translational diffusivity d_T = 0.05 of the generating script, "
            "since the particles do not swim (V0 = 0), and the Stokes flow is incompressible. The files also "
            "determine E = sym(grad u) and tr D = c exactly, but the paper drops D and E, so these two are checked "
            "on files (well_upao.physics.active_matter.kinematic_residuals), not in UPAO. The orientation equation "
            "for D and the Stokes force balance need the fourth moment S of the distribution, which no file stores: "
            "a closure S(c, D) leaves a floor, measured in well_upao.physics.active_matter (reports/replicas.md)."
        ),
    )
)

# ---------------------------------------------------------------------------- pretraining families
register_pde(
    PDE(
        name="diffusion_reaction_2d",
        variables=("concentration_u", "concentration_v"),
        parameters=(),
        constants={"D_u": 1e-3, "D_v": 5e-3, "k": 5e-3},
        equations=(
            reaction_diffusion(
                "u",
                "concentration_u",
                "D_u",
                lambda f, p: f["concentration_u"] - f["concentration_u"] ** 3 - p["k"] - f["concentration_v"],
            ),
            reaction_diffusion("v", "concentration_v", "D_v", lambda f, p: f["concentration_u"] - f["concentration_v"]),
        ),
        description="FitzHugh-Nagumo: d_t u = Du Lap u + u - u^3 - k - v, d_t v = Dv Lap v + u - v (PDEBench values)",
    )
)


def _swe_momentum(a: int) -> SubEquation:
    def rate(f, p, ops):
        return f["height"] * f[VELOCITY[a]]

    def flux(f, p, ops):
        h, vel = f["height"], velocities(f, 2)
        terms = []
        for b in range(2):
            momentum_flux = h * vel[a] * vel[b] + (0.5 * p["g"] * h**2 if a == b else 0)
            terms.append(ops.upwind_derivative(momentum_flux, vel[b], b))
        return tuple(terms)

    return SubEquation(f"momentum_{'xy'[a]}", rate=rate, flux=flux)


register_pde(
    PDE(
        name="shallow_water_2d",
        variables=("height", "Vx", "Vy"),
        parameters=(),
        constants={"g": 1.0},
        equations=(
            SubEquation("mass", rate="height", flux=lambda f, p, ops: advection(ops, f["height"], velocities(f, 2))),
            _swe_momentum(0),
            _swe_momentum(1),
        ),
        description="shallow water (flat bottom): d_t h + div(h v) = 0, d_t(h v) + div(h v v + g h^2/2 I) = 0",
    )
)


def _vorticity(f, p, ops):
    return ops.d(f["Vy"], 0) - ops.d(f["Vx"], 1)


register_pde(
    PDE(
        name="incompressible_ns_forced_2d",
        variables=("Vx", "Vy", "buoyancy"),
        parameters=("nu",),
        equations=(
            SubEquation(
                "vorticity",
                rate=_vorticity,
                flux=lambda f, p, ops: (
                    *advection(ops, _vorticity(f, p, ops), velocities(f, 2)),
                    -p["nu"] * ops.laplacian(_vorticity(f, p, ops)),
                    -f["buoyancy"],
                ),
            ),
            continuity(2),
        ),
        description="forced incompressible NS in vorticity form: d_t w + v.grad w = nu Lap w + curl f, div v = 0",
        notes="pressure-free; the forcing's curl is stored in the 'buoyancy' slot (buoyancy or external forcing).",
    )
)


def _compressible_ns(dims: int) -> PDE:
    def kinetic(f):
        return 0.5 * f["density"] * sum(v**2 for v in velocities(f, dims))

    def viscous_stress(f, p, ops, a, b):
        vel = velocities(f, dims)
        divergence = ops.divergence(vel)
        out = p["eta"] * (ops.d(vel[b], a) + ops.d(vel[a], b))
        if a == b:
            out = out + (p["zeta"] - 2.0 / 3.0 * p["eta"]) * divergence
        return out

    def momentum(a: int) -> SubEquation:
        def flux(f, p, ops):
            vel = velocities(f, dims)
            divergence = ops.divergence(vel)
            convection = sum(ops.upwind_derivative(f["density"] * vel[a] * vel[b], vel[b], b) for b in range(dims))
            return (
                convection,
                ops.d(f["pressure"], a),
                -p["eta"] * ops.laplacian(vel[a]),
                -(p["zeta"] + p["eta"] / 3.0) * ops.d(divergence, a),
            )

        return SubEquation(f"momentum_{'xyz'[a]}", rate=lambda f, p, ops: f["density"] * f[VELOCITY[a]], flux=flux)

    def energy_rate(f, p, ops):
        return 1.5 * f["pressure"] + kinetic(f)

    def energy_flux(f, p, ops):
        vel = velocities(f, dims)
        total = energy_rate(f, p, ops) + f["pressure"]
        convection = sum(ops.upwind_derivative(total * vel[b], vel[b], b) for b in range(dims))
        viscous = sum(ops.d(sum(vel[a] * viscous_stress(f, p, ops, a, b) for a in range(dims)), b) for b in range(dims))
        return convection, -viscous

    return PDE(
        name=f"compressible_ns_{dims}d",
        variables=("density", "pressure", *VELOCITY[:dims]),
        parameters=("eta", "zeta"),
        equations=(
            SubEquation(
                "mass",
                rate="density",
                flux=lambda f, p, ops: advection(ops, f["density"], velocities(f, dims)),
            ),
            *(momentum(a) for a in range(dims)),
            SubEquation("energy", rate=energy_rate, flux=energy_flux),
        ),
        description="compressible NS (PDEBench form, monatomic gas: internal energy 3/2 p)",
    )


for _dims in (1, 2, 3):
    register_pde(_compressible_ns(_dims))
