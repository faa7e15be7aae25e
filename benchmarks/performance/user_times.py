"""How long each command a user types takes at the settings the README and the docs show (issue 76).

Every command of the README and the docs' recipes (:data:`COMMANDS`) is run as a user runs it: one whole child
process (its interpreter's start-up included) in a fresh folder of its own, from the documented command line. Each is
timed three times and the median kept when it takes under a minute (:data:`REPEAT_UNDER`), once otherwise, with:

* wall seconds, and CPU seconds (user + system) and peak resident memory of the child and every process it waited
  for (``os.wait4``'s resource usage: the same counts as ``resource.getrusage(RUSAGE_CHILDREN)``'s deltas, per child,
  with the peak of that child's tree rather than of every child this script ever had);
* the machine's 1-minute load average before, during (every :data:`LOAD_SAMPLE` seconds) and after each run, its CPU
  model and core count: on a shared machine a run waits for a core whenever the load is above the core count, so
  its wall seconds grow while its CPU seconds stay about the same;
* the commit measured at and the exact command line that made the record.

Preparations a command needs (a dataset, a trained run, the your-data recipe's arrays and module) are made once,
untimed, in ``OUT/shared`` and linked into each run's folder. The harness's runs are timed at two step counts (4 and
24 optimizer steps, one epoch): the difference over 20 steps is the cost of one optimizer step; the rest (start-up,
the validations, the test split) is what any run pays once. ``evaluate`` at the sizes of each "What you get" setting
prepares the setting's data and its two runs as ``benchmarks/studies/what_you_get_study.py`` makes them (seed 42).

Resumable per command: a record is ``reports/user_times/<name>.json``, and a command whose record exists is not run
again (``--force`` reruns). The heavy commands (the quickstart, the what-you-get evaluations, generate-replica, the
suite) run only when ``--only`` names them or with ``--all``. ``--profile NAME ...`` runs those commands once more
under cProfile (measuring them first where they have no record) and keeps the top entries, where the time goes, in
their records; the processes a command starts (the quickstart's harness runs) are not in its profile. The report,
``reports/user_times.md``, is written from the records alone after every invocation (``--report-only``: only that).

    python benchmarks/performance/user_times.py --list
    python benchmarks/performance/user_times.py --out RUNS/user_times                      # the light commands
    python benchmarks/performance/user_times.py --out RUNS/user_times --only quickstart --profile quickstart
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import pstats
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import portable_paths, write_keeping_reading

from performance.user_times_commands import (
    BY_NAME,
    COMMANDS,
    FEW_STEPS,
    LOAD_SAMPLE,
    PROFILE_ENTRIES,
    README_RUN,
    RECORDS,
    REPEAT_UNDER,
    REPEATS,
    REPORT,
    ROOT,
    YOUR_DATA,
    UserCommand,
)
from performance.user_times_commands import harness as harness_command
from performance.user_times_report import records, report_lines

# ---------------------------------------------------------------------------------------------------- running


def program(argv: tuple[str, ...] | list[str]) -> list[str]:
    """``argv`` with its program resolved in this interpreter's environment (``.venv/bin/well-upao``, its Python,
    its pytest); ``python -m well_upao.cli`` where no console script sits beside the interpreter."""
    bin_folder = Path(sys.executable).parent
    head, *rest = argv
    if head == "python":
        return [sys.executable, *rest]
    if head in ("well-upao", "pytest"):
        script = bin_folder / head
        if script.is_file():
            return [str(script), *rest]
        return [sys.executable, "-m", "well_upao.cli" if head == "well-upao" else "pytest", *rest]
    return list(argv)


def profiled(argv: tuple[str, ...] | list[str], output: Path) -> list[str]:
    """``argv`` run under cProfile, writing its statistics to ``output``."""
    head, *rest = argv
    profiler = [sys.executable, "-m", "cProfile", "-o", str(output)]
    if head == "python" and rest[:1] == ["-m"]:
        return [*profiler, "-m", *rest[1:]]
    if head == "well-upao":
        return [*profiler, "-m", "well_upao.cli", *rest]
    if head == "pytest":
        return [*profiler, "-m", "pytest", *rest]
    raise ValueError(f"cannot profile {shlex.join(argv)}: name a well-upao, python -m or pytest command")


def environment() -> dict[str, str]:
    """This environment, wandb off, without the settings that would point a command elsewhere than its folder."""
    dropped = ("WELL_BASE_PATH", "WELL_UPAO_EXPERIMENTS")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "WANDB_MODE": "disabled"}


class CommandFailed(RuntimeError):
    pass


def timed_run(argv: list[str], cwd: Path, env: dict[str, str], log: Path, sample_every: float = LOAD_SAMPLE) -> dict:
    """Run ``argv`` in ``cwd`` with its output in ``log``: wall seconds, the CPU seconds (user, system) and peak
    resident MB of the child and the processes it waited for, its exit code, and the 1-minute load average before,
    after and every ``sample_every`` seconds while it runs (their mean: ``load_mean``)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    loads = [os.getloadavg()[0]]
    start = time.perf_counter()
    with open(log, "w") as stream:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=stream, stderr=subprocess.STDOUT)
        sampled = start
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid == child.pid:
                break
            time.sleep(0.05)
            if time.perf_counter() - sampled >= sample_every:
                loads.append(os.getloadavg()[0])
                sampled = time.perf_counter()
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    loads.append(os.getloadavg()[0])
    return {
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "user_seconds": round(usage.ru_utime, 3),
        "system_seconds": round(usage.ru_stime, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kilobytes
        "returncode": child.returncode,
        "load_before": round(loads[0], 2),
        "load_after": round(loads[-1], 2),
        "load_mean": round(statistics.fmean(loads), 2),
    }


def fresh_folder(folder: Path, shared: Path, links: tuple[str, ...]) -> Path:
    """``folder`` emptied, holding a link to each of ``links`` in ``shared``."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name in links:
        if not (shared / name).exists():
            raise CommandFailed(f"{shared / name} is missing: its preparation did not make it")
        (folder / name).symlink_to((shared / name).resolve())
    return folder


def measure(
    command: UserCommand, out: Path, env: dict[str, str], repeat_under: float = REPEAT_UNDER, repeats: int = REPEATS
) -> list[dict]:
    """The runs of ``command``: up to ``repeats`` while each takes under ``repeat_under`` wall seconds, else one.
    Raises :class:`CommandFailed` (naming the log) when a run exits non-zero."""
    found = []
    for index in range(repeats):
        folder = (
            ROOT
            if command.in_repository
            else fresh_folder(out / "runs" / command.name / f"r{index}", out / "shared", command.links)
        )
        log = out / "logs" / f"{command.name}-r{index}.log"
        run = timed_run(program(command.argv), folder, env, log)
        if run["returncode"] != 0:
            raise CommandFailed(f"{command.name}: {shlex.join(command.argv)} exited {run['returncode']}; see {log}")
        found.append(run)
        print(
            f"  {command.name} run {index + 1}: {run['wall_seconds']:.1f} s wall, {run['cpu_seconds']:.1f} CPU s, "
            f"load {run['load_before']:.2f} -> {run['load_after']:.2f}",
            flush=True,
        )
        if run["wall_seconds"] >= repeat_under:
            break
    return found


def summary(runs: list[dict]) -> dict:
    """The median wall and CPU seconds of ``runs`` (each the median over the runs, not one run's pair), the highest
    peak memory, and the lowest and highest load average seen around them."""
    return {
        "wall_seconds": round(statistics.median(r["wall_seconds"] for r in runs), 3),
        "cpu_seconds": round(statistics.median(r["cpu_seconds"] for r in runs), 3),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "load": [
            min(min(r["load_before"], r["load_after"]) for r in runs),
            max(max(r["load_before"], r["load_after"]) for r in runs),
        ],
        # the mean of the readings during the runs (records made before it was sampled: None)
        "load_mean": round(statistics.fmean(r["load_mean"] for r in runs), 2)
        if all("load_mean" in r for r in runs)
        else None,
        "repeats": len(runs),
    }


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or what ``platform`` says."""
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict:
    threads = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ}
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": threads or "torch's default"}


def made_at() -> dict:
    """The commit measured at (``dirty`` when tracked files had uncommitted changes) and the date. This script's own
    records and report (written as each command finishes) do not count: the second command of an invocation ran the
    same code as the first."""

    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    own = [f":!{path.relative_to(ROOT)}" for path in (RECORDS, REPORT)]
    return {
        "commit": git("rev-parse", "--short=10", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", *own)),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def shown(argv: list[str] | tuple[str, ...]) -> str:
    """A command line as a report shows it: this interpreter as ``python``, paths made portable."""
    return portable_paths(shlex.join("python" if part == sys.executable else part for part in argv))


def write_json(path: Path, record: dict) -> None:
    """``record`` to ``path`` through a temporary name: a record that exists is complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)


def record_of(command: UserCommand, runs: list[dict], script_argv: list[str], made: dict) -> dict:
    """The record of ``command``'s ``runs``; ``made``: :func:`made_at` read before the first run."""
    return {
        "name": command.name,
        "page": command.page,
        "command": shlex.join(command.argv),
        "steps": command.steps,
        "note": command.note,
        "runs": runs,
        **summary(runs),
        "machine": machine(),
        "made": made,
        "made_by": shown([sys.executable, "benchmarks/performance/user_times.py", *script_argv]),
    }


# ---------------------------------------------------------------------------------------------------- preparations


def recipe_blocks(page: Path = YOUR_DATA) -> tuple[str, str]:
    """The your-data recipe's two Python blocks: the one writing ``heat.npz`` and ``my_pdes.py``'s text."""
    code = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    arrays = next(block for block in code if "np.savez" in block)
    module = next(block for block in code if block.startswith("# my_pdes.py"))
    return arrays, module


def untimed(argv: tuple[str, ...] | list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as stream:
        done = subprocess.run(program(argv), cwd=cwd, env=env, stdout=stream, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise CommandFailed(f"preparing: {shlex.join(argv)} exited {done.returncode}; see {log}")


def prepare_your_data(shared: Path, env: dict[str, str]) -> None:
    """The your-data recipe up to its import: ``heat.npz``, ``my_pdes.py`` and ``datasets/my_heat``."""
    arrays, module = recipe_blocks()
    if not (shared / "heat.npz").is_file():
        untimed(["python", "-c", arrays], shared, env, shared / "logs" / "heat.log")
    (shared / "my_pdes.py").write_text(module)
    if not (shared / "datasets" / "my_heat" / "stats.yaml").is_file():
        untimed(BY_NAME["import"].argv, shared, env, shared / "logs" / "import.log")


def prepare_wave2d(shared: Path, env: dict[str, str]) -> None:
    """The README's ``datasets/wave2d``."""
    if not (shared / "datasets" / "wave2d" / "stats.yaml").is_file():
        untimed(BY_NAME["generate-exact"].argv, shared, env, shared / "logs" / "wave2d.log")


def prepare_readme_run(shared: Path, env: dict[str, str]) -> None:
    """The README's UPAO run (one epoch of :data:`FEW_STEPS` steps), for its evaluate and forecast."""
    if not (shared / README_RUN / "checkpoints" / "best.pt").is_file():
        if (shared / "experiments").exists():
            shutil.rmtree(shared / "experiments")
        untimed(harness_command("na_nslora", "upao", FEW_STEPS), shared, env, shared / "logs" / "readme-run.log")


def prepare_what_you_get(key: str) -> Callable[[Path, dict[str, str]], None]:
    """A "What you get" setting's data and two runs (seed 42), made as its study makes them, under ``shared/wyg``."""

    def prepare(shared: Path, env: dict[str, str]) -> None:
        from studies import what_you_get_study as study

        args = argparse.Namespace(
            out=shared / "wyg", threads=None, epochs=study.EPOCHS, epoch_steps=study.EPOCH_STEPS, deadline=None
        )
        setting = study.BY_KEY[key]
        base, _ = study.data_for(args, setting, 42)
        experiments = study.case_folder(args, setting, 42) / "experiments"
        for role, (model, trainer) in {"upao": ("na_nslora", "upao"), "supervised": ("na_lora", "shifted")}.items():
            if list(experiments.glob(f"{setting.dataset}-{model}-{trainer}-*/0/checkpoints/best.pt")):
                continue
            command = study.training_command(args, setting, 42, base, experiments, model, trainer)
            log = study.case_folder(args, setting, 42) / f"{role}.log"
            study.logged(args, command, log, WELL_BASE_PATH=str(base))

    return prepare


PREPARATIONS: dict[str, Callable[[Path, dict[str, str]], None]] = {
    "your-data": prepare_your_data,
    "wave2d": prepare_wave2d,
    "readme-run": prepare_readme_run,
    **{
        f"wyg:{c.name.removeprefix('evaluate-')}": prepare_what_you_get(c.name.removeprefix("evaluate-"))
        for c in COMMANDS
        if c.name.startswith("evaluate-")
    },
}


# ---------------------------------------------------------------------------------------------------- profiles


def short_function(key: tuple[str, int, str]) -> str:
    """A pstats key as ``path:line(function)``, the path from its package folder on (``well_upao/...``)."""
    filename, line, name = key
    if filename == "~":
        return name
    parts = Path(filename).parts
    for anchor in ("site-packages", "benchmarks"):
        if anchor in parts:
            parts = parts[parts.index(anchor) + 1 :]
            break
    return f"{'/'.join(parts[-3:])}:{line}({name})"


def profile_entries(stats_file: Path, entries: int = PROFILE_ENTRIES) -> dict:
    """The top ``entries`` functions by own time, and the package's (``well_upao/``) by cumulative time."""
    stats = pstats.Stats(str(stats_file)).stats  # {key: (primitive calls, calls, own, cumulative, callers)}

    def row(key, value) -> dict:
        return {
            "function": short_function(key),
            "calls": value[1],
            "own_seconds": round(value[2], 3),
            "cumulative_seconds": round(value[3], 3),
        }

    by_own = sorted(stats.items(), key=lambda item: -item[1][2])[:entries]
    ours = [item for item in stats.items() if "well_upao" in item[0][0] or "benchmark/train" in item[0][0]]
    by_cumulative = sorted(ours, key=lambda item: -item[1][3])[:entries]
    return {"own": [row(*item) for item in by_own], "package_cumulative": [row(*item) for item in by_cumulative]}


def profile(command: UserCommand, out: Path, env: dict[str, str]) -> dict:
    """``command`` once under cProfile: its wall seconds and top entries (the processes it starts are not in it)."""
    folder = fresh_folder(out / "runs" / command.name / "profile", out / "shared", command.links)
    stats = out / "profiles" / f"{command.name}.prof"
    stats.parent.mkdir(parents=True, exist_ok=True)
    run = timed_run(profiled(command.argv, stats), folder, env, out / "logs" / f"{command.name}-profile.log")
    if run["returncode"] != 0:
        raise CommandFailed(f"{command.name} under cProfile exited {run['returncode']}")
    return {"wall_seconds": run["wall_seconds"], **profile_entries(stats)}


# ---------------------------------------------------------------------------------------------------- main


def chosen(args: argparse.Namespace) -> list[UserCommand]:
    """The commands ``--only`` names (else the light ones, all with ``--all``), and those ``--profile`` names."""
    if args.only:
        unknown = [name for name in args.only if name not in BY_NAME]
        if unknown:
            raise SystemExit(f"error: unknown command(s) {', '.join(unknown)}; --list shows the names")
        names = list(args.only)
    else:
        names = [c.name for c in COMMANDS if args.all or not c.heavy]
    unknown = [name for name in args.profile if name not in BY_NAME]
    if unknown:
        raise SystemExit(f"error: unknown command(s) {', '.join(unknown)} to profile; --list shows the names")
    return [BY_NAME[name] for name in dict.fromkeys([*names, *args.profile])]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("RUNS/user_times"), help="preparations, runs and logs")
    parser.add_argument("--records", type=Path, default=RECORDS, help="one JSON record per command")
    parser.add_argument("--report", type=Path, default=REPORT)
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help="these commands (--list: names)")
    parser.add_argument("--all", action="store_true", help="the heavy commands too")
    parser.add_argument("--force", action="store_true", help="rerun commands whose record exists")
    parser.add_argument("--profile", nargs="+", default=[], metavar="NAME", help="also profile these (cProfile)")
    parser.add_argument("--list", action="store_true", help="print the commands and whether each has a record")
    parser.add_argument("--report-only", action="store_true", help="write the report from the records; run nothing")
    args = parser.parse_args(argv)
    script_argv = sys.argv[1:] if argv is None else list(argv)
    if args.list:
        found = records(args.records)
        for c in COMMANDS:
            state = f"{found[c.name]['wall_seconds']:.1f} s" if c.name in found else "not measured"
            print(f"{c.name:34} {'heavy' if c.heavy else 'light':5}  {state:13}  {shlex.join(c.argv)}")
        return
    if not args.report_only:
        out = args.out.resolve()
        env = environment()
        failed = []
        for command in chosen(args):
            path = args.records / f"{command.name}.json"
            recorded = path.is_file() and not args.force
            if recorded and command.name not in args.profile:
                print(f"{command.name}: recorded, not run again (--force reruns)", flush=True)
                continue
            try:
                for name in command.prepare:
                    PREPARATIONS[name](out / "shared", env)
                if not recorded:
                    print(f"{command.name}: {shlex.join(command.argv)}", flush=True)
                    made = made_at()  # the commit measured at, read before the runs
                    write_json(path, record_of(command, measure(command, out, env), script_argv, made))
                if command.name in args.profile:
                    record = json.loads(path.read_text())
                    write_json(path, record | {"profile": profile(command, out, env)})
            except CommandFailed as error:
                print(f"error: {error}", file=sys.stderr, flush=True)
                failed.append(command.name)
        if failed:
            write_keeping_reading(args.report, report_lines(records(args.records), COMMANDS))
            raise SystemExit(f"error: {', '.join(failed)} failed (their logs are named above); the others recorded")
    write_keeping_reading(args.report, report_lines(records(args.records), COMMANDS))


if __name__ == "__main__":
    main()
