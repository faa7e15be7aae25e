"""Pretraining: simulated PDE families (PDEBench equations), the corpus generator, mixture data."""
