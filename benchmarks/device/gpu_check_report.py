"""``gpu.md`` of a GPU check (``benchmarks/device/gpu_check.py``): the command, device, versions and one section per
stage, each the table of what its stage ran (no reading)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.tables import cell, table

from device.gpu_common import STAGES, GiB


def ms(seconds: float | None, digits: int = 4) -> str:
    """Seconds as milliseconds (``-`` for none)."""
    return cell(seconds * 1e3 if seconds else None, digits)


def header(data: dict) -> list[str]:
    """The title, the command, the device and the stages' status."""
    stages, env = data["stages"], data["stages"].get("env", {})
    lines = [
        "# GPU check" + (" (dry run)" if data["dry_run"] else ""),
        "",
        f"Command ({data['started']}):",
        "",
        f"    {data['command']}",
        "",
        f"Device: {env.get('name', '?')}; {cell(env.get('memory_gib'))} GiB; {env.get('multiprocessors', '-')} "
        f"multiprocessors; driver {env.get('driver', '-')}; Python {env.get('python', '?')}, torch "
        f"{env.get('torch', '?')} (CUDA {env.get('torch_cuda', '-')}, cuDNN {env.get('cudnn', '-')}); "
        f"natten: {env.get('natten', '?')}. Elapsed {data.get('elapsed_s', 0):.0f} s of a {data['budget_s']:.0f} s "
        "budget.",
        "",
    ]
    rows = []
    for name in (n for n in STAGES if n in stages):
        entry = stages[name]
        status = entry["status"] + (f": {entry['error']}" if entry.get("error") else "")
        status += f" ({entry['reason']})" if entry.get("reason") else ""
        rows.append([name, status.replace("|", "/")[:300], cell(entry.get("seconds"))])
    return lines + table(["stage", "status", "seconds"], rows)


def env_section(env: dict) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
    return [
        "",
        "## 1. Imports and ceilings",
        "",
        f"Imported: {', '.join(env['imported'])}. Failed: {env['import_failures'] or 'none'}. {versions}.",
        f"PyTorch defaults here: TF32 matmul {env['tf32_matmul_default']}, TF32 cuDNN {env['tf32_cudnn_default']}.",
        "",
        *table(
            ["precision", f"TFLOP/s ({env['matmul_n']}^3 product, random data, median of 10)"],
            ([name, cell(value, 4)] for name, value in env["ceilings_tflops"].items()),
        ),
    ]


def backbone_section(backbone: dict) -> list[str]:
    plan = backbone["plan"]
    lines = [
        "",
        "## 2. The backbone: one training step (forward + backward + AdamW)",
        "",
        f"Plan per sample (benchmarks/performance/scaling.sample_plan on the meta device, as reports/scaling.md): "
        f"{plan['without'] / GiB:.3f} GiB of activations without checkpointing, "
        f"{plan['with_checkpointing'] / GiB:.3f} GiB with it; {plan['flops'] / 1e12:.3g} TFLOP forward + backward "
        f"({plan['flops_checkpointed'] / 1e12:.3g} with checkpointing); {plan['parameters'] / 1e6:.1f}M "
        f"parameters (16 bytes each: {16 * plan['parameters'] / GiB:.2f} GiB of fp32 weights, gradients and "
        "AdamW state). Plan = batch x activations + that state; it models fp32 only.",
        "",
    ]
    columns = "checkpointing, precision, batch, step ms, samples/s, TFLOP/s, of ceiling, peak GiB, plan GiB"
    rows = []
    for row in backbone["rows"]:
        peak = row.get("peak_bytes")
        ratio = row.get("peak_over_plan") if row["precision"] != "bf16" else None
        rows.append(
            [
                "yes" if row["checkpointing"] else "no",
                row["precision"],
                row["batch"],
                ms(row.get("step_s")),
                cell(row.get("samples_per_s")),
                cell(row.get("tflops")),
                cell(row.get("of_ceiling"), 2),
                cell(peak / GiB if peak else None),
                f"{row['plan_bytes'] / GiB:.3g}",
                cell(ratio, 3),
                row.get("status", "-"),
            ]
        )
    lines += table([*columns.split(", "), "peak / plan", "status"], rows)
    agreement = backbone.get("agreement")
    if agreement:
        lines += [
            "",
            f"Forward on the device against a float64 forward on the CPU ({agreement['resolution']}^2, batch 1): "
            f"relative error {cell(agreement['fp32'])} in fp32, {cell(agreement['bf16'])} under bf16 autocast.",
        ]
    return lines


