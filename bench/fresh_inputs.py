"""How long the benchmark's judge takes to hand out input sets when ``generate_input`` is slow.

Method: for each source tree (``--before``, default /work/main, and this checkout), a fresh
interpreter with that tree on PYTHONPATH loads a task into a judge's worker state (real reference
runtime, real tensors on this machine's device) and builds the benchmark's input pool
(``core.worker.child.timing.InputPool``, as ``judge_pool`` does) with room for ``--slots`` sets, then renews every
slot ``--rounds`` times, as the kernel's series does between batches. Timed: from the pool's
creation until the last set is ready (reference outputs included); counted: calls of the task's
``generate_input``. Two tasks: vector_add as shipped (n = 2^20), and the same with a deliberately
slow ``generate_input`` (a CPU generator, then ``--host-s`` seconds of host work standing for a copy
to the device, as KernelBench's get_inputs does). Median (min–max) of ``--runs`` runs per cell.

On a CPU-only machine the device *is* the host, so making a set from a base set costs about what
generating it does for the shipped task; the slow task's host seconds are what the new path skips.
On the GPU (bench/engine_check.py --slow-inputs) deriving a set is a few element-wise kernels.

    PYTHONPATH=$PWD python3 bench/fresh_inputs.py [--before /work/main] [--runs 3] [--no-record]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.engine_check import fresh_copy, publish, summary, uptime  # noqa: E402  (bench/ is not a package)

SLOW_REFERENCE = '''
import time

import torch

HOST_S = {host_s}


def generate_input(seed: int, n: int, device: str = "cuda"):
    gen = torch.Generator().manual_seed(seed)  # on the host, as KernelBench's get_inputs
    x = torch.randn(n, generator=gen, dtype=torch.float32)
    y = torch.randn(n, generator=gen, dtype=torch.float32)
    time.sleep(HOST_S)  # the rest of the host work (on a GPU machine: the copy to the device)
    return x.to(device), y.to(device)


def ref_kernel(x, y):
    return x + y
'''

CHILD = r'''
import itertools, json, sys, time
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.child.runtime import reference_runtime_for
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.child import timing

state = WorkerState("triton", role="judge")
state.warm_up()
task = load_task(sys.argv[1])
state.install_task(task.to_dict(), task.read_sources())
rt = reference_runtime_for(state)
rt.load()
calls = [0]
make = rt.make_inputs
def counted(params, seed):
    calls[0] += 1
    return make(params, seed)
rt.make_inputs = counted
slots, rounds, n = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
params = {"n": n}
set_bytes = 4 * n * 4
t0 = time.perf_counter()
pool = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(11, 0, k) for k in itertools.count()),
                        with_reference=True, budget_bytes=slots * set_bytes, max_sets=slots)
pool.first_batch()
for _ in range(rounds):
    pool.renew(list(range(pool.sets)))
state.sync()
print(json.dumps({"seconds": time.perf_counter() - t0, "sets": pool.sets * (rounds + 1), "calls": calls[0]}))
'''


def make_task(parent: Path, name: str, host_s: float | None) -> Path:
    dest = fresh_copy(ROOT / "kerneltui" / "examples" / "vector_add", parent, name)
    if host_s is not None:
        (dest / "reference.py").write_text(SLOW_REFERENCE.format(host_s=host_s))
    return dest


def measure(tree: Path, task: Path, slots: int, rounds: int, n: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(task), str(slots), str(rounds), str(n)],
                          capture_output=True, text=True, env=env, cwd=tree, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"the pool did not finish under {tree}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="/work/main", help="the source tree to compare with")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--host-s", type=float, default=0.25)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kt-fresh-"))
    tasks = {"vector_add as shipped": make_task(work, "shipped", None),
             f"slow generate_input (host randn + {args.host_s:g} s)": make_task(work, "slow", args.host_s)}
    trees = {"before": Path(args.before).resolve(), "after": ROOT}
    load_before = uptime()
    rows = []
    try:
        for label, task in tasks.items():
            got: dict[str, list[dict]] = {name: [] for name in trees}
            for _ in range(args.runs):
                for name, tree in trees.items():  # interleaved, so load changes hit both alike
                    got[name].append(measure(tree, task, args.slots, args.rounds, args.n))
            sets = got["after"][0]["sets"]
            rows.append(f"| {label} | {sets} | {summary([r['seconds'] for r in got['before']])}, "
                        f"{got['before'][0]['calls']} calls | {summary([r['seconds'] for r in got['after']])}, "
                        f"{got['after'][0]['calls']} calls |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    import torch

    table = "\n".join(["| task | sets handed out | before: time, generate_input calls | after |",
                       "|---|---|---|---|", *rows])
    head = (f"\n## The judge's input pool with a slow generate_input ({time.strftime('%Y-%m-%d %H:%M')})\n\n"
            f"Machine: {platform.node()}, {os.cpu_count()} CPUs, "
            f"{'GPU ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU (CPU tensors)'}; "
            f"torch {torch.__version__}, Python {platform.python_version()}. Load average before {load_before}, "
            f"after {uptime()}. before = {trees['before']}, after = this checkout. n = {args.n}, {args.slots} slots, "
            f"{args.rounds} renewals. Command: `PYTHONPATH=$PWD python3 bench/fresh_inputs.py "
            f"{' '.join(sys.argv[1:])}` (median (min–max, n)).\n\n")
    publish(head + table, record=not args.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
