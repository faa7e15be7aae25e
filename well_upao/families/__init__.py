"""How trajectories are made (layer 1): the family base, portable float64 arithmetic, the simulated pretraining
families and their solvers, PDEBench sources. The closed-form families live in ``well_upao.datasets_exact``."""
