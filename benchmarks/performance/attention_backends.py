"""Time and memory of the product's neighborhood-attention backends against dense attention, in one run (issue 62).

For the token grids of the three presets (:data:`GRIDS`: time first, causal, kernel 5 on every axis), each backend
of ``well_upao.models.neighborhood_attention.neighborhood_attention`` is called as the model calls it:

* ``tiles``: query tiles through masked SDPA (what trains on the CPU);
* ``flex``: FlexAttention with the brick-ordered block mask (``well_upao.models.neighborhood_flex``), compiled
  (``torch.compile(flex_attention)``, the product's CUDA path; on the CPU the forward only, float32) and eager
  (the product's CPU path: FlexAttention's unfused implementation);
* ``natten``: NATTEN's kernels where ``natten`` imports (its CPU build: forward only);
* ``dense``: ``scaled_dot_product_attention`` over all tokens without a mask, the lower bound a neighborhood
  attention is measured against (it reads every key; the neighborhood ~5% of them at the paper's grid).

Per backend, grid and dtype: seconds per forward and per forward + backward (the median of repeated calls after one
warm-up: the compile is excluded and reported apart), memory (CUDA: the peak of ``max_memory_allocated`` above
what the inputs hold, forward and forward + backward; CPU, where torch reports no peak: the bytes of the tensors
autograd saves for the backward, what a training step holds between its forward and backward), and the ratios to
dense and to tiles. The CPU rows are fp32; on CUDA fp32 and bf16.

    python benchmarks/performance/attention_backends.py --report reports/attention_backends.md   # CPU, 2 threads
    python benchmarks/performance/attention_backends.py --device cuda --json OUT/attention.json   # on a GPU (no report)
    python benchmarks/performance/attention_backends.py --from-json reports/attention_backends_cpu.json \
        --report ...  # the report again from a run's JSON
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

from well_upao.models.na_transformer import PRESETS
from well_upao.models.neighborhood_attention import neighborhood_attention

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import write_keeping_reading

ROOT = Path(__file__).resolve().parents[2]
#: token grids (time, *space) of the presets on the fields they train on: tiny on 64^2 (patch 8), small and paper
#: on 256^2 (patch 16); heads and head size from the presets
GRIDS = {"tiny": (8, 8, 8), "small": (8, 16, 16), "paper": (8, 16, 16)}
BACKENDS = ("tiles", "flex", "flex eager", "natten", "dense")
KERNEL = 5


def preset_shape(preset: str) -> tuple[int, int]:
    size = PRESETS[preset]
    return size["heads"], size["hidden"] // size["heads"]


def runner(backend: str, grid: tuple[int, ...], device: str):
    """A call ``f(q, k, v)`` of ``backend`` on ``(batch, *grid, heads, dim)`` tensors, or the reason it cannot run."""
    kernel = tuple(min(KERNEL, n) for n in grid)
    causal = (True,) + (False,) * (len(grid) - 1)
    if backend == "dense":

        def dense(q, k, v):
            batch, *_, heads, dim = q.shape
            flat = [t.reshape(batch, -1, heads, dim).transpose(1, 2) for t in (q, k, v)]
            return F.scaled_dot_product_attention(*flat).transpose(1, 2).reshape(q.shape)

        return dense
    if backend == "natten":
        try:
            import natten  # noqa: F401  (optional)
        except ImportError:
            return "natten is not installed"
    if backend == "flex eager":
        from torch.nn.attention.flex_attention import flex_attention

        from well_upao.models.neighborhood_flex import flex_neighborhood_attention

        def eager(q, k, v):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "called without torch.compile()": this row is that
                return flex_neighborhood_attention(q, k, v, kernel, (1,) * len(grid), causal, attend=flex_attention)

        return eager
    if backend == "flex" and device == "cpu":
        from well_upao.models.neighborhood_flex import compiled_flex_attention, flex_neighborhood_attention

        def compiled_on_cpu(q, k, v):
            attend = compiled_flex_attention()
            return flex_neighborhood_attention(q, k, v, kernel, (1,) * len(grid), causal, attend=attend)

        return compiled_on_cpu
    return lambda q, k, v: neighborhood_attention(q, k, v, kernel, is_causal=causal, backend=backend)


def inputs(grid, heads, dim, batch, dtype, device, requires_grad):
    generator = torch.Generator(device="cpu").manual_seed(0)
    return [
        torch.randn(batch, *grid, heads, dim, generator=generator).to(device, dtype).requires_grad_(requires_grad)
        for _ in range(3)
    ]


def synchronise(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def one_pass(call, tensors, backward: bool):
    out = call(*tensors)
    if backward:
        out.float().square().mean().backward()
    return out


def timed(call, tensors, backward: bool, device: str, repeats: int) -> tuple[float, float]:
    """(seconds of the first call: compile and caches included, the median seconds of ``repeats`` later calls: the
    median, since other processes share a CPU)."""
    seconds = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        one_pass(call, tensors, backward)
        synchronise(device)
        seconds.append(time.perf_counter() - start)
    return seconds[0], statistics.median(seconds[1:] or seconds)


def peak_memory(call, tensors, backward: bool, device: str) -> int | None:
    """Bytes of one call (see the module docstring): CUDA, the peak above what was allocated before; CPU, the bytes
    saved for the backward (``None`` for a forward alone)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        one_pass(call, tensors, backward)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    if not backward:
        return None
    saved: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    inputs_held = {t.untyped_storage().data_ptr() for t in tensors}
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        out = call(*tensors)
    out.float().square().mean().backward()
    return sum(n for pointer, n in saved.items() if pointer not in inputs_held)


