"""Verify a batch of candidate kernels at once and report the wall time, each GPU's share and the
ranking; print a table and append it to bench/RESULTS.md.

    python bench/batch_verify.py [--runner local|ray] [--ray-address local|auto|HOST:PORT]
                                 [--tasks vector_add,softmax] [-j N] [--full-bench] [--no-append]

The candidates are generated variants of the bundled examples: vector_add with BLOCK 256…4096,
softmax with 2…16 warps per row, plus one candidate per task that segfaults on its first call (it
must fail alone, without taking the batch down). Each candidate gets the same rungs as
``kerneltui check --rungs benchmark`` (compile, run, correctness, benchmark).

``--runner local`` runs one candidate at a time per visible GPU (``CUDA_VISIBLE_DEVICES`` pins each
slot's workers to its GPU, so on an 8-GPU box eight candidates run at once and no two benchmarks
share a GPU); ``--runner ray`` submits each candidate as a Ray task with ``num_gpus=1``.
By default the torch.compile baseline is off and each timed phase is capped at 2 s, so a batch of
ten candidates fits in about a minute on one GPU; ``--full-bench`` uses the configured settings.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.config import benchmark_settings  # noqa: E402
from kerneltui.core.batch import (  # noqa: E402
    CandidateResult,
    find_candidates,
    format_table,
    local_slots,
    verify_local,
)
from kerneltui.core.rungs.context import RunOptions  # noqa: E402
from kerneltui.core.task_loaders.load import load_task  # noqa: E402

EXAMPLES = ROOT / "kerneltui" / "examples"
RESULTS = ROOT / "bench" / "RESULTS.md"

CRASHING = '''import ctypes

import torch


def custom_kernel(*inputs: torch.Tensor) -> torch.Tensor:
    ctypes.string_at(0)  # a null read: SIGSEGV in the worker, on the first call
    return inputs[0]
'''


def vector_add_variants(folder: Path) -> None:
    source = (EXAMPLES / "vector_add" / "kernel.py").read_text()
    assert "BLOCK = 1024" in source, "the vector_add example changed: update the variant generator"
    for block in (256, 512, 1024, 2048, 4096):
        (folder / f"block_{block:04d}.py").write_text(source.replace("BLOCK = 1024", f"BLOCK = {block}"))
    (folder / "crashes.py").write_text(CRASHING)


def softmax_variants(folder: Path) -> None:
    source = (EXAMPLES / "softmax" / "kernel.py").read_text()
    pattern = r"num_warps = 4 if block <= 2048 else \(8 if block <= 8192 else 16\)"
    assert re.search(pattern, source), "the softmax example changed: update the variant generator"
    for warps in (2, 4, 8, 16):
        (folder / f"warps_{warps:02d}.py").write_text(re.sub(pattern, f"num_warps = {warps}", source))
    (folder / "crashes.py").write_text(CRASHING)


GENERATORS = {"vector_add": vector_add_variants, "softmax": softmax_variants}


def gpu_shares(results: list[CandidateResult], wall: float) -> list[dict[str, Any]]:
    """Per GPU (or CPU slot): candidates run, seconds busy, and the share of the batch's wall time."""
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        p = r.placement
        key = f"{p.get('host', '?')} · gpu {p['gpu']}" if p.get("gpu") else r.where
        row = rows.setdefault(key, {"slot": key, "candidates": 0, "busy_s": 0.0})
        row["candidates"] += 1
        if p.get("started_at") and p.get("finished_at"):
            row["busy_s"] += float(p["finished_at"]) - float(p["started_at"])
    for row in rows.values():
        row["share"] = row["busy_s"] / wall if wall > 0 else 0.0
    return sorted(rows.values(), key=lambda r: r["slot"])


