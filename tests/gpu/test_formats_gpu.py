"""GPU MODE and KernelBench problems on a real GPU: the do-nothing kernels that passed GPU MODE
problems on the H200 fail, a reference that asks for "cuda" runs, KernelBench problems get an
estimated roofline and a suite gets fast_p and speedups.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_formats_gpu.py`` (the torch.compile
baseline off and each timed phase capped at 2 s through the environment).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, run_cli

pytestmark = pytest.mark.gpu

FAST = {"KERNELTUI_BENCHMARK_TORCH_COMPILE": "false", "KERNELTUI_BENCHMARK_MAX_SECONDS": "2"}


def check(*args: str) -> tuple[int, dict]:
    proc = run_cli("check", *args, "--json", "--seeds", "2", "--no-history", "--no-session", timeout=600, env=FAST)
    return proc.returncode, json.loads(proc.stdout)


def rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


# One test per problem: each benchmarks its reference, and on the GPU machine the three together
# were the last of the GPU tests to end (over 250 s at -n 12); apart, they run side by side.
@pytest.mark.runs_long(40)
@pytest.mark.parametrize("problem", ["vectorscale", "histogram_py", "prefixsum_py"])
def test_gpumode_do_nothing_kernels_fail_on_the_gpu(tmp_path: Path, problem: str) -> None:
    root = tmp_path / "gm"
    shutil.copytree(DATA / "gpumode", root)
    code, report = check(str(root / problem), "--kernel", str(root / problem / "solutions/wrong/empty.py"),
                         "--rungs", "correctness")
    assert code == 1, (problem, report)
    code, report = check(str(root / problem), "--rungs", "benchmark")
    assert code == 0, (problem, report)
    assert "not deterministic" not in json.dumps(report)


def test_gpumode_reference_on_cuda_runs_where_there_is_a_gpu(tmp_path: Path) -> None:
    shutil.copytree(DATA / "gpumode_gpu", tmp_path / "g")
    code, report = check(str(tmp_path / "g" / "needs_gpu_py"), "--rungs", "correctness")
    assert code == 0, report


def test_kernelbench_gets_an_estimated_roofline(tmp_path: Path) -> None:
    shutil.copytree(DATA / "kernelbench", tmp_path / "kb")
    problem = tmp_path / "kb" / "level1" / "40_TallMatmul.py"
    code, report = check(str(problem), "--set", "M=4096", "--set", "K=1024", "--set", "N=1024",
                         "--rungs", "benchmark,roofline")
    assert code == 0, report
    roofline = rung(report, "roofline")
    assert "work estimated from the reference" in roofline["summary"]
    (case,) = roofline["metrics"]["cases"]
    assert case["flops"] == 2 * 4096 * 1024 * 1024 and case["work_estimated"]
    assert rung(report, "benchmark")["metrics"]["speedup_vs_reference"] > 0


@pytest.mark.runs_long(80)
def test_kernelbench_suite_is_timed(tmp_path: Path) -> None:
    shutil.copytree(DATA / "kernelbench", tmp_path / "kb")
    proc = run_cli("suite", str(tmp_path / "kb" / "level1"), "--scale", "0.25", "--seeds", "1", "--json",
                   timeout=900, env=FAST)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    print(json.dumps(out["summary"]))
    assert out["gpu"] and out["summary"]["correct"] == 4
    assert out["summary"]["fast_p"]["0"] == 1.0 and out["summary"]["geomean_speedup"] > 0
    assert all(r["speedup"] and r["score_us"] for r in out["results"])


@pytest.mark.runs_long(35)
def test_an_allowed_operator_runs_its_library_kernels_on_the_gpu(tmp_path: Path) -> None:
    # cuDNN's convolution kernels, launched by the conv2d the task allows, are torch's work for the
    # task: the GPU trace sets them aside. Without allow_ops the convolution still fails, and a
    # torch kernel launched outside the allowed operator (side work nobody returns) fails too.
    shutil.copytree(DATA / "kernelbench", tmp_path / "kb")
    problem = tmp_path / "kb" / "level2" / "1_Conv2dReLUBiasAdd.py"
    candidate = problem.with_name("1_Conv2dReLUBiasAdd_new.py")
    code, report = check(str(problem), "--allow-ops", "conv2d", "--rungs", "prechecks,correctness")
    assert code == 0, rung(report, "correctness")
    code, report = check(str(problem), "--rungs", "correctness")
    assert code == 1 and "convolution" in rung(report, "correctness")["error"], rung(report, "correctness")
    candidate.write_text(candidate.read_text().replace("        return out\n",
                                                       "        torch.sigmoid(y)  # side work\n        return out\n"))
    code, report = check(str(problem), "--allow-ops", "conv2d", "--rungs", "correctness")
    assert code == 1 and "a GPU kernel of torch or a library ran" in rung(report, "correctness")["error"], \
        rung(report, "correctness")
