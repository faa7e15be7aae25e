"""``well-upao forecast``: the predicted future of a user's trajectories, without labels.

1. the input (``forecast.inputs``): each trajectory's history, its physics, checked before anything is written;
2. the candidates (``forecast.candidates``): the classical table's rows, the solver step where the input's PDE is
   registered and supported, and the model of ``SOURCE``;
3. the evidence: every candidate's backtests on each history (``predict.backtests.window_evidence``: a rollout from
   the history's first frames and, one step ahead, each later frame from the true frames before it; a classical
   candidate's rollouts from every start too), pooled over the input's trajectories by their median per horizon, as
   evaluate pools a split's windows; per window (one step, the Well's 6:12 and 13:30) the pick
   (``predict.evidence.pick``) and each candidate's expected VRMSE with its nominal 80% interval
   (``predict.expected_starts``, rule 3): the numbers evaluate states, from the history alone;
4. the rollouts: each candidate the picks use rolls out from the history alone (what its evidence measured;
   ``predict.rollout.autoregressive_frames``), and forecast step ``k`` is taken from the candidate picked for the
   window it belongs to (``predict.windows.window_of_step``: step 1; steps 2-12 with 6:12's pick; 13 onwards with
   13:30's, continued past 30); with boundary observations (``boundary``) every candidate's frames carry the
   observed band before they are fed back;
5. the output (``forecast.output``): ``forecast.hdf5`` in the Well's layout written step by step (one trajectory's
   windows in memory at a time), ``forecast.json`` and figures (``forecast.plots``), staged and moved into place when
   complete.

The expected error per step (``per_step``) is rule 3's expected VRMSE of the step's picked candidate at that horizon
(``predict.expected_starts.horizon_values``: the level of its starts' errors within the reach, the fitted power law
past it; the values whose mean over a window is the window's expected value): a point value, without an interval (the
intervals are calibrated per window, not per step).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from tqdm.auto import tqdm

from well_upao.data.trajectories import TrajectoryFile
from well_upao.forecast.candidates import Candidates, candidates, run_settings
from well_upao.forecast.inputs import ForecastError, ForecastInput, History, uniform_channels
from well_upao.forecast.output import ForecastWriter, staged_folder, write_json
from well_upao.forecast.plots import plot_forecast
from well_upao.forecast.results import Forecast, ForecastRequest, WindowPick
from well_upao.models.na_transformer import T_IN
from well_upao.physics.objective import band_index
from well_upao.predict.backtests import window_evidence
from well_upao.predict.evidence import START, median_curves, pick
from well_upao.predict.expected_starts import expected_starts_per_window, horizon_values
from well_upao.predict.predictors import Predictor, place_rows
from well_upao.predict.rollout import autoregressive_frames
from well_upao.predict.windows import window_of_step

#: the width of the boundary band a forecast imposes (``--boundary``): the UPAO objective's
BAND_WIDTH = 1


def windows_for(steps: int) -> list[tuple[str, int, int]]:
    """The windows a forecast of ``steps`` steps reaches and the steps each covers (from 1): ``one_step`` step 1,
    ``6:12`` steps 2-12, ``13:30`` steps 13 on (``predict.windows.window_of_step``)."""
    out: list[tuple[str, int, int]] = []
    for step in range(1, steps + 1):
        window = window_of_step(step)
        if out and out[-1][0] == window:
            out[-1] = (window, out[-1][1], step)
        else:
            out.append((window, step, step))
    return out


class Evidence:
    """The pooled backtests of every candidate over the histories of a forecast (see the module docstring)."""

    def __init__(self) -> None:
        self.curves: dict[str, list[torch.Tensor]] = {}
        self.matrices: dict[str, list[torch.Tensor]] = {}
        self.uniform: set[str] = set()

    def add(self, rows: list[Predictor], history: History, channels: list[str]) -> dict[str, list[float]]:
        """One history's backtests (its channels with no spatial spread left out of the VRMSE-unit curves); returns
        its curves in step units, for its entry in the JSON."""
        flat = uniform_channels(history.frames[-1])
        mask = torch.ones(history.frames.shape[-1])
        mask[flat] = 0
        self.uniform |= {channels[c] for c in flat}
        if not mask.any():
            mask[:] = 1  # every channel is uniform: the VRMSE-unit curve over all of them, flagged in the notes
        curves, _, matrices = window_evidence(rows, history.frames, history.context, solver=True, mask=mask)
        for name, curve in curves.items():
            self.curves.setdefault(name, []).append(curve)
        for name, matrix in matrices.items():
            self.matrices.setdefault(name, []).append(matrix)
        return {name: [float(v) for v in curve[0]] for name, curve in curves.items()}

    def picks(self, steps: int, forced: str | None) -> list[WindowPick]:
        medians = median_curves(self.curves)
        out = []
        for window, first, last in windows_for(steps):
            chosen, evidence = pick(medians, window)
            expected = expected_starts_per_window(self.matrices, window)
            if forced is None and chosen is None:
                raise ForecastError(
                    f"no candidate has a backtest on a history of this length (it needs more than {START} frames): "
                    f"raise --history, or name the predictor to use with --predictor"
                )
            name = forced or chosen
            reach = evidence[name].describe() if name in evidence else "no backtest"
            values = {n: e.value for n, e in evidence.items()}
            out.append(WindowPick(window, name, first, last, values, expected, reach, forced is not None))
        return out

    def per_step(self, picks: list[WindowPick], steps: int) -> list[dict]:
        """Each step's predictor and its expected VRMSE (rule 3's value at that horizon for the step's pick; a point
        value, see the module docstring)."""
        values = {name: horizon_values(matrices, steps) for name, matrices in self.matrices.items()}
        out = []
        for step in range(1, steps + 1):
            name = next(p for p in picks if p.first <= step <= p.last).predictor
            curve = values.get(name)
            out.append({"step": step, "predictor": name, "expected_vrmse": curve[step - 1] if curve else math.nan})
        return out


def band_imposer(
    boundary: Path | None, given: ForecastInput, history: History, slot: int
) -> Callable[[int, torch.Tensor], torch.Tensor]:
    """``impose(k, frame)``: forecast step ``k``'s frame ``(1, *space, C)`` with the observed boundary band of that
    step (width ``BAND_WIDTH``, gathered by index from trajectory ``slot`` of the boundary file, the forecast's
    ``slot``-th trajectory: no interior point is read); the frame itself without ``boundary``."""
    if boundary is None:
        return lambda k, frame: frame
    observations = TrajectoryFile(boundary, given.files[0].fields)
    if list(observations.channels) != given.channels:
        raise ForecastError(f"--boundary {boundary} holds other channels than the input: give the same fields")
    if slot >= len(observations):
        raise ForecastError(
            f"--boundary {boundary} holds {len(observations)} trajectories; the forecast has more: give one per "
            "forecast trajectory, in the input's order"
        )
    observed = observations[slot]
    space = tuple(history.frames.shape[1:-1])
    index = band_index(space, BAND_WIDTH)
    first = 0 if given.start is None else given.start

    def impose(k: int, frame: torch.Tensor) -> torch.Tensor:
        stored = first + (k - 1) * given.stride
        if stored >= observed.frames.shape[0]:
            raise ForecastError(
                f"--boundary {boundary} stores {observed.frames.shape[0]} frames; forecast step {k} needs its frame "
                f"{stored}: give boundary observations for every forecast step, or fewer --steps"
            )
        band = observed.frames[stored].reshape(-1, frame.shape[-1])[index]
        out = frame.clone().reshape(frame.shape[0], -1, frame.shape[-1])
        out[:, index] = band.to(out)
        return out.reshape(frame.shape)

    return impose


def rolled_out(row: Predictor, history: History, steps: int, impose) -> Iterator[torch.Tensor]:
    """``row``'s forecast frames ``(1, *space, C)`` from the history alone, one at a time, each with the observed band
    imposed (``impose``) before it is fed back."""
    counter = iter(range(1, steps + 1))
    window = history.frames[None]
    return autoregressive_frames(lambda w: impose(next(counter), row.predict(w, history.context)), window, steps)


def forecast(request: ForecastRequest) -> Forecast:
    """The forecast of ``request`` (see the module docstring), its files written to ``request.out``."""
    started = time.perf_counter()
    request.check()
    given, rows = prepared(request)
    evidence = Evidence()
    backtests, last_times = [], []
    bar = tqdm(total=given.n_trajectories, desc="forecast: backtests", unit="traj", disable=not request.progress)
    for history in given.histories():
        backtests.append(evidence.add(rows.rows, history, given.channels))
        last_times.append(history.last_time)
        bar.update()
    bar.close()
    forced = rows.named(request.predictor).name if request.predictor else None
    picks = evidence.picks(request.steps, forced)
    result = Forecast(
        given.dataset,
        given.channels,
        given.history,
        given.stride,
        request.steps,
        given.step,
        [row.name for row in rows.rows],
        picks,
        evidence.per_step(picks, request.steps),
        [],
        notes=notes_of(given, rows, evidence),
    )
    with staged_folder(request.out) as stage:
        writer = ForecastWriter(stage / "forecast.hdf5", given, request.steps, request.with_history, last_times)
        with writer:
            bar = tqdm(
                total=given.n_trajectories * request.steps, desc="forecast", unit="step", disable=not request.progress
            )
            for slot, history in enumerate(given.histories()):
                frames = roll_trajectory(rows, picks, history, given, request, slot)
                for step, frame in enumerate(frames, 1):
                    writer.write(slot, history, step, frame[0])
                    bar.update()
                result.trajectories.append(trajectory_entry(history, picks, backtests[slot]))
            bar.close()
        result.seconds = time.perf_counter() - started
        write_json(stage / "forecast.json", result, request)
        if request.figures:
            plot_forecast(result, stage / "forecast.hdf5", stage, given)
    result.hdf5, result.json = request.out / "forecast.hdf5", request.out / "forecast.json"
    result.figures = sorted(request.out.glob("forecast_*.png"))
    return result


def prepared(request: ForecastRequest) -> tuple[ForecastInput, Candidates]:
    """The input and the candidates, every check that can refuse the request made (nothing written yet)."""
    _, settings = run_settings(request.source)
    history = request.history or settings.get("history") or T_IN
    stride = request.stride or settings.get("stride") or 1
    given = ForecastInput(
        request.input, request.split, int(history), int(stride), request.start, request.max_trajectories
    )
    if given.n_trajectories == 0:
        raise ForecastError(f"--input {request.input} holds no trajectory")
    rows = candidates(request.source, given, solver=request.solver)
    if request.predictor:
        rows.named(request.predictor)
    for row in rows.rows:
        if row.history is not None and row.history > given.history and not row.can_start_from(given.history):
            raise ForecastError(f"{row.name} reads {row.history} frames: --history must be at least that")
    try:
        place_rows(rows.rows, request.device)
    except ValueError as error:
        raise ForecastError(str(error)) from error
    first = next(iter(given.histories()))  # the first history read and checked before anything is written
    within_budget(rows, first, request)
    return given, rows


def within_budget(rows: Candidates, history: History, request: ForecastRequest) -> None:
    """Leave the solver step out of the candidates (said in the notes) when step doubling needs more than
    ``request.solver_budget`` RK4 sub-steps for the next frame of the first history: a count that depends on the PDE,
    the grid and the data alone (seconds would depend on the machine and its load, and so would the candidates). One
    prediction costs about ``2 S`` RK4 steps for ``S`` sub-steps, times the grid's size; its backtests and rollout
    take about ``2 (H - 3) + steps`` predictions a trajectory. ``--predictor solver`` keeps it whatever it costs."""
    solver = next((row for row in rows.rows if row.kind == "solver"), None)
    if solver is None or request.predictor == solver.name or request.solver_budget is None:
        return
    needed = solver.substeps_needed(history.frames[None], history.context, request.solver_budget)
    if needed is None:
        rows.rows.remove(solver)
        rows.solver_over_budget = True
        rows.notes.append(
            f"the solver step needs more than {request.solver_budget} RK4 sub-steps for one prediction (step doubling "
            f"on the first history; --solver-budget {request.solver_budget}): left out of the candidates "
            "(--predictor solver keeps it)"
        )
    else:
        rows.notes.append(
            f"the solver step converged in {needed} RK4 sub-steps on the first history (--solver-budget "
            f"{request.solver_budget})"
        )


def roll_trajectory(
    rows: Candidates,
    picks: list[WindowPick],
    history: History,
    given: ForecastInput,
    request: ForecastRequest,
    slot: int = 0,
) -> Iterator[torch.Tensor]:
    """The forecast frames of one trajectory, step by step: each candidate a pick uses rolls out in lockstep from the
    history, as long as it is used; each step takes the frame of its window's pick."""
    last_use: dict[str, int] = {}
    for p in picks:
        last_use[p.predictor] = max(last_use.get(p.predictor, 0), p.last)
    impose = band_imposer(request.boundary, given, history, slot)
    streams = {name: rolled_out(rows.named(name), history, steps, impose) for name, steps in last_use.items()}
    for step in range(1, request.steps + 1):
        frames = {name: next(stream) for name, stream in streams.items() if step <= last_use[name]}
        yield frames[next(p.predictor for p in picks if p.first <= step <= p.last)]


