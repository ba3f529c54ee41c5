"""The TileLang backend through ``kerneltui`` with real workers and no GPU.

Without a GPU TileLang compiles for sm_90a (lowering, then nvcc) and nothing runs: the compile rung
builds the example's kernel, run and correctness are skipped with the reason, the dump shows the
CUDA source TileLang generated, its PTX and SASS mapped to the kernel's Python lines, and a wrong
kernel fails the compile rung at its own line.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from kerneltui.core.asm.store import Dump
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import HAS_GPU, run_cli

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("tilelang") is None,
                       reason="tilelang is not installed here: ./dev setup installs it (pip install 'kerneltui[tilelang]')"),
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="TileLang builds its kernels with nvcc (CUDA toolkit)"),
    pytest.mark.skipif(HAS_GPU, reason="the compile-only path; tests/gpu covers a GPU"),
]


def _check(task: Path, *extra: str, cache: Path) -> tuple[int, dict]:
    # A private cache: TileLang's kernel cache and the dump's builds start empty, so the test
    # sees a real compile rather than one a previous run left behind.
    proc = run_cli("check", str(task), "--json", "--no-history", *extra, env={"KERNELTUI_CACHE_DIR": str(cache)})
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON report (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def _rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def gemm(tmp_path_factory) -> tuple[Path, dict, Path]:
    """``kerneltui new --from tilelang_gemm``, then the compile and dump rungs on it."""
    root = tmp_path_factory.mktemp("tilelang")
    task = root / "gemm"
    proc = run_cli("new", str(task), "--from", "tilelang_gemm")
    assert proc.returncode == 0, proc.stderr
    assert (task / "kernel.py").is_file() and "backend = \"tilelang\"" in (task / "task.toml").read_text()
    code, report = _check(task, "--rungs", "compile,run,dump", cache=root / "cache")
    assert code == 0, report
    return task, report, root / "cache"


def test_example_compiles_for_sm90a_and_says_it_does_not_run(gemm) -> None:
    _, report, _ = gemm
    compile_ = _rung(report, "compile")
    assert compile_["status"] == "ok", compile_
    assert compile_["metrics"]["kernels"] == ["gemm"]
    assert compile_["metrics"]["launch_count"] == 1
    assert "compile-only (no GPU)" in compile_["summary"]
    assert _rung(report, "run")["status"] == "skip"
    assert _rung(report, "run")["summary"] == "no GPU: TileLang kernels compile here but run only on a GPU"


def test_dump_shows_cuda_source_ptx_and_sass_mapped_to_the_kernel(gemm) -> None:
    task, report, _ = gemm
    dump_rung = _rung(report, "dump")
    assert dump_rung["status"] == "ok", dump_rung
    assert "HGMMA" in dump_rung["summary"] and "regs" in dump_rung["summary"]
    t = load_task(str(task))
    dump = Dump.load(t.version_dir(source_hash(t.kernel_source())))
    # One kernel per shape: both tests and the benchmark; the benchmark's is the primary one.
    labels = sorted(v.label for v in dump.variants_all)
    assert labels == ["A 100x48 f16 · B 48x72 f16 · C 100x72 f16", "A 256x256 f16 · B 256x256 f16 · C 256x256 f16",
                      "A 4096x4096 f16 · B 4096x4096 f16 · C 4096x4096 f16"]
    primary = dump.primary()
    assert primary.label.startswith("A 4096x4096") and primary.metadata["cases"] == ["benchmark m=4096 n=4096 k=4096"]
    assert primary.stage_names == ["cuda", "ptx", "sass"]
    cuda = dump.stage_text(primary, "cuda")
    assert "__global__" in cuda and "gemm_kernel" in cuda and '#line' in cuda
    ptx = dump.stage_text(primary, "ptx")
    assert ".target sm_90a" in ptx and "wgmma.mma_async" in ptx
    assert "HGMMA" in dump.stage_text(primary, "sass")
    kernel = task / "kernel.py"
    store = _line_of(kernel, "T.copy(C_local, C[")
    for stage in ("cuda", "ptx", "sass"):
        assert store in dump.line_map(primary, stage).source_lines("kernel.py"), stage
    # Lines TileLang generated between its mapped statements stay with the generated source,
    # never with kernel.py lines after the kernel (custom_kernel's own body).
    custom = _line_of(kernel, "def custom_kernel")
    assert max(dump.line_map(primary, "ptx").source_lines("kernel.py")) < custom
    assert primary.metadata["block"] == [256, 1, 1] and primary.resources.occupancy


def test_asm_command_prints_the_generated_cuda(gemm) -> None:
    task, _, cache = gemm
    proc = run_cli("asm", str(task), "--stage", "cuda", env={"KERNELTUI_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert "gemm_kernel" in proc.stdout


def _broken(gemm, tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    task, _, _ = gemm
    copy = tmp_path / "broken"
    shutil.copytree(task, copy, ignore=shutil.ignore_patterns(".kerneltui", "__pycache__"))
    kernel = copy / "kernel.py"
    text = kernel.read_text()
    assert old in text
    kernel.write_text(text.replace(old, new, 1))
    return copy, _line_of(kernel, new.strip().splitlines()[-1])


def test_mismatched_gemm_fails_compile_at_its_line(gemm, tmp_path: Path) -> None:
    task, line = _broken(gemm, tmp_path, "T.gemm(A_shared, B_shared, C_local)", "T.gemm(A_shared, A_shared, C_local)")
    code, report = _check(task, "--rungs", "compile", cache=gemm[2])
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["status"] == "fail"
    assert compile_["location"] == {"file": "kernel.py", "line": line}
    assert compile_["error"].startswith(f"kernel.py:{line}: TileLang compile error: AssertionError: T.gemm K shape")


def test_copy_between_mismatched_tiles_fails_at_its_line(gemm, tmp_path: Path) -> None:
    # TVM's check fails inside a compiled extension (function.pxi): the kernel's line still wins.
    task, line = _broken(gemm, tmp_path, "T.clear(C_local)", "T.clear(C_local)\n            T.copy(C_local, A_shared)")
    code, report = _check(task, "--rungs", "compile", cache=gemm[2])
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["location"] == {"file": "kernel.py", "line": line}
    assert re.search(r"StructuralEqual check failed.*\(128, 128\).*\(128, 64\)", compile_["error"]), compile_["error"]


def test_name_error_inside_the_prim_func_fails_at_its_line(gemm, tmp_path: Path) -> None:
    task, line = _broken(gemm, tmp_path, "T.clear(C_local)", "T.clear(C_locl)")
    code, report = _check(task, "--rungs", "compile", cache=gemm[2])
    assert code == 1
    compile_ = _rung(report, "compile")
    assert compile_["location"] == {"file": "kernel.py", "line": line}
    assert "name 'C_locl' is not defined" in compile_["error"]


def test_custom_kernel_that_calls_no_tilelang_kernel_fails_compile(gemm, tmp_path: Path) -> None:
    task, _ = _broken(gemm, tmp_path, "    return matmul(M, N, K)(a, b)", "    return (a.float() @ b.float()).half()")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('kernel = "kernel.py"', 'kernel = "kernel.py"\nallow = ["torch_ops"]', 1))
    code, report = _check(task, "--rungs", "compile", cache=gemm[2])
    compile_ = _rung(report, "compile")
    assert code == 1 and compile_["status"] == "fail"
    assert "custom_kernel compiled no TileLang kernel" in compile_["error"]
