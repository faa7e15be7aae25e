"""The resolver (``well_upao.physics.discretisation``): one answer to which PDE constants, derivative and time scheme
a source's residuals use, for training, evaluation and ``residual-floor`` alike; and the bound residual it gives,
built once per batch or trajectory."""

from __future__ import annotations

import math

import harness_command as harness
import pytest
import torch

import well_upao.physics.bound as bound_module
from well_upao.data.source import WellSource
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.evaluate.plan import plan_evaluation
from well_upao.evaluate.scores import score
from well_upao.harness.runs import RunCheckpoint
from well_upao.models.checkpoint import read_checkpoint
from well_upao.physics.discretisation import FIT_ALL, Physics, PhysicsRequest, resolve
from well_upao.physics.floor import floor_rows
from well_upao.physics.pdes import get_pde
from well_upao.physics.stencils import Grid
from well_upao.predict.predictors import classical_row


@pytest.fixture(scope="module")
def tg2d(small_datasets):
    return WellSource(small_datasets, "tg2d"), get_pde("tg2d")


def test_fixed_settings_read_no_frame_and_auto_takes_the_lowest_permitted_floor(tg2d):
    source, pde = tg2d

    def never():
        raise AssertionError("a fixed discretisation needs no frames")

    fixed = resolve(never, pde, PhysicsRequest(derivative="fd4", scheme="central"))
    assert (fixed.derivative, fixed.scheme, fixed.floors) == ("fd4", "central", {})
    observed = source.observed(1, max_trajectories=4, max_frames=12)
    rows = floor_rows(observed, 1, pde)  # the floor table itself: every derivative x scheme
    auto = resolve(observed, pde, PhysicsRequest(derivative="auto", scheme="auto"))
    best = min(rows, key=lambda r: r.mean)
    assert (auto.derivative, auto.scheme) == (best.derivative, best.scheme) == ("spectral", auto.scheme)
    assert len(auto.floors) == len(rows) and auto.floors[auto.discretisation] == pytest.approx(best.mean)
    # a fixed part restricts the candidates
    half = resolve(observed, pde, PhysicsRequest(derivative="fd", scheme="auto"))
    fd_best = min((r for r in rows if r.derivative == "fd"), key=lambda r: r.mean)
    assert (half.derivative, half.scheme) == ("fd", fd_best.scheme) and all(k.startswith("fd/") for k in half.floors)


def test_no_pde_says_why_and_a_record_round_trips(tg2d):
    none = resolve(None, None, PhysicsRequest(), no_pde="no PDE: pass --imports")
    assert not none.available and none.reason == "no PDE: pass --imports" and none.bind(None, {}) is None
    physics = Physics(tg2d[1], "spectral", "central", {"nu": 0.01}, {"spectral/central": 1e-6}, "as set")
    again = Physics.from_record(physics.record())
    assert again.same_choice(physics) and again.floors == physics.floors and again.reason == "as set"
    assert not again.same_choice(Physics(tg2d[1], "fd", "central", {"nu": 0.01}))


