"""The benchmark machinery on a machine without a GPU: real workers, real Triton (interpreter).

What can run here runs here: the input pool and the output recheck on real task inputs, the
Triton recheck kernel under the interpreter against the torch path, the worker ops (which must
refuse to time anything without a GPU), and the commands' CPU behaviour. Timing itself is covered
by tests/gpu/test_benchmark_gpu.py on the GPU machine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.core.worker.parent.process import WorkerFailure
from tests.conftest import HAS_GPU, ROOT, run_cli

pytestmark = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")

IN_WORKER = r'''
import itertools, json, sys
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.child.runtime import reference_runtime_for
from kerneltui.core.task_loaders.load import load_task

# the task copy beside the test's own, removed with it
state = WorkerState("triton", role="judge", workdir=__import__("pathlib").Path(sys.argv[1]).parent / "worker")
state.warm_up()
task = load_task(sys.argv[1])
state.install_task(task.to_dict(), task.read_sources())
rt = reference_runtime_for(state)
rt.load()
torch = state.torch
from kerneltui.core.worker.child import timing
from kerneltui.core.worker.child import recheck
out = {}

# -- seeds: secret, per case, equal for every target of a run
out["seeds_equal"] = [timing.bench_seed(7, 0, k) for k in range(5)] == [timing.bench_seed(7, 0, k) for k in range(5)]
out["seeds_other_secret"] = [timing.bench_seed(8, 0, k) for k in range(5)] != [timing.bench_seed(7, 0, k) for k in range(5)]
out["seeds_other_case"] = timing.bench_seed(7, 1, 0) != timing.bench_seed(7, 0, 0)

# -- the pool: every set handed out once, fresh data, reference outputs right
params = {"n": 5000}
set_bytes = 5000 * 4 * 2 + 2 * 5000 * 4
pool = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(7, 0, k) for k in itertools.count()),
                        with_reference=True, budget_bytes=3 * set_bytes, max_sets=16)
seen = []
for _ in range(10):
    item = pool.next()
    x, y = item.inputs
    seen.append({"seed": item.seed, "ptr": x.data_ptr(), "data": float(x[:8].sum()),
                 "ref_right": bool(torch.equal(item.ref_out, x + y))})
out["pool_sets"] = pool.sets
out["pool_set_bytes"] = pool.set_bytes
out["generated"] = pool.generated
out["in_place"] = pool.in_place
out["seen"] = seen
out["dtypes"] = pool.dtypes
out["main_dtype"] = timing.main_dtype(params, pool.dtypes)
a, b = pool.next(), pool.next()  # used below by the recheck

# -- the judge's slots for the kernel: renewed in place, so the kernel's mapping sees new data
slots = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(9, 0, k) for k in itertools.count()),
                         with_reference=True, budget_bytes=2 * set_bytes, max_sets=16)
first = slots.first_batch()
before = [(s.inputs[0].data_ptr(), float(s.inputs[0][:8].sum()), s.seed) for s in first]
moved = slots.renew([0, 1])
after = [(slots.slot(i).inputs[0].data_ptr(), float(slots.slot(i).inputs[0][:8].sum()), slots.slot(i).seed) for i in (0, 1)]
out["renew"] = {"moved": moved, "same_ptrs": [b[0] == a[0] for b, a in zip(before, after)],
                "new_data": [b[1] != a[1] for b, a in zip(before, after)], "new_seeds": [b[2] != a[2] for b, a in zip(before, after)],
                "ref_right": [bool(torch.equal(slots.slot(i).ref_out, slots.slot(i).inputs[0] + slots.slot(i).inputs[1])) for i in (0, 1)]}

# -- CUDA-graph mode refreshes tensors in place and refuses scalars that change with the seed
static = (a.inputs[0].clone(), 2.0, {"eps": 1e-5})
timing._copy_into(rt, static, (b.inputs[0], 2.0, {"eps": 1e-5}))
out["graph_copied"] = bool(torch.equal(static[0], b.inputs[0]))
try:
    timing._copy_into(rt, static, (b.inputs[0], 3.0, {"eps": 1e-5}))
    out["graph_scalar"] = None
except ValueError as exc:
    out["graph_scalar"] = str(exc)

# -- the recheck: right, stale (a pointer/content cache), wrong shape, not a plain tensor
check = recheck.OutputCheck(state, rt, "n=5000", pool.inputs_for)
# the judge's checker brings its one-pass kernel (on the GPU every timed output goes through it)
out["one_pass_ready"] = recheck._kernel is not None and recheck._kernel_error is None
out["right"] = check.verify(a.inputs[0] + a.inputs[1], a.ref_out, a.seed)
out["stale"] = check.verify(a.ref_out.clone(), b.ref_out, b.seed)
out["shape"] = check.verify((a.inputs[0] + a.inputs[1])[:10], a.ref_out, a.seed)
out["counts"] = [check.quick, check.full]

# -- the Triton recheck kernel (interpreter) agrees with the torch path
cases = {}
g = torch.Generator().manual_seed(0)
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
    r = (torch.randn(3000, generator=g) * 2).to(dtype)
    variants = {
        "same": r.clone(),
        "within": (r.double() * (1 + 2e-5)).to(dtype) if dtype in (torch.float32, torch.float64) else r.clone(),
        "one_off": r.clone().index_fill_(0, torch.tensor([1234]), 50.0),
        "nan_where_finite": r.clone().index_fill_(0, torch.tensor([7]), float("nan")),
        "inf_where_finite": r.clone().index_fill_(0, torch.tensor([9]), float("inf")),
        "zeros": torch.zeros_like(r),
    }
    for name, o in variants.items():
        tr = recheck.triton_close(o, r, 1e-4, 1e-4, 2e-3, torch)
        th = recheck.torch_close(o, r, 1e-4, 1e-4, 2e-3, torch)
        cases[f"{dtype}:{name}"] = [tr, th]
nan_ref = torch.tensor([1.0, float("nan"), float("inf"), -2.0])
cases["nan_and_inf_in_both"] = [recheck.triton_close(nan_ref.clone(), nan_ref, 1e-4, 1e-4, 2e-3, torch),
                                recheck.torch_close(nan_ref.clone(), nan_ref, 1e-4, 1e-4, 2e-3, torch)]
tiny = torch.full((4096,), 6e-5)
cases["scale_only"] = [recheck.triton_close(torch.zeros_like(tiny), tiny, 1e-4, 1e-4, 2e-3, torch),
                       recheck.torch_close(torch.zeros_like(tiny), tiny, 1e-4, 1e-4, 2e-3, torch)]
out["close"] = cases
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def in_worker(tmp_path_factory) -> dict:
    task_dir = tmp_path_factory.mktemp("bench") / "vector_add"
    import shutil

    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", task_dir)
    proc = subprocess.run([sys.executable, "-c", IN_WORKER, str(task_dir)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_seeds_are_secret_per_case_and_shared_by_the_targets(in_worker):
    assert in_worker["seeds_equal"] and in_worker["seeds_other_secret"] and in_worker["seeds_other_case"]


def test_the_pool_renews_its_buffers_with_data_no_call_has_seen(in_worker):
    assert in_worker["pool_sets"] == 3  # the budget holds three sets
    assert in_worker["pool_set_bytes"] == 5000 * 4 * 2 + 2 * 5000 * 4
    assert in_worker["generated"] == 12  # four batches of three for ten calls
    seen = in_worker["seen"]
    assert len({s["seed"] for s in seen}) == 10 and len({s["data"] for s in seen}) == 10
    assert all(s["ref_right"] for s in seen)
    # the same three buffers in turn: a cache keyed on pointers hits, and returns stale results
    assert in_worker["in_place"]
    ptrs = [s["ptr"] for s in seen]
    assert len(set(ptrs[:3])) == 3 and ptrs[3:6] == ptrs[:3] and ptrs[6:9] == ptrs[:3]
    assert in_worker["dtypes"] == ["float32", "float32"] and in_worker["main_dtype"] == "float32"


def test_the_judge_renews_the_kernels_slots_in_place(in_worker):
    renew = in_worker["renew"]
    assert renew["moved"] == []  # same layout every seed: the kernel's shared mapping stays valid
    assert renew["same_ptrs"] == [True, True] and renew["new_data"] == [True, True]
    assert renew["new_seeds"] == [True, True] and renew["ref_right"] == [True, True]


def test_graph_mode_refreshes_tensors_and_refuses_changing_scalars(in_worker):
    assert in_worker["graph_copied"]
    # A graph would replay with the captured scalar and produce a wrong answer for the new seed:
    # graph timing is declined (with this reason), the kernel is not blamed.
    assert "input[1] changes with the seed (2.0, then 3.0)" in in_worker["graph_scalar"]


def test_the_judges_checker_has_its_one_pass_kernel(in_worker):
    # It had none: nothing defined the kernel once the judge moved to its own process, and every
    # timed output went through the several-pass torch comparison.
    assert in_worker["one_pass_ready"]


def test_the_recheck_catches_stale_and_malformed_outputs(in_worker):
    assert in_worker["right"] is None
    # (all 5000 when both sets come from one base set: every element moves)
    assert re.match(r"out: (49\d\d|5000) of 5000 elements outside atol=0.0001 rtol=0.0001", in_worker["stale"])
    assert in_worker["shape"] == "out: output shape (10,) differs from the reference's (5000,)"
    quick, full = in_worker["counts"]
    assert quick == 1 and full == 2  # failures go through the full gate for the message


def test_triton_recheck_kernel_agrees_with_torch(in_worker):
    close = in_worker["close"]
    for name, (triton_says, torch_says) in close.items():
        assert triton_says == torch_says, name
    for dtype in ("torch.float32", "torch.float16", "torch.bfloat16", "torch.float64"):
        assert close[f"{dtype}:same"] == [True, True]
        assert close[f"{dtype}:within"] == [True, True]
        for bad in ("one_off", "nan_where_finite", "inf_where_finite", "zeros"):
            assert close[f"{dtype}:{bad}"] == [False, False], (dtype, bad)
    assert close["nan_and_inf_in_both"] == [True, True]
    assert close["scale_only"] == [False, False]  # every element within atol, wrong at the reference's scale


async def test_worker_ops_evaluate_the_work_and_refuse_to_time_without_a_gpu(example_task):
    softmax = load_task(example_task("softmax"))
    broken_root = example_task("vector_add")
    ref = Path(broken_root) / "reference.py"
    ref.write_text(ref.read_text().replace("return float(n)", "return float(n) / 0"))
    broken = load_task(broken_root)
    pool = WorkerPool("triton", replenish=False)
    try:
        judge = await pool.acquire("judge")
        await judge.request("judge_load", {"task": softmax.to_dict(), "files": softmax.read_sources()}, timeout=120)
        setup = await judge.request("judge_bench_setup", {}, timeout=120)
        (case,) = setup["cases"]
        assert case["label"] == "rows=8192 cols=8192"
        assert case["flops"] == 5.0 * 8192 * 8192 and case["bytes"] == 2.0 * 4 * 8192 * 8192
        for op, args in (("judge_benchmark", {"target": "reference", "secret": 1}),
                         ("judge_pool", {"case": 0, "secret": 1}), ("device_peaks", {})):
            with pytest.raises(WorkerFailure) as info:
                await judge.request(op, args, timeout=60)
            assert "needs a CUDA GPU" in info.value.message and "interpreter" in info.value.message
        # a flops() that raises names the file and the call (the roofline rung fails with it)
        judge = await pool.acquire("judge")
        await judge.request("judge_load", {"task": broken.to_dict(), "files": broken.read_sources()}, timeout=120)
        setup = await judge.request("judge_bench_setup", {}, timeout=120)
        # a candidate's worker refuses to time without a GPU too
        worker = await pool.acquire()
        with pytest.raises(WorkerFailure) as info:
            await worker.request("bench_begin", {"case": 0, "slots": []}, timeout=60)
        assert "needs a CUDA GPU" in info.value.message
    finally:
        await pool.close()
    (case,) = setup["cases"]
    assert "flops" not in case and case["bytes"] == 12.0 * 67108864
    assert case["flops_error"].startswith("reference.py: flops(n=67108864) raised ZeroDivisionError")


def test_check_skips_benchmark_and_roofline_without_a_gpu(example_task):
    task = example_task("vector_add")
    proc = run_cli("check", str(task), "--rungs", "roofline", "--seeds", "1", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rungs = {r["name"]: r for r in json.loads(proc.stdout)["rungs"]}
    assert rungs["benchmark"]["status"] == "skip" and "no GPU" in rungs["benchmark"]["summary"]
    assert "never shown as GPU performance" in rungs["benchmark"]["summary"]
    assert rungs["roofline"]["status"] == "skip" and rungs["roofline"]["summary"] == "benchmark was skipped"
    assert rungs["benchmark"]["metrics"] == {}  # no numbers at all from the CPU


def test_device_command_says_there_is_no_gpu():
    proc = run_cli("device")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("no GPU: torch ") and "benchmark and roofline rungs are skipped" in proc.stdout
