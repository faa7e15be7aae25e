"""reports/replicas.md: validation figures of the replica solvers and a frame of every field of every replica.

    python benchmarks/replicas_report.py [--out reports] [--quick]

1. Convergence in time of each solver against a run with a 16x smaller step (observed orders beside the schemes':
   ETDRK4 4, SBDF2 2), the Rayleigh-Bénard growth rate of a roll at k_c = 3.117 across Ra_c = 1707.76, and the
   residual of our PDE entry on developed convection as the stored vertical grid is refined.
2. Active matter: growth rates of plane waves about the isotropic state against the linearised kinetic theory
   (``linear_growth_rates``), conservation, the relations its files determine and the floors closures of the
   fourth moment leave, and how well the CPU grid resolves the distribution as the alignment zeta grows.
3. One trajectory of each replica at its CPU size (``well-upao generate-replica`` defaults), with the time it took,
   the Well's data checks on it, the relative residual of our registry's equations between the Well's frames
   (spectral / finite differences, Crank-Nicolson), and a picture of each field at one frame.

``--quick`` shrinks everything (a smoke test of the script, not a report).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import matplotlib
import numpy as np
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from well_upao.data.data_checks import check_trajectory
from well_upao.data.source import ObservedFrames
from well_upao.families.replicas import active_matter, gray_scott, rayleigh_benard, shear_flow
from well_upao.families.replicas.families import REPLICAS
from well_upao.physics import active_matter as relations
from well_upao.physics.floor import relative_residuals
from well_upao.physics.pdes import get_pde

#: (dataset, parameter set index, frame shown)
SHOWN = {
    "gray_scott_reaction_diffusion": (2, -1),
    "shear_flow": (1, 100),
    "rayleigh_benard": (0, 100),
    "active_matter": (2, 80),
}


def time_orders(quick: bool) -> dict[str, tuple[list[float], list[float], int]]:
    """``name -> (steps, errors, scheme order)`` against a reference with a 16x smaller step than the finest."""
    out = {}
    grid = gray_scott.square_grid(32 if quick else 64)
    a0, b0 = (torch.as_tensor(v) for v in gray_scott.gaussian_cluster_state(np.random.default_rng(0), grid))
    times = np.array([0.0, 20.0])
    steps = [1.0, 0.5, 0.25, 0.125]
    reference = gray_scott.simulate_gray_scott(a0, b0, 0.029, 0.057, times, grid, step=steps[-1] / 16)[1][-1]

    def gray_scott_b(h: float) -> torch.Tensor:
        return gray_scott.simulate_gray_scott(a0, b0, 0.029, 0.057, times, grid, step=h)[1][-1]

    errors = [float((gray_scott_b(h) - reference).abs().max()) for h in steps]
    out["Gray-Scott (ETDRK4)"] = (steps, errors, 4)

    grid = shear_flow.shear_grid(32 if quick else 64)
    state = shear_flow.initial_state(grid, 2, 2, 1.0)
    times = np.array([0.0, 0.4])
    steps = [0.4 / n for n in (4, 8, 16, 32)]
    reference = shear_flow.simulate_shear_flow(state, 1e3, 1.0, times, grid, max_step=steps[-1] / 16)["tracer"][-1]
    errors = [
        float((shear_flow.simulate_shear_flow(state, 1e3, 1.0, times, grid, max_step=h)["tracer"][-1] - reference)
              .abs().max())
        for h in steps
    ]  # fmt: skip
    out["shear flow (ETDRK4)"] = (steps, errors, 4)

    channel = rayleigh_benard.ChannelGrid(16, 16)
    solver = rayleigh_benard.RayleighBenardSolver(channel, 1e5, 1.0)
    z, x = channel.z(), channel.x()
    roll = 0.1 * torch.sin(math.pi * z)[None, :] * torch.cos(2 * math.pi * x / channel.length_x)[:, None]
    initial = {"psi": torch.zeros(9, 17, dtype=torch.complex128), "theta": solver.to_mixed(roll),
               "mean": torch.zeros(17, dtype=torch.float64)}  # fmt: skip
    times = np.linspace(0.0, 2.0, 9)  # frames 0.25 apart: the reference step stays under the blow-up guard's cap
    steps = [2 / n for n in (16, 32, 64, 128)]

    def buoyancy(h: float) -> torch.Tensor:
        run = rayleigh_benard.simulate_rayleigh_benard(channel, 1e5, 1.0, times, 17, state=initial, max_step=h)
        return run["buoyancy"][-1]

    reference = buoyancy(steps[-1] / 16)
    out["Rayleigh-Bénard (SBDF2)"] = (steps, [float((buoyancy(h) - reference).abs().max()) for h in steps], 2)

    kinetic = active_matter.KineticGrid(16 if quick else 32, 16 if quick else 32)
    psi0 = active_matter.initial_distribution(kinetic, 2)
    parameters = active_matter.ActiveMatterParameters(-3.0, 3.0)
    times = np.array([0.0, 0.5])
    steps = [0.5 / n for n in (16, 32, 64, 128)]

    def velocity(h: float) -> torch.Tensor:
        return active_matter.simulate_active_matter(kinetic, parameters, psi0, times, h)["velocity"][-1]

    reference = velocity(steps[-1] / 16)
    out["active matter (SBDF2)"] = (steps, [float((velocity(h) - reference).abs().max()) for h in steps], 2)
    return out


def active_matter_growth(quick: bool) -> list[tuple[float, float, int, float, float, float, float]]:
    """``(alpha, zeta, wavenumber index, shear measured, shear theory, splay measured, splay theory)``: a 1e-7
    plane wave in Q about the isotropic state on 12^2 x 12 points, growth between t = 0.25 and 0.5 (step 5e-4)."""
    cases = [(a, 0.0, 1) for a in ((-2.0, -0.5) if quick else (-3.0, -2.0, -1.5, -1.0, -0.75, -0.5, 0.0, 1.0))]
    cases += (
        [] if quick else [(a, 1.0, 1) for a in (-5.0, -3.0, -1.0, 1.0, 3.0, 5.0)] + [(-3.0, 5.0, 2), (-1.0, 17.0, 1)]
    )
    rows = []
    for alpha, zeta, index in cases:
        grid = active_matter.KineticGrid(12, 12)
        x = grid.x()
        xx, _, theta = torch.meshgrid(x, x, grid.theta(), indexing="ij")
        k = 2 * math.pi * index / grid.length
        psi0 = (1 + 1e-7 * torch.cos(k * xx) * (torch.sin(2 * theta) + torch.cos(2 * theta))) / (2 * math.pi)
        run = active_matter.simulate_active_matter(
            grid, active_matter.ActiveMatterParameters(alpha, zeta), psi0, np.array([0.0, 0.25, 0.5]), 5e-4
        )
        probe = torch.cos(k * x)[:, None]
        d = run["D"]
        rates = []
        for component in (d[..., 0, 1], (d[..., 0, 0] - d[..., 1, 1]) / 2):
            amplitudes = [float((component[i] * probe).sum()) for i in (1, 2)]
            rates.append(math.log(amplitudes[1] / amplitudes[0]) / 0.25)
        theory = active_matter.linear_growth_rates(k, alpha, zeta)
        rows.append((alpha, zeta, index, rates[0], theory["shear"], rates[1], theory["splay"]))
    return rows


def active_matter_resolution(quick: bool) -> list[tuple[float, float, float, float, float, float]]:
    """``(zeta, alpha, min psi / max psi, x tail, theta tail, seconds)`` of CPU-grid runs at t = 6 (the CPU default's
    sets and one at zeta = 3): the tails are the spectral energy of psi in the last kept shell over that of the mean
    (2/3 rule)."""
    n = 16 if quick else 64
    rows = []
    for zeta, alpha in ((1.0, -3.0),) if quick else ((1.0, -1.0), (1.0, -3.0), (1.0, -5.0), (3.0, -3.0)):
        grid = active_matter.KineticGrid(n, n)
        started = time.perf_counter()
        run = active_matter.simulate_active_matter(
            grid, active_matter.ActiveMatterParameters(alpha, zeta), active_matter.initial_distribution(grid, 3),
            np.array([0.0, 1.0 if quick else 6.0]), return_psi=True,
        )  # fmt: skip
        psi = run["psi"][-1]
        energy = torch.fft.rfftn(psi, dim=(0, 1, 2)).abs() ** 2
        index = torch.fft.fftfreq(n, 1 / n).abs()
        last = math.ceil(n / 3) - 1  # highest index the 2/3 rule keeps
        last_even = last - last % 2  # psi of rods (p and -p alike) has even theta modes only
        x_tail = float(energy[index == last].sum() / energy[0, 0, 0])
        theta_tail = float(energy[:, :, last_even].sum() / energy[0, 0, 0])
        rows.append((zeta, alpha, float(psi.min() / psi.max()), x_tail, theta_tail, time.perf_counter() - started))
    return rows


def fourth_moment(psi: torch.Tensor, grid: active_matter.KineticGrid, c: torch.Tensor, d: torch.Tensor):
    """``S`` of ``psi (..., n, n, n_theta)`` from its fourth theta mode."""
    mode = torch.fft.rfft(psi, dim=-1)[..., 4] * grid.dtheta  # sum psi e^{-4 i theta} dtheta
    return relations.fourth_moment_from_modes(c, d, mode.real, -mode.imag)


def active_matter_floors(run: dict, grid: active_matter.KineticGrid, scalars: dict, frame: int) -> dict:
    """Relations 5 and 6 of ``well_upao.physics.active_matter`` at a developed state: between three frames 0.01
    apart restarted from ``frame`` of ``run`` (Crank-Nicolson), with the exact S and the two closures."""
    parameters = active_matter.ActiveMatterParameters(scalars["alpha"], scalars["zeta"])
    close = active_matter.simulate_active_matter(
        grid, parameters, run["psi"][frame], np.arange(3) * 0.01, return_psi=True
    )
    frames = relations.ActiveMatterFrames(
        close["concentration"], close["velocity"], close["D"], close["E"], (grid.dx, grid.dx)
    )
    exact = fourth_moment(close["psi"], grid, close["concentration"], close["D"])
    out = {}
    for closure in relations.CLOSURES:
        s = exact if closure == "exact" else None
        out[closure] = (
            relations.orientation_residual(frames, 0.01, scalars["zeta"], closure, s),
            relations.stokes_residual(frames, scalars["alpha"], scalars["zeta"], closure, s),
        )
    return out


def onset_growth(quick: bool) -> tuple[list[float], list[float]]:
    """Growth rate of a small roll at k_c against Ra / Ra_c (rigid walls, Pr = 1)."""
    k_c, critical = 3.117, 1707.76
    ratios = [0.96, 0.98, 1.02, 1.04] if quick else [0.9, 0.95, 0.98, 0.99, 1.01, 1.02, 1.05, 1.1]
    rates = []
    for ratio in ratios:
        channel = rayleigh_benard.ChannelGrid(8, 24, length_x=2 * math.pi / k_c)
        solver = rayleigh_benard.RayleighBenardSolver(channel, critical * ratio, 1.0)
        roll = 1e-6 * torch.sin(math.pi * channel.z())[None, :] * torch.cos(k_c * channel.x())[:, None]
        state = {"psi": torch.zeros(5, 25, dtype=torch.complex128), "theta": solver.to_mixed(roll),
                 "mean": torch.zeros(25, dtype=torch.float64)}  # fmt: skip
        run = rayleigh_benard.simulate_rayleigh_benard(
            channel, critical * ratio, 1.0, np.array([0.0, 150.0, 300.0]), 25, state=state, max_step=0.1
        )
        energy = (run["u_x"] ** 2 + run["u_z"] ** 2).mean(dim=(1, 2))
        rates.append(float(torch.log(energy[2] / energy[1]) / (2 * 150.0)))  # energy grows at twice the rate
    return ratios, rates


def resolution_floors(quick: bool) -> dict[int, dict[str, float]]:
    """Our entry's residual on convection at t = 12 (Ra 1e6) for stored vertical grids of 33, 65, 129 points."""
    floors = {}
    for n_z in (33, 65) if quick else (33, 65, 129):
        run = rayleigh_benard.simulate_rayleigh_benard(
            rayleigh_benard.ChannelGrid(128, 32), 1e6, 1.0, np.array([0.0, 12.0, 12.01]), n_z
        )
        fields = {"buoyancy": run["buoyancy"], "pressure": run["pressure"], "Vx": run["u_x"], "Vy": run["u_z"]}
        observed = ObservedFrames(
            "rayleigh_benard",
            {k: v[1:][None] for k, v in fields.items()},
            {"Rayleigh": torch.tensor([1e6]), "Prandtl": torch.tensor([1.0])},
            (4 / 128, 1 / (n_z - 1)),
            (True, False),
            np.array([12.0, 12.01]),
        )
        floors[n_z] = relative_residuals(observed, get_pde("rayleigh_benard"), "spectral")
    return floors


