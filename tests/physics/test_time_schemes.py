"""Time schemes as values (``well_upao.physics.residual.TimeScheme``, the table ``SCHEMES``): a scheme registered by
this test alone (a theta = 0.6 scheme over one step, a theta = 0 scheme over three steps) is used by the residual,
the floor, the floor table and ``auto``, the objective, the bound residual and evaluate's residual fields, with no
package file changed; a scheme's name resolves once, with an error that lists the known ones.

The expected values are closed forms of the decay equation ``d_t u + a u = 0`` on frames ``u_n = c_n u_0`` (a
spatially varying ``u_0``): a theta-scheme over ``s`` steps gives ``R = (c_{t+1} - c_{t+1-s}) / (s dt) u_0 +
a ((1 - theta) c_t + theta c_{t+1}) u_0``, and the theta method's own discrete solution has
``c_{n+1} / c_n = (1 - (1 - theta) a dt) / (1 + theta a dt)``."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from well_upao.data.slots import N_SLOTS, SLOT_INDEX
from well_upao.data.source import ObservedFrames
from well_upao.evaluate.scores import residual_fields
from well_upao.physics import PDE, Grid, Stencils, SubEquation, UpaoObjective
from well_upao.physics.bound import BoundResidual
from well_upao.physics.discretisation import Physics, PhysicsRequest, resolve
from well_upao.physics.floor import discretisations, floor_rows
from well_upao.physics.residual import SCHEMES, TimeScheme, pde_residuals, register_time_scheme, time_scheme

A, DT, N = 0.7, 0.01, 12
FIELD = "concentration_rho"
DECAY = PDE(
    name="decay_schemes_test",
    variables=(FIELD,),
    parameters=("a",),
    equations=(SubEquation("decay", rate=FIELD, flux=lambda f, p, ops: p["a"] * f[FIELD]),),
)
GRID = Grid((2 * math.pi / N,) * 2, (True, True))
THETA = TimeScheme("theta_0.6", theta=0.6)
SPAN3 = TimeScheme("span3_test", theta=0.0, span=3, fallback="central")


@pytest.fixture
def registered():
    """The two schemes registered for one test (and removed after it): no package file names them."""
    for scheme in (THETA, SPAN3):
        register_time_scheme(scheme)
    yield
    for scheme in (THETA, SPAN3):
        SCHEMES.pop(scheme.name)


def base_field() -> torch.Tensor:
    x = torch.arange(N, dtype=torch.float64) * 2 * math.pi / N
    return 1.0 + 0.5 * torch.sin(x)[:, None] * torch.cos(x)[None, :]  # (X, Y)


def series(factors) -> dict[str, torch.Tensor]:
    """``{FIELD: (1, T, X, Y)}`` with frame ``n`` equal to ``factors[n] * u_0``."""
    return {FIELD: torch.stack([c * base_field() for c in factors])[None]}


def theta_factor(theta: float) -> float:
    """The theta method's amplification for ``d_t u = -a u``."""
    return (1 - (1 - theta) * A * DT) / (1 + theta * A * DT)


def decay_bound(scheme) -> BoundResidual:
    return BoundResidual(DECAY, {"a": A}, Stencils(GRID, "fd"), scheme)


def interior_rms() -> float:
    return float(base_field()[1:-1, 1:-1].square().mean().sqrt())


def test_a_registered_theta_scheme_is_the_residual_its_closed_form_gives(registered):
    """R of the theta = 0.6 scheme between ``u_0`` and ``q u_0``: ``((q - 1) / dt + a (0.4 + 0.6 q)) u_0``; zero on
    the scheme's own discrete solution, first order on the exact one (the error halves with dt, Crank-Nicolson's
    falls by 4). Negative control: Crank-Nicolson on the theta = 0.6 solution is not zero."""
    old, ops = series([1.0]), Stencils(GRID, "fd")
    for q in (math.exp(-A * DT), 0.99):
        residual = pde_residuals(DECAY, old, series([q]), DT, {"a": A}, ops, "theta_0.6")["decay"][0, 0]
        expected = ((q - 1) / DT + A * (0.4 + 0.6 * q)) * base_field()
        torch.testing.assert_close(residual, expected, rtol=1e-12, atol=1e-12)
    own = series([theta_factor(0.6)])
    assert float(pde_residuals(DECAY, old, own, DT, {"a": A}, ops, THETA)["decay"].abs().max()) < 1e-12
    assert float(pde_residuals(DECAY, old, own, DT, {"a": A}, ops, "crank_nicolson")["decay"].abs().max()) > 1e-4

    def exact_error(scheme: str, dt: float) -> float:
        new = series([math.exp(-A * dt)])
        return float(pde_residuals(DECAY, old, new, dt, {"a": A}, ops, scheme)["decay"].abs().max())

    theta_ratio = exact_error("theta_0.6", 0.02) / exact_error("theta_0.6", 0.01)
    cn_ratio = exact_error("crank_nicolson", 0.02) / exact_error("crank_nicolson", 0.01)
    assert 1.9 < theta_ratio < 2.1 and 3.9 < cn_ratio < 4.1, (theta_ratio, cn_ratio)


