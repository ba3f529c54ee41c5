"""The judge's own cost per correctness case, by input size: making a case's inputs and the
reference's answer (``judge_inputs``), and the check at the verdict that the kernel left its inputs
alone, for vector_add at growing n; two checkouts side by side (``--before DIR --after DIR``), each
in a judge of its own, in turns.

The kernel is not run: the figures are the judge's work alone, which a GPU pays per case too (there
on the device, except what is copied to the host). Appends its table to bench/RESULTS.md unless
``--no-record``.

    python bench/judge_inputs_cost.py --before DIR --after . [--sizes 1048576,16777216,67108864] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run with the checkout first on sys.path: make each size's inputs (with the reference) twice, and
# time the verdict's input check (the candidate's copy untouched) where the checkout has one.
IN_JUDGE = r'''
import json, shutil, sys, time
from pathlib import Path
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.child import ops_judge
from kerneltui.core.worker.child.state import WorkerState

scratch, sizes = Path(sys.argv[1]), [int(s) for s in sys.argv[2].split(",")]
shutil.copytree(sys.argv[3], scratch / "task")
(scratch / "exchange").mkdir()
task = load_task(str(scratch / "task"))
judge = WorkerState(task.backend, role="judge", workdir=scratch / "judge")
judge.warm_up()
quiet = lambda *a, **k: None
ops_judge.op_judge_load(judge, {"task": task.to_dict(), "files": task.read_sources(), "exchange": str(scratch / "exchange")}, quiet)
rt = judge.judge.rt
out = {}
for n in sizes:
    made, checked = [], []
    for i in range(2):
        key = f"{n}-{i}"
        t = time.perf_counter()
        ops_judge.op_judge_inputs(judge, {"key": key, "params": {"n": n}, "seed": i + 1}, quiet)
        made.append(time.perf_counter() - t)
        check = judge.judge.checks[key]
        t = time.perf_counter()
        if hasattr(ops_judge, "_changed"):
            ops_judge._changed(rt, check.copy, check.inputs)
        else:  # before: digests of the copy, compared with those taken when it was made
            {k: h for k, h in ops_judge._digests(rt, check.copy).items() if check.copy_digests.get(k) != h}
        checked.append(time.perf_counter() - t)
        ops_judge.op_judge_release(judge, {"keys": [key]}, quiet)
    out[n] = {"inputs_s": min(made), "input_check_s": min(checked)}
print(json.dumps(out))
'''


def one(checkout: Path, sizes: str) -> dict[str, dict[str, float]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory(prefix="judge-cost-") as scratch:
        proc = subprocess.run([sys.executable, "-c", IN_JUDGE, scratch, sizes,
                               str(checkout / "kerneltui" / "examples" / "vector_add")],
                              capture_output=True, text=True, env=env, cwd=checkout, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: {proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--sizes", default="1048576,16777216,67108864")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"before": [], "after": []}
    loads = []
    for r in range(args.rounds):
        for name in ("before", "after"):
            loads.append(os.getloadavg()[0])
            runs[name].append(one(Path(getattr(args, name)).resolve(), args.sizes))
            print(f"round {r} {name}: {runs[name][-1]}", flush=True)
    rows = []
    for n in args.sizes.split(","):
        cells = []
        for name in ("before", "after"):
            made = statistics.median(run[n]["inputs_s"] for run in runs[name])
            checked = statistics.median(run[n]["input_check_s"] for run in runs[name])
            cells.append(f"{made:.3f} | {checked:.3f}")
        rows.append(f"| {int(n):,} ({int(n) * 4 / 2**20:.0f} MiB a tensor) | {cells[0]} | {cells[1]} |")
    text = (f"\n## {time.strftime('%Y-%m-%d %H:%M')} · judge_inputs_cost · {platform.node()} ({os.cpu_count()} CPUs)\n\n"
            f"Command: `python bench/judge_inputs_cost.py --before {args.before} --after {args.after} --sizes {args.sizes} "
            f"--rounds {args.rounds}`; vector_add, the judge alone; medians over rounds of the best of two cases; load average "
            f"{min(loads):.1f}–{max(loads):.1f}.\n\n"
            "| n | before: inputs + reference (s) | before: input check at the verdict (s) | after: inputs + reference (s) "
            "| after: input check (s) |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(text)
    if not args.no_record:
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
