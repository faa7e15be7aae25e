"""``well-upao convert-pdebench`` on small files written in PDEBench's four layouts."""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

from well_upao.cli import main
from well_upao.data.validate import validate_dataset
from well_upao.data.well_format import read_field
from well_upao.families.pdebench import PDEBenchSource


def write_cfd(path, dims, n=8, samples=3, steps=6, seed=0):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        for name in ("density", "pressure", "Vx", "Vy", "Vz")[: 2 + dims]:
            f.create_dataset(name, data=rng.random((samples, steps, *(n,) * dims)).astype(np.float32))
        for axis in "xyz"[:dims]:
            f.create_dataset(f"{axis}-coordinate", data=(np.arange(n) + 0.5) / n)
        f.create_dataset("t-coordinate", data=np.linspace(0, 0.05 * steps, steps + 1))


def write_grouped(path, channels, n=8, samples=3, steps=6):
    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        for i in range(samples):
            group = f.create_group(f"{i:04d}")
            group.create_dataset("data", data=rng.random((steps, n, n, channels)).astype(np.float32))
            grid = group.create_group("grid")
            grid.create_dataset("x", data=np.linspace(-1, 1, n))
            grid.create_dataset("y", data=np.linspace(-1, 1, n))
            grid.create_dataset("t", data=np.linspace(0, 1, steps))


def write_ns(path, n=16, samples=3, steps=5):
    x = (np.arange(n) + 0.5) / n
    _, Y = np.meshgrid(x, x, indexing="ij")
    force = np.stack([np.sin(2 * math.pi * Y), np.zeros_like(Y)], -1)  # curl = -2 pi cos(2 pi y)
    with h5py.File(path, "w") as f:
        f.create_dataset("velocity", data=np.random.default_rng(2).random((samples, steps, n, n, 2)).astype(np.float32))
        f.create_dataset("force", data=np.repeat(force[None], samples, 0).astype(np.float32))
        f.create_dataset("particles", data=np.zeros((samples, steps, n, n, 1), np.float32))
        f.create_dataset("t", data=np.repeat(np.linspace(0, 1, steps)[None], samples, 0))


def converted(base, name):
    values = {}
    for split in ("train", "valid"):
        for path in sorted((base / name / "data" / split).glob("*.hdf5")):
            with h5py.File(path, "r") as f:
                for slot, index in enumerate(f["exact_solution"]["trajectory_index"][()]):
                    values[int(index)] = {
                        k: read_field(f, k)[slot]
                        for k in ("density", "velocity", "u", "height", "forcing")
                        if any(k in f[g] for g in ("t0_fields", "t1_fields"))
                    }
    return values


def test_cfd_files_of_one_family_are_combined_with_their_viscosities(tmp_path):
    a, b = (
        tmp_path / "1D_CFD_Rand_Eta0.1_Zeta0.01_periodic_Train.hdf5",
        tmp_path / "1D_CFD_Rand_Eta1.e-8_Zeta1.e-8_periodic_Train.hdf5",
    )
    write_cfd(a, 1, seed=0)
    write_cfd(b, 1, seed=1)
    out = tmp_path / "out"
    assert main(["convert-pdebench", str(a), str(b), "--out", str(out), "--quiet"]) == 0
    dataset = out / "compressible_ns_1d"
    assert validate_dataset(dataset) == []
    values = converted(out, "compressible_ns_1d")
    assert sorted(values) == list(range(6))
    with h5py.File(a, "r") as f:
        np.testing.assert_array_equal(values[1]["density"], f["density"][1])
        np.testing.assert_array_equal(values[1]["velocity"][..., 0], f["Vx"][1])
    with h5py.File(b, "r") as f:
        np.testing.assert_array_equal(values[4]["density"], f["density"][1])  # file b starts at index 3
    etas = set()
    for path in (dataset / "data" / "train").glob("*.hdf5"):
        with h5py.File(path, "r") as f:
            etas |= set(np.round(f["scalars"]["eta"][()], 10))
    assert etas <= {0.1, 1e-8} and etas


def test_2d_cfd_downsampling_and_time_cut(tmp_path):
    path = tmp_path / "2D_CFD_Rand_M0.1_Eta0.01_Zeta0.01_periodic_128_Train.hdf5"
    write_cfd(path, 2, n=16)
    source = PDEBenchSource(path, downsample=2, max_steps=4)
    assert (source.name, source.default_resolution, source.default_n_steps) == ("compressible_ns_2d", 8, 4)
    assert (
        main(
            [
                "convert-pdebench",
                str(path),
                "--out",
                str(tmp_path / "o"),
                "--downsample",
                "2",
                "--max-steps",
                "4",
                "--quiet",
            ]
        )
        == 0
    )
    values = converted(tmp_path / "o", "compressible_ns_2d")
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(values[0]["density"], f["density"][0, :4, ::2, ::2])


@pytest.mark.parametrize(
    "channels, name, field", [(1, "shallow_water_2d", "height"), (2, "diffusion_reaction_2d", "u")]
)
def test_grouped_layouts(tmp_path, channels, name, field):
    path = tmp_path / "source.h5"
    write_grouped(path, channels)
    assert main(["convert-pdebench", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert validate_dataset(tmp_path / "o" / name) == []
    values = converted(tmp_path / "o", name)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(values[2][field], f["0002"]["data"][..., 0])


def test_incompressible_ns_force_becomes_its_curl(tmp_path):
    path = tmp_path / "ns_incom_inhom_2d_512-0.h5"
    write_ns(path)
    assert main(["convert-pdebench", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    values = converted(tmp_path / "o", "incompressible_ns_forced_2d")
    y = (np.arange(16) + 0.5) / 16
    expected = -2 * math.pi * np.cos(2 * math.pi * y)[None, :] * np.ones((16, 1))
    np.testing.assert_allclose(values[0]["forcing"][0], expected, atol=1e-4)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(values[0]["velocity"], f["velocity"][0])


def test_unknown_layouts_and_names_are_explained(tmp_path, capsys):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("u", data=np.zeros(3))
    assert main(["convert-pdebench", str(path), "--out", str(tmp_path / "o")]) != 0
    assert "not a PDEBench layout" in capsys.readouterr().err
    bad = tmp_path / "1D_CFD_noviscosity.hdf5"
    write_cfd(bad, 1)
    assert main(["convert-pdebench", str(bad), "--out", str(tmp_path / "o")]) != 0
    assert "cannot read Eta" in capsys.readouterr().err
