"""The benchmark's input slots keep one set of buffers each, however many calls a series makes.

A task whose scalar inputs change with the seed (the CUDA elementwise example's a and b) cannot have
its slots renewed in place: every renewal gives the slot new buffers. The judge used to keep every
export of the case alive, and the candidate every mapping of them; on the H200 the judge reached
130 GB within seconds of timing and the benchmark failed with "CUDA out of memory".

Real worker state, the real reference runtime and the real exchange (shared-memory files on the CPU,
the same bookkeeping as CUDA IPC on the GPU).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCALAR_PER_SEED = '''
import torch


def generate_input(seed: int, n: int, device: str = "cuda"):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=gen, dtype=torch.float32)
    a = 1.5 + float(torch.rand(1, generator=gen))  # a scalar that changes with the seed
    return x.to(device), a


def ref_kernel(x, a):
    return x * a
'''

IN_WORKER = r'''
import itertools, json, sys, tempfile
from pathlib import Path
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.child.ops_judge import op_judge_load
from kerneltui.core.worker.child.ops_judge_bench import op_judge_recheck
from kerneltui.core.worker.child.ops_bench import KernelBench, _remap
from kerneltui.core.worker.child.recheck import OutputCheck
from kerneltui.core.worker.contract.wire import Exchange
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.child import timing

folder = Path(sys.argv[2])
# the task copy beside the test's own, removed with it
state = WorkerState("triton", role="judge", workdir=__import__("pathlib").Path(sys.argv[1]).parent / "worker")
state.warm_up()
task = load_task(sys.argv[1])
torch = state.torch
op_judge_load(state, {"task": task.to_dict(), "files": task.read_sources(), "exchange": str(folder)}, lambda m: None)
judge = state.judge
rt = judge.rt
params = {"n": 1024}
pool = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(7, 0, k) for k in itertools.count()),
                        with_reference=True, budget_bytes=1 << 30, max_sets=3)
pool.first_batch()
state.bench_pool = (0, pool, OutputCheck(state, rt, "n=1024", pool.inputs_for))
candidate = Exchange(torch, folder, "c")
bench = KernelBench(0, [pool.slot(i).inputs for i in range(pool.sets)], None, None, None, 0)

judge_files, candidate_held, moved_total = [], [], 0
for batch in range(8):
    order = list(range(pool.sets))
    lot = f"out{batch}"
    outputs = [candidate.export(bench.slots[s][0] * bench.slots[s][1], lot) for s in order]
    reply = op_judge_recheck(state, {"case": 0, "slots": order, "outputs": outputs, "lot": lot,
                                     "first_call": batch * len(order)}, lambda m: None)
    assert reply["failure"] is None, reply["failure"]
    candidate.release([lot])
    moved_total += len(reply["moved"])
    _remap(bench, candidate, {"remap": reply["moved"]})
    judge_files.append(len(list(folder.glob("j*"))))
    candidate_held.append(sum(len(v) for v in candidate._lots.values()))
print(json.dumps({"sets": pool.sets, "in_place": pool.in_place, "moved": moved_total,
                  "judge_files": judge_files, "candidate_held": candidate_held}))
'''


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("slots")
    task_dir = root / "scalar_per_seed"
    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", task_dir)
    (task_dir / "reference.py").write_text(SCALAR_PER_SEED)
    exchange = root / "exchange"
    exchange.mkdir()
    proc = subprocess.run([sys.executable, "-c", IN_WORKER, str(task_dir), str(exchange)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_slots_get_new_buffers_when_the_scalars_change(series):
    assert series["in_place"] is False
    assert series["moved"] == 8 * series["sets"]


def test_the_judge_keeps_one_export_per_slot(series):
    # one input tensor per set: never more files than slots, however many batches ran
    assert max(series["judge_files"]) <= series["sets"], series["judge_files"]


def test_the_candidate_keeps_one_mapping_per_slot(series):
    assert max(series["candidate_held"]) <= series["sets"], series["candidate_held"]
