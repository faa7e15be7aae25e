"""reports/replicas.md: validation figures of the replica solvers and a frame of every field of every replica.

    python benchmarks/physics/replicas_report.py [--out reports] [--quick]

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
import sys
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
from well_upao.physics.floor import relative_residuals
from well_upao.physics.pdes import get_pde

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.tables import table

from physics.replicas_active_matter import (
    active_matter_section,
    active_matter_trajectory_lines,
    simulated_active_matter,
)

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
        fields, seconds, extra = simulated_active_matter(family, scalars, shape, times, initial, started)
        shape = shape[:2]
    else:
        fields = family.simulate(scalars, initial, shape, times)
        seconds = time.perf_counter() - started
    extra["checks"] = data_checks(family, fields)
    observed = observed_frames(name, fields, scalars, shape, times)
    pde = get_pde(name)
    floors = {d: relative_residuals(observed, pde, d) for d in ("spectral", "fd")}
    return fields, scalars, seconds, floors, extra


def data_checks(family, fields: dict) -> dict[str, dict[str, int]]:
    """Per field, how many frames the checks of the Well's ``scripts/check_thewell_data.py`` flag, as stored."""
    checks = {}
    for spec in family.fields:
        value = np.asarray(fields[spec.name], dtype=np.float32)  # as stored
        found = check_trajectory(value.reshape(value.shape[0], -1, 2**spec.order))
        checks[spec.name] = {k: len(v) for k, v in found.items()}
    return checks


def observed_frames(name: str, fields: dict, scalars: dict, shape, times) -> ObservedFrames:
    """The trajectory's frames after the first (whose stored pressure is zero, as the Well's) in slots."""
    from well_upao.data.datasets import DATASET_SLOTS

    family, slots = REPLICAS[name], DATASET_SLOTS[name]
    slotted = {}
    for spec in family.fields:
        value = torch.as_tensor(fields[spec.name])[None, 1:]  # the first frame's pressure is zero, as the Well's
        if spec.order == 0:
            slotted[slots[spec.name]] = value
        elif spec.order == 1:
            for i, axis in enumerate("xy"):
                slotted[slots[f"{spec.name}_{axis}"]] = value[..., i]
    axes = family.axes(shape)
    return ObservedFrames(
        name,
        slotted,
        {k: torch.tensor([v]) for k, v in scalars.items()},
        tuple(float(a[1] - a[0]) for a in axes),
        tuple(t == "PERIODIC" for t in family.boundary_types),
        times[1:],
    )


def solver_section(quick: bool, figures: Path) -> list[str]:
    """The solvers against finer steps (the convergence figure), the Rayleigh-Benard onset and the residual at
    increasing vertical resolution."""
    orders = time_orders(quick)
    rows = []
    figure, axis = plt.subplots(figsize=(5.5, 4))
    for name, (steps, errors, order) in orders.items():
        observed = math.log(errors[-2] / errors[-1]) / math.log(steps[-2] / steps[-1])
        rows.append([name, ", ".join(f"{h:.3g}" for h in steps), ", ".join(f"{e:.2e}" for e in errors)])
        rows[-1] += [f"{observed:.2f}", order]
        axis.loglog(steps, errors, "o-", label=f"{name}: {observed:.2f}")
        axis.loglog(steps, [errors[-1] * (h / steps[-1]) ** order for h in steps], "k:", linewidth=0.8)
    axis.set_xlabel("time step")
    axis.set_ylabel("max error vs reference")
    save_figure(figure, axis, figures / "time_convergence.png", legend=True, which="both")
    columns = ["solver", "steps", "max error vs 16x finer step", "observed order (last pair)", "scheme order"]
    lines = ["## Solver validation", "", *table(columns, rows)]
    ratios, rates = onset_growth(quick)
    figure, axis = plt.subplots(figsize=(5.5, 3.5))
    axis.plot(ratios, rates, "o-")
    axis.axhline(0, color="k", linewidth=0.8)
    axis.axvline(1, color="k", linestyle=":", linewidth=0.8)
    axis.set_xlabel("Ra / 1707.76")
    axis.set_ylabel("growth rate of the k = 3.117 roll")
    save_figure(figure, axis, figures / "onset.png")
    pairs = zip(ratios, ratios[1:], rates, rates[1:], strict=False)
    crossing = next((r0 - g0 * (r1 - r0) / (g1 - g0) for r0, r1, g0, g1 in pairs if g0 < 0 <= g1), float("nan"))
    lines += [
        "",
        "![time convergence](figures/replicas/time_convergence.png)",
        "",
        f"Rayleigh-Bénard onset between rigid walls (Pr = 1, k = 3.117): the growth rate changes sign at "
        f"Ra = {crossing * 1707.76:.1f} ({100 * (crossing - 1):+.2f}% from linear theory's 1707.76).",
        "",
        *table(["Ra / Ra_c", *(f"{r:g}" for r in ratios)], [["growth rate", *(f"{g:.2e}" for g in rates)]]),
        "",
        "![onset](figures/replicas/onset.png)",
        "",
    ]
    floors = resolution_floors(quick)
    names = sorted(next(iter(floors.values())))
    rows = [[n_z, *(f"{values[k]:.2e}" for k in names)] for n_z, values in floors.items()]
    return [*lines, resolution_sentence(floors), "", *table(["stored z points", *names], rows)]


