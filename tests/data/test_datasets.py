"""The dataset registry: the slot inventory, every row complete and collision-free, the views that replaced the
old tables (slots, field selections, PDE lookup, generators), the Hydra data configs, user registration."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from well_upao.data import datasets, slots
from well_upao.data.datasets import DATASET_SLOTS, DatasetSpec, register_dataset
from well_upao.datasets_exact import EXACT_PDES
from well_upao.physics import PDE, SubEquation, pde_for_dataset


@pytest.fixture
def registry():
    """The registry (one dict, which every view reads), restored after the test."""
    saved = dict(datasets.DATASETS)
    yield datasets.DATASETS
    datasets.DATASETS.clear()
    datasets.DATASETS.update(saved)


def test_slot_order_is_the_papers():
    assert slots.N_SLOTS == 18
    assert slots.SLOT_NAMES[:3] == ("Vx", "Vy", "Vz")
    assert slots.SLOT_NAMES[3] == "buoyancy" and slots.SLOT_NAMES[3 + 12] == "pressure"
    assert slots.SLOT_NAMES[-1] == "temperature"


@pytest.mark.parametrize("name", list(datasets.DATASETS))
def test_every_row_is_complete_and_collision_free(name):
    row = DATASET_SLOTS[name]
    assert set(row.values()) <= set(slots.SLOT_NAMES)
    indices = datasets.slot_indices(name, list(row))
    assert len(set(indices)) == len(indices)
    assert sum(datasets.channel_mask(name, list(row))) == len(row)


@pytest.mark.parametrize("name", list(datasets.DATASETS))
def test_every_dataset_has_a_pde_and_its_variables_have_slots(name):
    pde = pde_for_dataset(name)
    assert set(pde.variables) <= set(DATASET_SLOTS[name].values())


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_every_exact_dataset_channel_has_a_slot_and_its_family_generates_it(name):
    pde = EXACT_PDES[name]
    axes = "xyz"[: pde.n_spatial_dims]
    channels = [s.name if s.order == 0 else f"{s.name}_{a}" for s in pde.fields for a in (axes if s.order else [""])]
    assert sorted(channels) == sorted(DATASET_SLOTS[name])
    assert datasets.generators("exact")[name] is pde


def test_velocity_components_land_in_vector_slots():
    assert datasets.slot_indices("tg2d", ["pressure", "velocity_x", "velocity_y"]) == [15, 0, 1]
    assert datasets.slot_indices("burgers1d", ["velocity_x"]) == [0]


def test_views_of_the_registry():
    assert datasets.selected_fields("active_matter") == ("concentration", "velocity")  # the paper's selection
    assert datasets.selected_fields("tg2d") is None and datasets.selected_fields("tg2d", ["pressure"]) == ("pressure",)
    assert datasets.dataset_names("well") == [
        "active_matter",
        "gray_scott_reaction_diffusion",
        "rayleigh_benard",
        "shear_flow",
    ]
    assert set(datasets.generators("simulated")) == {
        "diffusion_reaction_2d",
        "shallow_water_2d",
        "incompressible_ns_forced_2d",
        "compressible_ns_1d",
        "compressible_ns_2d",
        "compressible_ns_3d",
    }
    assert slots.DATASET_SLOTS is DATASET_SLOTS  # the slot module's old names still answer


def test_data_configs_and_registry_agree():
    """Every dataset with a data config has its YAML, and every YAML selects a registered dataset."""
    folder = resources.files("well_upao.configs") / "data"
    yamls = {p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml") and p.name != "_base.yaml"}
    declared = {spec.data_config for spec in datasets.DATASETS.values() if spec.data_config}
    assert yamls == declared


def test_unknown_inputs_are_rejected(registry):
    with pytest.raises(slots.SlotError, match="not registered"):
        datasets.slot_indices("mystery", ["u"])
    with pytest.raises(slots.SlotError, match="no slot"):
        datasets.slot_indices("tg2d", ["vorticity"])
    with pytest.raises(slots.SlotError, match="unknown slot"):
        register_dataset(DatasetSpec("mine", {"u": "colour"}))
    with pytest.raises(slots.SlotError, match="share a slot"):
        register_dataset(DatasetSpec("mine", {"u": "height", "h": "height"}))
    with pytest.raises(ValueError, match="its family is named 'tg2d'"):
        DatasetSpec("mine", {"u": "height"}, family=EXACT_PDES["tg2d"])
    with pytest.raises(ValueError, match="already registered"):
        register_dataset(DatasetSpec("tg2d", {"u": "height"}))


def test_user_datasets_register_once_with_their_pde(registry):
    heat = PDE(
        name="my_heat",
        variables=("temperature",),
        parameters=("kappa",),
        equations=(
            SubEquation(
                "heat", rate="temperature", flux=lambda f, p, ops: -p["kappa"] * ops.laplacian(f["temperature"])
            ),
        ),
    )
    register_dataset(
        DatasetSpec("my_heat", {"temperature": "temperature"}, pde=heat, defaults={"derivative": "spectral"})
    )
    assert datasets.slot_indices("my_heat", ["temperature"]) == [17]
    assert pde_for_dataset("my_heat") is heat
    assert datasets.get_dataset("my_heat").defaults == {"derivative": "spectral"}


def test_the_first_registration_form_still_works(registry):
    """User modules written against ``well_upao.data.slots.register_dataset_slots`` keep working."""
    slots.register_dataset_slots("my_rows", {"temperature": "temperature"})
    assert datasets.slot_indices("my_rows", ["temperature"]) == [17]
    slots.register_dataset_slots("my_rows", {"temperature": "temperature"})  # the same row again: fine
    with pytest.raises(slots.SlotError, match="different slot row"):
        slots.register_dataset_slots("my_rows", {"temperature": "height"})


def _auto_wins_on_every_seed(report: str) -> set[str]:
    """Datasets whose per-seed tables in reports/upao_auto.md show `auto` below `default` for every seed."""
    wins = set()
    for section in report.split("\n## ")[1:]:
        dataset = section.split(",", 1)[0].strip()
        rows = dict(re.findall(r"^\| UPAO \+ NSLoRA, (\w+, seed \d+) \| ([0-9.e+-]+) \|", section, flags=re.M))
        seeds = sorted({key.split(", ")[1] for key in rows})
        if seeds and all(float(rows[f"auto, {s}"]) < float(rows[f"default, {s}"]) for s in seeds):
            wins.add(dataset)
    return wins


def test_auto_discretisation_is_the_default_exactly_where_it_won():
    """Issue 16: a dataset's UPAO default changes from fd / crank_nicolson to `auto` only where the measurement in
    reports/upao_auto.md showed auto better on every seed."""
    from pathlib import Path

    report = (Path(__file__).resolve().parents[2] / "reports" / "upao_auto.md").read_text()
    measured = set(re.findall(r"^\| (\w+) \| 1 \| [0-9.e+-]+ \| [0-9.e+-]+ \|", report, flags=re.M))
    chosen = {name for name in measured if datasets.DATASETS[name].defaults == datasets.AUTO_DISCRETISATION}
    assert chosen == _auto_wins_on_every_seed(report) and measured >= {"wave2d", "advdiff2d", "burgers2d", "tg2d"}


def test_a_user_module_in_the_current_directory_is_found(registry, tmp_path, monkeypatch):
    """``--imports my_pdes`` finds ``./my_pdes.py`` as ``python -m`` (the harness) does, though a console script's
    ``sys.path`` does not hold the current directory; from another directory it is a one-line error."""
    import sys

    (tmp_path / "cwd_user_module.py").write_text(
        "from well_upao.data.datasets import DatasetSpec, register_dataset\n"
        "register_dataset(DatasetSpec('cwd_user_set', slots={'u': 'height'}))\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path), str(elsewhere))])
    monkeypatch.delitem(sys.modules, "cwd_user_module", raising=False)
    monkeypatch.chdir(elsewhere)
    with pytest.raises(datasets.UserModuleError, match=r"cannot import 'cwd_user_module' \(--imports\)"):
        datasets.import_modules(["cwd_user_module"], "--imports")
    monkeypatch.chdir(tmp_path)
    datasets.import_modules(["cwd_user_module"], "--imports")
    assert datasets.DATASETS["cwd_user_set"].slots == {"u": "height"}
    monkeypatch.delitem(sys.modules, "cwd_user_module")