def run_task(name: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    task_dir = scratch / name
    shutil.copytree(EXAMPLES / name, task_dir, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    kernels = scratch / f"{name}-candidates"
    kernels.mkdir()
    GENERATORS[name](kernels)
    task = load_task(task_dir)
    candidates = [replace(c, name=c.path.name) for c in find_candidates(str(kernels), task)]
    quick = None if args.full_bench else benchmark_settings(overrides={"torch_compile": False, "max_seconds": 2.0})
    options = RunOptions(rungs=["benchmark"], seeds=1, record=False, origin="batch", benchmark=quick)
    started = time.perf_counter()
    if args.runner == "ray":
        from kerneltui.core.remote.ray_runner import verify_ray

        results, info = verify_ray(task, candidates, args.ray_address, options)
    else:
        slots = local_slots(args.jobs)
        info = {"slots": [s.label for s in slots]}
        results = asyncio.run(verify_local(task, candidates, slots, options))
    wall = time.perf_counter() - started
    device = next((r.report.get("device") for r in results if r.report.get("device")), {}) or {}
    return {"task": name, "candidates": len(candidates), "wall_s": wall, "info": info, "device": device,
            "results": results, "shares": gpu_shares(results, wall)}


def markdown(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    device = next((r["device"] for r in runs if r["device"]), {})
    if device.get("gpu"):
        where = f"{device.get('name')} ({device.get('arch')}), torch {device.get('torch')}, triton {device.get('triton')}"
    else:
        where = (f"no GPU ({platform.machine()}, {os.cpu_count()} CPUs, load average "
                 f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}), torch {device.get('torch')}, "
                 f"triton {device.get('triton')}; the benchmark rung is skipped without a GPU, so there are no "
                 "medians and the times are the Triton interpreter's, not performance")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## Batch verification · {args.runner} runner · {stamp}", "",
             f"{where}. Command: `python bench/batch_verify.py {' '.join(sys.argv[1:])}`"
             + ("" if args.full_bench else " (torch.compile baseline off, timed phases capped at 2 s)"), ""]
    for run in runs:
        correct = sum(r.correct for r in run["results"])
        lines += [f"### {run['task']}: {run['candidates']} candidates in {run['wall_s']:.1f} s wall, "
                  f"{correct} correct", "", "| # | kernel | verdict | median µs | speedup | where | note |",
                  "|---|---|---|---|---|---|---|"]
        for i, r in enumerate(run["results"], 1):
            median = f"{r.median_ms * 1000:.1f}" if r.median_ms is not None else "—"
            speed = f"{r.speedup:.2f}×" if r.speedup is not None else "—"
            note = (r.failure or "").replace("|", "/")[:120]
            lines.append(f"| {i} | {Path(r.name).name} | {'correct' if r.correct else 'FAILED'} | {median} | {speed} "
                         f"| {r.where} | {note} |")
        lines += ["", "| slot | candidates | busy s | share of wall |", "|---|---|---|---|"]
        for s in run["shares"]:
            lines.append(f"| {s['slot']} | {s['candidates']} | {s['busy_s']:.1f} | {100 * s['share']:.0f}% |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", choices=("local", "ray"), default="local")
    parser.add_argument("--ray-address", default="local",
                        help="with --runner ray: local (start one here), auto, HOST:PORT or ray://HOST:PORT")
    parser.add_argument("--tasks", default="vector_add,softmax", help="comma-separated: vector_add, softmax")
    parser.add_argument("-j", "--jobs", type=int, help="local runner: slots (default one per visible GPU, 2 on CPU)")
    parser.add_argument("--full-bench", action="store_true", help="the configured benchmark settings (slower)")
    parser.add_argument("--no-append", action="store_true", help="do not append to bench/RESULTS.md")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args()
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    unknown = [n for n in names if n not in GENERATORS]
    if unknown:
        parser.error(f"unknown task(s) {', '.join(unknown)}: choose from {', '.join(GENERATORS)}")
    with tempfile.TemporaryDirectory(prefix="kerneltui-batch-bench-") as tmp:
        runs = [run_task(name, args, Path(tmp)) for name in names]
    for run in runs:
        print(f"\n{run['task']}: {run['candidates']} candidates, {run['wall_s']:.1f} s wall ({args.runner} runner)")
        print(format_table(run["results"]))
        for s in run["shares"]:
            print(f"  {s['slot']}: {s['candidates']} candidates, busy {s['busy_s']:.1f} s ({100 * s['share']:.0f}% of wall)")
    text = markdown(runs, args)
    if not args.no_append:
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
        print(f"\nappended to {RESULTS}")
    if args.json:
        args.json.write_text(json.dumps([{**{k: v for k, v in run.items() if k != "results"},
                                          "results": [r.to_json() for r in run["results"]]} for run in runs],
                                        indent=2, default=str))
    crashed_alone = all(any(not r.correct and "crashes" in r.name for r in run["results"]) for run in runs)
    others_ok = all(sum(r.correct for r in run["results"]) >= run["candidates"] - 1 for run in runs)
    return 0 if crashed_alone and others_ok else 1


if __name__ == "__main__":
    sys.exit(main())
