"""Raw side-work gaps of honest kernels, for designing the side-work check (GPU).

Runs the benchmark rung of each example RUNS times through the real loop (judge + kernel worker)
and writes, per run and case, the after-stop gaps of the timed calls, the interleaved honest
controls, the idle and busy calibrations, the kernel's median and the check's verdict, to
OUT/sidework.json; prints one line per run. The analysis (false-alarm rate of a rule) reads the
file; nothing here decides anything.

Usage: python bench/sidework_data.py --out DIR [--examples vector_add,softmax,matmul] [--runs 5]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def runs(example: str, count: int, work: Path) -> list[dict]:
    from kerneltui.core.loop import Loop
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import load_task
    from kerneltui.core.worker.pool import WorkerPool

    task_dir = work / example
    shutil.copytree(ROOT / "kerneltui" / "examples" / example, task_dir)
    task = load_task(task_dir)
    pool = WorkerPool(task.backend, spares=1)
    loop = Loop(task, pool=pool)
    out = []
    try:
        for i in range(count):
            t0 = time.perf_counter()
            report = await loop.run(RunOptions(rungs=["benchmark"], record=False, origin="check",
                                               extra={"benchmark": {"torch_compile": False}}))
            raw = (report.data.get("benchmark_raw") or {}).get("candidate") or {}
            bench = report.result("benchmark")
            for case in raw.get("cases") or []:
                out.append({"example": example, "run": i, "case": case.get("label"), "status": bench.status if bench else None,
                            "error": bench.error if bench else None, "wall_s": round(time.perf_counter() - t0, 2),
                            **{k: case.get(k) for k in ("straggle_us", "control_straggle_us", "idle_straggle_us",
                                                        "busy_straggle_us", "times_ms", "host_us")}})
                med = statistics.median(case.get("times_ms") or [0])
                print(f"{example} run {i}: {bench.status if bench else '?'} {med * 1e3:.1f} µs, "
                      f"{len(case.get('times_ms') or [])} calls, {out[-1]['wall_s']} s "
                      f"{(bench.error or '')[:120] if bench else ''}", flush=True)
    finally:
        await loop.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", default="vector_add,softmax,matmul")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kerneltui-sidework-"))
    data = []
    for example in args.examples.split(","):
        data += asyncio.run(runs(example, args.runs, work))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "sidework.json").write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