def attention_section(attention: dict) -> list[str]:
    grid = " x ".join(map(str, attention["grid"]))
    rows = [
        [
            row["attention"],
            row["precision"],
            ms(row.get("forward_s")),
            ms(row.get("forward_backward_s")),
            cell(row.get("vs_full_forward_backward"), 3),
            row["status"],
        ]
        for row in attention["rows"]
    ]
    agreement = attention["agreement"]
    return [
        "",
        "## 3. Attention alone",
        "",
        f"Token grid {grid} (t, y, x), {attention['heads']} heads of {attention['head_dim']}, batch "
        f"{attention['batch']}, kernel {' x '.join(map(str, attention['kernel']))}, causal in time; median of "
        f"10. {attention['natten']}.",
        "",
        *table(
            [
                "attention",
                "precision",
                "forward ms",
                "forward + backward ms",
                "vs full attention (fwd + bwd)",
                "status",
            ],
            rows,
        ),
        "",
        f"Ours on the device against float64 on the CPU (batch 1): relative error {cell(agreement['fp32'])} in "
        f"fp32, {cell(agreement['bf16'])} in bf16.",
    ]


def objective_section(objective: dict) -> list[str]:
    return [
        "",
        "## 4. The UPAO objective's cost",
        "",
        f"{objective['pde']}, {objective['batch']} windows of {objective['frames']} frames at "
        f"{objective['resolution']}^2, preset {objective['preset']} ({objective['equations']} sub-equations), "
        "best of 5.",
        "",
        *table(
            ["backbone forward + backward ms", "objective + its backward ms", "ratio"],
            [[f"{objective['model'] * 1e3:.4g}", f"{objective['objective'] * 1e3:.4g}", f"{objective['ratio']:.1%}"]],
        ),
    ]


def steps_table(steps: list[dict], width: int) -> list[str]:
    """The product's commands: step, exit code, seconds, the command (its first ``width`` characters)."""
    rows = ([s["step"], s["returncode"], s["seconds"], f"`{s['command'][:width]}`"] for s in steps)
    return table(["step", "exit", "seconds", "command"], rows)


