"""Hydra SearchPathPlugin: puts well-upao's config tree first on Hydra's search path.

Hydra imports every module under the ``hydra_plugins`` namespace package and instantiates the
``SearchPathPlugin`` subclasses it finds. Prepending ``pkg://well_upao.configs`` makes our primary
``config.yaml`` (defaults for data, model, trainer, optimizer; wandb off unless asked) shadow whatever sits in
``the_well/benchmark/configs``, so ``python -m the_well.benchmark.train model=na_nslora trainer=upao`` works
without ``experiment=``/``server=``.
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class WellUpaoSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.prepend(provider="well-upao", path="pkg://well_upao.configs")
