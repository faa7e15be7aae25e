"""The studies' shared harness: harness runs as logged child processes (``jobs.py``), the study replicas
(``study_data.py``), report tables and evaluate's JSON (``tables.py``), a report's hand-written reading kept and
checked (``readings.py``), timing (``timing.py``), evaluations kept compact (``compact_evaluations.py``)."""
