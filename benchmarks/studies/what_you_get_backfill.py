"""Add ``rollout_first`` to "What you get" records made before the study wrote it, from the evaluation of the case that
made each record (read, never recomputed).

``rollout_first`` is each row's first rollout step from evaluate's rollout starts: the frames the forecast column's
first steps predict, so its one-step reference (``what_you_get_records.forecast_ratio``). A record is filled only
where its case folder (``<out>/<setting>/seed<S>/evaluation/evaluation_*.json``) is the run it records: every row's
one-step VRMSE in the record equals the evaluation's (to the record's 6 significant digits); otherwise it is left as
it is and named. Each record written to a temporary name and renamed; it notes the backfill (``backfilled``).

    python benchmarks/studies/what_you_get_backfill.py --out outputs/wyg2 outputs/wyg3 --seeds 42
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from studies.what_you_get_study import RECORDS, number


def evaluation_of(outs: list[Path], key: str, seed: int) -> Path | None:
    """The evaluation JSON of a case (``evaluation/``; the quickstart's case: ``quickstart/results/``), in the first
    study folder that holds it."""
    for out in outs:
        for folder in ("evaluation", "quickstart/results"):
            found = sorted((out / key / f"seed{seed}" / folder).glob("evaluation_*.json"))
            if found:
                return found[0]
    return None


def backfilled(record: dict, evaluation: dict) -> dict | None:
    """``record`` with each row's ``rollout_first`` from ``evaluation``, or ``None`` where the two are not the same
    run (a row's one-step VRMSE differs, or a row is missing)."""
    scores = {s["name"]: s for s in evaluation["scores"]}
    rows = {}
    for name, cells in record["rows"].items():
        score = scores.get(name)
        if score is None or number(score["mean_vrmse_well"]) != cells.get("one_step_well"):
            return None
        rollout = score.get("rollout_vrmse_well") or []
        rows[name] = cells | {"rollout_first": number(rollout[0]) if rollout else None}
    return record | {"rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, nargs="+", required=True, help="the study's data and run folders")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    parser.add_argument("--records", type=Path, default=RECORDS)
    args = parser.parse_args(argv)
    shown = " ".join(argv if argv is not None else sys.argv[1:])
    refused = []
    for path in sorted(args.records.glob("*-seed*.json")):
        key, seed = path.stem.rsplit("-seed", 1)
        record = json.loads(path.read_text())
        if int(seed) not in args.seeds or all("rollout_first" in c for c in record["rows"].values()):
            continue
        source = evaluation_of(args.out, key, int(seed))
        filled = None if source is None else backfilled(record, json.loads(source.read_text()))
        if filled is None:
            refused.append(f"{path.name} ({'no case folder' if source is None else 'another run'})")
            continue
        filled["backfilled"] = {
            "rollout_first": f"{datetime.date.today().isoformat()} by `python benchmarks/studies/"
            f"what_you_get_backfill.py {shown}` from the case's evaluation"
        }
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(filled, indent=1, sort_keys=True) + "\n")
        temporary.replace(path)
        print(f"{path.name}: rollout_first from {source}")
    if refused:
        print(f"left as they are: {', '.join(refused)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
