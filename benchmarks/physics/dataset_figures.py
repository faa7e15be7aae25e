"""A figure per exact-solution dataset for the documentation's dataset pages (issue 54): the first training
trajectory's first field at three times, read back from the Well-format files ``generate-exact`` writes.

Each set is generated small (2D at 64^2, 1D at 256 points, 3D at 32^3, the default frames and dt, 10 trajectories)
into a temporary folder and read with h5py as any user would; 1D sets are drawn as a space-time image, 3D sets as the
mid-plane in z. The replicas' figures are ``reports/figures/replicas/`` (``benchmarks/physics/replicas_report.py``).

    python benchmarks/physics/dataset_figures.py                       # writes docs/datasets/figures/<pde>.png
    python benchmarks/physics/dataset_figures.py --pdes wave2d --out /tmp/figures
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from well_upao.data.generate import GenerationRequest, generate_dataset

ROOT = Path(__file__).resolve().parents[2]
EXACT = ("tg2d", "wave2d", "advdiff2d", "burgers2d", "burgers1d", "adv1d", "adv3d")
RESOLUTION = {1: 256, 2: 64, 3: 32}
DIMENSION = {"tg2d": 2, "wave2d": 2, "advdiff2d": 2, "burgers2d": 2, "burgers1d": 1, "adv1d": 1, "adv3d": 3}


def first_field(path: Path) -> tuple[str, np.ndarray, np.ndarray]:
    """The first time-varying field of the first trajectory in ``path`` (its first component for a vector), as
    ``(name, frames (T, *space), time (T,))``."""
    with h5py.File(path, "r") as f:
        time = np.asarray(f["dimensions"]["time"][...], dtype=np.float64).reshape(-1)
        for group, order in (("t0_fields", 0), ("t1_fields", 1)):
            names = sorted(f[group].keys()) if group in f else []
            if names:
                data = np.asarray(f[group][names[0]][0], dtype=np.float64)
                label = names[0] if order == 0 else f"{names[0]} (x component)"
                return label, (data[..., 0] if order == 1 else data), time
    raise ValueError(f"{path}: no time-varying field")


def figure(pde: str, base: Path, out: Path) -> Path:
    files = sorted((base / pde / "data" / "train").glob("*.hdf5"))
    name, frames, time = first_field(files[0])
    dim = frames.ndim - 1
    if dim == 1:
        fig, ax = plt.subplots(figsize=(5.5, 3.2))
        image = ax.imshow(frames, aspect="auto", origin="lower", cmap="RdBu_r",
                          extent=(0, 2 * np.pi, time[0], time[-1]))  # fmt: skip
        ax.set(xlabel="x", ylabel="t", title=f"{pde}: {name}")
        fig.colorbar(image, ax=ax)
    else:
        picks = [0, len(time) // 2, len(time) - 1]
        fig, axes = plt.subplots(1, 3, figsize=(9, 3.2))
        low, high = np.percentile(frames, [1, 99])
        for ax, k in zip(axes, picks, strict=True):
            frame = frames[k] if dim == 2 else frames[k][:, :, frames.shape[-1] // 2]
            image = ax.imshow(frame.T, origin="lower", cmap="RdBu_r", vmin=low, vmax=high)
            ax.set(title=f"t = {time[k]:.2f}", xticks=[], yticks=[])
        fig.suptitle(f"{pde}: {name}" + (" (mid-plane in z)" if dim == 3 else ""))
        fig.colorbar(image, ax=list(axes))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{pde}.png"
    partial = path.with_suffix(".partial.png")
    fig.savefig(partial, dpi=90, bbox_inches="tight")
    plt.close(fig)
    partial.replace(path)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdes", nargs="+", default=list(EXACT), choices=EXACT)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "datasets" / "figures")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        for pde in args.pdes:
            request = GenerationRequest(pde=pde, out=Path(scratch), n_traj=10, resolution=RESOLUTION[DIMENSION[pde]])
            generate_dataset(request, progress=False)
            print(f"wrote {figure(pde, Path(scratch), args.out)}", flush=True)


if __name__ == "__main__":
    main()
