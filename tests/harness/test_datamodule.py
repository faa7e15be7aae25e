"""The harness's datamodule on a dataset with a field selection (``data.fields``; active matter keeps
concentration and velocity of its four fields): the Well's normalisation applies to the kept fields, and the fields
left out are never looked up in the statistics."""

from __future__ import annotations

import pytest
import torch
import yaml

from well_upao.harness.datamodule import WellUpaoDataModule


@pytest.mark.parametrize("normalization", ["ZScoreNormalization", "RMSNormalization"])
def test_a_field_selection_is_normalised_with_the_kept_fields_statistics(small_datasets, tmp_path, normalization):
    """tg2d holds pressure and velocity; keeping pressure only, with the Well's normalisation on, a training sample is
    the raw pressure mapped by its own statistics from stats.yaml (read here by hand), and the statistics of the
    dropped velocity are not needed: a stats.yaml without them still reads."""
    from the_well.data import normalization as well_normalization

    stats_path = small_datasets / "tg2d" / "stats.yaml"
    stats = yaml.safe_load(stats_path.read_text())
    base = tmp_path / "base"
    (base / "tg2d").mkdir(parents=True)
    (base / "tg2d" / "data").symlink_to(small_datasets / "tg2d" / "data")
    without_velocity = {key: {"pressure": values["pressure"]} for key, values in stats.items()}
    (base / "tg2d" / "stats.yaml").write_text(yaml.safe_dump(without_velocity))

    common = dict(batch_size=2, n_steps_input=2, fields=["pressure"])
    raw = WellUpaoDataModule(str(base), "tg2d", **common)
    normalised = WellUpaoDataModule(
        str(base),
        "tg2d",
        **common,
        use_normalization=True,
        normalization_type=getattr(well_normalization, normalization),
    )
    for index in (0, 5):
        physical, sample = raw.train_dataset[index], normalised.train_dataset[index]
        assert sample["input_fields"].shape[-1] == 1  # pressure only
        if normalization == "ZScoreNormalization":
            mean, scale = stats["mean"]["pressure"], max(stats["std"]["pressure"], 1e-4)
        else:
            mean, scale = 0.0, max(stats["rms"]["pressure"], 1e-4)
        expected = (physical["input_fields"] - mean) / scale
        torch.testing.assert_close(sample["input_fields"], expected, rtol=1e-5, atol=1e-6)
        assert not torch.allclose(sample["input_fields"], physical["input_fields"])  # the map is not the identity
    batch = next(iter(normalised.train_dataloader()))
    assert batch["input_fields"].shape[0] == 2 and torch.isfinite(batch["input_fields"]).all()
