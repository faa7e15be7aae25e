"""``benchmarks/performance/tile_rule.py``: the evaluations' comparison reads every number but the timings."""

from __future__ import annotations

from performance import tile_rule


def test_the_comparison_keeps_every_vrmse_and_leaves_out_the_timings():
    evaluation = {"scores": [{"mean_vrmse_well": 0.5, "rollout_vrmse_well": [0.1, 0.2], "seconds_per_prediction": 3.0}]}
    assert tile_rule.numbers(evaluation) == {
        "/scores[0]/mean_vrmse_well": 0.5,
        "/scores[0]/rollout_vrmse_well[0]": 0.1,
        "/scores[0]/rollout_vrmse_well[1]": 0.2,
    }
    other = {"scores": [{"mean_vrmse_well": 0.5, "rollout_vrmse_well": [0.1, 0.3], "seconds_per_prediction": 9.0}]}
    assert tile_rule.largest_difference(evaluation, other) == (0.3 - 0.2) / 0.3
