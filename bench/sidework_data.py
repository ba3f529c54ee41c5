"""The side-work check on the GPU: false alarms on honest kernels, catches on cheats, and the raw gaps.

Runs the benchmark rung RUNS times through the real loop (judge + kernel worker) for each bundled
example, GALLERY_RUNS times for each kernel of the honest gallery (tests/cheats/honest.py) and twice
for each GPU side-work cheat of the gallery (tests/cheats/gallery.py), in turns, and reports per kernel how many runs
the benchmark failed and why. Every run's raw gaps (timed calls, interleaved honest controls, the
confirmation if there was one) go to OUT/sidework.json so a rule can be studied offline
(bench/sidework_replay.py stores them under bench/data/ and replays the check on them). Short
series (``--max-seconds``) keep the study inside one device call; the check works the same way.

Usage: python bench/sidework_data.py --out DIR [--examples vector_add,softmax,matmul] [--runs 20]
       [--gallery] [--gallery-runs 3] [--cheats] [--max-seconds 1.5] [--spares 6] [--top-up-at 1]
       [--deadline-seconds S]
       [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def prepare(work: Path, name: str, example: str, kernel: str | None, prefix: str = "", suffix: str = "") -> Path:
    dest = work / name / example
    shutil.copytree(ROOT / "kerneltui" / "examples" / example, dest)
    toml = dest / "task.toml"
    toml.write_text(prefix + toml.read_text() + suffix)
    if kernel is not None:
        (dest / "kernel.py").write_text(kernel)
    return dest


async def measure_once(name: str, loop: Any, i: int, settings: dict[str, Any]) -> dict[str, Any]:
    from kerneltui.config import benchmark_settings
    from kerneltui.core.rungs.context import RunOptions

    t0 = time.perf_counter()
    report = await loop.run(RunOptions(rungs=["benchmark"], seeds=1, record=False, origin="check",
                                       benchmark=benchmark_settings(overrides=settings)))
    bench = report.result("benchmark")
    raw = (report.data.get("benchmark_raw") or {}).get("candidate") or {}
    metrics = report.data.get("benchmark") or {}
    cases = raw.get("cases") or [{}]
    entry = {"kernel": name, "run": i, "status": bench.status if bench else "missing",
             "error": (bench.error or "") if bench else "the benchmark rung did not run",
             # A "warn" says why only here (a run that did not converge, a CUDA-graph note...).
             "summary": bench.summary if bench else "",
             "wall_s": round(time.perf_counter() - t0, 2),
             # where a run's wall time went: waiting for spares, the baselines, the kernel
             "timings": {k: metrics.get(k) for k in ("worker_wait_s", "reference_s", "candidate_s", "total_s")},
             "cases": [{k: c.get(k) for k in ("label", "straggle_us", "control_straggle_us", "confirm_straggle_us",
                                              "confirm_control_us", "idle_straggle_us", "busy_straggle_us",
                                              "times_ms")} for c in cases]}
    med = statistics.median(cases[0].get("times_ms") or [0])
    print(f"{name} run {i}: {entry['status']} {med * 1e3:.1f} µs in {entry['wall_s']} s "
          f"(waited {entry['timings']['worker_wait_s']} s for spares) "
          f"{(entry['error'] or entry['summary'])[:160]}", flush=True)
    return entry


async def measure(jobs: list[tuple[str, Path, int, bool]], settings: dict[str, Any], spares: int, top_up_at: int,
                  deadline: float) -> list[dict[str, Any]]:
    """Every job's runs, taken in turns (one run of each job, then the next round), so that a deadline
    leaves every kernel with about as many runs. One pool per backend serves every task of it (workers
    load the task when a run takes them); its spares are topped up in bursts (``top_up_at``)."""
    from kerneltui.core.loop import Loop
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.core.worker.parent.pool import WorkerPool

    pools: dict[str, WorkerPool] = {}
    loops = []
    for name, task_dir, runs, _ in jobs:
        task = load_task(task_dir)
        if task.backend not in pools:
            pools[task.backend] = WorkerPool(task.backend, spares=spares, top_up_at=top_up_at)
            pools[task.backend].prestart()
        loops.append((name, Loop(task, pool=pools[task.backend]), runs))
    out = []
    try:
        for i in range(max(runs for _, _, runs in loops)):
            for name, loop, runs in loops:
                if i >= runs:
                    continue
                if time.time() > deadline:
                    print(f"stopped in round {i} (--deadline-seconds reached)", flush=True)
                    return out
                out.append(await measure_once(name, loop, i, settings))
    finally:
        for _, loop, _ in loops:
            await loop.close()
        for pool in pools.values():
            await pool.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", default="vector_add,softmax,matmul")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--gallery", action="store_true", help="also the honest gallery, GALLERY_RUNS times each")
    ap.add_argument("--gallery-runs", type=int, default=3)
    ap.add_argument("--cheats", action="store_true", help="also every GPU side-work cheat, twice each")
    ap.add_argument("--max-seconds", type=float, default=1.5)
    ap.add_argument("--results", default=None)
    ap.add_argument("--spares", type=int, default=6, help="ready workers kept per role (default 6)")
    ap.add_argument("--top-up-at", type=int, default=1,
                    help="start spares again only when a role is down to this many (default 1)")
    ap.add_argument("--deadline-seconds", type=float, default=float("inf"),
                    help="start no further run after this many seconds; what ran is reported")
    args = ap.parse_args()
    settings = {"torch_compile": False, "max_seconds": args.max_seconds}
    work = Path(tempfile.mkdtemp(prefix="kerneltui-sidework-"))
    jobs: list[tuple[str, Path, int, bool]] = []
    if args.gallery or args.cheats:
        from tests.cheats.gallery import GPU_CHEATS
        from tests.cheats.honest import HONEST
    if args.cheats:  # first in each round: every cheat is tried before a deadline can stop the study
        for c in GPU_CHEATS:
            jobs.append((f"cheat:{c.name}", prepare(work, c.name, c.task, c.kernel, c.task_toml_prefix), 2, False))
    for example in [e for e in args.examples.split(",") if e]:
        jobs.append((example, prepare(work, example, example, None), args.runs, True))
    if args.gallery:
        for h in HONEST:
            jobs.append((f"honest:{h.name}", prepare(work, h.name, h.task, h.kernel, h.task_toml_prefix,
                                                      h.task_toml_suffix), args.gallery_runs, True))
    started = time.time()
    deadline = started + args.deadline_seconds
    data = asyncio.run(measure(jobs, settings, args.spares, args.top_up_at, deadline))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "sidework.json").write_text(json.dumps(data))
    text = report(data, [(name, honest) for name, _, _, honest in jobs], started,
                  f"python bench/sidework_data.py {' '.join(sys.argv[1:])}", args.max_seconds)
    print(text)
    if args.results:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write(text)
    return 0


def report(data: list[dict[str, Any]], kernels: list[tuple[str, bool]], started: float, command: str,
           max_seconds: float) -> str:
    """The RESULTS.md entry of a measurement: one row per kernel (name, honest or not)."""
    rows = []
    for name, honest in kernels:
        got = [d for d in data if d["kernel"] == name]
        failed = [g for g in got if g["status"] == "fail"]
        side = [g for g in failed if "still busy after the timed stream" in g["error"]]
        # The benchmark rung runs after correctness: a kernel that fails correctness is never timed.
        # For a cheat that is a catch before the benchmark; for an honest kernel, a run not measured.
        early = [g for g in got if g["status"] == "skip" and g["summary"] == "correctness failed"]
        message = failed[0]["error"][:90] if failed else ("correctness failed" if early else "")
        rows.append(f"| {name} | {'honest' if honest else 'cheat'} | {len(got)} | {len(early)} | {len(failed)} | "
                    f"{len(side)} | {message.replace('|', '/')} |")
    honest_runs = [d for d in data if not d["kernel"].startswith("cheat:")]
    # A skipped benchmark (no GPU in the worker, correctness failed) measured nothing: neither a pass nor an alarm.
    skipped = sum(1 for d in honest_runs if d["status"] == "skip")
    false_alarms = sum(1 for d in honest_runs if d["status"] == "fail")
    return (f"\n## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} · sidework_data\n\n"
            f"Command: `{command}`; benchmark rung with max_seconds={max_seconds}, no torch.compile baseline. Honest "
            f"runs failed: {false_alarms} of {len(honest_runs) - skipped} measured"
            + (f" ({skipped} skipped: the benchmark did not run)" if skipped else "")
            + ".\n\n| kernel | kind | runs | correctness failed (not timed) | benchmark failed | by the side-work check "
            "| first message |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    sys.exit(main())
