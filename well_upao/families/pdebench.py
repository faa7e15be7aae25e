"""Convert the six PDEBench subsets of the paper's pretraining set into The Well's format.

Supported layouts (PDEBench's released HDF5 files):

============  ===============================================  ==========================================
layout        file                                             content
============  ===============================================  ==========================================
``cfd``       ``{1,2,3}D_CFD_*_Eta<eta>_Zeta<zeta>_*.hdf5``    datasets ``density, pressure, Vx[, Vy, Vz]``
                                                               ``(N, T, *X)``, ``x/y/z-coordinate``,
                                                               ``t-coordinate``; periodic
``swe``       ``2D_rdb_NA_NA.h5``                              groups ``0000, 0001, ...`` with ``data``
                                                               ``(T, X, Y, 1)`` (water height) and
                                                               ``grid/{x, y, t}``; open borders
``diff_react``  ``2D_diff-react_NA_NA.h5``                     groups ``0000, ...`` with ``data``
                                                               ``(T, X, Y, 2)`` (u, v) and ``grid/...``;
                                                               no-flux walls
``ns_incom``  ``ns_incom_inhom_2d_512-*.h5``                   ``velocity (N, T, X, Y, 2)``,
                                                               ``force (N, X, Y, 2)``, ``t (N, T)``;
                                                               periodic unit square
============  ===============================================  ==========================================

Each becomes the dataset of the matching pretraining family (same fields and slots as our simulated corpus):
``compressible_ns_{d}d``, ``shallow_water_2d`` (height only: PDEBench stores no velocity),
``diffusion_reaction_2d`` and ``incompressible_ns_forced_2d`` (the force's curl, ``d_x f_y - d_y f_x``, is the
vorticity forcing stored as ``forcing``; the passive particles are dropped). ``--downsample`` keeps every k-th
point per axis and ``--max-steps`` the first time steps (the paper: 2D CFD at 128^2, 21 steps).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import h5py
import numpy as np

from well_upao.axes import uniform_step
from well_upao.families.base import FieldSpec, TrajectoryFamily, TrajectoryParameters

LAYOUTS = ("cfd", "swe", "diff_react", "ns_incom")


class PDEBenchError(ValueError):
    """A file that does not have the expected PDEBench layout."""


def detect_layout(path: Path) -> str:
    with h5py.File(path, "r") as f:
        keys = set(f.keys())
    if {"density", "pressure", "Vx"} <= keys:
        return "cfd"
    if {"velocity", "force"} <= keys:
        return "ns_incom"
    first = sorted(keys)[0] if keys else ""
    if first.isdigit():
        with h5py.File(path, "r") as f:
            channels = f[first]["data"].shape[-1]
        return "diff_react" if channels == 2 else "swe"
    raise PDEBenchError(f"{path}: not a PDEBench layout we support ({', '.join(LAYOUTS)}); keys {sorted(keys)[:6]}")


class PDEBenchSource(TrajectoryFamily):
    """One PDEBench file seen as a trajectory family: trajectory ``i`` is the file's sample ``i``."""

    kind = "converted"
    streams_in_time = False
    mode_columns = ("source_index",)

    def __init__(self, path: str | Path, downsample: int = 1, max_steps: int | None = None, viscosity: float = 0.01):
        self.path = Path(path)
        if not self.path.is_file():
            raise PDEBenchError(f"{self.path}: no such file")
        self.layout = detect_layout(self.path)
        self.downsample = int(downsample)
        self.viscosity = float(viscosity)
        with h5py.File(self.path, "r") as f:
            self._read_metadata(f)
        self.max_steps = self.n_source_steps if max_steps is None else min(int(max_steps), self.n_source_steps)
        self.default_n_steps = self.max_steps
        self.default_resolution = len(self.axes[0])
        self.default_n_traj = self.n_samples
        self.domain_length = float(self.axes[0][-1] - self.axes[0][0] + (self.axes[0][1] - self.axes[0][0]))

    # ------------------------------------------------------------------ metadata per layout
    def _read_metadata(self, f: h5py.File) -> None:
        k = self.downsample
        if self.layout == "cfd":
            dims = sum(name in f for name in ("Vx", "Vy", "Vz"))
            self.n_spatial_dims = dims
            self.name = f"compressible_ns_{dims}d"
            self.fields = (FieldSpec("density", 0), FieldSpec("pressure", 0), FieldSpec("velocity", 1))
            self.scalar_names = ("eta", "zeta")
            self.n_samples, self.n_source_steps = f["density"].shape[:2]
            self.axes = tuple(np.asarray(f[f"{a}-coordinate"])[::k] for a in "xyz"[:dims])
            times = np.asarray(f["t-coordinate"])[: self.n_source_steps]
            self.parameters = self._eta_zeta(self.path.name)
            self.equation, self._boundary = "compressible Navier-Stokes (PDEBench CFD)", ("PERIODIC",) * dims
        elif self.layout in ("swe", "diff_react"):
            self.samples = sorted(k_ for k_ in f.keys() if k_.isdigit())
            first = f[self.samples[0]]
            self.n_spatial_dims = 2
            self.n_samples, self.n_source_steps = len(self.samples), first["data"].shape[0]
            self.axes = (np.asarray(first["grid"]["x"])[::k], np.asarray(first["grid"]["y"])[::k])
            times = np.asarray(first["grid"]["t"])[: self.n_source_steps]
            if self.layout == "swe":
                self.name, self.fields = "shallow_water_2d", (FieldSpec("height", 0),)
                self.scalar_names, self.parameters = ("g",), {"g": 1.0}
                self.equation, self._boundary = "shallow water, radial dam break (PDEBench)", ("OPEN", "OPEN")
            else:
                self.name, self.fields = "diffusion_reaction_2d", (FieldSpec("u", 0), FieldSpec("v", 0))
                self.scalar_names = ("D_u", "D_v", "k")
                self.parameters = {"D_u": 1e-3, "D_v": 5e-3, "k": 5e-3}
                self.equation, self._boundary = "FitzHugh-Nagumo diffusion-reaction (PDEBench)", ("WALL", "WALL")
        else:  # ns_incom
            self.n_spatial_dims = 2
            self.name = "incompressible_ns_forced_2d"
            self.fields = (FieldSpec("forcing", 0), FieldSpec("velocity", 1))
            self.scalar_names, self.parameters = ("nu",), {"nu": self.viscosity}
            self.n_samples, self.n_source_steps = f["velocity"].shape[:2]
            n = f["velocity"].shape[2]
            self.axes = tuple((np.arange(n) + 0.5)[::k] / n for _ in range(2))
            times = np.asarray(f["t"][0])[: self.n_source_steps]
            self.equation, self._boundary = "incompressible NS with forcing (PDEBench)", ("PERIODIC", "PERIODIC")
        if len({len(a) for a in self.axes}) != 1:
            raise PDEBenchError(f"{self.path}: only isotropic grids are supported, got {[len(a) for a in self.axes]}")
        # the step of the whole stored axis, checked at its stored precision (well_upao.axes)
        self.default_dt = uniform_step(times, times.dtype, "time", str(self.path)) if len(times) > 1 else 1.0

    @staticmethod
    def _eta_zeta(filename: str) -> dict[str, float]:
        values = {}
        for key in ("Eta", "Zeta"):
            match = re.search(rf"{key}([0-9.eE+-]+?)(?:_|\.h)", filename)
            if match is None:
                raise PDEBenchError(f"{filename}: cannot read {key} from the file name (PDEBench CFD naming)")
            values[key.lower()] = float(match.group(1).rstrip("."))
        return values

    @property
    def boundary_types(self) -> tuple[str, ...]:
        return self._boundary

    def grid_axes(self, resolution: int) -> tuple[np.ndarray, ...]:
        if resolution != len(self.axes[0]):
            raise PDEBenchError(f"conversion keeps the source grid ({len(self.axes[0])} points); use --downsample")
        return self.axes

    def sample_parameters(self, rng, index):
        return TrajectoryParameters(dict(self.parameters), {"source_index": np.array([float(index)])})

    # ------------------------------------------------------------------ fields
    def evaluate(self, params, axes, times, dtype=np.float64):
        index, steps, k = int(params.modes["source_index"][0]), len(times), self.downsample
        space = (slice(None, None, k),) * self.n_spatial_dims
        with h5py.File(self.path, "r") as f:
            if self.layout == "cfd":
                components = [
                    np.asarray(f[v][(index, slice(0, steps), *space)])
                    for v in ("Vx", "Vy", "Vz")[: self.n_spatial_dims]
                ]
                out = {
                    "density": np.asarray(f["density"][(index, slice(0, steps), *space)]),
                    "pressure": np.asarray(f["pressure"][(index, slice(0, steps), *space)]),
                    "velocity": np.stack(components, -1),
                }
            elif self.layout in ("swe", "diff_react"):
                data = np.asarray(f[self.samples[index]]["data"][(slice(0, steps), *space)])
                out = {"height": data[..., 0]} if self.layout == "swe" else {"u": data[..., 0], "v": data[..., 1]}
            else:
                velocity = np.asarray(f["velocity"][index, :steps])
                force = np.asarray(f["force"][index])
                curl = self._curl(force)
                out = {
                    "velocity": velocity[:, ::k, ::k],
                    "forcing": np.broadcast_to(curl[::k, ::k], (steps, *curl[::k, ::k].shape)).copy(),
                }
        return {name: value.astype(dtype) for name, value in out.items()}

    @staticmethod
    def _curl(force: np.ndarray) -> np.ndarray:
        """``d_x f_y - d_y f_x`` of a periodic force on the unit square (spectral)."""
        n = force.shape[0]
        wave = np.fft.fftfreq(n, d=1.0 / n) * 2 * math.pi
        kx, ky = np.meshgrid(wave, wave, indexing="ij")
        fx, fy = np.fft.fft2(force[..., 0]), np.fft.fft2(force[..., 1])
        return np.real(np.fft.ifft2(1j * kx * fy - 1j * ky * fx))


