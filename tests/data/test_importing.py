"""``well_upao.data.write_dataset`` / ``well-upao import``: a user's arrays to the Well's layout.

Round trips compare what the readers return (our ``WellSource``, the Well's ``WellDataset`` and ``hdf5_to_xarray``)
with the arrays as given, rearranged here with numpy by hand (axes by position, components by index), so a wrong
transpose, component order or split in the writer shows. Bad input is refused with one line and nothing written.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from well_upao.cli import main
from well_upao.data.datasets import DATASETS, DatasetSpec, register_dataset
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.importing import IMPORT_ATTRIBUTE, write_dataset
from well_upao.data.source import WellSource
from well_upao.data.validate import validate_dataset

N_TRAJ, N_STEPS, NY, NX = 6, 10, 5, 8
DT, DX, DY = 0.05, 2 * np.pi / NX, 0.3


def registered(name: str, slots: dict[str, str]) -> str:
    """Register ``name`` with ``slots`` (as the user's module would) for readers that need the slot row."""
    if name not in DATASETS:
        register_dataset(DatasetSpec(name, slots=slots))
    return name


def user_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """Trajectories stored as xarray and netCDF often store them, ``(trajectory, time, y, x)``, with x periodic and
    endpoint-inclusive (``NX + 1`` points, the last a copy of the first)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in ("T", "u", "v"):
        data = rng.normal(size=(N_TRAJ, N_STEPS, NY, NX + 1))
        data[..., -1] = data[..., 0]
        out[name] = data
    out["kappa"] = rng.uniform(0.1, 0.2, N_TRAJ)
    out["forcing"] = np.sin(np.arange(N_STEPS) * DT)
    return out


def stored_trajectories(path: Path) -> list[tuple[int, int]]:
    """(source trajectory, first frame) of each trajectory of an imported file."""
    with h5py.File(path) as f:
        return [tuple(pair) for pair in json.loads(f.attrs[IMPORT_ATTRIBUTE])["trajectories"]]


def by_hand_xy(data: np.ndarray) -> np.ndarray:
    """``(time, y, x)`` frames of one trajectory as ``(time, x, y)`` without the duplicated endpoint of x."""
    return np.swapaxes(data[..., :NX], -1, -2)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray], object]:
    arrays = user_arrays()
    base = tmp_path_factory.mktemp("imported")
    name = registered("import_rt", {"T": "temperature", "velocity_x": "Vx", "velocity_y": "Vy"})
    summary = write_dataset(
        {"T": arrays["T"], "velocity": {"x": arrays["u"], "y": arrays["v"]}},
        name,
        base,
        dims="trajectory time y x",
        spacing={"x": DX, "y": DY},
        boundaries={"x": "periodic", "y": "wall"},
        dt=DT,
        time_unit="s",
        scalars={"kappa": arrays["kappa"]},
        varying_scalars={"forcing": arrays["forcing"]},
        slots={"T": "temperature"},
        progress=False,
    )
    return base, arrays, summary


def test_the_readers_frames_are_the_arrays_in_x_y_order_without_the_duplicated_endpoint(imported):
    base, arrays, summary = imported
    seen = []
    for split in ("train", "valid", "test"):
        source = WellSource(base, "import_rt", split)
        assert source.layout.resolution == (NX, NY) and source.layout.periodic == (True, False)
        np.testing.assert_allclose(source.layout.spacing, (DX, DY), rtol=1e-12)
        assert abs(source.layout.time_axis.step - DT) < 1e-12
        for path in source.files:
            frames = source.read_frames(path, range(N_STEPS))
            for slot, (trajectory, first) in enumerate(stored_trajectories(path)):
                assert first == 0
                seen.append((split, trajectory))
                for slot_name, array in (("temperature", "T"), ("Vx", "u"), ("Vy", "v")):
                    expected = by_hand_xy(arrays[array][trajectory]).astype(np.float32)
                    np.testing.assert_array_equal(frames.fields[slot_name][slot].numpy(), expected)
                assert float(frames.scalars["kappa"][slot]) == arrays["kappa"][trajectory]
                np.testing.assert_array_equal(frames.varying_scalars["forcing"][slot].numpy(), arrays["forcing"])
    # the split: every trajectory once over train and valid, test held out (the Well's 80/10/10 of 6: 4/1/1)
    counts = {s: sum(1 for split, _ in seen if split == s) for s in ("train", "valid", "test")}
    assert counts == {"train": 4, "valid": 1, "test": 1}
    assert sorted(t for _, t in seen) == list(range(N_TRAJ))
    assert any("17 -> 16" not in n and "dropped the last point, 9 -> 8" in n for n in summary.notes), summary.notes


def test_the_summary_states_the_channels_in_the_wells_order_and_the_split(imported):
    _, _, summary = imported
    assert summary.channels == ["T", "velocity_x", "velocity_y"]
    assert summary.slots == {"T": "temperature", "velocity_x": "Vx", "velocity_y": "Vy"}
    text = summary.describe()
    assert "T->temperature, velocity_x->Vx, velocity_y->Vy (the Well's order)" in text
    assert "split by trajectory, a permutation seeded with 42" in text and "x periodic" in text and "y wall" in text
    assert "dt = 0.05 s" in text


def test_stats_yaml_is_what_the_wells_statistics_script_computes(imported, tmp_path):
    """The Well's compute_statistics.py logic (``tests/well_dummy.write_well_statistics``, written apart from ours) on
    a copy of the folder gives the same numbers as the import's one streaming pass."""
    from well_dummy import write_well_statistics

    base, _, _ = imported
    copy = tmp_path / "copy"
    shutil.copytree(base / "import_rt", copy)
    theirs = yaml.safe_load(write_well_statistics(copy).read_text())
    ours = yaml.safe_load((base / "import_rt" / "stats.yaml").read_text())
    assert set(ours) == set(theirs)
    for key in theirs:
        assert set(ours[key]) == set(theirs[key]) == {"T", "velocity"}
        for field in theirs[key]:
            np.testing.assert_allclose(ours[key][field], theirs[key][field], rtol=1e-10, err_msg=f"{key}/{field}")


def test_the_wells_dataset_reads_the_folder_by_its_path(imported):
    from the_well.data import WellDataset

    base, arrays, _ = imported
    well = WellDataset(path=str(base / "import_rt"), well_split_name="train", n_steps_input=4, n_steps_output=1)
    meta = well.metadata
    assert [n for names in meta.field_names.values() for n in names] == ["T", "velocity_x", "velocity_y"]
    assert meta.constant_scalar_names == ["kappa"] and meta.scalar_names == ["forcing"]
    sample = well[0]
    assert sample["input_fields"].shape == (4, NX, NY, 3)
    assert sample["boundary_conditions"].tolist() == [[2, 2], [0, 0]]  # x PERIODIC, y WALL
    (first, _), *_ = stored_trajectories(sorted((base / "import_rt" / "data" / "train").glob("*.hdf5"))[0])
    expected = np.stack([by_hand_xy(arrays[a][first][:4]) for a in ("T", "u", "v")], axis=-1).astype(np.float32)
    np.testing.assert_array_equal(sample["input_fields"].numpy(), expected)
    assert float(sample["constant_scalars"][0]) == pytest.approx(arrays["kappa"][first])


def test_validate_accepts_the_folder_once_the_dataset_is_registered(imported, tmp_path, monkeypatch, capsys):
    """``validate_dataset``, and ``well-upao validate --imports`` with the user's module (which registers the same
    entry again: a no-op)."""
    base, _, _ = imported
    assert validate_dataset(base / "import_rt") == []
    (tmp_path / "import_rt_module.py").write_text(
        "from well_upao.data.datasets import DatasetSpec, register_dataset\n"
        "register_dataset(DatasetSpec('import_rt',\n"
        "    slots={'T': 'temperature', 'velocity_x': 'Vx', 'velocity_y': 'Vy'}))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["validate", str(base / "import_rt"), "--imports", "import_rt_module"])
    printed = capsys.readouterr()
    assert code == 0 and printed.out.strip().endswith("OK"), printed.out + printed.err


def test_a_stored_component_axis_in_y_x_order_is_written_x_y(tmp_path):
    """A vector whose component axis holds (v_y, v_x): ``components=("y", "x")`` puts v_x in velocity_x."""
    arrays = user_arrays(1)
    velocity = np.stack([arrays["v"], arrays["u"]], axis=-1)  # stored as (..., [y component, x component])
    name = registered("import_components", {"velocity_x": "Vx", "velocity_y": "Vy"})
    write_dataset(
        {"velocity": velocity},
        name,
        tmp_path,
        dims="trajectory time y x",
        spacing={"x": DX, "y": DY},
        boundaries={"x": "periodic", "y": "wall"},
        dt=DT,
        components={"velocity": ("y", "x")},
        progress=False,
    )
    source = WellSource(tmp_path, name, "train")
    path = source.files[0]
    frames = source.read_frames(path, range(N_STEPS))
    for slot, (trajectory, _) in enumerate(stored_trajectories(path)):
        for slot_name, array in (("Vx", "u"), ("Vy", "v")):
            expected = by_hand_xy(arrays[array][trajectory]).astype(np.float32)
            np.testing.assert_array_equal(frames.fields[slot_name][slot].numpy(), expected)


def test_a_single_long_trajectory_is_cut_and_split_in_time(tmp_path):
    """One trajectory of 103 frames in 10 segments: train holds frames 0-79, valid 80-89, test 90-99 (frames 100-102,
    less than a segment, dropped), each file with its own times; without segments the split is refused."""
    rng = np.random.default_rng(2)
    long = rng.normal(size=(103, 12))  # (time, x), one trajectory
    name = registered("import_long", {"u": "concentration_rho"})
    common = dict(dims="time x", spacing={"x": 0.5}, dt=0.1, slots={"u": "concentration_rho"}, progress=False)
    with pytest.raises(ImportInputError, match=r"train is left empty.*--segments N"):
        write_dataset({"u": long}, name, tmp_path, **common)
    assert list(tmp_path.iterdir()) == []
    summary = write_dataset({"u": long}, name, tmp_path, segments=10, **common)
    assert "split in time" in summary.split_rule and "train [0-7]; valid [8]; test [9]" in summary.split_rule
    assert "last 3 frame(s)" in summary.split_rule
    expected_first = {"train": list(range(0, 80, 10)), "valid": [80], "test": [90]}
    for split, firsts in expected_first.items():
        source = WellSource(tmp_path, name, split)
        found = []
        for path in source.files:
            frames = source.read_frames(path, range(10))
            for slot, (trajectory, first) in enumerate(stored_trajectories(path)):
                assert trajectory == 0
                found.append(first)
                expected = long[first : first + 10].astype(np.float32)
                np.testing.assert_array_equal(frames.fields["concentration_rho"][slot].numpy(), expected)
                np.testing.assert_allclose(frames.times, np.arange(first, first + 10) * 0.1, rtol=1e-12)
        assert sorted(found) == firsts


def test_dates_need_a_unit_and_become_numbers_in_it(tmp_path):
    rng = np.random.default_rng(3)
    data = rng.normal(size=(4, 6, 8))
    dates = np.datetime64("2026-01-01T00:00") + np.arange(6) * np.timedelta64(30, "m")
    name = registered("import_dates", {"u": "concentration_rho"})
    common = dict(dims="trajectory time x", spacing={"x": 1.0}, times=dates, test_fraction=0, progress=False)
    with pytest.raises(ImportInputError, match="dates or durations: pass --time-unit"):
        write_dataset({"u": data}, name, tmp_path, **common)
    with pytest.raises(ImportInputError, match=r"disagrees with the step 0\.5"):
        write_dataset({"u": data}, name, tmp_path, time_unit="h", dt=0.25, **common)
    summary = write_dataset({"u": data}, name, tmp_path, time_unit="h", **common)
    assert summary.dt == 0.5 and summary.time_unit == "h"
    with h5py.File(WellSource(tmp_path, name, "train").files[0]) as f:
        np.testing.assert_array_equal(f["dimensions"]["time"][()], np.arange(6) * 0.5)
        assert f["dimensions"]["time"].attrs["units"] == "h"


class OneTrajectoryAtATime:
    """An array-like that refuses any read spanning more than one trajectory (what a file larger than memory needs)
    and counts the reads."""

    def __init__(self, data: np.ndarray):
        self.data, self.shape, self.reads = data, data.shape, []

    def __getitem__(self, index):
        if not isinstance(index, tuple) or not isinstance(index[0], int | np.integer):
            raise AssertionError(f"a read of more than one trajectory: {index}")
        self.reads.append(index[0])
        return self.data[index]


def test_arrays_are_read_one_trajectory_at_a_time(tmp_path):
    rng = np.random.default_rng(4)
    data = OneTrajectoryAtATime(rng.normal(size=(5, 7, 9)))
    name = registered("import_stream", {"u": "concentration_rho"})
    write_dataset({"u": data}, name, tmp_path, dims="trajectory time x", spacing={"x": 1.0}, dt=1.0, progress=False)
    assert sorted(set(data.reads)) == list(range(5))
    with h5py.File(WellSource(tmp_path, name, "valid").files[0]) as f:
        (trajectory, _), *_ = stored_trajectories(Path(f.filename))
        np.testing.assert_array_equal(f["t0_fields"]["u"][0], data.data[trajectory].astype(np.float32))


def test_an_npz_saved_uncompressed_is_memory_mapped_and_a_compressed_one_read(tmp_path):
    from well_upao.data.import_sources import open_npz

    rng = np.random.default_rng(5)
    arrays = {"u": rng.normal(size=(3, 4, 5)), "f": np.asfortranarray(rng.normal(size=(4, 6))), "k": np.float32(2)}
    np.savez(tmp_path / "plain.npz", **arrays)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    plain, packed = open_npz(tmp_path / "plain.npz"), open_npz(tmp_path / "packed.npz")
    assert all(isinstance(plain[k], np.memmap) for k in arrays)
    assert not any(isinstance(packed[k], np.memmap) for k in arrays)
    for name, value in arrays.items():
        np.testing.assert_array_equal(plain[name], value)
        np.testing.assert_array_equal(packed[name], value)


def write_bad(name: str, tmp_path: Path, fields: dict, **options) -> str:
    """The error message of an import that must fail, after checking nothing was left in ``tmp_path``."""
    common = dict(dims="trajectory time x", spacing={"x": 1.0}, dt=1.0, progress=False)
    with pytest.raises(ImportInputError) as error:
        write_dataset(fields, name, tmp_path / "out", **{**common, **options})
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == [], "something was written"
    message = str(error.value)
    assert "\n" not in message
    return message


def padded() -> np.ndarray:
    """Five trajectories of 12 frames, the last one 8 frames long and padded with NaN (as xarray concatenates)."""
    data = np.random.default_rng(6).normal(size=(5, 12, 6))
    data[4, 8:] = np.nan
    return data


def holed() -> np.ndarray:
    data = np.random.default_rng(7).normal(size=(5, 12, 6))
    data[3, 5, 2] = np.nan
    return data


BAD = {
    "ragged list": (
        {"u": [np.zeros((12, 6)) + i for i in range(4)] + [np.zeros((9, 6))]},
        {"dims": "time x"},
        r"ragged trajectories: field 'u' has trajectories of \[9, 12\] frames.*--frames 0:9",
    ),
    "ragged, padded with NaN": (
        {"u": padded()},
        {},
        r"ragged trajectories: .*trajectory 4 .*from frame 8 .*--frames 0:8",
    ),
    "uneven time": (
        {"u": np.ones((5, 6, 4)) * np.arange(4)},
        {"times": np.array([0.0, 1.0, 2.0, 3.5, 4.5, 5.5]), "dt": None},
        r"time axis .* is not equally spaced.*--frames START:STOP",
    ),
    "NaN": ({"u": holed()}, {}, r"field 'u' holds NaN or inf in trajectory 3, frame 5: fill or drop"),
    "shape disagreement": (
        {"u": np.zeros((5, 12, 6)) + np.arange(6), "w": np.zeros((5, 12, 7)) + np.arange(7)},
        {},
        r"field 'w' has 7 points along x but 'u' has 6",
    ),
    "empty split": ({"u": np.ones((2, 12, 6)) * np.arange(6)}, {}, r"2 trajectories cannot fill .*train is left empty"),
    "no slot": ({"q": np.ones((5, 12, 6)) * np.arange(6)}, {}, r"channels \['q'\] have no slot: .*--slots q=SLOT"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_refused_in_one_line_with_nothing_written(case, tmp_path):
    fields, options, pattern = BAD[case]
    slots = {} if case == "no slot" else {name: "concentration_rho" if name == "u" else "pressure" for name in fields}
    message = write_bad(f"import_bad_{case.split()[0].replace(',', '')}", tmp_path, fields, slots=slots, **options)
    assert __import__("re").search(pattern, message), message


def test_the_pdes_parameters_and_variables_are_checked(tmp_path):
    """A PDE whose parameter the data names otherwise, or given per frame, or whose variable no channel maps to."""
    from user_heat_dataset import HEAT  # parameters ("kappa",), variables ("temperature",)

    data = {"T": np.random.default_rng(8).normal(size=(5, 12, 6))}
    wrong_name = write_bad(
        "import_pde", tmp_path, data, slots={"T": "temperature"}, scalars={"diffusivity": 0.1}, pde=HEAT
    )
    assert "needs the parameter 'kappa' and the scalars are diffusivity" in wrong_name
    assert "--rename OLD=kappa" in wrong_name
    per_frame = write_bad(
        "import_pde", tmp_path, data, slots={"T": "temperature"}, varying_scalars={"kappa": np.ones(12)}, pde=HEAT
    )
    assert "given per frame" in per_frame
    wrong_slot = write_bad("import_pde", tmp_path, data, slots={"T": "pressure"}, scalars={"kappa": 0.1}, pde=HEAT)
    assert "reads the slot 'temperature', which no channel maps to" in wrong_slot


def test_the_command_imports_an_npz_and_says_what_it_read_and_what_comes_next(tmp_path, capsys, monkeypatch):
    arrays = user_arrays(9)
    np.savez(tmp_path / "sim.npz", T=arrays["T"], kappa=arrays["kappa"], time=np.arange(N_STEPS) * DT)
    monkeypatch.chdir(tmp_path)
    code = main([
        "import", "sim.npz", "--dataset", "my_sim", "--dims", "trajectory", "time", "y", "x", "--spacing", f"x={DX}",
        f"y={DY}", "--boundary", "x=periodic", "y=wall", "--scalar", "kappa", "--slots", "T=temperature", "--quiet",
    ])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "channels     T->temperature (the Well's order)" in printed.out
    assert "dropped the last point, 9 -> 8 points" in printed.out and "dt = 0.05" in printed.out
    assert "register_dataset(DatasetSpec(\"my_sim\", slots={'T': 'temperature'}, pde=YOUR_PDE))" in printed.out
    assert "well-upao validate datasets/my_sim --imports my_pdes" in printed.out
    with h5py.File(sorted((tmp_path / "datasets" / "my_sim" / "data" / "valid").glob("*.hdf5"))[0]) as f:
        (trajectory, _), *_ = stored_trajectories(Path(f.filename))
        np.testing.assert_array_equal(f["t0_fields"]["T"][0], by_hand_xy(arrays["T"][trajectory]).astype(np.float32))
        assert f["scalars"]["kappa"][0] == arrays["kappa"][trajectory]


def test_the_command_refuses_bad_input_in_one_line_with_exit_2_and_nothing_written(tmp_path, capsys):
    np.savez(tmp_path / "nan.npz", u=holed())
    out = str(tmp_path / "out")
    code = main(["import", str(tmp_path / "nan.npz"), "--name", "x", "--out", out, "--dims", "trajectory", "time", "x",
                 "--spacing", "x=1", "--dt", "1", "--slots", "u=pressure", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "holds NaN or inf in trajectory 3, frame 5" in err, err
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    code = main(["import", str(tmp_path / "missing.npz"), "--name", "x", "--out", str(tmp_path / "out")])
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_generate_exact_on_a_registered_pde_without_a_generator_points_to_import(tmp_path, capsys):
    """The user registered the dataset (and its PDE) but nothing generates it: the message says so and names
    ``well-upao import``, which exists (the command above)."""
    module = tmp_path / "no_generator_module.py"
    module.write_text(
        "from user_heat_dataset import HEAT\n"
        "from well_upao.data.datasets import DatasetSpec, register_dataset\n"
        "register_dataset(DatasetSpec('my_heat_nogen', slots={'T': 'temperature'}, pde=HEAT))\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        code = main(["generate-exact", "--pde", "my_heat_nogen", "--imports", "no_generator_module", "--out",
                     str(tmp_path / "out"), "--quiet"])  # fmt: skip
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "'my_heat_nogen' is registered but has no generator" in err
    assert "`well-upao import FILE --dataset my_heat_nogen`" in err
    assert main(["generate-exact", "--pde", "shear_flow", "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "well-upao generate-replica --dataset shear_flow" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_tensor_field_is_stored_with_its_components_and_left_out_of_the_slots(tmp_path):
    """A tensor ``D`` stored ``(trajectory, time, y, x, i, j)``: written ``(x, y)`` with ``D[..., i, j]`` the
    component along axes (i, j) (the Well flattens it to D_xx, D_xy, D_yx, D_yy); it needs no slot, and the
    registration the import prints keeps the other fields."""
    from the_well.data import WellDataset

    rng = np.random.default_rng(10)
    temperature = rng.normal(size=(5, 6, NY, NX))
    tensor = rng.normal(size=(5, 6, NY, NX, 2, 2))
    name = registered("import_tensor", {"T": "temperature"})
    summary = write_dataset(
        {"T": temperature, "D": tensor},
        name,
        tmp_path,
        dims="trajectory time y x",
        spacing={"x": 1.0, "y": 1.0},
        dt=1.0,
        slots={"T": "temperature"},
        progress=False,
    )
    assert summary.fields == [("T", 0), ("D", 2)] and summary.kept_fields == ("T",)
    assert "slots={'T': 'temperature'}, fields=('T',), pde=YOUR_PDE" in summary.registration()
    path = WellSource(tmp_path, name, "train").files[0]
    (trajectory, _), *_ = stored_trajectories(path)
    with h5py.File(path) as f:
        expected = np.transpose(tensor[trajectory], (0, 2, 1, 3, 4)).astype(np.float32)  # (time, x, y, i, j)
        np.testing.assert_array_equal(f["t2_fields"]["D"][0], expected)
    well = WellDataset(path=str(tmp_path / name), well_split_name="train", n_steps_input=2, n_steps_output=1)
    assert [n for names in well.metadata.field_names.values() for n in names] == ["T", "D_xx", "D_xy", "D_yx", "D_yy"]
    np.testing.assert_array_equal(well[0]["input_fields"][0, ..., 2].numpy(), expected[0, ..., 0, 1])
