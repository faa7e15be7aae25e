"""The prepared GPU check (benchmarks/device/gpu_check.py) rehearsed on the CPU, and the wheels that carry its import
chain to a lent GPU machine (benchmarks/device/gpu_wheels.py) checked against that machine's package list."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from device import gpu_check, gpu_wheels

ROOT = Path(__file__).resolve().parents[1]


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages() -> set[str]:
    """The image's packages and, transitively, what they require as installed here (an image installed with pip
    holds its packages' requirements, whichever versions they are there)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    lines = (ROOT / "benchmarks" / "device" / "gpu_image_packages.txt").read_text().splitlines()
    names = {canonical(line) for line in lines if line.strip() and not line.startswith("#")}
    todo = list(names)
    while todo:
        try:
            required = requires(todo.pop()) or []
        except PackageNotFoundError:
            continue
        for text in required:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = canonical(requirement.name)
            if name not in names:
                names.add(name)
                todo.append(name)
    return names


def chain_on_the_device(tmp_path: Path, allowed: set[str]) -> tuple[set[str], list[str]]:
    """Import the chain in a fresh interpreter that behaves as the device would: wandb is the stand-in (first on the
    path) and a top-level module whose distribution is not in ``allowed`` (canonical names) cannot be imported.
    Returns the distributions loaded and the modules refused (optional imports the chain did without)."""
    stand_in = tmp_path / "stand_in"
    (stand_in / "wandb").mkdir(parents=True, exist_ok=True)
    (stand_in / "wandb" / "__init__.py").write_text(gpu_wheels.STAND_IN_SOURCE)
    script = textwrap.dedent(
        f"""
        import importlib, importlib.abc, importlib.metadata, json, re, sys
        allowed = set({sorted(allowed)!r})
        owners = importlib.metadata.packages_distributions()
        refused = []

        def canonical(name):
            return re.sub(r"[-_.]+", "-", name).lower()

        class Absent(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                top = name.split(".")[0]
                if top in owners and not {{canonical(d) for d in owners[top]}} & allowed:
                    refused.append(top)
                    raise ModuleNotFoundError(f"{{top}} is not on the device", name=top)
                return None

        sys.meta_path.insert(0, Absent())
        for module in {list(gpu_check.IMPORT_CHAIN)!r}:
            importlib.import_module(module)
        import wandb
        assert wandb.__file__.startswith({str(stand_in)!r}), wandb.__file__
        tops = {{name.split(".")[0] for name, module in sys.modules.items() if module is not None}}
        tops -= set(sys.stdlib_module_names) | {{"wandb"}}
        loaded = sorted({{d for top in tops for d in owners.get(top, [])}})
        print(json.dumps([loaded, sorted(set(refused))]))
        """
    )
    env = dict(os.environ, PYTHONPATH=str(stand_in))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, (
        "the chain does not import with the image and the wheels alone:\n" + done.stderr[-3000:]
    )
    loaded, refused = json.loads(done.stdout.strip().splitlines()[-1])
    return {canonical(name) for name in loaded}, refused


def test_the_image_and_the_wheels_cover_the_import_chain(tmp_path):
    """The chain imports with nothing but the image's packages (and what they require) and the carried wheels: a
    module of any other distribution is refused, as it would be there (optional imports, e.g. sniffio, which this
    machine's HTTP stack takes when it finds it, are done without)."""
    carried = {canonical(name) for name in (*gpu_wheels.WHEELS, *gpu_wheels.BUILT)} | {"wandb", "well-upao"}
    image = image_packages()
    loaded, _ = chain_on_the_device(tmp_path, image | carried)
    # the image alone lacks the harness: the check is not vacuous
    assert {"the-well", "hydra-core", "omegaconf", "neuraloperator", "antlr4-python3-runtime"} <= loaded - image
    # nothing carried that the chain does not need (each wheel counts toward the 64 MiB a call may carry)
    assert carried - loaded - {"wandb"} == set()


