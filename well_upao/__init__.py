"""well-upao: unsupervised PDE-based adaptation of neighborhood-attention PDE foundation models, for The Well."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# Installed, the top-level `configs/` and `datasets_exact/` folders of the repository become the subpackages
# `well_upao.configs` and `well_upao.datasets_exact` (setuptools `package-dir` in pyproject.toml). When Python
# imports this package from a source checkout instead — `python -m the_well.benchmark.train ...` run in the
# repository root puts the checkout first on sys.path — make the same two subpackages resolvable by also
# searching the checkout root, so the harness and our Hydra config tree work there too.
_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "configs").is_dir() and (_checkout / "configs" / "config.yaml").is_file():
    __path__.append(str(_checkout))