def test_the_floor_table_and_auto_weigh_a_registered_scheme(registered):
    """On frames that are the theta = 0.6 method's own solution, the floor table has a row for the new scheme under
    every derivative, ``auto`` picks it (its floor is round-off, every other scheme's is not), and the choice is
    recorded by name and bound again from the record."""
    q = theta_factor(0.6)
    fields = series([q**n for n in range(6)])
    fields = {FIELD: torch.cat([fields[FIELD], 2 * fields[FIELD]])}  # two trajectories
    scalars = {"a": torch.tensor([A, A], dtype=torch.float64)}
    observed = ObservedFrames(DECAY.name, fields, scalars, GRID.spacing, GRID.periodic, np.arange(6) * DT, step=DT)
    assert ("fd", "theta_0.6") in discretisations((True, True)) and len(discretisations((False,))) == len(SCHEMES)
    rows = {row.discretisation: row.mean for row in floor_rows(observed, 1, DECAY)}
    assert {scheme for _, scheme in rows} == set(SCHEMES) >= {"theta_0.6", "span3_test", "central"}
    assert rows[("fd", "theta_0.6")] < 1e-12
    assert min(mean for (_, scheme), mean in rows.items() if scheme != "theta_0.6") > 1e-5
    physics = resolve(observed, DECAY, PhysicsRequest(derivative="fd", scheme="auto"))
    assert (physics.derivative, physics.scheme) == ("fd", "theta_0.6") and "fd/theta_0.6" in physics.floors
    record = physics.record()
    assert record["scheme"] == "theta_0.6"  # names stay strings in checkpoints
    again = Physics(DECAY, record["derivative"], record["scheme"]).bind(GRID, {"a": scalars["a"]})
    assert again.scheme is THETA


def test_a_scheme_over_three_steps_cuts_windows_and_falls_back_as_its_value_says(registered):
    """A theta = 0 scheme over 3 steps reads 4 frames: a window of frames labelled by their index is cut into
    ``old = u_2..``, ``new = u_3..``, ``older = u_0..``; shorter windows fall back to central (3 frames), then to
    Crank-Nicolson (2); its floor on a 3-frame window is central's."""
    labelled = {FIELD: torch.arange(6, dtype=torch.float64).reshape(1, 6, 1, 1).expand(1, 6, N, N)}
    old, new, older = SPAN3.frame_sets(labelled)
    assert old[FIELD][0, :, 0, 0].tolist() == [2, 3, 4]
    assert new[FIELD][0, :, 0, 0].tolist() == [3, 4, 5]
    assert older[FIELD][0, :, 0, 0].tolist() == [0, 1, 2]
    step_old, _, step_older = SPAN3.step_sets(labelled, {FIELD: labelled[FIELD][:, :1]})
    assert (step_old[FIELD][0, 0, 0, 0].item(), step_older[FIELD][0, 0, 0, 0].item()) == (5, 3)
    assert SPAN3.frames == 4 and SPAN3.within(4) is SPAN3
    assert SPAN3.within(3) is SCHEMES["central"] and SPAN3.within(2) is SCHEMES["crank_nicolson"]
    with pytest.raises(ValueError, match="needs at least 2 frames"):
        time_scheme("implicit").within(1)
    c = [1.0, 0.97, 0.95, 0.9, 0.88]
    window = series(c)
    bound = decay_bound("span3_test")
    dt = torch.tensor([DT], dtype=torch.float64)
    old, new, older = SPAN3.frame_sets(window)
    residual = bound.residuals(old, new, dt, older)["decay"]
    for k, t in enumerate((2, 3)):  # R_t = (c_{t+1} - c_{t-2}) / (3 dt) + a c_t, times u_0
        expected = ((c[t + 1] - c[t - 2]) / (3 * DT) + A * c[t]) * base_field()
        torch.testing.assert_close(residual[0, k], expected, rtol=1e-12, atol=1e-12)
    short = series(c[:3])
    assert torch.equal(bound.floor(short, dt), decay_bound("central").floor(short, dt))
    assert not torch.equal(bound.floor(short, dt), decay_bound("crank_nicolson").floor(short, dt))


