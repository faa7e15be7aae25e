"""``well-upao residual-floor``: the relative residual of observed frames per stride, derivative and time scheme."""

from __future__ import annotations

import json

from well_upao.cli import main
from well_upao.evaluate.floor import best_row, floor_table


def test_spectral_derivatives_lower_the_floor_of_periodic_exact_data(small_datasets):
    files = sorted((small_datasets / "tg2d" / "data" / "train").glob("*.hdf5"))
    rows = floor_table(files, [1], max_trajectories=2, max_frames=8)
    by_key = {(r.derivative, r.scheme): r for r in rows}
    assert {d for d, _ in by_key} == {"fd", "fd4", "spectral"}
    assert {s for _, s in by_key} == {"explicit", "implicit", "crank_nicolson", "central"}
    # Taylor-Green on 16^2: second-order differences leave a percent-level floor, the exact derivative ~none
    assert by_key[("spectral", "crank_nicolson")].mean < 0.1 * by_key[("fd", "crank_nicolson")].mean
    assert by_key[("fd4", "crank_nicolson")].mean < by_key[("fd", "crank_nicolson")].mean
    assert best_row(rows, 1).derivative == "spectral"


def test_the_cli_prints_marks_and_writes_json(small_datasets, tmp_path, capsys):
    out = tmp_path / "floor.json"
    args = ["residual-floor", "--data", "advdiff2d", "--base-path", str(small_datasets), "--max-trajectories", "2"]
    assert main([*args, "--max-frames", "6", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("**(lowest)**") == 1 and "| 1 | spectral | central |" in text
    rows = json.loads(out.read_text())
    assert len(rows) == 3 * 4 and {"stride", "derivative", "scheme", "residuals", "mean"} <= set(rows[0])
    assert main([*args, "--stride", "20"]) == 2
    assert "fewer than 3" in capsys.readouterr().err
    assert main(["residual-floor", "--data", "nosuch", "--base-path", str(small_datasets)]) == 2
