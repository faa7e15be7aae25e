"""Float64 arithmetic whose every bit is fixed by IEEE-754, so generated datasets are the same on every x86 CPU.

Two things in numpy are *not* fixed by the standard and change with the machine (measured, see
``reports/generation.md``): its elementary functions (``np.exp`` rounds differently with AVX-512 than with AVX2,
complex multiplication uses FMA where the CPU has it) and BLAS products (OpenBLAS picks a kernel per CPU, and
kernels add in different orders). Everything else we use (``+ - * /``, ``sqrt``, ``rint``, ``ldexp``, casts,
``max``) is correctly rounded or exact, hence portable. This module builds the rest from those:

* :func:`sincos` and :func:`exp`: Cody-Waite argument reduction (``x - q C1 - q C2 - q C3`` with the constant split
  so that ``q C1``, ``q C2`` are exact) and Taylor polynomials evaluated by Horner's rule, truncated far below
  float64 rounding. Within two float64 ulps of the true values (tested against mpmath).
* :func:`exact_matmul`: ``a @ b`` through BLAS, made order-independent by making every product and partial sum
  exact. Each row of ``a`` and column of ``b`` is scaled by a power of two and split into two integer-valued
  halves ``hi + lo 2^-(p+1)`` of ``p`` bits, ``p = (52 - ceil(log2 K)) // 2``; then ``hi @ hi``,
  ``hi @ lo`` and ``lo @ hi`` are integer sums below ``2^53``, which every kernel, in any order, with or without
  FMA, computes exactly. They are combined with one rounding; the error is at most about
  ``K 2^-(2p) max_k |a_ik| max_k |b_kj|`` (``2^-48`` relative for ``K <= 16`` terms of similar size).

The final float32 rounding of a dataset then sees the same float64 value on every machine.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import numpy as np

#: pi/2 = C1 + C2 + C3: C1, C2 carry 33 significant bits (their products with |q| < 2^20 are exact)
_PIO2_1 = float.fromhex("0x1.921fb54400000p+0")
_PIO2_2 = float.fromhex("0x1.0b4611a600000p-34")
_PIO2_3 = float.fromhex("0x1.3198a2e037073p-69")
_TWO_OVER_PI = float.fromhex("0x1.45f306dc9c883p-1")
#: largest |x| for which the reduction above is exact: |q| < 2^20
SINCOS_MAX_ARGUMENT = 2.0**20

#: ln 2 = L1 + L2, L1 with 32 significant bits (q L1 exact for the |q| <= 1100 of finite results)
_LN2_1 = float.fromhex("0x1.62e42fee00000p-1")
_LN2_2 = float.fromhex("0x1.a39ef35793c76p-33")
_INV_LN2 = float.fromhex("0x1.71547652b82fep+0")


def _taylor(orders: range, alternating: bool = False) -> list[float]:
    """Coefficients ``1 / n!`` for ``n`` in ``orders`` (``-1/n!, +1/n!, ...`` if ``alternating``), each correctly
    rounded from the exact rational."""
    return [float(Fraction((-1) ** (i + 1) if alternating else 1, factorial(n))) for i, n in enumerate(orders)]


#: sin r = r + r z (S1 + z (S2 + ...)), z = r^2, S_i = (-1)^i / (2i + 1)!, up to r^17 (next term < 1e-19 at pi/4)
_SIN = _taylor(range(3, 18, 2), alternating=True)
#: cos r = 1 + z (C1 + z (C2 + ...)), C_i = (-1)^i / (2i)!, up to r^18
_COS = _taylor(range(2, 19, 2), alternating=True)
#: exp r = 1 + r (1 + r (1/2! + ...)) up to r^14/14! (next term < 1e-19 for |r| <= ln(2)/2)
_EXP = _taylor(range(1, 15))


def _horner(z: np.ndarray, coefficients: list[float]) -> np.ndarray:
    """``c0 + z (c1 + z (c2 + ...))``."""
    result = np.full_like(z, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result *= z
        result += c
    return result


def sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin x, cos x)`` in float64 for ``|x| <= 2^20``: reduce ``r = x - q pi/2`` (q = rint(2x/pi)), evaluate the
    polynomials on ``|r| <= pi/4`` and pick by quadrant ``q mod 4``. Odd/even symmetry holds bit for bit."""
    x = np.asarray(x, dtype=np.float64)
    if x.size and not np.max(np.abs(x), initial=0.0) <= SINCOS_MAX_ARGUMENT:
        raise ValueError(f"sincos: arguments must be finite with |x| <= 2^20 (got max |x| = {np.abs(x).max()})")
    q = np.rint(x * _TWO_OVER_PI)
    r = x - q * _PIO2_1
    r -= q * _PIO2_2
    r -= q * _PIO2_3
    z = r * r
    sin_r = r * z
    sin_r *= _horner(z, _SIN)
    sin_r += r
    cos_r = _horner(z, [1.0, *_COS])
    quadrant = q.astype(np.int64)
    odd = (quadrant & 1) == 1
    sin_x = np.where(odd, cos_r, sin_r)
    cos_x = np.where(odd, sin_r, cos_r)
    np.negative(sin_x, out=sin_x, where=(quadrant & 2) != 0)
    np.negative(cos_x, out=cos_x, where=((quadrant + 1) & 2) != 0)
    return sin_x, cos_x


