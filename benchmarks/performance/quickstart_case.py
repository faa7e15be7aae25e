"""One quickstart harness run, timed by parts in its own process (``quickstart_speed.py`` starts it with the package
to measure first on ``PYTHONPATH``): ``python quickstart_case.py STEPS OVERRIDES...`` runs ``python -m
the_well.benchmark.train OVERRIDES`` with the loop's ``train`` replaced by: the validation before training (the
run's epoch 0), ``STEPS`` optimizer steps, one validation after them; prints one JSON line with each part's wall
seconds (``start``: the process's start to the loop) and the validations' criteria (the same numbers before and
after a change that keeps them)."""

from __future__ import annotations

import json
import runpy
import sys
import time

STARTED = time.perf_counter()


def main() -> None:
    steps, overrides = int(sys.argv[1]), sys.argv[2:]
    from well_upao.trainers import loop

    parts: dict[str, float] = {}

    def timed_train(self) -> None:
        parts["start"] = time.perf_counter() - STARTED
        clock = time.perf_counter()
        self.validate_untrained()
        parts["validation before training"] = time.perf_counter() - clock
        loader = iter(self.datamodule.train_dataloader())
        self.model.train()
        self.scheduler = self.build_scheduler(steps)
        clock = time.perf_counter()
        for _ in range(steps):
            loss, logs = self.loss(next(loader))
            self.optimizer_step(loss, logs)
        parts["optimizer step"] = (time.perf_counter() - clock) / steps
        clock = time.perf_counter()
        self.validate_epoch(1, False)
        parts["validation"] = time.perf_counter() - clock
        parts["criteria"] = [self.selection.best_value, self.last_val_loss]

    loop.Trainer.train = timed_train
    sys.argv = ["the_well.benchmark.train", *overrides]
    runpy.run_module("the_well.benchmark.train", run_name="__main__")
    print(json.dumps(parts))


if __name__ == "__main__":
    main()
