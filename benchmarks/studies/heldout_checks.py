"""The numbers behind the solver checks of reports/heldout_sets.md, measured with the helpers of
``tests/test_heldout_sets.py`` (which asserts their bounds): each scheme's observed temporal order and that of its
broken variant, the frames' mismatch with the equation (and with a coefficient 10% off or ``N`` flipped), the error of
the linearised growth rate of three small modes, the registered PDE's floor on solver frames and its weakest mutation.

    python benchmarks/studies/heldout_checks.py        # about a minute on one core
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import torch

TESTS = Path(__file__).resolve().parents[2] / "tests"


def report(t, name: str) -> None:
    """Print the checks of ``name`` (``t``: the test module)."""
    from well_upao.physics import Grid
    from well_upao.physics.negative_control import ObservedWindow, negative_controls, residual_norms

    order = t.hp.FAMILIES[name].stepper.order
    broken = t.FirstOrderSbdf2 if order == 2 else t.BrokenEtdrk4
    print(f"{name}: observed orders {np.round(t.observed_orders(name), 2)}, broken {broken.__name__}: "
          f"{np.round(t.observed_orders(name, broken), 2)}")  # fmt: skip
    p = t.parameters(name)
    mutations = [{"scale": {k: 1.1}} for k in t.PARAMS[name]] + [{"flip_nonlinear": True}]
    wrong = ", ".join(f"{m}: {t.equation_mismatch(name, t.family(name, **m), p):.2e}" for m in mutations)
    print(f"  equation mismatch {t.equation_mismatch(name, t.family(name), p):.2e}; {wrong}")
    unit = 2 * math.pi / t.hp.FAMILIES[name].domain_length
    errors = [
        abs(t.small_mode_growth(name, t.family(name), t.PARAMS[name], m, 1.0)
            - t.growth_rate(name, unit**2 * (m[0] ** 2 + m[1] ** 2), t.PARAMS[name]))
        for m in [(1, 0), (2, 1), (3, 2)]
    ]  # fmt: skip
    print(f"  growth-rate errors of modes (1,0), (2,1), (3,2): {', '.join(f'{e:.1e}' for e in errors)}")
    fam = t.family(name)
    fam.spin_up = 2.0
    n = t.SIZE[name]
    frames = fam.evaluate(p, fam.grid_axes(n), np.arange(8) * 0.01)["u"]
    dx = fam.domain_length / n
    scalars = {k: torch.tensor([v]) for k, v in t.PARAMS[name].items()}
    window = ObservedWindow({t.hp.SLOTS[name]["u"]: torch.tensor(frames[None])}, 0.01, Grid((dx, dx), (True, True)),
                            scalars)  # fmt: skip
    bound = window.bound(t.hp.PDES[name], "central")
    controls = negative_controls(bound, window, factor=1.1)
    weakest = min(controls, key=lambda c: c.ratio)
    floor = residual_norms(bound, window, relative=True)["u"]
    print(f"  registered PDE: floor {floor:.2e}, weakest of {len(controls)} mutations: {weakest}")


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    sys.path.insert(0, str(TESTS))
    import test_heldout_sets as t

    for name in t.NAMES:
        report(t, name)


if __name__ == "__main__":
    main()