def exp(x: np.ndarray) -> np.ndarray:
    """``e^x`` in float64: ``x = q ln 2 + r`` (q = rint(x / ln 2), |r| <= ln(2)/2), ``e^x = 2^q e^r``. Underflows
    to 0 below about -745, overflows to inf above about 709.8; NaN stays NaN."""
    x = np.clip(np.asarray(x, dtype=np.float64), -1100.0, 1100.0)
    q = np.rint(x * _INV_LN2)
    r = x - q * _LN2_1
    r -= q * _LN2_2
    series = _horner(r, [1.0, *_EXP])
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(series, np.where(np.isfinite(q), q, 0.0).astype(np.int64))


def _split(values: np.ndarray, axis: int, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``values = (hi + lo 2^-(bits+1)) * scale`` along ``axis``'s slices: ``hi``, ``lo`` integer-valued with
    ``|hi|, |lo| <= 2^bits``, ``scale`` a power of two per slice (the slice's maximum magnitude below
    ``2^bits scale``). Drops what lies below ``2^-(2 bits + 1)`` of the slice's maximum."""
    largest = np.max(np.abs(values), axis=axis, keepdims=True)
    _, exponent = np.frexp(largest)  # largest < 2^exponent
    shift = bits - exponent
    scaled = np.ldexp(values, shift)
    hi = np.rint(scaled)
    lo = np.rint(np.ldexp(scaled - hi, bits + 1))
    return hi, lo, np.ldexp(1.0, -shift)


def exact_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (numpy's broadcasting rules, finite float64 inputs) computed so that the result does not depend on
    the BLAS kernel, its summation order, FMA or threads: see the module docstring. Rows of ``a`` and columns of
    ``b`` are scaled independently, so an output element depends on its own row and column only (not on what else
    shares the call). Zero results are +0.0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    terms = a.shape[-1]
    bits = (52 - max(1, (terms - 1).bit_length())) // 2
    a_hi, a_lo, a_scale = _split(a, -1, bits)
    b_hi, b_lo, b_scale = _split(b, -2, bits)
    result = np.matmul(a_hi, b_hi)  # exact: integers below 2^52
    cross = np.matmul(a_hi, b_lo)
    cross += np.matmul(a_lo, b_hi)  # exact: integers below 2^53
    cross *= 2.0 ** -(bits + 1)
    result += cross  # the one rounding
    result *= a_scale
    result *= b_scale
    result += 0.0  # -0.0 -> +0.0 (the sign of an exact zero may depend on the kernel)
    return result