class CombinedSource(TrajectoryFamily):
    """Several PDEBench files of one family (e.g. the three 1D CFD viscosity configurations) as one dataset."""

    kind = "converted"
    streams_in_time = False
    mode_columns = ("source_index",)

    def __init__(self, sources: list[PDEBenchSource]):
        first = sources[0]
        for other in sources[1:]:
            if (other.name, other.default_resolution) != (first.name, first.default_resolution):
                raise PDEBenchError(f"{other.path} ({other.name}) cannot join {first.path} ({first.name})")
        self.sources = sources
        self.offsets = np.cumsum([0] + [s.n_samples for s in sources])
        for attribute in (
            "name",
            "equation",
            "n_spatial_dims",
            "fields",
            "scalar_names",
            "default_resolution",
            "default_dt",
            "domain_length",
        ):
            setattr(self, attribute, getattr(first, attribute))
        self.default_n_steps = min(s.default_n_steps for s in sources)
        self.default_n_traj = int(self.offsets[-1])

    @property
    def boundary_types(self):
        return self.sources[0].boundary_types

    def grid_axes(self, resolution):
        return self.sources[0].grid_axes(resolution)

    def _locate(self, index: int) -> tuple[PDEBenchSource, int]:
        file_index = int(np.searchsorted(self.offsets, index, side="right") - 1)
        return self.sources[file_index], index - int(self.offsets[file_index])

    def sample_parameters(self, rng, index):
        source, local = self._locate(index)
        params = source.sample_parameters(rng, local)
        params.modes["source_index"] = np.array([float(index)])
        return params

    def evaluate(self, params, axes, times, dtype=np.float64):
        source, local = self._locate(int(params.modes["source_index"][0]))
        return source.evaluate(
            TrajectoryParameters(params.scalars, {"source_index": np.array([float(local)])}), axes, times, dtype
        )


def open_sources(paths: list[Path], downsample: int = 1, max_steps: int | None = None, viscosity: float = 0.01):
    """One family per dataset name from a list of PDEBench files."""
    by_name: dict[str, list[PDEBenchSource]] = {}
    for path in paths:
        source = PDEBenchSource(path, downsample, max_steps, viscosity)
        by_name.setdefault(source.name, []).append(source)
    return {name: items[0] if len(items) == 1 else CombinedSource(items) for name, items in by_name.items()}
