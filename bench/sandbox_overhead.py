"""Save → verdict time (the correctness rung) with the sandbox on and off.

Two measures, each alternating on and off so that drift in the machine's load hits both alike:

* warm: what a save costs in the TUI or ``kerneltui watch``: a ``Loop`` whose pool holds a ready
  spare worker (started, and boxed, before the save) runs prechecks → compile → correctness on a
  changed kernel; timed from ``Loop.run`` to the verdict. The box's own cost (the supervisor's
  start, the policy, Landlock) is paid while the spare warms up, so this shows what is left of it;
* cold: ``kerneltui check TASK --rungs correctness`` as a command (worker start included).

Prints a table and appends it to bench/RESULTS.md (``--results`` elsewhere, ``--no-record`` not at
all) with the date, machine, load, versions and command.

Usage: python bench/sandbox_overhead.py [--example vector_add] [--repeats 6] [--seeds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.core.loop import Loop  # noqa: E402
from kerneltui.core.rungs.context import RunOptions  # noqa: E402
from kerneltui.core.sandbox.settings import SandboxSettings  # noqa: E402
from kerneltui.core.sandbox.support import support  # noqa: E402
from kerneltui.core.task_loaders.load import load_task  # noqa: E402
from kerneltui.core.worker.parent.pool import WorkerPool  # noqa: E402
from kerneltui.core.worker.parent.runner import LocalRunner  # noqa: E402

MODES = {"box on": "true", "box off": "false"}


async def warm_runs(task_dir: Path, enabled: bool, count: int, seeds: int | None) -> tuple[list[float], dict]:
    task = load_task(task_dir)
    runner = LocalRunner(env={"PYTHONPATH": str(ROOT)}, sandbox=SandboxSettings(enabled=enabled))
    pool = WorkerPool(task.backend, arch=task.arch, runner=runner)
    loop = Loop(task, pool=pool)
    kernel = task_dir / task.kernel_file
    original = kernel.read_text()
    times, device = [], {}
    try:
        pool.prestart()
        for i in range(count):
            async with pool.quiet():  # wait until the spare is warm: the state a save finds
                pass
            source = original + f"\n# save {enabled} {i} {time.time()}\n"
            started = time.perf_counter()
            report = await loop.run(RunOptions(rungs=["correctness"], seeds=seeds, record=False, kernel_source=source))
            times.append(time.perf_counter() - started)
            if not report.ok:
                raise SystemExit(f"the check failed: {[(r.name, r.summary) for r in report.results]}")
            device = report.device
    finally:
        await loop.close()
        await pool.close()
    return times, device


def cold_run(task_dir: Path, enabled: str, seeds: int | None) -> float:
    env = dict(os.environ, KERNELTUI_SANDBOX_ENABLED=enabled, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "kerneltui", "check", str(task_dir), "--rungs", "correctness", "--no-history",
           "--no-session"] + (["--seeds", str(seeds)] if seeds else [])
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed: {proc.stderr[-2000:]}")
    return elapsed


def describe(values: list[float]) -> str:
    if not values:
        return "—"
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return (f"{statistics.median(values):.2f} s (IQR {q[0]:.2f}–{q[2]:.2f}, min {min(values):.2f}, "
            f"max {max(values):.2f}, n={len(values)})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", default="vector_add")
    ap.add_argument("--repeats", type=int, default=6, help="runs per mode and measure")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per test case (default: the task's)")
    ap.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kerneltui-bench-"))
    task_dir = work / args.example
    shutil.copytree(ROOT / "kerneltui" / "examples" / args.example, task_dir,
                    ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    warm: dict[str, list[float]] = {m: [] for m in MODES}
    cold: dict[str, list[float]] = {m: [] for m in MODES}
    device: dict = {}
    try:
        half = max(1, args.repeats // 2)
        for _ in range(2):  # on, off, on, off: each block half the runs
            for mode, flag in MODES.items():
                times, device = asyncio.run(warm_runs(task_dir, flag == "true", half, args.seeds))
                warm[mode] += times
        for _ in range(args.repeats):
            for mode, flag in MODES.items():
                cold[mode].append(cold_run(task_dir, flag, args.seeds))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    measured = support()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    gpu = device.get("name") if device.get("gpu") else "no GPU (Triton interpreter)"
    delta_warm = statistics.median(warm["box on"]) - statistics.median(warm["box off"])
    delta_cold = statistics.median(cold["box on"]) - statistics.median(cold["box off"])
    lines = [
        f"## Sandbox: save → verdict (correctness) with the box on and off ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"{platform.node()} · {os.cpu_count()} CPUs · load average {load} · {gpu} · Python {platform.python_version()} · "
        f"torch {device.get('torch')} · triton {device.get('triton')} · Landlock ABI {measured.landlock_abi} · "
        f"network: {measured.network or 'none'} · cgroup: {measured.cgroup_base or 'none'}",
        f"Command: `python bench/sandbox_overhead.py --example {args.example} --repeats {args.repeats}"
        + (f" --seeds {args.seeds}" if args.seeds else "") + "` (task: the bundled example, default rungs up to "
        "correctness)",
        "",
        "| measure | box on | box off | on − off (medians) |",
        "|---|---|---|---|",
        f"| warm: run → verdict, spare worker ready | {describe(warm['box on'])} | {describe(warm['box off'])} | "
        f"{delta_warm:+.2f} s |",
        f"| cold: `kerneltui check --rungs correctness` | {describe(cold['box on'])} | {describe(cold['box off'])} | "
        f"{delta_cold:+.2f} s |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
