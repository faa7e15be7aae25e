"""Every part of the Well's file specification is read as the Well reads it or refused by name
(``well_upao.data.specification``): constant fields are not channels, time-varying scalars are per frame,
sample-varying time has T frames, boundary masks give each edge's type, and grid_type / masks marking more than
edges / scalar shapes that disagree with their attributes stop the readers and ``validate``; boundary values are
not read, as the Well does not read them. Each refusal has its negative control: the fixture without the bad
attribute is read and validates."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import spec_conformance_dataset  # noqa: F401  (registers the fixtures' datasets)
from well_synthetic import SPEC_DT, SPEC_FRAMES, SPEC_T0, write_spec_dataset

from well_upao.cli import main
from well_upao.data.slots import SLOT_INDEX, SlotError
from well_upao.data.source import WellSource
from well_upao.data.specification import SpecificationError
from well_upao.data.validate import validate_dataset


def files_of(dataset):
    return sorted((dataset / "data").glob("*/*.hdf5"))


def edit(dataset, action):
    for path in files_of(dataset):
        with h5py.File(path, "r+") as f:
            action(f)


@pytest.fixture()
def wall2d(tmp_path):
    return write_spec_dataset(tmp_path, 2, "WALL")


def test_constant_fields_are_the_wells_constant_fields_not_channels(wall2d):
    source = WellSource(wall2d.parent, wall2d.name)
    assert source.channels == ["temperature", "velocity_x", "velocity_y"]
    assert source.channel_slots == [SLOT_INDEX["temperature"], SLOT_INDEX["Vx"], SLOT_INDEX["Vy"]]
    assert source.layout.constant_field_names == (("obstacle",), (), ())
    assert validate_dataset(wall2d) == []

    def make_obstacle_time_varying(f):  # negative control: the same field stored per frame is a channel
        data = np.asarray(f["t0_fields"]["obstacle"])
        del f["t0_fields"]["obstacle"]
        frames = np.broadcast_to(data, (2, SPEC_FRAMES, *data.shape)).astype(np.float32)
        f["t0_fields"].create_dataset("obstacle", data=frames).attrs.update(
            dim_varying=[True, True], sample_varying=True, time_varying=True
        )

    edit(wall2d, make_obstacle_time_varying)
    source = WellSource(wall2d.parent, wall2d.name)
    assert "obstacle" in source.channels
    with pytest.raises(SlotError, match="obstacle"):
        _ = source.channel_slots


def test_time_varying_scalars_are_read_per_frame_and_constant_ones_per_trajectory(wall2d):
    source = WellSource(wall2d.parent, wall2d.name)
    assert source.layout.scalar_names == ("kappa",) and source.layout.varying_scalar_names == ("forcing", "clock")
    observed = source.observed(max_frames=5)  # frames 1..5
    assert set(observed.scalars) == {"kappa"}  # a (T,) clock is not read as one value per trajectory
    np.testing.assert_allclose(observed.scalars["kappa"].numpy(), [0.05, 0.05], rtol=1e-6)
    clock = np.float32(SPEC_T0) + np.float32(SPEC_DT) * np.arange(1, 6)
    np.testing.assert_allclose(observed.varying_scalars["clock"].numpy(), np.stack([clock, clock]), rtol=1e-6)
    with h5py.File(WellSource(wall2d.parent, wall2d.name).files[0]) as f:
        forcing = np.asarray(f["scalars"]["forcing"])[:, 1:6]
    np.testing.assert_array_equal(observed.varying_scalars["forcing"].numpy(), forcing)


def test_a_scalar_whose_shape_disagrees_with_its_attributes_is_refused(wall2d, capsys):
    assert main(["validate", str(wall2d), "--no-values"]) == 0  # negative control
    edit(wall2d, lambda f: f["scalars"]["clock"].attrs.__setitem__("sample_varying", True))  # (T,) says (B, T)
    problems = validate_dataset(wall2d)
    assert any("/scalars/clock has shape (12,)" in p and "sample_varying = True" in p for p in problems), problems
    with pytest.raises(SpecificationError, match=r"scalars/clock.*sample_varying"):
        _ = WellSource(wall2d.parent, wall2d.name).layout
    assert main(["validate", str(wall2d), "--no-values"]) != 0
    assert "/scalars/clock" in capsys.readouterr().out


def test_sample_varying_time_gives_t_frames_and_one_step(tmp_path):
    dataset = write_spec_dataset(tmp_path, 1, "PERIODIC", n_traj=3, sample_varying_time=True)
    assert validate_dataset(dataset) == []
    layout = WellSource(tmp_path, dataset.name).layout
    assert layout.n_steps == SPEC_FRAMES and layout.times.shape == (3, SPEC_FRAMES)
    assert abs(layout.time_axis.step - SPEC_DT) < 1e-5
    edit(dataset, lambda f: f["dimensions"]["time"].attrs.__setitem__("sample_varying", False))
    assert any("/dimensions/time has shape (3, 12)" in p for p in validate_dataset(dataset))


def test_a_spherical_grid_is_refused_by_name(wall2d):
    edit(wall2d, lambda f: f.attrs.__setitem__("grid_type", "spherical"))
    assert any("grid_type = 'spherical'" in p for p in validate_dataset(wall2d))
    with pytest.raises(SpecificationError, match=r"spec2d_wall_test.hdf5: root attribute grid_type = 'spherical'"):
        _ = WellSource(wall2d.parent, wall2d.name, "test").layout


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda g: g["mask"].__setitem__(5, True), r"/boundary_conditions/x_wall: 'mask' marks 1 points inside"),
        (lambda g: g.attrs.__setitem__("time_varying", True), r"x_wall: attribute time_varying = true"),
    ],
)
def test_boundary_masks_beyond_the_edges_are_refused(wall2d, change, message):
    assert WellSource(wall2d.parent, wall2d.name).layout.edges == (("WALL", "WALL"), ("WALL", "WALL"))
    edit(wall2d, lambda f: change(f["boundary_conditions"]["x_wall"]))
    with pytest.raises(SpecificationError, match=message):
        _ = WellSource(wall2d.parent, wall2d.name).layout
    assert any("x_wall" in p for p in validate_dataset(wall2d, check_values=False))


def test_boundary_values_shaped_as_the_specification_shows_are_read_past_with_a_warning(wall2d, caplog):
    """The specification's ``values``: float32, one value per True mask entry. The Well's loader does not read them;
    neither do we (they were refused with no fix named): the layout is the same, validate passes, a warning says so."""
    before = WellSource(wall2d.parent, wall2d.name).layout
    edit(wall2d, lambda f: f["boundary_conditions"]["x_wall"].create_dataset("values", data=np.ones(2, np.float32)))
    with caplog.at_level("WARNING"):
        layout = WellSource(wall2d.parent, wall2d.name).layout
    assert layout.edges == before.edges and layout.periodic == before.periodic
    assert "/boundary_conditions/x_wall: dataset 'values' (2 boundary values) is not read" in caplog.text
    assert validate_dataset(wall2d, check_values=False) == []


def test_a_periodic_mask_marks_both_edges(tmp_path):
    dataset = write_spec_dataset(tmp_path, 1, "PERIODIC")
    assert WellSource(tmp_path, dataset.name).layout.periodic == (True,)
    edit(dataset, lambda f: f["boundary_conditions"]["x_periodic"]["mask"].__setitem__(-1, False))
    with pytest.raises(SpecificationError, match="bc_type = PERIODIC but 'mask' marks one edge of axis 'x'"):
        _ = WellSource(tmp_path, dataset.name).layout


def test_each_edge_takes_the_type_of_the_group_whose_mask_marks_it(wall2d):
    """A wall below and an open top along y, as two groups each marking one edge: y is not periodic, and its edges
    are read from the masks (the Well's reader does the same), not from the groups' names."""

    def split_y(f):
        group = f["boundary_conditions"]
        del group["y_wall"]
        for name, kind, edge in (("bottom", "WALL", 0), ("top", "OPEN", -1)):
            bc = group.create_group(name)
            bc.attrs.update(bc_type=kind, associated_dims=["y"], associated_fields=[], sample_varying=False,
                            time_varying=False)  # fmt: skip
            mask = np.zeros(16, dtype=bool)
            mask[edge] = True
            bc.create_dataset("mask", data=mask)

    edit(wall2d, split_y)
    layout = WellSource(wall2d.parent, wall2d.name).layout
    assert layout.edges == (("WALL", "WALL"), ("WALL", "OPEN")) and layout.periodic == (False, False)
    assert validate_dataset(wall2d, check_values=False) == []


def test_a_mask_marking_nothing_applies_nowhere_as_in_the_wells_reader(wall2d, caplog):
    """The Well's reader sets an edge's type only where a mask marks it; a group marking nothing is read so (with a
    warning naming it), and its edges are OPEN."""
    edit(wall2d, lambda f: f["boundary_conditions"]["x_wall"]["mask"].__setitem__(slice(None), False))
    layout = WellSource(wall2d.parent, wall2d.name).layout
    assert layout.edges == (("OPEN", "OPEN"), ("WALL", "WALL"))
    assert "/boundary_conditions/x_wall: 'mask' marks no edge" in caplog.text


def test_the_wells_own_example_file_is_read(tmp_path):
    """``the_well.utils.dummy_data.write_dummy_data`` (the Well's example of its format): a constant field, a ``(T,)``
    time-varying scalar, scalar ``associated_dims`` and PERIODIC groups whose masks mark nothing (it writes
    ``mask[0] = mask[-1]`` of a zero mask): read as its own ``WellDataset`` reads it."""
    from the_well.data import WellDataset
    from the_well.utils.dummy_data import write_dummy_data

    from well_upao.data.source import read_layout
    from well_upao.harness.names import register_dataset_names

    for split in ("train", "valid", "test"):
        (tmp_path / "dummy" / "data" / split).mkdir(parents=True)
        write_dummy_data(str(tmp_path / "dummy" / "data" / split / "dummy.hdf5"))
    layout = read_layout(tmp_path / "dummy" / "data" / "train" / "dummy.hdf5")
    assert layout.channels == ("field_x", "field_y") and layout.constant_field_names == (("constant_field",), (), ())
    assert layout.scalar_names == ("a", "b") and layout.varying_scalar_names == ("time_varying_scalar",)
    assert layout.edges == (("OPEN", "OPEN"), ("OPEN", "OPEN")) and layout.periodic == (False, False)
    assert layout.n_steps == 10 and abs(layout.time_axis.step - 1 / 9) < 1e-7
    register_dataset_names(["dummy"])
    well = WellDataset(well_base_path=str(tmp_path), well_dataset_name="dummy", well_split_name="train")
    assert well[0]["boundary_conditions"].tolist() == [[1, 1], [1, 1]]  # OPEN: the Well reads them so too
    assert [n for names in well.metadata.field_names.values() for n in names] == list(layout.channels)


def test_a_pde_parameter_stored_as_a_time_varying_scalar_is_refused_by_name(wall2d):
    """``kappa`` stored per frame (``(B, T)``, ``time_varying = true``): the residual floor refuses it, naming the
    attribute, instead of a missing-parameter error; stored per trajectory (the fixture) it is read."""
    from well_upao.physics import pde_for_dataset
    from well_upao.physics.floor import floor_rows

    pde = pde_for_dataset(wall2d.name)
    assert floor_rows(WellSource(wall2d.parent, wall2d.name).observed(max_trajectories=1), 1, pde)  # negative control

    def kappa_per_frame(f):
        del f["scalars"]["kappa"]
        kappa = f["scalars"].create_dataset("kappa", data=np.full((2, SPEC_FRAMES), 0.05, dtype=np.float32))
        kappa.attrs.update(sample_varying=True, time_varying=True)

    edit(wall2d, kappa_per_frame)
    observed = WellSource(wall2d.parent, wall2d.name).observed(max_trajectories=1)
    with pytest.raises(ValueError, match="parameter 'kappa', which /scalars/kappa stores with attribute time_varying"):
        floor_rows(observed, 1, pde)
