"""Save → correctness-verdict latency of `kerneltui watch` (issue: the warm worker makes reruns fast).

Starts the real `kerneltui watch` on a scratch copy of an example, saves the kernel file N+1 times
(each save changes a comment so the content differs), and reads the latency the watcher prints
after the correctness rung ("verdict X s after the save"). The first save is excluded (it may
still wait for the first warm worker). Prints a table and appends it to bench/RESULTS.md.

Usage: python bench/watch_latency.py [--example vector_add] [--saves 10] [--gap 6] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import platform
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERDICT = re.compile(r"^\[correctness\] (\S+).*\(verdict ([0-9.]+) s after the save\)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", default="vector_add")
    ap.add_argument("--saves", type=int, default=10)
    ap.add_argument("--gap", type=float, default=6.0, help="seconds between a verdict and the next save")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kerneltui-bench-"))
    task = work / args.example
    shutil.copytree(ROOT / "kerneltui" / "examples" / args.example, task)
    kernel = task / "kernel.py"
    original = kernel.read_text()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "watch", str(task), "--rungs", "correctness"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=work)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]

    def wait_for(pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        end = time.time() + timeout
        while time.time() < end:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            m = pattern.search(line)
            if m:
                return m
        raise SystemExit(f"timed out waiting for {pattern.pattern}")

    latencies: list[float] = []
    try:
        wait_for(re.compile(r"^(PASS|FAIL)"), 300)  # the initial run
        for i in range(args.saves + 1):
            time.sleep(args.gap)
            kernel.write_text(original + f"\n# save {i}\n")
            m = wait_for(VERDICT, 300)
            if m.group(1) != "ok":
                raise SystemExit(f"correctness was {m.group(1)} on save {i}")
            if i > 0:
                latencies.append(float(m.group(2)))
            print(f"save {i}: verdict after {float(m.group(2)):.3f} s", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)

    med = statistics.median(latencies)
    q = statistics.quantiles(latencies, n=4)
    table = (
        f"| example | saves | median (s) | IQR (s) | min (s) | max (s) |\n|---|---|---|---|---|---|\n"
        f"| {args.example} | {len(latencies)} | {med:.3f} | {q[0]:.3f}–{q[2]:.3f} | {min(latencies):.3f} | {max(latencies):.3f} |"
    )
    print(table)
    if not args.no_record:
        record(args, table)
    return 0


def record(args: argparse.Namespace, table: str) -> None:
    import importlib.metadata as md

    def v(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "-"

    gpu = "no GPU"
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
        gpu = out.stdout.strip() or gpu
    header = (
        f"\n## watch: save → correctness verdict ({args.example})\n\n"
        f"- date: {time.strftime('%Y-%m-%d %H:%M')} · machine: {platform.node()} ({os.cpu_count()} CPUs, {gpu})\n"
        f"- versions: python {platform.python_version()}, torch {v('torch')}, triton {v('triton')}\n"
        f"- command: `python bench/watch_latency.py --example {args.example} --saves {args.saves} --gap {args.gap}`\n\n"
    )
    with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
        fh.write(header + table + "\n")


if __name__ == "__main__":
    sys.exit(main())