def counting_stencils(monkeypatch) -> list[int]:
    """Count the residual stencils built (``BoundResidual.of`` is the one place that builds them)."""
    built = [0]
    original = bound_module.Stencils

    def counted(*args, **kwargs):
        built[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(bound_module, "Stencils", counted)
    return built


def test_one_residual_is_built_per_evaluated_trajectory(tg2d, monkeypatch):
    source = WellSource(tg2d[0].base, "tg2d", "train")
    request = EvaluationRequest(source.base, "tg2d", "train", history=4, rollout_steps=0, max_trajectories=2, out=None)
    plan = plan_evaluation(request, source, [])
    built = counting_stencils(monkeypatch)
    evaluation, _ = score(
        plan, [classical_row("persistence"), classical_row("extrap1"), classical_row("extrap2")], progress=False
    )
    assert built[0] == evaluation.n_trajectories == 2  # three rows, two trajectories: one residual each


def test_training_and_evaluation_score_a_run_with_the_discretisation_it_trained_with(small_datasets, tmp_path,
                                                                                    monkeypatch):  # fmt: skip
    """tg2d's default is fd / Crank-Nicolson. A UPAO run with ``auto`` chose spectral derivatives on its training
    frames, and one with a fixed ``trainer.derivative=spectral`` used them: evaluate scores each run's row with its
    run's physics (before, it ignored both), says so in the row's notes, and the classical rows keep the default.
    One residual per training batch, too."""
    runs = {}
    for label, settings in {"auto": ("auto", "auto"), "fixed": ("spectral", "crank_nicolson")}.items():
        runs[label] = harness.run_harness_in_process(
            small_datasets, tmp_path / "experiments", monkeypatch, "model=na_nslora", "model.layers=1",
            "model.pretrained=null", "trainer=upao", "data=tg2d", "data.batch_size=2", "data.n_steps_input=4",
            "trainer.epochs=1",
            "trainer.epoch_steps=2", "trainer.max_rollout_steps=1", "data.max_rollout_steps=2",
            "trainer.short_validation_length=1", "trainer.rollout_val_frequency=1000", f"name={label}",
            f"trainer.derivative={settings[0]}", f"trainer.time_scheme={settings[1]}",
        )  # fmt: skip
    trained = {
        label: read_checkpoint(run / "checkpoints" / "best.pt")["train"]["physics"] for label, run in runs.items()
    }
    assert trained["auto"]["derivative"] == "spectral" and trained["fixed"]["derivative"] == "spectral"
    request = EvaluationRequest(small_datasets, "tg2d", history=4, rollout_steps=0, max_trajectories=2, out=None,
                                progress=False, device="cpu")  # fmt: skip
    report = run_evaluation(request, [RunCheckpoint.read(label, path) for label, path in runs.items()])
    rows = {s.name: s for s in report.evaluation.scores}
    default_floor = rows["persistence"].label_free["floor"]
    for label, physics in trained.items():
        discretisation = f"{physics['derivative']}/{physics['scheme']}"
        assert rows[label].notes["residuals"].startswith(discretisation), rows[label].notes
        # exact data: the spectral residual's floor is far below second-order differences' (the default)
        assert rows[label].label_free["floor"] < 0.1 * default_floor
    assert "residuals" not in rows["persistence"].notes and math.isfinite(default_floor)
    assert "Residuals scored with the run's own discretisation" in report.table and "- auto: spectral/" in report.table


def test_one_residual_is_built_per_training_batch(small_datasets, tmp_path, monkeypatch):
    from trainers.test_upao import make_trainer  # tests/ is on sys.path (conftest)

    trainer = make_trainer(small_datasets, tmp_path)
    batch = next(iter(trainer.datamodule.train_dataloader()))
    built = counting_stencils(monkeypatch)
    loss, _ = trainer.loss(batch)
    loss.backward()
    assert built[0] == 1 and torch.isfinite(loss)


def test_a_request_to_fit_with_fallback_is_refused():
    """A fallback gives the PDE's own constants when frames cannot decide: with ``fit`` it would drop the fit without
    an error, so the pair is refused when the request is made; each alone is accepted."""
    with pytest.raises(ValueError, match="cannot both fit constants"):
        PhysicsRequest(fit=FIT_ALL, fallback=True)
    with pytest.raises(ValueError, match="cannot both fit constants"):
        PhysicsRequest(fit=("nu",), fallback=True)
    assert PhysicsRequest(fit=FIT_ALL).fit == FIT_ALL
    assert PhysicsRequest(survey=True, fallback=True).fallback


def test_the_bound_residual_carries_the_runs_fixed_and_fitted_constants_not_the_pdes_defaults():
    """Gray-Scott on a field at rest, ``A = 1 + sin x`` (constant in ``y``), ``B = 0``, two equal frames: the time
    derivative, ``A B^2`` and the whole ``B`` equation vanish, and with the spectral Laplacian (``Lap A = -sin x``,
    exact on the grid) the ``A`` residual is the closed form ``R_A = -delta_A Lap A - F (1 - A) = (delta_A + F) sin x``.
    Bound with a fitted ``delta_A = 0.3`` (the PDE's default is ``2e-5``) and a fixed ``F = 0.5`` (over the sample's
    ``F = 0.1``), ``R_A = 0.8 sin x``; bound with the PDE's defaults and the sample's scalars instead it would be
    ``(2e-5 + 0.1) sin x``. Checked failing with ``Physics.bind`` passing no constants."""
    n = 16
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    grid = Grid((2 * math.pi / n, 2 * math.pi / n), (True, True))
    a = (1 + torch.sin(x))[:, None].expand(n, n)[None, None]  # (B, T, x, y)
    frame = {"concentration_u": a, "concentration_v": torch.zeros_like(a)}
    scalars = {"F": torch.tensor([0.1], dtype=torch.float64), "k": torch.tensor([0.06], dtype=torch.float64)}
    fitted_and_fixed = {"delta_A": 0.3, "F": 0.5}
    physics = Physics(get_pde("gray_scott_reaction_diffusion"), "spectral", "crank_nicolson", fitted_and_fixed)
    residuals = physics.bind(grid, scalars).residuals(frame, frame, torch.tensor([1.0], dtype=torch.float64))
    expected = (0.3 + 0.5) * torch.sin(x)[:, None].expand(n, n)
    torch.testing.assert_close(residuals["A"][0, 0], expected, rtol=0, atol=1e-12)
    assert residuals["B"].abs().max() < 1e-12
