"""What a forecast is asked (``ForecastRequest``) and what it gives (``Forecast``, one ``WindowPick`` per window):
the types the forecast's core makes and its output and figures read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from well_upao.forecast.inputs import ForecastError
from well_upao.predict.expected import Expected
from well_upao.predict.windows import window_of_step


@dataclass
class ForecastRequest:
    """What to forecast. ``source``: a run folder, a checkpoint, a shipped backbone name or ``classical``;
    ``history`` / ``stride``: default the run's, else 8 frames at stride 1; ``start``: forecast from that stored frame
    (the history ends before it) instead of after the file's last frame; ``predictor``: one candidate for every step
    instead of the pick; ``boundary``: a Well file of observed boundary bands at the forecast's frames (indexed as the
    input's); ``max_trajectories``: the input's first trajectories only; ``solver``: the solver step is a
    candidate where the PDE has one and step doubling converges in at most ``solver_budget`` RK4 sub-steps for the
    first history's next frame (``forecast.core.within_budget``)."""

    source: str
    input: Path
    out: Path = Path("forecast")
    history: int | None = None
    steps: int = 30
    split: str = "valid"
    start: int | None = None
    stride: int | None = None
    predictor: str | None = None
    with_history: bool = False
    boundary: Path | None = None
    max_trajectories: int | None = None
    solver: bool = True
    #: RK4 sub-steps one prediction of the solver step may need for it to stay a candidate (``None``: any): 128
    #: keeps the shear-flow replica's solver (at most 128, reports/solver_dealias.md) and leaves out the held-out
    #: Kuramoto-Sivashinsky (256) and Swift-Hohenberg (1024) sets' (reports/forecast_check.md)
    solver_budget: int | None = 128
    device: str = "auto"
    progress: bool = True
    figures: bool = True

    def check(self) -> None:
        if self.steps < 1:
            raise ForecastError(f"--steps must be >= 1, got {self.steps}")
        if self.history is not None and self.history < 1:
            raise ForecastError(f"--history must be >= 1, got {self.history}")
        if self.stride is not None and self.stride < 1:
            raise ForecastError(f"--stride must be >= 1, got {self.stride}")


@dataclass
class WindowPick:
    """One window's choice: the candidate ``predictor`` its evidence trusts (or the one forced), the forecast steps it
    covers (``first``..``last``), every candidate's evidence (``evidence``, backtest error in units of the step) and
    expected VRMSE (``expected``), how far the evidence reaches (``reach``) and whether the pick was forced."""

    window: str
    predictor: str
    first: int
    last: int
    evidence: dict[str, float]
    expected: dict[str, Expected]
    reach: str
    forced: bool = False

    def as_dict(self) -> dict:
        chosen = self.expected.get(self.predictor)
        return {
            "window": self.window,
            "steps": [self.first, self.last],
            "predictor": self.predictor,
            "forced": self.forced,
            "expected_vrmse": None if chosen is None else chosen.as_dict(),
            "evidence": self.evidence,
            "reach": self.reach,
            "expected_vrmse_by_candidate": {name: e.as_dict() for name, e in self.expected.items()},
        }


@dataclass
class Forecast:
    """A finished forecast: its windows' picks, the expected VRMSE per step, the trajectories forecast and the files
    written (``hdf5``, ``json``, ``figures``)."""

    dataset: str
    channels: list[str]
    history: int
    stride: int
    steps: int
    dt: float
    candidates: list[str]
    picks: list[WindowPick]
    per_step: list[dict]
    trajectories: list[dict]
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    hdf5: Path | None = None
    json: Path | None = None
    figures: list[Path] = field(default_factory=list)

    def predictor_at(self, step: int) -> str:
        """The candidate forecast step ``step`` (from 1) is taken from."""
        return self.pick_of(window_of_step(step)).predictor

    def pick_of(self, window: str) -> WindowPick:
        return next(p for p in self.picks if p.window == window)

    def summary(self) -> str:
        """One line per window: the steps, the predictor, the expected VRMSE with its interval."""
        lines = []
        for p in self.picks:
            chosen = p.expected.get(p.predictor)
            expected = chosen.describe() if chosen is not None else "no expected error (no backtest)"
            forced = " (forced)" if p.forced else ""
            lines.append(f"steps {p.first}-{p.last} ({p.window}): {p.predictor}{forced}, {expected}; {p.reach}")
        return "\n".join(lines)
