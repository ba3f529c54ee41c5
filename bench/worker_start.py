"""What a worker's start costs, forked from a zygote and exec'd (``[sandbox] zygote``).

Two measures, the two ways taking turns (blocks of ``--repeats`` starts each way, twice) so that
drift in the machine's load hits both alike:

* start → ready of single workers one after another, the check's worker of a Triton task and the
  judge, through ``LocalRunner`` as a pool starts them; the first start of a block (the zygote's own
  imports included) is reported apart from the rest; CPU is every process's user + system time over
  the block (the zygote and its workers included, once they have exited);
* ``kerneltui check TASK --rungs correctness --no-engine`` as a command: wall and CPU.

Prints a table and appends it to bench/RESULTS.md (``--results`` elsewhere, ``--no-record`` not at all).

Usage: python bench/worker_start.py [--repeats 8] [--checks 4] [--example vector_add]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.core.sandbox.settings import SandboxSettings  # noqa: E402
from kerneltui.core.sandbox.zygote_client import close_zygotes  # noqa: E402
from kerneltui.core.worker.parent.process import WorkerProcess  # noqa: E402
from kerneltui.core.worker.parent.runner import LocalRunner  # noqa: E402

WAYS = {"zygote": True, "exec": False}
KINDS = (("triton", "candidate"), ("triton", "judge"))


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def start_block(zygote: bool, repeats: int, backend: str, role: str) -> tuple[float, list[float]]:
    runner = LocalRunner(env={"PYTHONPATH": str(ROOT)}, sandbox=SandboxSettings(zygote=zygote))
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        worker = await WorkerProcess.start(runner, backend, role=role)
        try:
            await worker.wait_ready(300)
            times.append(time.perf_counter() - started)
        finally:
            await worker.close()
    return times[0], times[1:]


def check_once(task_dir: Path, zygote: bool) -> tuple[float, float]:
    env = dict(os.environ, KERNELTUI_SANDBOX_ZYGOTE="true" if zygote else "false", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "kerneltui", "check", str(task_dir), "--rungs", "correctness", "--no-history",
           "--no-session", "--no-engine"]
    cpu = children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed: {proc.stderr[-2000:]}")
    return elapsed, children_cpu() - cpu


def describe(values: list[float], unit: str = "s") -> str:
    if not values:
        return "—"
    return (f"{statistics.median(values):.2f} {unit} ({min(values):.2f}–{max(values):.2f}, n={len(values)})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", default="vector_add")
    ap.add_argument("--repeats", type=int, default=8, help="worker starts per block (two blocks per way and kind)")
    ap.add_argument("--checks", type=int, default=4, help="`kerneltui check` runs per way")
    ap.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    first: dict[tuple[str, str], list[float]] = {}
    rest: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    for _ in range(2):
        for backend, role in KINDS:
            for way, zygote in WAYS.items():
                before = children_cpu()
                head, tail = asyncio.run(start_block(zygote, args.repeats, backend, role))
                close_zygotes()
                key = (way, role)
                first.setdefault(key, []).append(head)
                rest.setdefault(key, []).extend(tail)
                cpu.setdefault(key, []).append((children_cpu() - before) / args.repeats)

    work = Path(tempfile.mkdtemp(prefix="kerneltui-bench-"))
    task_dir = work / args.example
    shutil.copytree(ROOT / "kerneltui" / "examples" / args.example, task_dir,
                    ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    wall: dict[str, list[float]] = {w: [] for w in WAYS}
    check_cpu: dict[str, list[float]] = {w: [] for w in WAYS}
    try:
        for _ in range(args.checks):
            for way, zygote in WAYS.items():
                elapsed, used = check_once(task_dir, zygote)
                wall[way].append(elapsed)
                check_cpu[way].append(used)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    import torch
    import triton

    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"## Worker start: forked from a zygote and exec'd ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"{platform.node()} · {os.cpu_count()} CPUs · load average {load} at the end · Python "
        f"{platform.python_version()} · torch {torch.__version__} · triton {triton.__version__} · no GPU",
        f"Command: `python bench/worker_start.py --repeats {args.repeats} --checks {args.checks} --example {args.example}`",
        "",
        "| measure | zygote | exec | exec / zygote (medians) |",
        "|---|---|---|---|",
    ]
    for _backend, role in KINDS:
        z, e = rest[("zygote", role)], rest[("exec", role)]
        lines.append(f"| {role} (triton task): start → ready, after the first | {describe(z)} | {describe(e)} | "
                     f"{statistics.median(e) / statistics.median(z):.1f}× |")
        z, e = first[("zygote", role)], first[("exec", role)]
        lines.append(f"| {role}: first start of a process (the zygote's imports included) | {describe(z)} | "
                     f"{describe(e)} | {statistics.median(e) / statistics.median(z):.1f}× |")
        z, e = cpu[("zygote", role)], cpu[("exec", role)]
        lines.append(f"| {role}: CPU per start, all processes, {args.repeats} starts a block | {describe(z)} | "
                     f"{describe(e)} | {statistics.median(e) / statistics.median(z):.1f}× |")
    lines.append(f"| `kerneltui check {args.example} --rungs correctness --no-engine`: wall | {describe(wall['zygote'])} | "
                 f"{describe(wall['exec'])} | {statistics.median(wall['exec']) / statistics.median(wall['zygote']):.2f}× |")
    lines.append(f"| the same: CPU, all processes | {describe(check_cpu['zygote'])} | {describe(check_cpu['exec'])} | "
                 f"{statistics.median(check_cpu['exec']) / statistics.median(check_cpu['zygote']):.2f}× |")
    lines.append("")
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
