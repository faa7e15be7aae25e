"""Portable float64 arithmetic: accuracy against mpmath, exact symmetries, and sums that no order can change."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from well_upao.families import portable
from well_upao.families.portable import exact_matmul, exp, sincos

mpmath = pytest.importorskip("mpmath")


def ulp_errors(values: np.ndarray, reference) -> np.ndarray:
    """|value - reference| in units of the float64 spacing at the reference, with mpmath at 120 bits."""
    with mpmath.workprec(120):
        errors = []
        for value, arg in zip(values.ravel(), reference[1].ravel(), strict=True):
            exact = reference[0](mpmath.mpf(float(arg)))
            spacing = np.spacing(abs(float(exact))) if exact != 0 else np.finfo(float).smallest_subnormal
            errors.append(float(abs(mpmath.mpf(float(value)) - exact) / mpmath.mpf(spacing)))
    return np.array(errors)


def test_split_constants_sum_to_pi_over_two_and_ln2():
    with mpmath.workprec(200):
        pio2 = mpmath.mpf(portable._PIO2_1) + portable._PIO2_2 + portable._PIO2_3
        assert abs(pio2 - mpmath.pi / 2) < mpmath.mpf(2) ** -120
        ln2 = mpmath.mpf(portable._LN2_1) + portable._LN2_2
        assert abs(ln2 - mpmath.log(2)) < mpmath.mpf(2) ** -85
    for constant, bits in ((portable._PIO2_1, 33), (portable._PIO2_2, 33), (portable._LN2_1, 32)):
        mantissa, _ = np.frexp(constant)
        assert float(np.ldexp(mantissa, bits)).is_integer()  # at most `bits` significant bits: q * C exact


def test_sincos_within_two_ulps_of_mpmath():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-8, 8, 600), rng.uniform(-2e5, 2e5, 200), np.arange(-40, 41) * np.pi / 4])
    sin_x, cos_x = sincos(x)
    assert ulp_errors(sin_x, (mpmath.sin, x)).max() <= 2.0
    assert ulp_errors(cos_x, (mpmath.cos, x)).max() <= 2.0
    assert sincos(np.array([0.0]))[0][0] == 0.0 and sincos(np.array([0.0]))[1][0] == 1.0


def test_sincos_symmetry_is_exact():
    x = np.random.default_rng(1).uniform(0, 50, 1000)
    (sin_plus, cos_plus), (sin_minus, cos_minus) = sincos(x), sincos(-x)
    np.testing.assert_array_equal(sin_minus, -sin_plus)
    np.testing.assert_array_equal(cos_minus, cos_plus)


@pytest.mark.parametrize("bad", [np.nan, 2.0**21, -np.inf])
def test_sincos_rejects_arguments_it_cannot_reduce(bad):
    with pytest.raises(ValueError, match="2\\^20"):
        sincos(np.array([0.5, bad]))


def test_exp_within_one_ulp_of_mpmath():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-700, 700, 500), rng.uniform(-3, 3, 300), [0.0, -1e-300, 1e-17]])
    assert ulp_errors(exp(x), (mpmath.exp, x)).max() <= 1.0


def test_exp_limits():
    np.testing.assert_array_equal(exp(np.array([-800.0, 800.0, -np.inf, np.inf])), [0.0, np.inf, 0.0, np.inf])
    assert np.isnan(exp(np.array([np.nan])))[0]


def exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b in exact rational arithmetic, rounded once to float64."""
    rows = [[Fraction(float(v)) for v in row] for row in a]
    columns = [[Fraction(float(v)) for v in column] for column in b.T]
    return np.array([[float(sum(x * y for x, y in zip(r, c, strict=True))) for c in columns] for r in rows])


@pytest.mark.parametrize("terms", [1, 5, 16, 40])
def test_exact_matmul_error_bound(terms):
    """Error at most K 2^-(2p) max_k |a_ik| max_k |b_kj| (+ the final rounding), p = (52 - ceil(log2 K)) // 2."""
    rng = np.random.default_rng(terms)
    a = rng.standard_normal((7, terms)) * np.logspace(-3, 3, terms)  # mixed magnitudes within a row
    b = rng.standard_normal((terms, 9))
    bits = (52 - max(1, (terms - 1).bit_length())) // 2
    exact = exact_product(a, b)
    bound = terms * 2.0 ** -(2 * bits) * np.outer(np.abs(a).max(axis=1), np.abs(b).max(axis=0))
    assert (np.abs(exact_matmul(a, b) - exact) <= bound + np.spacing(np.abs(exact))).all()
    assert (np.abs(exact_matmul(a, b) - exact) > 0).any()  # the bound is not vacuous: rounding does happen


def test_exact_matmul_does_not_depend_on_summation_order_or_neighbours():
    """Permuting the summed index changes every partial sum: equal bits prove the sums are exact. An element does
    not depend on the other rows and columns of the call either."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 30, 16)) * 10.0 ** rng.integers(-4, 4, (4, 30, 1))
    b = rng.standard_normal((16, 50))
    product = exact_matmul(a, b)
    for permutation in (np.arange(16)[::-1], rng.permutation(16)):
        np.testing.assert_array_equal(exact_matmul(a[..., permutation], b[permutation]), product)
    np.testing.assert_array_equal(exact_matmul(a[2, 5:9], b[:, 10:13]), product[2, 5:9, 10:13])


def test_exact_matmul_zeros_are_positive():
    a = np.array([[1.0, -1.0], [0.0, -0.0]])
    b = np.array([[-0.0, 1.0], [0.0, 1.0]])
    result = exact_matmul(a, b)
    assert (result == 0).all() and not np.signbit(result).any()