def measure(preset: str, backend: str, dtype: str, device: str, batch: int, repeats: int, memory: bool) -> dict:
    """One row: the backend's forward and forward + backward at the preset's grid, or why it did not run."""
    grid = GRIDS[preset]
    heads, dim = preset_shape(preset)
    row = {"preset": preset, "grid": list(grid), "heads": heads, "head_dim": dim, "batch": batch, "dtype": dtype,
           "device": device, "backend": backend}  # fmt: skip
    call = runner(backend, grid, device)
    if isinstance(call, str):
        return row | {"skipped": call}
    torch_dtype = getattr(torch, {"fp32": "float32", "bf16": "bfloat16"}[dtype])
    for mode, backward in (("forward", False), ("forward_backward", True)):
        tensors = inputs(grid, heads, dim, batch, torch_dtype, device, backward)
        try:
            if memory:
                row[f"{mode}_bytes"] = peak_memory(call, tensors, backward, device)
                continue
            first, mean = timed(call, tensors, backward, device, repeats)
            row[f"{mode}_first_s"], row[f"{mode}_s"] = first, mean
        except (NotImplementedError, RuntimeError) as error:  # no CPU backward (flex), compile limits, OOM
            row[f"{mode}_unavailable"] = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
            if backward:
                break
    return row


def run(device: str, dtypes: list[str], presets: list[str], batch: int, repeats: int, backends=BACKENDS) -> list[dict]:
    """Every row (:func:`measure`, time then memory) of ``backends`` at the presets' grids in each dtype."""
    rows = []
    for preset in presets:
        for dtype in dtypes:
            torch._dynamo.reset()  # each grid and dtype compiles afresh: no earlier graph counts towards the limit
            for backend in backends:
                row = measure(preset, backend, dtype, device, batch, repeats, memory=False)
                if "skipped" not in row:
                    memory = measure(preset, backend, dtype, device, batch, 0, memory=True)
                    row |= {k: v for k, v in memory.items() if k.endswith("_bytes")}
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def cell(value: float | None, unit: float = 1e-3, digits: str = ".3g") -> str:
    return "—" if value is None else format(value / unit, digits)


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:.2f}"


