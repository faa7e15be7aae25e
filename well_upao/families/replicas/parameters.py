"""The parameter tables of the Well replicas (numbers only, no solver): the parameter sets, domains and initial-
condition choices that ``well_upao.families.replicas.families`` lists without loading a solver (so the registry
and ``well-upao --help`` stay free of torch). Each solver module imports its table from here."""

from __future__ import annotations

# gray_scott
#: the Well's six parameter sets: name -> (F, k)
PATTERNS: dict[str, tuple[float, float]] = {
    "gliders": (0.014, 0.054),
    "bubbles": (0.098, 0.057),
    "maze": (0.029, 0.057),
    "worms": (0.058, 0.065),
    "spirals": (0.018, 0.051),
    "spots": (0.03, 0.062),
}

# shear_flow
#: the Well's parameter sets and initial-condition knobs
REYNOLDS = (1e4, 5e4, 1e5, 5e5)
SCHMIDT = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
N_SHEAR = (2, 4)
N_BLOBS = (2, 3, 4, 5)
WIDTHS = (0.25, 0.5, 1.0, 2.0, 4.0)

# rayleigh_benard
#: the Well's parameter sets and initial-condition knobs
RAYLEIGH = (1e6, 1e7, 1e8, 1e9, 1e10)
PRANDTL = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
DELTA_B0 = (0.2, 0.4, 0.6, 0.8, 1.0)
NOISE_SEEDS = tuple(range(40, 50))

# active_matter
LENGTH = 10.0
ALPHAS = (-1.0, -2.0, -3.0, -4.0, -5.0)
ZETAS = (1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0)