def save_figure(figure, axis, path: Path, legend: bool = False, which: str = "major", dpi: int = 110) -> None:
    """A report figure: grid (and legend), tight layout, saved to ``path`` and closed."""
    if legend:
        axis.legend(fontsize=7)
    axis.grid(True, which=which, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)


def field_pictures(name: str, fields: dict, frame: int, figures: Path) -> None:
    """Every stored field of a replica's trajectory at ``frame`` (vectors and tensors by component), one figure."""
    family, first = REPLICAS[name], next(iter(fields.values()))
    pictures = []
    for spec in family.fields:
        value = np.asarray(fields[spec.name][frame])
        if spec.order == 0:
            pictures.append((spec.name, value))
        elif spec.order == 1:
            pictures += [(f"{spec.name}_{axis}", value[..., i]) for i, axis in enumerate("xy")]
        else:  # symmetric tensors: xx, xy, yy
            components = ((0, 0, "x", "x"), (0, 1, "x", "y"), (1, 1, "y", "y"))
            pictures += [(f"{spec.name}_{a}{b}", value[..., i, j]) for i, j, a, b in components]
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


def replica_row(name: str, fields: dict, scalars: dict, seconds: float, floor: dict, extra: dict) -> list:
    """A replica's row: its parameters, grid and frames, seconds, the data checks' counts and the residuals."""
    family, first = REPLICAS[name], next(iter(fields.values()))
    grid_text = "x".join(map(str, first.shape[1:3])) + f" x {first.shape[0]}"
    if name == "active_matter":
        grid_text = grid_text.replace(" x ", f"x{family.check_shape(first.shape[1:3])[2]} x ", 1)
    cells = [", ".join(f"{k} {v:.1e}" for k, v in floor[d].items()) for d in ("spectral", "fd")]
    counts = {k: sum(c[k] for c in extra["checks"].values()) for k in ("constant", "nan", "close", "outliers")}
    checks = f"{counts['constant']}, {counts['nan']} / {counts['close']}, {counts['outliers']}"
    return [name, family.file_stem(scalars).removeprefix(name + "_"), grid_text, f"{seconds:.1f}", checks, *cells]


def replicas_section(quick: bool, figures: Path) -> list[str]:
    """One trajectory of each replica at its CPU size: the table, the active-matter relations and the pictures."""
    rows, pictures_md, extras = [], [], {}
    for name in SHOWN:
        fields, scalars, seconds, floor, extra = replica_trajectory(name, quick)
        extras[name] = extra
        rows.append(replica_row(name, fields, scalars, seconds, floor, extra))
        frames = next(iter(fields.values())).shape[0]
        field_pictures(name, fields, SHOWN[name][1] if SHOWN[name][1] < frames else -1, figures)
        pictures_md += [f"![{name}](figures/replicas/{name}.png)", ""]
    columns = ["dataset", "parameters", "grid x frames", "s / trajectory"]
    columns += ["data checks: constant, NaN / close, outlier", "residual, spectral", "residual, finite differences"]
    return [
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
        *table(columns, rows),
        "",
        *active_matter_trajectory_lines(extras["active_matter"]),
        "",
        *pictures_md,
    ]


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
        f"Command: `python benchmarks/physics/replicas_report.py{' --quick' if args.quick else ''}` "
        "(one torch thread).",
        "",
        *solver_section(args.quick, figures),
        *active_matter_section(args.quick, figures),
        *replicas_section(args.quick, figures),
    ]
    (args.out / "replicas.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'replicas.md'}")


if __name__ == "__main__":
    main()
