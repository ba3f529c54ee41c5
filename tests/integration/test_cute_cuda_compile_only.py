"""The CuTe DSL and CUDA C++ examples through ``kerneltui check`` with real workers, no GPU.

Without a GPU both backends compile only: the compile rung builds the kernels for sm_90a (the
candidate's custom_kernel is called on CPU tensors, launches are recorded but not run), run and
correctness are skipped with the reason, and ``check`` exits 0. Compile errors fail the compile
rung at the right file and line.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import HAS_GPU, ROOT, run_cli

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the compile-only path; tests/gpu covers a GPU")


def _has_nvcc() -> bool:
    from kerneltui.cuda.nvcc import NvccNotFound, find_nvcc

    try:
        find_nvcc()
    except NvccNotFound:
        return False
    return True


needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc (CUDA toolkit) not installed")


def _check(task, *extra: str, cache=None) -> tuple[int, dict]:
    env = {"KERNELTUI_CACHE_DIR": str(cache)} if cache else None
    proc = run_cli("check", str(task), "--json", "--no-history", *extra, env=env)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON report (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.returncode, report


def _rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def _line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# -- the examples pass ------------------------------------------------------------------------------


def test_cute_example_compiles_and_skips_running(example_task):
    code, report = _check(example_task("cute_elementwise"))
    assert code == 0, report
    assert report["ok"] is True
    compile_ = _rung(report, "compile")
    assert compile_["status"] == "ok"
    assert compile_["metrics"]["kernels"] == ["axpb_kernel"]
    assert compile_["metrics"]["launch_count"] == 1
    for name in ("run", "correctness"):
        assert _rung(report, name)["status"] == "skip"
    assert _rung(report, "run")["summary"] == "no GPU: CuTe DSL kernels compile here but run only on a GPU"


@needs_nvcc
def test_cuda_example_compiles_and_skips_running(example_task, tmp_path):
    code, report = _check(example_task("cuda_elementwise"), cache=tmp_path / "cache")
    assert code == 0, report
    compile_ = _rung(report, "compile")
    assert compile_["status"] == "ok"
    assert compile_["metrics"]["kernels"] == ["axpb"]
    assert _rung(report, "run")["summary"] == "no GPU: CUDA C++ kernels compile here but run only on a GPU"
    assert _rung(report, "correctness")["status"] == "skip"
    assert _rung(report, "prechecks")["status"] == "ok"  # launch.py uses no data_ptr/ctypes itself


# -- compile errors at the right line -------------------------------------------------------------------


def test_cute_name_error_in_kernel_fails_compile_at_its_line(example_task):
    task = example_task("cute_elementwise")
    kernel = task / "kernel.py"
    kernel.write_text(kernel.read_text().replace("rY.store(xs[step].load() * a + b)",
                                                 "rY.store(xs[step].load() * a + bias)"))
    line = _line_of(kernel, "* a + bias")
    code, report = _check(task, "--rungs", "compile")
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["status"] == "fail"
    assert compile_["location"] == {"file": "kernel.py", "line": line}
    assert "CuTe DSL compile error" in compile_["error"]
    assert "name 'bias' is not defined" in compile_["error"]
    assert "\x1b[" not in compile_["error"]  # the DSL's colours are off


def test_cute_type_error_while_tracing_fails_compile_at_its_line(example_task):
    task = example_task("cute_elementwise")
    kernel = task / "kernel.py"
    kernel.write_text(kernel.read_text().replace("rY.store(rX.load() * a + b)", 'rY.store(rX.load() * a + "b")'))
    line = _line_of(kernel, '* a + "b"')
    code, report = _check(task, "--rungs", "compile")
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["location"] == {"file": "kernel.py", "line": line}
    assert compile_["error"].startswith(f"kernel.py:{line}: CuTe DSL compile error")


def test_cute_host_error_in_custom_kernel_fails_compile_without_gpu(example_task):
    # With no GPU there is no run rung to report it: the compile rung does.
    task = example_task("cute_elementwise")
    kernel = task / "kernel.py"
    kernel.write_text(kernel.read_text().replace("y = torch.empty_like(x)", "y = torch.empty_like(xx)"))
    code, report = _check(task, "--rungs", "compile")
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["location"] == {"file": "kernel.py", "line": _line_of(kernel, "empty_like(xx)")}
    assert "custom_kernel failed on the first test case: NameError" in compile_["error"]


@needs_nvcc
def test_cuda_syntax_error_fails_compile_at_its_line(example_task, tmp_path):
    task = example_task("cuda_elementwise")
    source = task / "kernel.cu"
    source.write_text(source.read_text().replace("const long long tail = n - 4 * n4;",
                                                 "const long long tail = n - 4 * n4;\n    int q = undefined_name;"))
    line = _line_of(source, "undefined_name")
    code, report = _check(task, "--rungs", "compile", cache=tmp_path / "cache")
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["status"] == "fail"
    assert compile_["location"] == {"file": "kernel.cu", "line": line}
    assert compile_["error"].startswith(f'kernel.cu:{line}: error: identifier "undefined_name" is undefined')


@needs_nvcc
def test_cuda_launcher_that_launches_nothing_fails_compile(example_task, tmp_path):
    task = example_task("cuda_elementwise")
    launcher = task / "launch.py"
    launcher.write_text(launcher.read_text().replace("    mod.axpb(blocks, THREADS, x, y, a, b, n)\n", ""))
    code, report = _check(task, "--rungs", "compile", cache=tmp_path / "cache")
    assert code == 1
    assert "launched no CUDA kernel" in _rung(report, "compile")["error"]


@needs_nvcc
def test_cuda_wrong_argument_type_is_named(example_task, tmp_path):
    task = example_task("cuda_elementwise")
    launcher = task / "launch.py"
    launcher.write_text(launcher.read_text().replace("x, y, a, b, n)", "x, y, a, b, float(n))"))
    code, report = _check(task, "--rungs", "compile", cache=tmp_path / "cache")
    assert code == 1
    error = _rung(report, "compile")["error"]
    assert "axpb: argument 4 (long long) is an integer parameter, got the float" in error


# -- artifacts for sm_90a without a GPU ----------------------------------------------------------------


def _probe(task, cache=None) -> dict:
    import os

    # The probe's temporary files go to a folder of the test's own, which must be empty afterwards:
    # the benchmark case's inputs alone are hundreds of MB.
    temp = task.parent / "probe-tmp"
    temp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(temp))
    if cache is not None:
        env["KERNELTUI_CACHE_DIR"] = str(cache)
    proc = subprocess.run([sys.executable, "-m", "tests.integration.artifacts_probe", str(task), "sm_90a"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = sorted(p.name for p in temp.iterdir() if p.name.startswith("kerneltui-"))
    assert not left, f"the probe left {left} in its temporary folder"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cute_artifacts_mlir_ptx_cubin_for_sm90a(example_task):
    result = _probe(example_task("cute_elementwise"))
    assert result["kernels"] == ["axpb_kernel"]
    [art] = result["artifacts"]
    assert art["kernel"] == "axpb_kernel"
    assert art["stage_names"] == ["cubin", "mlir", "ptx"]
    assert art["source_file"] == "kernel.py"
    assert "gpu.module" in art["mlir_head"] and "cute" in art["mlir_head"]
    ptx = art["ptx"]
    assert ".target sm_90a" in ptx
    assert f".entry {art['metadata']['symbol']}(" in ptx
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx  # the example's fast path is vectorised
    assert ".loc" in ptx  # line info for the source-linked views
    assert art["cubin_magic"] == "7f454c46"  # ELF
    assert art["metadata"]["arch"] == "sm_90a"
    assert "kernel.py" in art["metadata"]["file_map"].values()


@needs_nvcc
def test_cuda_artifacts_ptx_cubin_and_resources_for_sm90a(example_task, tmp_path):
    task = example_task("cuda_elementwise")
    result = _probe(task, cache=tmp_path / "cache")
    [art] = result["artifacts"]
    assert art["kernel"] == "axpb" and art["variant"] == "_Z4axpbPKfPfffx"
    assert art["stage_names"] == ["cubin", "ptx"]
    assert art["source_file"] == "kernel.cu"
    assert ".target sm_90a" in art["ptx"] and ".entry _Z4axpbPKfPfffx(" in art["ptx"]
    assert "ld.global.v4.f32" in art["ptx"] or "ld.global.nc.v4.f32" in art["ptx"]
    assert art["cubin_magic"] == "7f454c46"
    meta = art["metadata"]
    assert meta["arch"] == "sm_90a"
    assert meta["signature"] == "axpb(const float*, float*, float, float, long long)"
    resources = meta["resources"]
    assert resources["registers"] > 0
    assert resources["spill_stores"] == 0 and resources["spill_loads"] == 0
    assert any("Used" in line and "registers" in line for line in resources["ptxas"])
    assert list(meta["file_map"].values()) == ["kernel.cu"]
    assert meta["cached"] is False
    # A second worker has its own copy of the task elsewhere: it takes the build from the cache,
    # and the paths the cubin still carries (the first worker's) map back to the task's file too.
    again = _probe(task, cache=tmp_path / "cache")["artifacts"][0]["metadata"]
    assert again["cached"] is True
    assert len(again["file_map"]) == 2 and set(again["file_map"].values()) == {"kernel.cu"}
