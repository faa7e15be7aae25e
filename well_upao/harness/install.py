"""The one file the_well's harness needs from an installation: ``the_well/benchmark/configs/config.yaml``.

the_well's ``benchmark/train.py`` asserts at import time that this file exists; the PyPI wheel ships none. A
regular install of well-upao puts ours there (``shims/the_well_configs``); an editable install (``pip install
-e .``) cannot, so ``python -m the_well.benchmark.train`` stops with the_well's ``AssertionError:
Configuration .../config.yaml is not an existing file``. ``well-upao fix-harness`` writes the file, and the
commands that run the harness say so when it is missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from well_upao.data.atomic import atomic_write_text

#: what ``shims/the_well_configs/config.yaml`` holds (a test keeps the two equal)
SHIM_TEXT = """\
# Installed by well-upao at the_well/benchmark/configs/config.yaml.
#
# The PyPI wheel of the-well 1.2.0 ships no benchmark configs, and the_well/benchmark/train.py asserts at
# import time that this file exists. well-upao's real primary config is `well_upao/configs/config.yaml`,
# which the Hydra SearchPathPlugin in `hydra_plugins/well_upao_searchpath` places *before* this directory,
# so this file is never composed while well-upao is installed. It deliberately selects nothing.
"""
FIX_COMMAND = "well-upao fix-harness"


def harness_config_path() -> Path:
    """Where the_well's ``train.py`` looks for its config (found without importing ``train.py``)."""
    spec = importlib.util.find_spec("the_well.benchmark")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the_well is not installed (pip install 'the-well[benchmark]==1.2.0')")
    return Path(next(iter(spec.submodule_search_locations))) / "configs" / "config.yaml"


def harness_config_missing() -> str | None:
    """A one-line explanation when the file is missing (``None`` when it is there)."""
    path = harness_config_path()
    if path.is_file():
        return None
    return f"the_well's harness needs {path}, which an editable install does not create; run `{FIX_COMMAND}` once"


def write_harness_config() -> Path:
    """Write the file (atomically) if it is missing; returns its path."""
    path = harness_config_path()
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, SHIM_TEXT)
    return path
