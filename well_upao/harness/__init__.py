"""Every contact with the_well's internals, in one place (layer 4): the dataset names its loaders accept, the
datamodules (field selection, multi-dataset mixtures), decoding a Well sample (dt, grid, boundary codes, scalars),
the model factory that Hydra instantiates, and the base of our trainers over the Well's ``Trainer``.

The one contact outside this package is packaging: ``shims/the_well_configs/config.yaml``, the file the_well's
``train.py`` asserts exists next to it (the PyPI wheel ships none)."""
