"""The side-work check on the GPU: false alarms on honest kernels, catches on cheats, and the raw gaps.

Runs the benchmark rung RUNS times through the real loop (judge + kernel worker) for each honest
kernel — the bundled examples and the honest gallery (tests/cheats/honest.py) — and once for each
GPU side-work cheat of the gallery (tests/cheats/gallery.py), and reports per kernel how many runs
the benchmark failed and why. Every run's raw gaps (timed calls, interleaved honest controls, the
confirmation if there was one) go to OUT/sidework.json so a rule can be studied offline. Short
series (``--max-seconds``) keep the study inside one device call; the check works the same way.

Usage: python bench/sidework_data.py --out DIR [--examples vector_add,softmax,matmul] [--runs 20]
       [--gallery] [--cheats] [--max-seconds 1.5] [--spares 2] [--deadline-seconds S]
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


async def measure(name: str, task_dir: Path, runs: int, settings: dict[str, Any], spares: int,
                  deadline: float) -> list[dict[str, Any]]:
    from kerneltui.config import benchmark_settings
    from kerneltui.core.loop import Loop
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.core.worker.pool import WorkerPool

    task = load_task(task_dir)
    # Workers are single-use: with several spares per role their start (torch, CUDA) overlaps the
    # runs before them instead of adding to each.
    pool = WorkerPool(task.backend, spares=spares)
    loop = Loop(task, pool=pool)
    out = []
    try:
        for i in range(runs):
            if time.time() > deadline:
                print(f"{name}: stopped after {i} runs (--deadline-seconds reached)", flush=True)
                break
            t0 = time.perf_counter()
            report = await loop.run(RunOptions(rungs=["benchmark"], seeds=1, record=False, origin="check",
                                               benchmark=benchmark_settings(overrides=settings)))
            bench = report.result("benchmark")
            raw = (report.data.get("benchmark_raw") or {}).get("candidate") or {}
            cases = raw.get("cases") or [{}]
            entry = {"kernel": name, "run": i, "status": bench.status if bench else "missing",
                     "error": (bench.error or "") if bench else "the benchmark rung did not run",
                     # A "warn" says why only here (a run that did not converge, a CUDA-graph note...).
                     "summary": bench.summary if bench else "",
                     "wall_s": round(time.perf_counter() - t0, 2), "cases": [
                         {k: c.get(k) for k in ("label", "straggle_us", "control_straggle_us", "confirm_straggle_us",
                                                "confirm_control_us", "times_ms")} for c in cases]}
            out.append(entry)
            med = statistics.median(cases[0].get("times_ms") or [0])
            print(f"{name} run {i}: {entry['status']} {med * 1e3:.1f} µs in {entry['wall_s']} s "
                  f"{(entry['error'] or entry['summary'])[:160]}", flush=True)
    finally:
        await loop.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", default="vector_add,softmax,matmul")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--gallery", action="store_true", help="also the honest gallery, RUNS times each")
    ap.add_argument("--cheats", action="store_true", help="also every GPU side-work cheat, twice each")
    ap.add_argument("--max-seconds", type=float, default=1.5)
    ap.add_argument("--results", default=None)
    ap.add_argument("--spares", type=int, default=2, help="ready workers kept per role (default 2)")
    ap.add_argument("--deadline-seconds", type=float, default=float("inf"),
                    help="start no further run after this many seconds; what ran is reported")
    args = ap.parse_args()
    settings = {"torch_compile": False, "max_seconds": args.max_seconds}
    work = Path(tempfile.mkdtemp(prefix="kerneltui-sidework-"))
    jobs: list[tuple[str, Path, int, bool]] = []
    for example in [e for e in args.examples.split(",") if e]:
        jobs.append((example, prepare(work, example, example, None), args.runs, True))
    if args.gallery or args.cheats:
        from tests.cheats.gallery import GPU_CHEATS
        from tests.cheats.honest import HONEST
    if args.gallery:
        for h in HONEST:
            jobs.append((f"honest:{h.name}", prepare(work, h.name, h.task, h.kernel, h.task_toml_prefix,
                                                      h.task_toml_suffix), args.runs, True))
    if args.cheats:
        for c in GPU_CHEATS:
            jobs.append((f"cheat:{c.name}", prepare(work, c.name, c.task, c.kernel, c.task_toml_prefix), 2, False))
    started = time.time()
    deadline = started + args.deadline_seconds
    data: list[dict[str, Any]] = []
    rows = []
    for name, task_dir, runs, honest in jobs:
        got = asyncio.run(measure(name, task_dir, runs, settings, args.spares, deadline))
        data += got
        failed = [g for g in got if g["status"] == "fail"]
        side = [g for g in failed if "still busy after the timed stream" in g["error"]]
        rows.append(f"| {name} | {'honest' if honest else 'cheat'} | {len(got)} | {len(failed)} | {len(side)} | "
                    f"{(failed[0]['error'][:90] if failed else '').replace('|', '/')} |")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "sidework.json").write_text(json.dumps(data))
    honest = [d for d in data if not d["kernel"].startswith("cheat:")]
    # A skipped benchmark (no GPU in the worker) measured nothing: it is neither a pass nor an alarm.
    skipped = sum(1 for d in honest if d["status"] == "skip")
    honest_runs = len(honest) - skipped
    false_alarms = sum(1 for d in honest if d["status"] == "fail")
    text = (f"\n## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} · sidework_data\n\n"
            f"Command: `python bench/sidework_data.py {' '.join(sys.argv[1:])}`; benchmark rung with "
            f"max_seconds={args.max_seconds}, no torch.compile baseline. Honest runs failed: {false_alarms} of "
            f"{honest_runs} measured" + (f" ({skipped} skipped: the benchmark did not run)" if skipped else "")
            + ".\n\n| kernel | kind | runs | benchmark failed | by the side-work check | first message |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(text)
    if args.results:
        with open(args.results, "a", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
