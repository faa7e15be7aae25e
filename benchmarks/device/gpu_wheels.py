"""Build the folder of wheels a lent GPU machine needs to run ``benchmarks/device/gpu_check.py`` (issue 39).

The device machine (the tool library's ``device`` entry: Python 3.12, PyTorch 2.11 with CUDA 13, no internet, at most 64
MiB carried per call) has most of our dependencies in its image (torch, torchvision, timm, h5py, numpy, einops, tqdm,
matplotlib, pyyaml, threadpoolctl, ...; the list as read there is ``benchmarks/device/gpu_image_packages.txt``) but not
The Well, its harness's configuration stack or the neural-operator library. This script downloads those as pure-Python
wheels for Python 3.12 (:data:`WHEELS`), builds the one that has no wheel on the index (``antlr4-python3-runtime``, a
source distribution: ``pip wheel``), and writes a stand-in for ``wandb`` (the Well's ``train.py`` and our loop import
and call ``wandb.init/log/finish``; its real wheel is 26 MB and pulls pydantic, protobuf and OpenTelemetry, none of
which a run here needs: wandb is off in every run we make). A setuptools wheel goes to ``build/`` beside them: pip
builds the project from the checkout there (no project wheel travels: it would repeat the shipped weights).

    python benchmarks/device/gpu_wheels.py [--out .gpu_wheels]

Then, on the device (one pip call: the project writes ``the_well/benchmark/configs/config.yaml`` into the_well's
package folder, and a second ``--target`` call would skip or replace that folder)::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-requires-python \\
        --find-links .gpu_wheels/build --target /tmp/site .gpu_wheels/*.whl . && export PYTHONPATH=/tmp/site

The ``device`` tool carries ``.gpu_wheels`` when the call names it in ``carry`` (the folder is git-ignored).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / ".gpu_wheels"
#: the pins of the CPU install (``pip install .`` resolves ``the-well[benchmark]==1.2.0`` to these); each is a
#: ``py3-none-any`` wheel on the index except antlr4, which is built (:data:`BUILT`)
WHEELS: dict[str, str] = {
    "the_well": "1.2.0",
    "hydra-core": "1.3.8",
    "omegaconf": "2.3.1",
    "neuraloperator": "0.3.0",
    "tensorly": "0.10.0",
    "tensorly-torch": "0.5.0",
    "torch-harmonics": "0.6.5",
    "torchinfo": "1.8.0",
}
#: source distributions only: ``pip wheel`` builds a pure-Python wheel of each
BUILT: dict[str, str] = {"antlr4-python3-runtime": "4.9.3"}
#: what pip needs to build the project from the checkout there (``[build-system] requires``)
BUILD_ONLY: dict[str, str] = {"setuptools": "80.9.0"}
#: the stand-in's version: wandb's API as the Well's train.py and our loop use it
STAND_IN_VERSION = "0.0.0+well-upao-stand-in"
STAND_IN_SOURCE = '''"""Stand-in for wandb on machines without it (benchmarks/device/gpu_wheels.py): the calls the
Well's harness and well-upao make (init, log, finish, run) do nothing; metrics still go to each run's metrics.jsonl."""

run = None


class _Run:
    def log(self, *args, **kwargs):
        return None

    def finish(self, *args, **kwargs):
        return None


def init(*args, **kwargs):
    return _Run()


def log(*args, **kwargs):
    return None


def finish(*args, **kwargs):
    return None
'''
#: platforms pip accepts for the download (pure wheels match any; the device is x86-64 manylinux)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "any")


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")


def download(pins: dict[str, str], folder: Path) -> None:
    platforms = [f"--platform={p}" for p in PLATFORMS]
    requirements = [f"{name}=={version}" for name, version in pins.items()]
    pip("download", "--no-deps", "--only-binary=:all:", "--python-version=3.12", "--implementation=cp", *platforms,
        "-d", str(folder), *requirements)  # fmt: skip


def stand_in_wheel(folder: Path) -> Path:
    """The wandb stand-in as a wheel (built by pip from a generated source tree)."""
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch)
        (source / "wandb").mkdir()
        (source / "wandb" / "__init__.py").write_text(STAND_IN_SOURCE)
        (source / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "wandb"\nversion = "{STAND_IN_VERSION}"\n'
            'description = "no-op stand-in for wandb (well-upao benchmarks/device/gpu_wheels.py)"\n'
            '\n[tool.setuptools]\npackages = ["wandb"]\n'
        )
        pip("wheel", "--no-deps", "-w", str(folder), str(source))
    return next(folder.glob("wandb-*.whl"))


def check_pure(folder: Path) -> list[Path]:
    """Every wheel in ``folder`` is pure Python (``-none-any``): the device is another Python and machine."""
    wheels = sorted(folder.glob("*.whl"))
    for wheel in wheels:
        if not wheel.name.endswith("-none-any.whl"):
            raise SystemExit(f"{wheel.name} is not a pure-Python wheel; the device runs Python 3.12 on x86-64")
        with zipfile.ZipFile(wheel) as archive:
            archive.testzip()
    return wheels


def build(out: Path) -> list[Path]:
    """Fill ``out`` (replaced whole, through a temporary folder beside it) and return its wheels."""
    out = out.resolve()
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        download(WHEELS, staging)
        for name, version in BUILT.items():
            pip("wheel", "--no-deps", "-w", str(staging), f"{name}=={version}")
        stand_in_wheel(staging)
        (staging / "build").mkdir()
        download(BUILD_ONLY, staging / "build")
        wheels = check_pure(staging)
        check_pure(staging / "build")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / wheel.name for wheel in wheels]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    wheels = build(args.out)
    size = sum(path.stat().st_size for path in args.out.rglob("*.whl"))
    for wheel in wheels:
        print(f"{wheel.stat().st_size / 2**20:7.2f} MiB  {wheel.name}")
    print(f"{len(wheels)} wheels (+ build/), {size / 2**20:.1f} MiB in {args.out}")


if __name__ == "__main__":
    main()
