"""The quickstart's evaluation of one quickstart folder in its own process (``ladder_climb.py`` starts it with the
package to measure first on ``PYTHONPATH``): ``python ladder_case.py QUICKSTART OUT`` scores the folder's zero-shot,
UPAO and supervised checkpoints as ``well_upao.quickstart.run_quickstart`` does (``--match-solver`` the UPAO row,
figures included) and prints one JSON line: its wall seconds and the evaluation JSON's path."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
    from well_upao.harness import runs
    from well_upao.quickstart import UPAO_ROW, QuickstartConfig, backbone_label

    config = QuickstartConfig(out=folder)
    experiments = folder / "experiments"
    found = {
        model: next(experiments.glob(f"{config.pde}-{model}-*/0")) for model in ("na_nslora-upao", "na_lora-shifted")
    }
    rows = [
        (f"zero-shot ({backbone_label(config.backbone)})", folder / "zero_shot.pt"),
        (UPAO_ROW, runs.find_checkpoint(found["na_nslora-upao"])),
        ("supervised LoRA (reference)", runs.find_checkpoint(found["na_lora-shifted"])),
    ]
    request = EvaluationRequest(
        folder / "datasets", config.pde, stride=config.stride, out=out, progress=False, match_solver=UPAO_ROW
    )
    began = time.perf_counter()
    run_evaluation(request, [runs.RunCheckpoint.read(label, path) for label, path in rows])
    seconds = time.perf_counter() - began
    print(json.dumps({"seconds": seconds, "evaluation": str(next(out.glob("evaluation_*.json")))}))


if __name__ == "__main__":
    main()
