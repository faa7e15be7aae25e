"""The held-out study's own solvers (issue 75): pseudo-spectral time steppers on a periodic square, in numpy.

Nothing here comes from the project's solvers (``well_upao.families``): the held-out sets must not share a
generator with anything a rule of the project was tuned on. Every equation is written in Fourier space as

    d_t v = L v + N(v),   v = FFT(u) per field,  L diagonal (one array per field),

and stepped by one of two schemes:

* ``Etdrk4``: exponential time differencing, fourth order (Cox & Matthews 2002), with its coefficients
  ``phi_k(h L)`` computed by the contour integral of Kassam & Trefethen (2005, 32 points on a unit circle about
  each ``h L``), which avoids the cancellation of the direct formulas at small ``|h L|``:

      a = E2 v + Q N(v),  b = E2 v + Q N(a),  c = E2 a + Q (2 N(b) - N(v))
      v' = E v + f1 N(v) + 2 f2 (N(a) + N(b)) + f3 N(c),
      E = e^{hL}, E2 = e^{hL/2}, Q = h (e^{hL/2} - 1) / (hL),
      f1 = h (-4 - hL + e^{hL} (4 - 3 hL + (hL)^2)) / (hL)^3,  f2 = h (2 + hL + e^{hL} (hL - 2)) / (hL)^3,
      f3 = h (-4 - 3 hL - (hL)^2 + e^{hL} (4 - hL)) / (hL)^3.

* ``Sbdf2``: the second-order semi-implicit backward-difference scheme (implicit L, extrapolated N):

      (3 v' - 4 v + v_prev) / (2h) = L v' + 2 N(v) - N(v_prev),

  started by one first-order step ``(v' - v) / h = L v' + N(v)`` (a local error O(h^2): the global order stays 2).

Nonlinear products are formed on the grid with the 2/3 rule (Fourier modes with ``|k_i| > N/3`` zeroed before and
after every product), so quadratic terms are alias-free; cubic ones are alias-free to the extent that the field's
spectrum has decayed at ``N/3`` (the grids are chosen so that it has: ``refine`` in ``heldout_pdes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: points of the Kassam-Trefethen contour
CONTOUR_POINTS = 32

#: ``N``: the state's spectra ``(fields, n, n//2 + 1)`` to the nonlinear term's, the same shape
Nonlinear = Callable[[np.ndarray], np.ndarray]


class SpectralGrid:
    """A periodic ``n x n`` grid of side ``length`` in real-to-complex Fourier space (``numpy.fft.rfft2``):
    wavenumbers, the 2/3-rule mask, transforms."""

    def __init__(self, n: int, length: float):
        self.n, self.length = n, length
        kx = np.fft.fftfreq(n, d=length / n) * 2.0 * np.pi
        ky = np.fft.rfftfreq(n, d=length / n) * 2.0 * np.pi
        self.kx, self.ky = np.meshgrid(kx, ky, indexing="ij")
        self.k2 = self.kx**2 + self.ky**2
        keep_x = np.abs(np.fft.fftfreq(n, d=1.0 / n)) <= n / 3.0
        keep_y = np.fft.rfftfreq(n, d=1.0 / n) <= n / 3.0
        self.dealias = np.outer(keep_x, keep_y)

    def to_spectral(self, u: np.ndarray) -> np.ndarray:
        return np.fft.rfft2(u)

    def to_grid(self, v: np.ndarray) -> np.ndarray:
        return np.fft.irfft2(v, s=(self.n, self.n))

    def product_grid(self, v: np.ndarray) -> np.ndarray:
        """The field of spectrum ``v`` on the grid after the 2/3 rule (what a nonlinear product may read)."""
        return self.to_grid(v * self.dealias)

    def project(self, product: np.ndarray) -> np.ndarray:
        """A product formed on the grid, back to Fourier space with the 2/3 rule."""
        return np.fft.rfft2(product) * self.dealias

    def gradient(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(d_x u, d_y u)`` on the grid (2/3 rule applied) from the spectrum ``v``."""
        masked = v * self.dealias
        return self.to_grid(1j * self.kx * masked), self.to_grid(1j * self.ky * masked)


def restrict(u: np.ndarray, n: int) -> np.ndarray:
    """``u`` (a periodic ``m x m`` field) on the ``n x n`` grid of the same square by Fourier truncation: the modes
    ``|k_i| < n/2`` kept exactly (the Nyquist mode of the coarse grid dropped)."""
    m = u.shape[-1]
    if n > m:
        raise ValueError(f"restrict makes a coarser grid: {n} points from {m}")
    if m == n:
        return u.copy()
    spectrum = np.fft.fft2(u)
    index = np.fft.fftfreq(n, d=1.0 / n).astype(int)
    index = index[np.abs(index) < n / 2]
    coarse = np.zeros((n, n), dtype=complex)
    rows = index % n
    coarse[np.ix_(rows, rows)] = spectrum[np.ix_(index % m, index % m)]
    return np.fft.ifft2(coarse).real * (n / m) ** 2


