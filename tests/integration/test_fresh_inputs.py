"""The benchmark's input pool with a reference whose generate_input is slow (a host generator, or
KernelBench's get_inputs): sets after the first few are made on the device from prepared ones, so
the task's generator runs a fixed number of times however many calls the series makes, every call
still gets data no call has seen, and the judge can make each set again for its recheck.

Real worker state, the real reference runtime, real tensors (on the CPU here; the same code runs on
the GPU in the judge).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SLOW_GENERATOR = '''
import time

import torch

CALLS = [0]


def generate_input(seed: int, n: int, device: str = "cuda"):
    CALLS[0] += 1
    time.sleep(0.3)  # a host generator and a copy to the device, as KernelBench's get_inputs
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=gen, dtype=torch.float32)
    y = torch.rand(n, generator=gen, dtype=torch.float32) + 0.5  # positive on purpose
    idx = torch.randint(0, n, (n,), generator=gen)
    return x.to(device), y.to(device), idx.to(device)


def ref_kernel(x, y, idx):
    return x + y[idx]
'''

IN_WORKER = r'''
import itertools, json, sys
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.child.runtime import reference_runtime_for
from kerneltui.core.worker.child import tree
from kerneltui.core.worker.child.recheck import OutputCheck
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.child import timing

# the task copy beside the test's own, removed with it
state = WorkerState("triton", role="judge", workdir=__import__("pathlib").Path(sys.argv[1]).parent / "worker")
state.warm_up()
task = load_task(sys.argv[1])
state.install_task(task.to_dict(), task.read_sources())
rt = reference_runtime_for(state)
rt.load()
torch = state.torch
calls = rt.reference.CALLS
params = {"n": 4096}
set_bytes = 4096 * 4 * 2 + 4096 * 8 + 2 * 4096 * 4
out = {}

def digest(inputs):
    return "|".join(tree.tensor_digest(t) for _, t in tree.tensors(inputs, "x", torch))

def right(item):
    x, y, idx = item.inputs
    return bool(torch.equal(item.ref_out, x + y[idx]))

pool = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(7, 0, k) for k in itertools.count()),
                        with_reference=True, budget_bytes=4 * set_bytes, max_sets=16)
handed = []
for item in pool.first_batch():
    handed.append({"seed": item.seed, "digest": digest(item.inputs), "right": right(item),
                   "positive": bool((item.inputs[1] > 0).all()), "idx_in_range": bool((item.inputs[2] < 4096).all())})
for _ in range(5):  # five batches, one call per slot, each slot renewed after its call
    pool.renew(list(range(pool.sets)))
    for i in range(pool.sets):
        item = pool.slot(i)
        handed.append({"seed": item.seed, "digest": digest(item.inputs), "right": right(item),
                       "positive": bool((item.inputs[1] > 0).all()), "idx_in_range": bool((item.inputs[2] < 4096).all())})
out["sets"] = pool.sets
out["handed"] = handed
out["task_calls"] = calls[0]
out["bases"] = pool.source.bases
out["base_digests"] = [digest(pool.source._base_sets[s]) for s in pool.source.bases]
out["facts"] = timing.pool_facts(pool)

# the judge makes a set again, bit for bit, for the recheck's full gate
last = pool.slot(0)
again = pool.inputs_for(last.seed)
out["again_equal"] = digest(again) == digest(last.inputs)
check = OutputCheck(state, rt, "n=4096", pool.inputs_for)
x, y, idx = last.inputs
out["recheck_right"] = check.verify(x + y[idx], last.ref_out, last.seed)
stale = pool.slot(1)
out["recheck_stale"] = check.verify(stale.ref_out.clone(), last.ref_out, last.seed)  # an output cached from another set
out["task_calls_after_recheck"] = calls[0]

# "generate": the task makes every set (the old way, for inputs a jitter would break)
calls[0] = 0
slow = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(8, 0, k) for k in itertools.count()),
                        with_reference=True, budget_bytes=3 * set_bytes, max_sets=16, fresh="generate")
slow.first_batch()
slow.renew([0, 1, 2])
out["generate_calls"] = calls[0]
out["generate_facts"] = timing.pool_facts(slow)
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def in_worker(tmp_path_factory) -> dict:
    import shutil

    task_dir = tmp_path_factory.mktemp("fresh") / "slow_inputs"
    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", task_dir)
    (task_dir / "reference.py").write_text(SLOW_GENERATOR)
    proc = subprocess.run([sys.executable, "-c", IN_WORKER, str(task_dir)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_slow_generator_runs_only_for_the_base_sets(in_worker):
    assert in_worker["sets"] == 4
    assert len(in_worker["handed"]) == 4 * 6
    # 24 sets handed out, two made by the task: the series no longer waits on the host generator
    assert in_worker["task_calls"] == 2
    facts = in_worker["facts"]
    assert facts["fresh_inputs"] == "derive" and facts["task_generated"] == 2 and facts["base_sets"] == 2
    assert facts["derived"] == 24


def test_no_call_sees_the_same_data_twice(in_worker):
    handed = in_worker["handed"]
    digests = [h["digest"] for h in handed]
    assert len(set(digests)) == len(digests)
    assert not set(digests) & set(in_worker["base_digests"])  # nor a base set as the task made it
    assert not {h["seed"] for h in handed} & set(in_worker["bases"])
    assert len({h["seed"] for h in handed}) == len(handed)


def test_derived_sets_stay_in_the_references_domain_and_are_judged_exactly(in_worker):
    for h in in_worker["handed"]:
        assert h["right"] and h["positive"] and h["idx_in_range"], h


def test_the_judge_makes_any_set_again_for_the_recheck(in_worker):
    assert in_worker["again_equal"]
    assert in_worker["recheck_right"] is None
    assert in_worker["recheck_stale"].startswith("out: ")  # an output cached from another set fails
    assert in_worker["task_calls_after_recheck"] == 2  # remaking a set costs no generator call


def test_generate_mode_keeps_the_task_making_every_set(in_worker):
    assert in_worker["generate_calls"] == 3 + 3
    facts = in_worker["generate_facts"]
    assert facts["fresh_inputs"] == "generate" and facts["derived"] == 0
