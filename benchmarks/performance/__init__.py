"""Speed and memory measured in one run on this machine, as ratios against a reference (attention, orthogonalisation,
the UPAO objective, rollouts, generation, scaling, pretraining and validation cost)."""
