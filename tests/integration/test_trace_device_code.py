"""The tracer's device code compiles for sm_90a without a GPU: the CUDA header's markers appear
only in the -DKTRACE build, and the Triton markers lower to %globaltimer reads and one thread's
stores (the layout the parser reads)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kerneltui import ktrace
from kerneltui.cuda.nvcc import build
from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_header_records_only_in_the_traced_build() -> None:
    source = EXAMPLES / "matmul_traced" / "kernel.cu"
    plain = build(source, "sm_90a", (), (ktrace.include_dir(),))
    traced = build(source, "sm_90a", ("-DKTRACE=1",), (ktrace.include_dir(),))
    assert "%globaltimer" not in plain.ptx and "%clock64" not in plain.ptx
    for needle in ("%globaltimer", "%clock64", "%smid", "cp.async.wait_group 1"):
        assert needle in traced.ptx, needle
    symbol = next(iter(traced.resources))
    assert traced.resources[symbol].spill_stores == 0  # the markers cost registers, not spills


def test_triton_markers_compile_for_sm90() -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "tests/gpu/trace_tasks/softmax_traced")!r})
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        import kernel
        sig = {{"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": "i32", "x_stride": "i32", "out_stride": "i32",
               "trace_ptr": "*i64", "BLOCK": "constexpr", "TRACE": "constexpr"}}
        for trace in (True, False):
            src = ASTSource(fn=kernel.softmax_kernel, signature=sig, constexprs={{"BLOCK": 1024, "TRACE": trace}})
            ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
            print(trace, ptx.count("%globaltimer"), ptx.count("%smid"), ptx.count("st.global.b64"))
    """)
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    traced, plain = (line.split() for line in proc.stdout.strip().splitlines()[-2:])
    assert traced[0] == "True" and int(traced[1]) == 6 and int(traced[2]) >= 1 and int(traced[3]) >= 5 * 3
    assert plain[0] == "False" and plain[1:] == ["0", "0", "0"]