class Stepper:
    """A time stepper of ``d_t v = L v + N(v)`` with step ``h``; ``v``, ``L``: arrays ``(fields, n, n//2 + 1)``."""

    order: int

    def __init__(self, linear: Sequence[np.ndarray], nonlinear: Nonlinear, h: float):
        self.linear = np.stack([np.asarray(L, dtype=float) for L in linear])
        self.nonlinear = nonlinear
        self.h = h

    def reset(self) -> None:
        """Forget any history (multistep schemes): the next step starts afresh."""

    def step(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def advance(self, v: np.ndarray, steps: int) -> np.ndarray:
        for _ in range(steps):
            v = self.step(v)
        return v


def etdrk4_coefficients(hL: np.ndarray) -> dict[str, np.ndarray]:
    """``E, E2`` and ``Q, f1, f2, f3`` divided by ``h`` for each entry of ``h L`` (contour integral, see the module
    docstring)."""
    r = np.exp(1j * np.pi * (np.arange(1, CONTOUR_POINTS + 1) - 0.5) / CONTOUR_POINTS)
    z = hL[..., None] + r
    ez = np.exp(z)
    return {
        "E": np.exp(hL),
        "E2": np.exp(hL / 2),
        "Q": np.mean((np.exp(z / 2) - 1) / z, axis=-1).real,
        "f1": np.mean((-4 - z + ez * (4 - 3 * z + z**2)) / z**3, axis=-1).real,
        "f2": np.mean((2 + z + ez * (z - 2)) / z**3, axis=-1).real,
        "f3": np.mean((-4 - 3 * z - z**2 + ez * (4 - z)) / z**3, axis=-1).real,
    }


class Etdrk4(Stepper):
    """Cox-Matthews ETDRK4 with Kassam-Trefethen coefficients (the module docstring gives the stages)."""

    order = 4

    def __init__(self, linear: Sequence[np.ndarray], nonlinear: Nonlinear, h: float):
        super().__init__(linear, nonlinear, h)
        c = etdrk4_coefficients(h * self.linear)
        self.E, self.E2 = c["E"], c["E2"]
        self.Q, self.f1, self.f2, self.f3 = (h * c[name] for name in ("Q", "f1", "f2", "f3"))

    def stages(self, v: np.ndarray) -> tuple[np.ndarray, ...]:
        """``N`` at the four stages ``v, a, b, c``."""
        nv = self.nonlinear(v)
        a = self.E2 * v + self.Q * nv
        na = self.nonlinear(a)
        nb = self.nonlinear(self.E2 * v + self.Q * na)
        nc = self.nonlinear(self.E2 * a + self.Q * (2 * nb - nv))
        return nv, na, nb, nc

    def step(self, v: np.ndarray) -> np.ndarray:
        nv, na, nb, nc = self.stages(v)
        return self.E * v + self.f1 * nv + 2 * self.f2 * (na + nb) + self.f3 * nc


class Sbdf2(Stepper):
    """Second-order semi-implicit BDF (implicit ``L``, extrapolated ``N``), started by one first-order step."""

    order = 2

    def __init__(self, linear: Sequence[np.ndarray], nonlinear: Nonlinear, h: float):
        super().__init__(linear, nonlinear, h)
        self.first = 1.0 / (1.0 - h * self.linear)
        self.second = 1.0 / (1.5 - h * self.linear)
        self.reset()

    def reset(self) -> None:
        self.previous: tuple[np.ndarray, np.ndarray] | None = None

    def extrapolated(self, n_now: np.ndarray, n_before: np.ndarray) -> np.ndarray:
        """``N`` at the new time from its last two values: ``2 N(v) - N(v_prev)``."""
        return 2 * n_now - n_before

    def step(self, v: np.ndarray) -> np.ndarray:
        nv = self.nonlinear(v)
        if self.previous is None:
            new = self.first * (v + self.h * nv)
        else:
            v_prev, n_prev = self.previous
            new = self.second * (2 * v - 0.5 * v_prev + self.h * self.extrapolated(nv, n_prev))
        self.previous = (v, nv)
        return new


def integrate(
    stepper: Stepper, v0: np.ndarray, times: np.ndarray, substeps: int, start: float = 0.0
) -> list[np.ndarray]:
    """The state at each of ``times`` (equally spaced by ``substeps`` steps of ``stepper.h``, the first reached from
    ``start`` in whole steps), from ``v0`` at ``start``."""
    times = np.asarray(times, dtype=float)
    h = stepper.h
    lead = (times[0] - start) / h
    if lead < -1e-9 or abs(lead - round(lead)) > 1e-6 * max(1.0, lead):
        raise ValueError(f"the first time {times[0]} is not a whole number of steps {h} after {start}")
    if len(times) > 1 and not np.allclose(np.diff(times), substeps * h, rtol=1e-9, atol=0.0):
        raise ValueError(f"the times are not spaced by {substeps} steps of {h}")
    stepper.reset()
    v = stepper.advance(v0, round(lead))
    out = [v]
    for _ in times[1:]:
        v = stepper.advance(v, substeps)
        out.append(v)
    return out
