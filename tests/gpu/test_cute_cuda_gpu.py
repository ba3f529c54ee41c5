"""The CuTe DSL and CUDA C++ backends on a GPU: both examples end to end, a kernel fault, and the
kerneltui.cuda runtime launching for real."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.gpu.examples import needs_dsl

pytestmark = pytest.mark.gpu


def _check(task, env=None) -> dict:
    proc = run_cli("check", str(task), "--json", "--no-history", "--seeds", "2", env=env)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, json.dumps(report, indent=1)[-4000:] + proc.stderr[-2000:]
    return report


def _rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


@needs_dsl("cute")
def test_cute_example_is_correct_on_the_gpu(example_task):
    report = _check(example_task("cute_elementwise"))
    assert report["device"]["gpu"] is True
    assert _rung(report, "compile")["metrics"]["kernels"] == ["axpb_kernel"]
    assert _rung(report, "run")["metrics"]["launches"] == {"axpb_kernel": 1}
    correctness = _rung(report, "correctness")
    assert correctness["status"] == "ok", correctness
    assert correctness["metrics"]["checks"] == 5 * 3  # 5 cases × (2 seeds + the hidden one)
    assert correctness["metrics"]["launches"] >= 15


@pytest.mark.runs_long(35)
def test_cuda_example_is_correct_on_the_gpu(example_task, tmp_path):
    report = _check(example_task("cuda_elementwise"), env={"KERNELTUI_CACHE_DIR": str(tmp_path / "cache")})
    assert _rung(report, "compile")["metrics"]["kernels"] == ["axpb"]
    assert _rung(report, "run")["metrics"]["launches"] == {"axpb": 1}
    correctness = _rung(report, "correctness")
    assert correctness["status"] == "ok", correctness
    assert correctness["metrics"]["checks"] == 15
    assert correctness["metrics"]["launches"] >= 15


@pytest.mark.runs_long(40)
async def test_cuda_illegal_address_fails_the_run_and_the_next_run_is_fine(example_task, tmp_path, monkeypatch):
    from kerneltui.core.loop import Loop
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.core.worker.parent.pool import WorkerPool

    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    task = load_task(example_task("cuda_elementwise"))
    good = task.kernel_source()
    bad = good.replace("    const long long tail = n - 4 * n4;",
                       "    if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<volatile float*>(16) = a;\n"
                       "    const long long tail = n - 4 * n4;")
    assert bad != good
    loop = Loop(task, pool=WorkerPool(task.backend, arch=task.arch))
    try:
        faulty = await loop.run(RunOptions(kernel_source=bad, record=False, seeds=1))
        assert not faulty.ok
        run = faulty.result("run")
        assert run is not None and run.status == "fail"
        assert "illegal memory access" in (run.error or run.summary), run
        assert faulty.result("correctness").status == "skip"
        fine = await loop.run(RunOptions(kernel_source=good, record=False, seeds=1))
        assert fine.ok, [(r.name, r.status, r.summary) for r in fine.results]
        assert fine.result("correctness").status == "ok"
    finally:
        await loop.close()


SHARED_SOURCE = r"""
// Reverses each block's slice through 64 KiB of dynamic shared memory (above the 48 KiB default).
__global__ void reverse_blocks(const float* x, float* y, int n) {
    extern __shared__ float buf[];
    int base = blockIdx.x * 16384;
    for (int i = threadIdx.x; i < 16384; i += blockDim.x) buf[i] = base + i < n ? x[base + i] : 0.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < 16384; i += blockDim.x) if (base + i < n) y[base + i] = buf[16383 - i];
}
"""


def test_runtime_launches_on_torch_stream_with_large_dynamic_shared_memory(tmp_path, monkeypatch):
    import torch

    import kerneltui.cuda as kc

    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "rev.cu").write_text(SHARED_SOURCE)
    mod = kc.load(tmp_path / "rev.cu")
    major, minor = torch.cuda.get_device_capability()
    assert mod.arch == f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    n = 3 * 16384
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        mod.reverse_blocks(3, 512, x, y, n, shared=16384 * 4)
    stream.synchronize()
    expected = x.view(3, 16384).flip(1).reshape(-1)
    assert torch.equal(y, expected)
    with pytest.raises(ValueError, match="tensor on cpu"):
        mod.reverse_blocks(3, 512, x.cpu(), y, n, shared=16384 * 4)
