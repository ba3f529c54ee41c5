"""Where a `kerneltui check` spends its time: every rung's duration and, inside the benchmark rung, its parts.

Runs ``python -m kerneltui check TASK --json`` RUNS times on one copy of the task (the first may start the engine
and time the baselines; the later ones find them cached, as a person's second check would) and prints, per check:

* each rung's duration (from the report), and when the verdict was announced (so far, then final);
* the benchmark rung split: waiting for spare workers to finish starting (no worker starts while the kernel is
  timed), the device's peaks with the reference's set-up, each baseline, and the kernel (its worker's load and
  every case);
* per case: the kernel's warm-up and timed series (seconds, calls, kernel time, why it stopped) and the
  CUDA-graph series where one ran.

On a machine without a GPU the benchmark rung is skipped and only the rungs are printed. Appends the tables to
bench/RESULTS.md unless ``--no-record``.

    PYTHONPATH=$PWD python3 bench/check_breakdown.py [--task kerneltui/examples/vector_add] [--runs 3] [-- CHECK ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"


def rung_table(report: dict[str, Any]) -> list[str]:
    lines = ["| rung | status | seconds |", "|---|---|---|"]
    for rung in report.get("rungs") or []:
        lines.append(f"| {rung['name']} | {rung['status']} | {rung.get('duration_s') or 0:.2f} |")
    for verdict in report.get("verdicts") or []:  # when the verdict was announced (core.verdict)
        kind = "final verdict" if verdict.get("final") else "verdict so far (the checks)"
        lines.append(f"| ({kind} announced) | {'PASS' if verdict.get('ok') else 'FAIL'} | "
                     f"{verdict.get('after_s') or 0:.2f} |")
    lines.append(f"| (the whole check, as the report says) | {'PASS' if report.get('ok') else 'FAIL'} | "
                 f"{report.get('duration_s') or 0:.2f} |")
    return lines


def _origin(metrics: dict[str, Any], target: str) -> str:
    """Where a baseline came from, as the rung's metrics say (``core.rungs.baselines.Provenance``)."""
    found = (metrics.get("baselines") or {}).get(target)
    return str(found.get("note", "?")) if isinstance(found, dict) else "?"


def benchmark_split(metrics: dict[str, Any]) -> list[str]:
    """The benchmark rung's own timings (core.rungs.benchmark) and each case's series (core.bench.report)."""
    if not metrics.get("total_s"):
        return []
    total = float(metrics["total_s"])
    baselines = sum(float(metrics.get(k) or 0) for k in ("reference_s", "torch_compile_s"))
    kernel = float(metrics.get("candidate_s") or 0)
    lines = ["| benchmark part | seconds |", "|---|---|",
             f"| waiting for spare workers to finish starting | {float(metrics.get('worker_wait_s') or 0):.2f} |",
             f"| the device's peaks, the reference's set-up and work estimate | {total - baselines - kernel:.2f} |",
             f"| reference baseline ({_origin(metrics, 'reference')}) | "
             f"{float(metrics.get('reference_s') or 0):.2f} |",
             f"| torch.compile baseline ({_origin(metrics, 'torch_compile')}) | "
             f"{float(metrics.get('torch_compile_s') or 0):.2f} |",
             f"| the kernel: its worker's load and every case | {kernel:.2f} |",
             f"| the rung from its first step (waiting excluded) | {total:.2f} |", ""]
    lines += ["| case | warm-up (s, calls) | timed series (s) | calls | kernel time (ms) | median (µs) | stopped | "
              "graph replays |", "|---|---|---|---|---|---|---|---|"]
    for case in metrics.get("cases") or []:
        cand = case.get("candidate") or {}
        graph = case.get("graph") or {}
        lines.append(f"| {case.get('label', '?')} | {float(cand.get('warmup_s') or 0):.2f}, {cand.get('warmup_runs', 0)} | "
                     f"{float(cand.get('wall_s') or 0):.2f} | {cand.get('runs', 0)} | {float(cand.get('total_ms') or 0):.1f} | "
                     f"{float(cand.get('median_ms') or 0) * 1e3:.1f} | {cand.get('stopped') or '—'} | "
                     f"{graph.get('runs', '—') if graph else '—'} |")
    for case in metrics.get("cases") or []:
        spent = (case.get("candidate") or {}).get("spent_s") or {}
        if spent:
            lines += ["", f"Where {case.get('label', '?')}'s series spent its wall time (warm-up, timed, graph; seconds):",
                      "", "| part | seconds |", "|---|---|",
                      *(f"| {part} | {seconds:.3f} |" for part, seconds in spent.items())]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default=str(ROOT / "kerneltui" / "examples" / "vector_add"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("check_args", nargs="*", help="more arguments for check (after --)")
    args = ap.parse_args()

    # A short folder under /tmp: the engine's Unix socket lives in it (a socket path has ~100 bytes).
    work = Path(tempfile.mkdtemp(prefix="ktb-", dir="/tmp"))
    task = work / Path(args.task).name
    shutil.copytree(args.task, task, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    # An engine of its own (the first check starts it, `engine stop` below ends it), never the person's.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
               KERNELTUI_ENGINE_DIR=str(work / "e"), KERNELTUI_ENGINE_ENABLED="1",
               KERNELTUI_SESSIONS_DIR=str(work / "sessions"))
    out = [f"\n## {time.strftime('%Y-%m-%d %H:%M')} · check_breakdown · {platform.node()} ({os.cpu_count()} CPUs)\n",
           f"Command: `python bench/check_breakdown.py --task {args.task} --runs {args.runs}"
           + (f" -- {' '.join(args.check_args)}" if args.check_args else "") + "`"
           + "".join(f" with {k}={os.environ[k]}" for k in sorted(os.environ) if k.startswith("KERNELTUI_")) + ".\n"]
    try:
        for run in range(args.runs):
            started = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "kerneltui", "check", str(task), "--json", *args.check_args],
                                  capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
            wall = time.perf_counter() - started
            if proc.returncode not in (0, 1):
                raise SystemExit(f"check ended with status {proc.returncode}: {proc.stderr[-2000:]}")
            report = json.loads(proc.stdout)
            bench: dict[str, Any] = next((r for r in report.get("rungs") or [] if r["name"] == "benchmark"), {})
            text = [f"### check {run + 1} of {args.runs}: {wall:.2f} s from the command's start\n", *rung_table(report), "",
                    *benchmark_split(bench.get("metrics") or {})]
            print("\n".join(text), flush=True)  # as each check ends: a run cut off by a time limit keeps what it had
            out += [*text, ""]
    finally:
        subprocess.run([sys.executable, "-m", "kerneltui", "engine", "stop"], env=env, cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    if not args.no_record:
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
