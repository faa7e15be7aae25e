"""Hydra config tree of well-upao (installed as ``well_upao.configs``; put on Hydra's search path first by
``hydra_plugins.well_upao_searchpath``)."""
