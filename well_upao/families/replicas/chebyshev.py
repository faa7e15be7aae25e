"""Chebyshev collocation on ``[0, L]``: points, differentiation, quadrature and interpolation to other points.

Points ``z_j = L (1 - cos(pi j / N)) / 2``, ``j = 0..N`` (both ends included). The differentiation matrix is the
classical one (Trefethen, *Spectral Methods in MATLAB*, ch. 6) with the negative-sum trick for its diagonal,
scaled from ``[-1, 1]`` to ``[0, L]``; quadrature weights are Clenshaw-Curtis; interpolation is barycentric with
the second-kind weights ``(-1)^j`` (halved at both ends). All exact for polynomials of degree ``<= N``.
"""

from __future__ import annotations

import math

import torch


def points(n: int, length: float = 1.0) -> torch.Tensor:
    j = torch.arange(n + 1, dtype=torch.float64)
    return length * (1 - torch.cos(math.pi * j / n)) / 2


def differentiation_matrix(n: int, length: float = 1.0) -> torch.Tensor:
    """``D`` with ``(D f)(z_i) = f'(z_i)`` for polynomials of degree ``<= n`` on the points of ``points``."""
    j = torch.arange(n + 1, dtype=torch.float64)
    x = -torch.cos(math.pi * j / n)  # increasing on [-1, 1], mapped to z = L (x + 1) / 2
    c = torch.ones(n + 1, dtype=torch.float64)
    c[0] = c[-1] = 2
    c = c * (-1) ** j
    dx = x[:, None] - x[None, :]
    matrix = (c[:, None] / c[None, :]) / (dx + torch.eye(n + 1, dtype=torch.float64))
    matrix = matrix - torch.diag(matrix.sum(dim=1))
    return matrix * (2.0 / length)


def quadrature_weights(n: int, length: float = 1.0) -> torch.Tensor:
    """Clenshaw-Curtis weights: ``sum_j w_j f(z_j) = integral_0^L f`` for polynomials of degree ``<= n``."""
    theta = math.pi * torch.arange(n + 1, dtype=torch.float64) / n
    weights = torch.zeros(n + 1, dtype=torch.float64)
    interior = torch.arange(1, n)
    v = torch.ones(n - 1, dtype=torch.float64)
    if n % 2 == 0:
        weights[0] = weights[n] = 1.0 / (n**2 - 1)
        for k in range(1, n // 2):
            v = v - 2 * torch.cos(2 * k * theta[interior]) / (4 * k**2 - 1)
        v = v - torch.cos(n * theta[interior]) / (n**2 - 1)
    else:
        weights[0] = weights[n] = 1.0 / n**2
        for k in range(1, (n - 1) // 2 + 1):
            v = v - 2 * torch.cos(2 * k * theta[interior]) / (4 * k**2 - 1)
    weights[interior] = 2 * v / n
    return weights * (length / 2)


def interpolation_matrix(n: int, targets: torch.Tensor, length: float = 1.0) -> torch.Tensor:
    """``P`` with ``(P f)(t_i) = f(t_i)`` for polynomials of degree ``<= n`` sampled on ``points``."""
    nodes = points(n, length)
    weights = (-1.0) ** torch.arange(n + 1, dtype=torch.float64)
    weights[0] = weights[-1] = weights[0] / 2
    weights[-1] = 0.5 * (-1.0) ** n
    difference = targets.double()[:, None] - nodes[None, :]
    exact = difference == 0
    difference = torch.where(exact, torch.ones_like(difference), difference)
    terms = weights[None, :] / difference
    matrix = terms / terms.sum(dim=1, keepdim=True)
    hit = exact.any(dim=1)
    return torch.where(hit[:, None], exact.double(), matrix)
