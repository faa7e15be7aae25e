"""Active matter in ``benchmarks/physics/replicas_report.py`` (reports/replicas.md): the kinetic solver's growth rates
against linear theory, how well the CPU grid resolves the distribution, and the trajectory's conservation, kinematic
relations and closure floors."""

from __future__ import annotations

import math
import time
from pathlib import Path

import matplotlib
import numpy as np
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from well_upao.families.replicas import active_matter
from well_upao.physics import active_matter as relations


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
    growth_figure(rows, k, figures)
    return lines + resolution_lines(quick)


def growth_figure(rows: list[tuple], k: float, figures: Path) -> None:
    """The shear mode's growth rate against alpha: theory and the solver, at zeta 0 and 1."""
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


def resolution_lines(quick: bool) -> list[str]:
    """How well the CPU grid resolves the distribution as zeta grows (``active_matter_resolution``)."""
    resolution = active_matter_resolution(quick)
    lines = [
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


def simulated_active_matter(family, scalars: dict, shape, times, initial: dict, started: float):
    """The family's simulation keeping psi: its stored fields, the seconds since ``started``, and the trajectory's
    total concentration drift, kinematic relations and closure floors (at its middle frame)."""
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
    totals = run["concentration"].sum((1, 2)) * grid.dx**2 / grid.length**2
    frames = relations.ActiveMatterFrames(
        *(torch.as_tensor(fields[k]).float().double() for k in ("concentration", "velocity", "D", "E")),
        (grid.dx, grid.dx),
    )
    extra = {
        "drift": float((totals - 1).abs().max()),
        "kinematics": relations.kinematic_residuals(frames),
        "floors": active_matter_floors(run, grid, scalars, len(times) // 2),
    }
    return fields, seconds, extra
