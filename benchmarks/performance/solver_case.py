"""One timing of the solver row's step (``PDESolver.step``), run by ``solver_speed.py`` in a child process whose
``PYTHONPATH`` puts one version of the package first: prints ``{case: {"seconds", "substeps", "checksum"}}`` as JSON.

Each case is a PDE of the solver table on a periodic 64^2 grid, 2 samples of a smooth random state (Fourier modes
damped as ``exp(-|k|^2 / 8)``, fixed seeds) advanced by one step ``dt``; ``seconds`` is the least of ``repeats``
calls after one warm-up (the first builds the de-aliasing grid's solver), one thread."""

from __future__ import annotations

import json
import sys
import time

import torch

from well_upao.physics import get_pde
from well_upao.physics.stencils import Grid
from well_upao.predict.solver import PDESolver

#: (PDE, its parameters, dt): the two replicas whose evaluate the solver row dominates (reports/solver_dealias.md)
CASES = {
    "shear_flow": ({"Reynolds": 1e4, "Schmidt": 1.0}, 0.1),
    "gray_scott_reaction_diffusion": ({"F": 0.04, "k": 0.06}, 1.0),
}


def smooth_state(names: list[str], n: int, batch: int = 2) -> dict[str, torch.Tensor]:
    out = {}
    k = torch.fft.fftfreq(n, dtype=torch.float64) * n
    damping = torch.exp(-(k[:, None] ** 2 + k[None] ** 2) / 8)
    for seed, name in enumerate(names):
        generator = torch.Generator().manual_seed(seed)
        spectrum = torch.randn(batch, n, n, generator=generator, dtype=torch.complex128) * damping
        out[name] = torch.fft.ifft2(spectrum).real * 10
    return out


def main(repeats: int) -> None:
    torch.set_num_threads(1)
    results = {}
    for name, (parameters, dt) in CASES.items():
        pde = get_pde(name)
        n = 64
        solver = PDESolver(pde, Grid((1.0 / n, 1.0 / n), (True, True)))
        state = smooth_state(list(pde.variables), n)
        params = {k: torch.tensor([float(v)]) for k, v in {**pde.constants, **parameters}.items()}
        step = torch.full((2,), dt, dtype=torch.float64)
        new, substeps = solver.step(state, params, step)  # warm-up
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            solver.step(state, params, step)
            best = min(best, time.perf_counter() - start)
        checksum = float(sum(v.double().abs().sum() for v in new.values()))
        results[name] = {"seconds": best, "substeps": substeps, "checksum": checksum}
    print(json.dumps(results))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
