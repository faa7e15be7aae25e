"""Keep a study's ``well-upao evaluate`` results in the repository in compact form (issue 61, item 3).

An evaluation's JSON holds every row's per-channel and per-step numbers, its scorecard and figures' metadata; a
report's tables read a few of them. This script copies, for each ``evaluation_*.json`` under the folders given,
what the trust and calibration studies read: the evaluation's settings (dataset, split, stride, history, trajectories,
rollout steps), every row's one-step VRMSE (both definitions), the Well's rollout windows and the last rollout step,
the label-free pick per window with its evidence (``trust``) and the expected errors (``expected``), plus the
study's command line (``made_by``) and the commit this script ran at (``compacted_at``; the evaluations were made by
the package the study ran with), into ``OUT/<folder name>.json`` (written to a temporary name and renamed). A folder
holds one evaluation: one with several is refused.

    python benchmarks/harness/compact_evaluations.py RUNS/ee/evaluations/* --out reports/evaluations/expected_error \
        --made-by "python benchmarks/studies/expected_error_study.py --out RUNS/ee --report reports/expected_error.md"
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import portable_paths

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ("dataset", "split", "stride", "dt", "history", "n_trajectories", "rollout_steps_run", "rollout_starts")


def compact(evaluation: dict) -> dict:
    """The parts of an evaluation the studies' tables read (see the module docstring)."""
    rows = {}
    for score in evaluation["scores"]:
        rollout = score.get("rollout_vrmse_well") or []
        rows[score["name"]] = {
            "kind": score["kind"],
            "one_step_well": score.get("mean_vrmse_well"),
            "one_step_paper": score.get("mean_vrmse_paper"),
            "windows": score.get("rollout_windows", {}),
            "rollout_last": rollout[-1] if rollout else None,
            "selection": score.get("selection") or {},
        }
    return {
        **{key: evaluation.get(key) for key in SETTINGS},
        "rows": rows,
        "trust": evaluation.get("trust", {}),
        "expected": evaluation.get("expected", {}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding one evaluation_*.json each")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--made-by", required=True, help="the study's command line (kept with each record)")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    args.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for folder in args.folders:
        found = sorted(folder.glob("evaluation_*.json"))
        if not found:
            continue
        if len(found) > 1:
            raise SystemExit(f"{folder} holds {len(found)} evaluations; give folders of one each")
        record = compact(json.loads(found[0].read_text()))
        record |= {"made_by": portable_paths(args.made_by), "compacted_at": commit.stdout.strip()}
        path = args.out / f"{folder.name}.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        tmp.replace(path)
        written += 1
    print(f"wrote {written} compact evaluations to {args.out}")


if __name__ == "__main__":
    main()