def test_the_objective_takes_each_predicted_frame_with_the_scheme_its_history_permits(registered):
    """The shifted prediction ``u_tau -> p_{tau+1}`` under the span-3 scheme: frame 0 has one observed frame
    (Crank-Nicolson), frame 1 two (central), frames 2 and 3 three (the scheme itself); each frame's mean square
    over ``S_p`` is its closed form. Also evaluate's residual field reads the true frame ``t - 3``."""
    c, d = [1.0, 0.97, 0.95, 0.9], [0.98, 0.96, 0.91, 0.89]  # observed u_0..u_3, predicted p_1..p_4
    objective = UpaoObjective(DECAY, scheme="span3_test", normalization="no_norm")
    bound = objective.bind(GRID, {"a": torch.tensor([A], dtype=torch.float64)})
    assert bound.scheme is SPAN3
    squares = objective.residual_mean_squares(series(c), series(d), torch.tensor([DT]).double(), bound)["decay"]
    expected = [
        (d[0] - c[0]) / DT + A * (c[0] + d[0]) / 2,  # Crank-Nicolson
        (d[1] - c[0]) / (2 * DT) + A * c[1],  # central
        (d[2] - c[0]) / (3 * DT) + A * c[2],  # span 3
        (d[3] - c[1]) / (3 * DT) + A * c[3],
    ]
    torch.testing.assert_close(squares[0], torch.tensor(expected).double().square() * interior_rms() ** 2)

    slotted = torch.zeros(4, N, N, N_SLOTS, dtype=torch.float64)
    slotted[..., SLOT_INDEX[FIELD]] = series(c)[FIELD][0]
    predicted = torch.zeros(N, N, N_SLOTS, dtype=torch.float64)
    predicted[..., SLOT_INDEX[FIELD]] = d[2] * base_field()
    context = SimpleNamespace(channel_slots=[SLOT_INDEX[FIELD]], dt=torch.tensor([DT]))
    assert residual_fields(decay_bound(SPAN3), slotted, predicted, 2, context) == {}  # three frames: too few
    field = residual_fields(decay_bound(SPAN3), slotted, predicted, 3, context)["decay"]
    expected_field = abs((d[2] - c[0]) / (3 * DT) + A * c[2]) * base_field()
    torch.testing.assert_close(field, expected_field.float(), rtol=1e-5, atol=1e-6)


def test_a_scheme_name_resolves_once_with_an_error_that_lists_the_known_ones():
    assert time_scheme("central") is SCHEMES["central"] and time_scheme(SCHEMES["explicit"]) is SCHEMES["explicit"]
    assert [name for name in SCHEMES][:4] == ["explicit", "implicit", "crank_nicolson", "central"]
    assert str(SCHEMES["central"]) == "central" and SCHEMES["central"].within(2).name == "crank_nicolson"
    for make in (
        lambda: time_scheme("centre"),
        lambda: decay_bound("centre"),
        lambda: UpaoObjective(DECAY, scheme="centre"),
        lambda: Physics(DECAY, "fd", "centre").bind(GRID, {"a": torch.tensor([A])}),
    ):
        with pytest.raises(
            ValueError, match=r"unknown time scheme 'centre'.*explicit, implicit, crank_nicolson, central"
        ):
            make()
    with pytest.raises(ValueError, match="already registered"):
        register_time_scheme(TimeScheme("central", theta=0.5))
    with pytest.raises(ValueError, match="theta must lie in"):
        TimeScheme("wrong", theta=1.5)
    assert "theta_0.6" not in SCHEMES  # the fixture's schemes are gone after their tests
