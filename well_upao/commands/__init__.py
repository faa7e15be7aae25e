"""The ``well-upao`` commands: ``parsers`` builds every command line (argparse only, no torch),
``running`` runs the chosen command's module after parsing, one module per command
(``generate_exact``, ``evaluate``, ...), each with ``run(args) -> int`` and its imports at the top."""