def evaluate_table(text: str, title: str) -> list[str]:
    """The table lines of evaluate's own printout, under ``title`` (nothing without one)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return ["", title, "", *lines] if lines else []


def product_section(product: dict) -> list[str]:
    lines = ["", "## 5. The product's path", "", *steps_table(product["steps"], 400)]
    if "run_device" in product:
        name = product.get("run_device_name")
        lines += ["", f"The run's metrics.jsonl: device {product['run_device']}" + (f" ({name})." if name else ".")]
        if product.get("prior_verdict"):
            verdict, kept = product["prior_verdict"], product.get("kept_prior")
            lines[-1] += f" Before training: {verdict}; kept the prior: {kept}."
    if product.get("rows"):
        rows = (
            [r["name"], f"{r['mean_paper_vrmse']:.4g}", r["device"], f"{r['ms_per_prediction']:.3g}"]
            for r in product["rows"]
        )
        lines += ["", *table(["row", "mean paper VRMSE", "ran on", "ms per prediction"], rows)]
    return lines + evaluate_table(product.get("table", ""), "evaluate's own table (its label-free columns included):")


def rollout_costs(rollout: dict) -> list[str]:
    """What K steps cost, against K = 1 at the same resolution and batch."""
    first = {(r["resolution"], r["batch"]): r for r in rollout["costs"] if r["rollout_steps"] == 1}

    def ratio(row: dict, key: str) -> str:
        base = first.get((row["resolution"], row["batch"]), {}).get(key)
        return f"{row[key] / base:.2f}" if base and row.get(key) is not None else "-"

    rows = []
    for r in rollout["costs"]:
        peak = r.get("peak_added_bytes")
        rows.append(
            [
                f"{r['resolution']}^2",
                r["batch"],
                r["rollout_steps"],
                "yes" if r["pushforward"] else "no",
                f"{r['saved_bytes'] / 2**20:.1f}",
                ratio(r, "saved_bytes"),
                cell(peak / 2**20 if peak is not None else None, 4),
                ratio(r, "peak_added_bytes"),
                f"{r['step_s'] * 1e3:.4g}",
                ratio(r, "step_s"),
            ]
        )
    columns = ["resolution", "batch", "K", "pushforward", "saved (MiB)", "x K = 1", "peak added (MiB)", "x K = 1"]
    return [
        "",
        "## 6. Rollout UPAO: what K steps cost, and K = 4 through the harness",
        "",
        "One UPAO loss evaluation (wave2d, history 8, the quickstart's backbone, NSLoRA) and its backward: the "
        "bytes autograd saves (device independent), the peak memory forward + backward add on the device, and "
        f"the median forward + backward time of {rollout['costs'][0].get('repeats', 'several')} passes.",
        "",
        *table([*columns, "fwd + bwd ms", "x K = 1"], rows),
    ]


def rollout_runs(rollout: dict) -> list[str]:
    """The two K = 4 runs through the harness and their evaluation."""
    lines = ["", *steps_table(rollout["steps"], 600)] if rollout.get("steps") else []
    if rollout.get("runs"):
        rows = []
        for name, r in rollout["runs"].items():
            where = r["device"] + (f" ({r['device_name']})" if r.get("device_name") else "")
            measured = [cell(r["steps"]), cell(r["seconds"]), cell(r["valid_rollout_6_12"], 4)]
            rows.append([name, where, *measured, cell(r["prior_rollout_6_12"], 4), cell(r["kept_prior"])])
        columns = ["run", "ran on", "optimizer steps", "seconds", "rollout VRMSE 6:12 at its last validation"]
        lines += ["", *table([*columns, "the prior's", "kept the prior"], rows)]
    if rollout.get("rows"):
        windows = ("6:12", "13:30")
        rows = (
            [r["name"], f"{r['one_step']:.4g}", *(cell(r["windows"].get(w), 4) for w in windows), r["device"], per]
            for r in rollout["rows"]
            for per in [f"{r['ms_per_prediction']:.3g}"]
        )
        lines += [
            "",
            f"evaluate: {cell(rollout.get('rollout_steps_run'))} rollout steps from "
            f"{cell(rollout.get('rollout_starts'))} starts per trajectory.",
            "",
            *table(["row", "one-step VRMSE (paper)", "6:12", "13:30", "ran on", "ms per prediction"], rows),
        ]
        lines += evaluate_table(rollout.get("table", ""), "evaluate's own table:")
    return lines


def report(data: dict) -> str:
    """``gpu.md``: the command, device, versions and one section per stage (what ran; no reading)."""
    stages = data["stages"]
    lines = header(data)
    sections = [
        (stages.get("env", {}).get("status") == "ok", env_section, "env"),
        (bool(stages.get("backbone", {}).get("rows")), backbone_section, "backbone"),
        (bool(stages.get("attention", {}).get("rows")), attention_section, "attention"),
        (stages.get("objective", {}).get("status") == "ok", objective_section, "objective"),
        (bool(stages.get("product", {}).get("steps")), product_section, "product"),
        (bool(stages.get("rollout", {}).get("costs")), rollout_costs, "rollout"),
    ]
    for ran, section, name in sections:
        if ran:
            lines += section(stages[name])
    lines += rollout_runs(stages.get("rollout", {}))
    return "\n".join(lines) + "\n"