def trajectory_entry(history: History, picks: list[WindowPick], curves: dict[str, list[float]]) -> dict:
    return {
        "file": str(history.file),
        "trajectory": history.index,
        "last_history_time": history.last_time,
        "predictor_per_window": {p.window: p.predictor for p in picks},
        "backtest_curves": curves,
    }


def notes_of(given: ForecastInput, rows: Candidates, evidence: Evidence) -> list[str]:
    notes = [
        f"history: {given.history} frames at stride {given.stride} (dt {given.step:.6g}); the evidence is the "
        f"candidates' backtests on the histories of {given.n_trajectories} trajectories, pooled by their median"
    ]
    if evidence.uniform:
        notes.append(
            f"channels {sorted(evidence.uniform)} have no spatial spread in a history's last frame: their VRMSE "
            "would divide by the Well's epsilon alone, so the expected VRMSE leaves them out"
        )
    notes += rows.notes
    if rows.pde is None:
        notes.append(f"no PDE is registered for {given.dataset!r}: no solver candidate")
    elif not rows.solver_asked:
        notes.append("the solver step was not asked for (--no-solver)")
    elif not any(r.kind == "solver" for r in rows.rows) and not rows.solver_over_budget:
        notes.append(f"the solver step does not support {rows.pde.name} on this grid: no solver candidate")
    dropped = [e.name for e in given.files[0].entries if e.time_varying and e not in given.files[0].varying_entries]
    if dropped:
        notes.append(f"fields {dropped} are not predicted (the dataset's field selection leaves them out)")
    return notes