def markdown(rows: list[dict], command: str, machine: str, date: str) -> str:
    lines = [
        "# Neighborhood-attention backends against dense attention",
        "",
        f"> Made {date} on {machine} by `{command}` "
        "(benchmarks/performance/attention_backends.py: what each column is)."
        + (
            ""
            if any(r["device"].startswith("cuda") for r in rows)
            else " The GPU rows are not yet measured: they come from the same script on the next lent device "
            "(`benchmarks/device/foundation_call.py profile` runs it)."
        ),
        "",
        "Milliseconds are the median of repeated calls after a warm-up (the compile excluded, shown apart as the "
        "*first call*); memory: CUDA, the peak above the inputs; CPU, the bytes saved for the backward. The ratios "
        "divide a backend's time by dense attention's (or the tiles') for the same pass. — : the backend has no such "
        "pass here (FlexAttention has no CPU backward; NATTEN's CPU build runs powers-of-two head sizes only) or is "
        "not installed.",
        "",
        "| preset (token grid) | dtype | backend | forward ms | fwd + bwd ms | first call s | MB fwd / fwd+bwd "
        "| fwd / dense | fwd+bwd / dense | fwd / tiles |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_key = {(r["preset"], r["dtype"], r["backend"]): r for r in rows}
    for row in rows:
        if "skipped" in row:
            lines.append(f"| {row['preset']} | {row['dtype']} | {row['backend']} | skipped: {row['skipped']} "
                         "| | | | | | |")  # fmt: skip
            continue
        dense = by_key.get((row["preset"], row["dtype"], "dense"), {})
        tiles = by_key.get((row["preset"], row["dtype"], "tiles"), {})
        first = row.get("forward_backward_first_s", row.get("forward_first_s"))
        memory = " / ".join(cell(row.get(f"{m}_bytes"), 2**20, ".1f") for m in ("forward", "forward_backward"))
        lines.append(
            f"| {row['preset']} {'x'.join(map(str, row['grid']))}, {row['heads']} heads of {row['head_dim']} "
            f"| {row['dtype']} | {row['backend']} | {cell(row.get('forward_s'))} | "
            f"{cell(row.get('forward_backward_s'))} | {cell(first, 1, '.3g')} | {memory} "
            f"| {ratio(row.get('forward_s'), dense.get('forward_s'))} "
            f"| {ratio(row.get('forward_backward_s'), dense.get('forward_backward_s'))} "
            f"| {ratio(row.get('forward_s'), tiles.get('forward_s'))} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtypes", nargs="+", default=None, help="fp32 (CPU default) and bf16 (CUDA default: both)")
    parser.add_argument("--presets", nargs="+", default=list(GRIDS), choices=list(GRIDS))
    parser.add_argument("--batch", type=int, default=None, help="batch (CPU default 2, CUDA 8)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write the rows as JSON")
    parser.add_argument("--report", type=Path, help="write the markdown report (the rows and their ratios)")
    parser.add_argument("--from-json", type=Path, help="report the rows of an earlier --json instead of measuring")
    args = parser.parse_args(argv)
    cuda = args.device.startswith("cuda")
    dtypes = args.dtypes or (["fp32", "bf16"] if cuda else ["fp32"])
    batch = args.batch or (8 if cuda else 2)
    if args.from_json:
        measured = json.loads(args.from_json.read_text())
    else:
        machine = torch.cuda.get_device_name() if cuda else f"the CPU ({torch.get_num_threads()} threads)"
        command = "python benchmarks/performance/attention_backends.py " + " ".join(
            sys.argv[1:] if argv is None else argv
        )
        rows = run(args.device, dtypes, args.presets, batch, args.repeats)
        measured = {"command": command, "machine": machine, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(measured, indent=1) + "\n")
    if args.report:
        text = markdown(measured["rows"], measured["command"], measured["machine"], measured["date"])
        failures = write_keeping_reading(args.report, text.rstrip("\n").split("\n"))
        print(f"wrote {args.report}")
        if failures:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
