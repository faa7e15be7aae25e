"""The project's own health: the architecture counts of the source (``architecture_metrics.py``) and the commands'
reliability under bad inputs and kills (``reliability_battery.py``)."""