def test_wheel_pins_are_the_cpu_install_s_versions():
    """The wheels carried are the versions ``pip install .`` resolved here (the ones the suite tests)."""
    from importlib.metadata import version

    for name, pinned in {**gpu_wheels.WHEELS, **gpu_wheels.BUILT}.items():
        assert version(name) == pinned, name


def test_the_wandb_stand_in_does_what_the_harness_calls(tmp_path):
    namespace: dict = {}
    exec(gpu_wheels.STAND_IN_SOURCE, namespace)
    run = namespace["init"](dir=str(tmp_path), project="p", config={}, name="n", resume=True)
    run.log({"a": 1}, step=0)
    namespace["log"]({"a": 1}, step=0)
    namespace["finish"]()
    assert namespace["run"] is None  # our loop logs to wandb only when a run is active


def dry_run(out, stages: tuple[str, ...]) -> dict:
    command = [sys.executable, str(ROOT / "benchmarks" / "device" / "gpu_check.py"), "--dry-run", "--device", "cpu"]
    command += ["--out", str(out), "--stages", ",".join(stages)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((out / "gpu_check.json").read_text())
    assert [data["stages"][name]["status"] for name in stages] == ["ok"] * len(stages)
    return data


def test_dry_run_rehearses_every_stage_but_the_rollout(tmp_path):
    out = tmp_path / "check"
    stages = tuple(name for name in gpu_check.STAGES if name != "rollout")  # its rehearsal is slow: the next test
    data = dry_run(out, stages)
    env = data["stages"]["env"]
    assert env["import_failures"] == {} and set(env["imported"]) == set(gpu_check.IMPORT_CHAIN)
    assert all(value > 0 for value in env["ceilings_tflops"].values())
    backbone = data["stages"]["backbone"]
    ran = [row for row in backbone["rows"] if row["status"] == "ok"]
    assert {(r["checkpointing"], r["precision"]) for r in ran} == {(c, p) for c in (0, 1) for p in ("fp32", "bf16")}
    # float32 against float64 on the same device: rounding only; bf16 is coarser but still close
    assert backbone["agreement"]["fp32"] < 1e-5 and backbone["agreement"]["bf16"] < 5e-2
    attention = data["stages"]["attention"]
    assert attention["agreement"]["fp32"] < 1e-5
    assert {r["attention"] for r in attention["rows"] if r["status"] == "ok"} >= {
        "ours (query tiles, masked SDPA)",
        "full attention (SDPA, no mask)",
    }
    objective = data["stages"]["objective"]
    assert objective["equations"] == 3 and 0 < objective["ratio"]
    product = data["stages"]["product"]
    assert [s["returncode"] for s in product["steps"]] == [0, 0, 0] and product["run_device"] == "cpu"
    model_rows = [r for r in product["rows"] if r["name"].startswith("wave2d-na_nslora-upao")]
    assert len(model_rows) == 1 and 0 < model_rows[0]["mean_paper_vrmse"] < 1
    report = (out / "gpu.md").read_text()
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5."):
        assert heading in report


@pytest.mark.slow
def test_dry_run_rehearses_the_rollout_stage(tmp_path):
    """About a minute on two idle cores (four on busy ones): two K = 4 harness runs (UPAO, supervised) and their
    evaluation."""
    data = dry_run(tmp_path / "check", ("rollout",))
    rollout = data["stages"]["rollout"]
    costs = {(r["rollout_steps"], r["pushforward"]): r for r in rollout["costs"]}
    assert set(costs) == {(1, False), (2, False), (2, True), (4, False), (4, True)}
    # the rollout keeps every step's graph: K = 4 saves more than twice what K = 1 does, pushforward somewhat less
    assert costs[(4, False)]["saved_bytes"] > 2 * costs[(1, False)]["saved_bytes"]
    assert costs[(4, True)]["saved_bytes"] < costs[(4, False)]["saved_bytes"]
    assert [s["returncode"] for s in rollout["steps"]] == [0] * 4
    assert {r["device"] for r in rollout["runs"].values()} == {"cpu"}
    rows = {r["name"]: r for r in rollout["rows"]}
    assert {"upao_4step", "supervised_4step", "persistence", "extrap2"} <= set(rows)
    assert all("6:12" in r["windows"] for r in rows.values())
    assert "## 6." in (tmp_path / "check" / "gpu.md").read_text()


def test_the_rollout_section_reports_ratios_to_k1_of_the_same_setting():
    costs = [
        {"resolution": 64, "batch": 4, "rollout_steps": k, "pushforward": False, "saved_bytes": saved,
         "peak_added_bytes": peak, "step_s": seconds, "repeats": 5}
        for k, saved, peak, seconds in ((1, 2**20, 2**21, 0.1), (4, 4 * 2**20, 3 * 2**21, 0.5))
    ] + [
        {"resolution": 128, "batch": 8, "rollout_steps": k, "pushforward": False, "saved_bytes": saved,
         "peak_added_bytes": None, "step_s": seconds, "repeats": 5}
        for k, saved, seconds in ((1, 10 * 2**20, 1.0), (4, 25 * 2**20, 2.0))
    ]  # fmt: skip
    data = {
        "command": "c",
        "dry_run": True,
        "started": "now",
        "budget_s": 1,
        "stages": {"rollout": {"status": "ok", "costs": costs}},
    }
    rows = [line for line in gpu_check.report(data).splitlines() if line.startswith(("| 64^2", "| 128^2"))]
    assert rows[1] == "| 64^2 | 4 | 4 | no | 4.0 | 4.00 | 6 | 3.00 | 500 | 5.00 |"
    assert rows[3] == "| 128^2 | 8 | 4 | no | 25.0 | 2.50 | - | - | 2000 | 2.00 |"


def test_a_failing_stage_is_recorded_and_the_next_one_runs(tmp_path):
    results = gpu_check.Results(tmp_path, "python benchmarks/device/gpu_check.py", dry_run=True, budget_s=60)

    def broken(_):
        raise RuntimeError("planted failure")

    results.stage("env", broken)
    results.stage("objective", lambda _: {"model": 1.0, "objective": 0.1, "ratio": 0.1, "equations": 1, "pde": "x",
                                          "batch": 1, "frames": 8, "resolution": 8, "preset": "tiny"})  # fmt: skip
    data = json.loads((tmp_path / "gpu_check.json").read_text())
    assert data["stages"]["env"]["status"] == "error" and "planted failure" in data["stages"]["env"]["error"]
    assert data["stages"]["objective"]["status"] == "ok"
    assert "planted failure" in (tmp_path / "gpu.md").read_text()


def test_stages_past_the_budget_are_skipped_and_say_so(tmp_path):
    results = gpu_check.Results(tmp_path, "python benchmarks/device/gpu_check.py", dry_run=True, budget_s=0)
    results.stage("env", lambda _: pytest.fail("a stage past the budget ran"))
    assert json.loads((tmp_path / "gpu_check.json").read_text())["stages"]["env"]["status"] == "skipped"


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / ".gpu_wheels").is_dir(), reason="needs python benchmarks/device/gpu_wheels.py first")
def test_the_device_install_line_works_with_the_wheels(tmp_path):
    """Opt-in: the install line of the device, here (``--target``, the project built from this checkout), then the
    import chain from that folder alone for what the wheels carry."""
    site = tmp_path / "site"
    wheels = sorted(str(path) for path in (ROOT / ".gpu_wheels").glob("*.whl"))
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    install += ["--ignore-requires-python", "--find-links", str(ROOT / ".gpu_wheels" / "build"), "--target", str(site)]
    done = subprocess.run([*install, *wheels, str(ROOT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (site / "the_well" / "benchmark" / "configs" / "config.yaml").is_file()
    script = "import importlib, wandb, the_well, well_upao\n"
    script += "".join(f"importlib.import_module({m!r})\n" for m in gpu_check.IMPORT_CHAIN)
    script += "print(wandb.__file__, the_well.__file__, well_upao.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(path.startswith(str(site)) for path in done.stdout.split())
