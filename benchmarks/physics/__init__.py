"""The datasets and their physics: the replica solvers' validation, residual floors, fitted coefficients, the
dataset pages' figures."""