def resolution_sentence(floors: dict[int, dict[str, float]]) -> str:
    """What the resolution table shows: how much each sub-equation's residual falls from the coarsest to the finest
    stored grid, beside the factor of second-order differences alone, ((n_fine - 1) / (n_coarse - 1))^2."""
    coarse, fine = min(floors), max(floors)
    falls = {name: floors[coarse][name] / floors[fine][name] for name in floors[coarse]}
    second_order = ((fine - 1) / (coarse - 1)) ** 2
    each = ", ".join(f"{name} {fall:.1f}x" for name, fall in falls.items())
    return (
        "Our `rayleigh_benard` entry on developed convection (Ra 1e6, Pr 1, t = 12, frames 0.01 apart; spectral in x, "
        "second-order differences in z on the stored uniform grid): from "
        f"{coarse} to {fine} stored z points the relative residual falls by {min(falls.values()):.1f}x to "
        f"{max(falls.values()):.1f}x ({each}), less than the {second_order:.0f}x of second-order differences alone: "
        "the residual falls as the stored grid resolves the boundary layers, but not at the order of the z "
        "differences (this table does not separate what else it holds)."
    )


def replica_trajectory(name: str, quick: bool) -> tuple[dict, dict, float, dict, dict]:
    """One CPU-size trajectory: its fields, scalars, seconds, residual floors (spectral and fd) and, for active
    matter, its psi and the active-matter figures (conservation, kinematics, closure floors)."""
    family = REPLICAS[name]
    set_index, _ = SHOWN[name]
    scalars = family.parameter_sets(False)[set_index]
    size = family.cpu_size
    shape = tuple(max(16, n // 4) for n in size.shape) if quick else size.shape
    n_steps = 24 if quick else size.n_steps
    times = np.arange(n_steps) * family.frame_dt
    initial = family.initial_condition(np.random.default_rng(7))
    started = time.perf_counter()
    extra: dict = {}
    if name == "active_matter":  # the family's simulation, keeping psi for the fourth moment
        n, _, n_theta = family.check_shape(shape)
        grid = active_matter.KineticGrid(n, n_theta, scalars["L"])
        run = active_matter.simulate_active_matter(
            grid,
            active_matter.ActiveMatterParameters(scalars["alpha"], scalars["zeta"]),
            active_matter.initial_distribution(grid, int(initial["seed"])),
            times,
            return_psi=True,
        )
        fields = {spec.name: run[spec.name].numpy() for spec in family.fields}
        seconds = time.perf_counter() - started
        shape = shape[:2]
        totals = run["concentration"].sum((1, 2)) * grid.dx**2 / grid.length**2
        frames = relations.ActiveMatterFrames(
            *(torch.as_tensor(fields[k]).float().double() for k in ("concentration", "velocity", "D", "E")),
            (grid.dx, grid.dx),
        )
        extra = {
            "drift": float((totals - 1).abs().max()),
            "kinematics": relations.kinematic_residuals(frames),
            "floors": active_matter_floors(run, grid, scalars, n_steps // 2),
        }
    else:
        fields = family.simulate(scalars, initial, shape, times)
        seconds = time.perf_counter() - started
    checks = {}
    for spec in family.fields:
        value = np.asarray(fields[spec.name], dtype=np.float32)  # as stored
        found = check_trajectory(value.reshape(value.shape[0], -1, 2**spec.order))
        checks[spec.name] = {k: len(v) for k, v in found.items()}
    extra["checks"] = checks
    from well_upao.data.datasets import DATASET_SLOTS

    slots = DATASET_SLOTS[name]
    slotted = {}
    for spec in family.fields:
        value = torch.as_tensor(fields[spec.name])[None, 1:]  # the first frame's pressure is zero, as the Well's
        if spec.order == 0:
            slotted[slots[spec.name]] = value
        elif spec.order == 1:
            for i, axis in enumerate("xy"):
                slotted[slots[f"{spec.name}_{axis}"]] = value[..., i]
    axes = family.axes(shape)
    observed = ObservedFrames(
        name,
        slotted,
        {k: torch.tensor([v]) for k, v in scalars.items()},
        tuple(float(a[1] - a[0]) for a in axes),
        tuple(t == "PERIODIC" for t in family.boundary_types),
        times[1:],
    )
    pde = get_pde(name)
    floors = {d: relative_residuals(observed, pde, d) for d in ("spectral", "fd")}
    return fields, scalars, seconds, floors, extra


def active_matter_section(quick: bool, figures: Path) -> list[str]:
    """Growth rates against the linearised kinetic theory, and the CPU grid's resolution as zeta grows."""
    rows = active_matter_growth(quick)
    worst = max(max(abs(r[3] - r[4]), abs(r[5] - r[6])) / max(1.0, abs(r[4]), abs(r[6])) for r in rows)
    lines = [
        "",
        "## Active matter: the kinetic solver against linear theory",
        "",
        "A plane wave `e^{i k x}` of amplitude 1e-7 in the orientation tensor about the isotropic state grows at",
        "`lambda_shear = zeta - 4 d_R - d_T k^2 - (alpha - zeta beta / 2) / (4 + beta / 2)` (its Q_xy part) and",
        "`lambda_splay = zeta - 4 d_R - d_T k^2` (its Q_xx - Q_yy part), derived in",
        "`well_upao/families/replicas/active_matter.py` (d_T = d_R = 0.05, beta = 0.8). Measured on 12^2 x 12 points,",
        "step 5e-4, between t = 0.25 and t = 0.5; k = 2 pi m / 10.",
        "",
        "| alpha | zeta | m | shear, measured | shear, theory | splay, measured | splay, theory |",
        "|---|---|---|---|---|---|---|",
    ]
    for alpha, zeta, index, shear, shear_theory, splay, splay_theory in rows:
        lines.append(
            f"| {alpha:g} | {zeta:g} | {index} | {shear:.6f} | {shear_theory:.6f} | {splay:.6f} | {splay_theory:.6f} |"
        )
    k = 2 * math.pi / 10
    critical = -(4 * 0.05 + 0.05 * k * k) * 4.4
    lines += [
        "",
        f"Largest difference: {worst:.1e} (relative to the rate where it exceeds 1). Without alignment (zeta = 0)",
        f"the shear mode changes sign at alpha = -(4 d_R + d_T k^2)(4 + beta / 2) = {critical:.3f}: the rows at",
        "zeta = 0 straddle it.",
        "",
        "![growth rates](figures/replicas/active_matter_growth.png)",
    ]
    figure, axis = plt.subplots(figsize=(5.5, 3.8))
    for zeta, marker in ((0.0, "o"), (1.0, "s")):
        chosen = sorted((r for r in rows if r[1] == zeta and r[2] == 1), key=lambda r: r[0])
        if not chosen:
            continue
        alphas = np.linspace(chosen[0][0], chosen[-1][0], 50)
        theory = [active_matter.linear_growth_rates(k, a, zeta)["shear"] for a in alphas]
        axis.plot(alphas, theory, "-", linewidth=0.9, label=f"theory, zeta = {zeta:g}")
        axis.plot([r[0] for r in chosen], [r[3] for r in chosen], marker, fillstyle="none",
                  label=f"solver, zeta = {zeta:g}")  # fmt: skip
    axis.axhline(0, color="k", linewidth=0.8)
    axis.set_xlabel("alpha")
    axis.set_ylabel("growth rate of the shear mode (k = 2 pi / 10)")
    axis.legend(fontsize=7)
    axis.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(figures / "active_matter_growth.png", dpi=110)
    plt.close(figure)

    resolution = active_matter_resolution(quick)
    lines += [
        "",
        "How well the CPU grid resolves the distribution: alignment sharpens psi in theta as zeta grows. Runs from",
        "one replica initial condition on the CPU grid to t = 6; the tails are the spectral energy of psi",
        "in the last shell the 2/3 rule keeps (the last even mode along theta: the others vanish for rods), over that",
        "of its mean, along x and along theta; a negative psi is Gibbs",
        "oscillation of an unresolved distribution. The CPU default keeps zeta = 1; larger zeta need finer grids",
        "(`--resolution N N N_theta`, up to the Well's 256 with `--full`).",
        "",
        "| zeta | alpha | grid | min psi / max psi | x tail | theta tail | s |",
        "|---|---|---|---|---|---|---|",
    ]
    n = 16 if quick else 64
    for zeta, alpha, ratio, x_tail, theta_tail, seconds in resolution:
        lines.append(
            f"| {zeta:g} | {alpha:g} | {n}^2 x {n} | {ratio:.3f} | {x_tail:.1e} | {theta_tail:.1e} | {seconds:.0f} |"
        )
    return lines


def active_matter_trajectory_lines(extra: dict) -> list[str]:
    """Conservation, the kinematic relations and the closure floors of the active-matter trajectory above."""
    kinematics = extra["kinematics"]
    lines = [
        "Active matter, the trajectory above: the total concentration (float64, before storage) stays at L^2 to a",
        f"relative {extra['drift']:.1e}; on the stored float32 fields E = sym grad u holds to "
        f"{kinematics['strain']:.1e}, tr D = c to {kinematics['trace']:.1e}, div u = 0 to "
        f"{kinematics['incompressibility']:.1e} (relative, spectral derivatives). The orientation equation and the",
        "Stokes balance need the fourth moment S, which the files do not store (`well_upao.physics.active_matter`);",
        "their relative residuals at the middle of the trajectory, between three frames 0.01 apart (Crank-Nicolson),",
        "with the simulation's own S and with the two closures:",
        "",
        "| S | orientation equation | Stokes balance (curl form) |",
        "|---|---|---|",
    ]
    for closure, (orientation, stokes) in extra["floors"].items():
        label = {"exact": "exact (from psi)", "linear": "linear closure", "bingham": "Bingham closure"}[closure]
        lines.append(f"| {label} | {orientation:.2e} | {stokes:.2e} |")
    lines += [
        "",
        "With the exact S the orientation equation's residual is the grid's: the solver evolves its 2/3-filtered",
        "products, the relation is the unfiltered one (tests/physics/test_active_matter_relations.py shows the",
        "filtered one holding to 2e-4 on 16^2 points); the Stokes balance holds to the solver's tolerance.",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("reports"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    figures = args.out / "figures" / "replicas"
    figures.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Replicas of The Well's simulated datasets",
        "",
        f"Command: `python benchmarks/replicas_report.py{' --quick' if args.quick else ''}` (one torch thread).",
        "",
        "## Solver validation",
        "",
        "| solver | steps | max error vs 16x finer step | observed order (last pair) | scheme order |",
        "|---|---|---|---|---|",
    ]
    orders = time_orders(args.quick)
    figure, axis = plt.subplots(figsize=(5.5, 4))
    for name, (steps, errors, order) in orders.items():
        observed = math.log(errors[-2] / errors[-1]) / math.log(steps[-2] / steps[-1])
        lines.append(
            f"| {name} | {', '.join(f'{h:.3g}' for h in steps)} | {', '.join(f'{e:.2e}' for e in errors)} "
            f"| {observed:.2f} | {order} |"
        )
        axis.loglog(steps, errors, "o-", label=f"{name}: {observed:.2f}")
        axis.loglog(steps, [errors[-1] * (h / steps[-1]) ** order for h in steps], "k:", linewidth=0.8)
    axis.set_xlabel("time step")
    axis.set_ylabel("max error vs reference")
    axis.legend(fontsize=7)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(figures / "time_convergence.png", dpi=110)
    plt.close(figure)

    ratios, rates = onset_growth(args.quick)
    figure, axis = plt.subplots(figsize=(5.5, 3.5))
    axis.plot(ratios, rates, "o-")
    axis.axhline(0, color="k", linewidth=0.8)
    axis.axvline(1, color="k", linestyle=":", linewidth=0.8)
    axis.set_xlabel("Ra / 1707.76")
    axis.set_ylabel("growth rate of the k = 3.117 roll")
    axis.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(figures / "onset.png", dpi=110)
    plt.close(figure)
    crossing = next(
        (r0 - g0 * (r1 - r0) / (g1 - g0) for r0, r1, g0, g1 in zip(ratios, ratios[1:], rates, rates[1:], strict=False)
         if g0 < 0 <= g1),
        float("nan"),
    )  # fmt: skip
    lines += [
        "",
        "![time convergence](figures/replicas/time_convergence.png)",
        "",
        f"Rayleigh-Bénard onset between rigid walls (Pr = 1, k = 3.117): the growth rate changes sign at "
        f"Ra = {crossing * 1707.76:.1f} ({100 * (crossing - 1):+.2f}% from linear theory's 1707.76).",
        "",
        "| Ra / Ra_c | " + " | ".join(f"{r:g}" for r in ratios) + " |",
        "|---|" + "---|" * len(ratios),
        "| growth rate | " + " | ".join(f"{g:.2e}" for g in rates) + " |",
        "",
        "![onset](figures/replicas/onset.png)",
        "",
    ]
    floors = resolution_floors(args.quick)
    lines += [resolution_sentence(floors), ""]
    names = sorted(next(iter(floors.values())))
    lines.append("| stored z points | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for n_z, values in floors.items():
        lines.append(f"| {n_z} | " + " | ".join(f"{values[k]:.2e}" for k in names) + " |")

    lines += active_matter_section(args.quick, figures)
    lines += [
        "",
        "## The replicas at their CPU sizes",
        "",
        "One trajectory of each, from `well-upao generate-replica` defaults (initial condition from seed 7); the",
        "residual is our registry's entry between the Well's frames (Crank-Nicolson), over every frame pair after the",
        "first (whose stored pressure is zero, as in the Well's files). Data checks: frames that the checks of The",
        "Well's `scripts/check_thewell_data.py` (`well_upao.data.data_checks`) flag in the float32 fields, summed over",
        "fields (constant and NaN frames are the script's issues; frames close to the previous one and outlier frames",
        "it prints as notes; our near-constant frames, allclose to their first value, are not counted here: `well-upao",
        "validate` lists them).",
        "",
        "| dataset | parameters | grid x frames | s / trajectory | data checks: constant, NaN / close, outlier "
        "| residual, spectral | residual, finite differences |",
        "|---|---|---|---|---|---|---|",
    ]
    pictures_md = []
    extras = {}
    for name in SHOWN:
        fields, scalars, seconds, floor, extra = replica_trajectory(name, args.quick)
        extras[name] = extra
        family = REPLICAS[name]
        first = next(iter(fields.values()))
        grid_text = "x".join(map(str, first.shape[1:3])) + f" x {first.shape[0]}"
        if name == "active_matter":
            grid_text = grid_text.replace(" x ", f"x{family.check_shape(first.shape[1:3])[2]} x ", 1)
        cells = [", ".join(f"{k} {v:.1e}" for k, v in floor[d].items()) for d in ("spectral", "fd")]
        counts = {k: sum(c[k] for c in extra["checks"].values()) for k in ("constant", "nan", "close", "outliers")}
        checks = f"{counts['constant']}, {counts['nan']} / {counts['close']}, {counts['outliers']}"
        lines.append(
            f"| {name} | {family.file_stem(scalars).removeprefix(name + '_')} | {grid_text} | {seconds:.1f} "
            f"| {checks} | {cells[0]} | {cells[1]} |"
        )
        frame = SHOWN[name][1] if SHOWN[name][1] < first.shape[0] else -1
        pictures = []
        for spec in family.fields:
            value = np.asarray(fields[spec.name][frame])
            if spec.order == 0:
                pictures.append((spec.name, value))
            elif spec.order == 1:
                pictures += [(f"{spec.name}_{axis}", value[..., i]) for i, axis in enumerate("xy")]
            else:  # symmetric tensors: xx, xy, yy
                pictures += [(f"{spec.name}_{a}{b}", value[..., i, j]) for i, j, a, b in
                             ((0, 0, "x", "x"), (0, 1, "x", "y"), (1, 1, "y", "y"))]  # fmt: skip
        columns = min(len(pictures), 5)
        rows = math.ceil(len(pictures) / columns)
        figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 3.2 * rows), squeeze=False)
        for ax in axes.flat[len(pictures) :]:
            ax.axis("off")
        for ax, (label, value) in zip(axes.flat, pictures, strict=False):
            ax.imshow(value.T, origin="lower", cmap="RdBu_r", aspect="auto")
            ax.set_title(label, fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        figure.suptitle(f"{name}, t = {frame if frame >= 0 else first.shape[0] - 1} frames", fontsize=9)
        figure.tight_layout()
        figure.savefig(figures / f"{name}.png", dpi=90)
        plt.close(figure)
        pictures_md += [f"![{name}](figures/replicas/{name}.png)", ""]
    lines += ["", *active_matter_trajectory_lines(extras["active_matter"]), "", *pictures_md]
    (args.out / "replicas.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'replicas.md'}")


if __name__ == "__main__":
    main()
