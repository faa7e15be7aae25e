"""Float64 arithmetic whose every bit is fixed by IEEE-754, so generated datasets are the same on every x86 CPU.

Two things in numpy are *not* fixed by the standard and change with the machine (measured, see
``reports/generation.md``): its elementary functions (``np.exp`` rounds differently with AVX-512 than with AVX2,
complex multiplication uses FMA where the CPU has it) and BLAS products (OpenBLAS picks a kernel per CPU, and
kernels add in different orders). Everything else we use (``+ - * /``, ``sqrt``, ``rint``, ``ldexp``, casts,
``max``) is correctly rounded or exact, hence portable. This module builds the rest from those:

* ``sincos`` and ``exp``: Cody-Waite argument reduction (``x - q C1 - q C2 - q C3`` with the constant split
  so that ``q C1``, ``q C2`` are exact) and Taylor polynomials evaluated by Horner's rule, truncated far below
  float64 rounding. Within two float64 ulps of the true values (tested against mpmath).
* ``exact_matmul``: ``a @ b`` through BLAS, made order-independent by making every product and partial sum
  exact. Each row of ``a`` and each column of ``b`` is split into ``hi + lo`` on two power-of-two grids set by its
  largest entry, ``p = (52 - ceil(log2 K)) // 2`` bits each; then ``hi @ hi`` and ``[hi, lo] @ [lo; hi]`` are sums
  of multiples of one power of two below ``2^53`` of it, which every kernel, in any order, with or without FMA,
  computes exactly. They are added with one rounding; the error is at most about
  ``K 2^-(2p) max_k |a_ik| max_k |b_kj|`` (``2^-48`` relative for ``K <= 16`` terms of similar size).

The final float32 rounding of a dataset then sees the same float64 value on every machine with IEEE-754 float64
arithmetic (tested on x86-64 under several instruction sets, ``tests/data/test_reproducibility.py``; other
architectures are untested).
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


#: grids below 2^-400 are not used (products of two grid steps must stay normal numbers)
_SMALLEST_EXPONENT = -400


def _split(values: np.ndarray, axis: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``values ~ hi + lo`` per slice along ``axis``: ``hi`` on the grid ``q = 2^(e - bits)`` with ``2^e`` just above
    the slice's largest magnitude (so ``|hi| <= 2^bits q``), ``lo`` (what ``hi`` misses) on ``q 2^-(bits+1)``."""
    largest = np.max(np.abs(values), axis=axis, keepdims=True)
    _, exponent = np.frexp(largest)
    step = np.ldexp(1.0, np.maximum(exponent, _SMALLEST_EXPONENT) - bits)  # powers of two: products are exact
    hi = np.rint(values / step) * step
    fine_step = step * 2.0 ** -(bits + 1)
    lo = np.rint((values - hi) / fine_step) * fine_step
    return hi, lo


#: rows of ``a`` per block when ``b`` is one matrix: the block's float64 temporaries stay in the CPU cache
_BLOCK_ELEMENTS = 2**16


def exact_matmul(a: np.ndarray, b: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """``a @ b`` (numpy's broadcasting rules; finite float64 inputs below ``2^500`` in magnitude) computed so that
    the result does not depend on the BLAS kernel, its summation order, FMA or threads (see the module docstring),
    rounded to ``dtype`` once. Rows of ``a`` and columns of ``b`` are split independently, so an output element
    depends on its own row and column only, not on what else shares the call. Zero results are +0.0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    terms = a.shape[-1]
    bits = (52 - max(1, (terms - 1).bit_length())) // 2
    a_hi, a_lo = _split(a, -1, bits)
    b_hi, b_lo = _split(b, -2, bits)
    a_cross, b_cross = np.concatenate([a_hi, a_lo], axis=-1), np.concatenate([b_lo, b_hi], axis=-2)
    if b.ndim > 2:
        result = np.matmul(a_hi, b_hi)  # exact
        result += np.matmul(a_cross, b_cross)  # exact, then the one rounding
        return np.add(result, 0.0, out=np.empty(result.shape, dtype=dtype))  # -0.0 -> +0.0, then to dtype
    # one matrix: every row of a, in blocks whose float64 temporaries stay in the CPU cache
    a_hi, a_cross = a_hi.reshape(-1, terms), a_cross.reshape(-1, 2 * terms)
    out = np.empty((a_hi.shape[0], b.shape[1]), dtype=dtype)
    step = max(1, _BLOCK_ELEMENTS // max(1, b.shape[1]))
    high, cross = np.empty((step, b.shape[1])), np.empty((step, b.shape[1]))
    for start in range(0, a_hi.shape[0], step):
        rows = min(step, a_hi.shape[0] - start)
        np.matmul(a_hi[start : start + rows], b_hi, out=high[:rows])
        np.matmul(a_cross[start : start + rows], b_cross, out=cross[:rows])
        np.add(high[:rows], cross[:rows], out=high[:rows])
        np.add(high[:rows], 0.0, out=out[start : start + rows])
    return out.reshape(*a.shape[:-1], b.shape[1])
