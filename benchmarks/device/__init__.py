"""Prepared calls for a lent GPU machine: the GPU check in stages, its report, the wheels the machine needs, the
foundation backbone's device call."""
