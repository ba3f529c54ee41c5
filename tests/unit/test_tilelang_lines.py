"""How TileLang's generated CUDA maps back to the kernel's Python lines, and where its errors point.

No TileLang needed: the source below has the shape TileLang 0.1.15 generates with
``tl.emit_line_directives`` (a ``#line`` before each statement it has a span for).
"""

from __future__ import annotations

import re
import shutil

from kerneltui.core.asm.cline import parse_line_directives
from kerneltui.core.backends.tilelang import Backend, TileLangCompileError
from kerneltui.core.backends.tilelang_dump import GENERATED, pin_lines
from kerneltui.core.worker.child.state import WorkerState

SOURCE = """\
#include <tl_templates/cuda/gemm.h>
extern "C" __global__ void __launch_bounds__(256, 1) gemm_kernel(half_t* __restrict__ C) {
#line 28 "/tmp/w/task/kernel.py"
  float C_local[128];
  if (threadIdx.x < 128) {
    for (int k = 0; k < 8; ++k) {
      mbarrier[k % 3].wait(0);
    }
  }
#line 38 "/tmp/w/task/kernel.py"
  *(uint1*)(C + threadIdx.x) = *(uint1*)(C_local + 0);
}
"""


def test_each_directive_maps_only_the_line_after_it() -> None:
    lines = parse_line_directives(SOURCE)
    assert {n: (f.file, f.line) for n, [f] in lines.frames.items()} == {
        4: ("/tmp/w/task/kernel.py", 28), 11: ("/tmp/w/task/kernel.py", 38)}


def test_pinned_source_is_the_same_code_with_generated_lines_mapped_to_itself() -> None:
    pinned = pin_lines(SOURCE)
    assert [ln for ln in pinned.splitlines() if not ln.startswith("#line")] == \
        [ln for ln in SOURCE.splitlines() if not ln.startswith("#line")]
    # What nvcc would attribute each line to, counting on from every directive as C does.
    where: dict[str, tuple[str, int]] = {}
    file, line = "?", 0
    for raw in pinned.splitlines():
        m = re.match(r'#line (\d+) "([^"]+)"', raw)
        if m:
            file, line = m.group(2), int(m.group(1))
            continue
        where[raw.strip()] = (file, line)
        line += 1
    assert where["float C_local[128];"] == ("/tmp/w/task/kernel.py", 28)
    assert where["*(uint1*)(C + threadIdx.x) = *(uint1*)(C_local + 0);"] == ("/tmp/w/task/kernel.py", 38)
    # The loop TileLang generated after line 28 stays with the generated source, at its own line.
    loop = next(i for i, ln in enumerate(SOURCE.splitlines(), 1) if "for (int k" in ln)
    assert where["for (int k = 0; k < 8; ++k) {"] == (GENERATED, loop)


def test_tilelang_span_marker_locates_a_compile_error(monkeypatch) -> None:
    state = WorkerState(backend_name="tilelang")
    try:
        state.task_dir.mkdir(parents=True)
        kernel = state.task_dir / "kernel.py"
        kernel.write_text("x\n" * 30)
        exc = RuntimeError(f"The layout for fragment C_local cannot be inferred\n  --> {kernel}:21:13")
        assert Backend().locate_error(exc, state) == ("kernel.py", 21)
        # A relative name (a compiled extension's own) never counts as a task file, even in the
        # worker, whose working directory is the task copy.
        monkeypatch.chdir(state.task_dir)
        assert Backend().locate_error(RuntimeError("boom\n  --> kernel.py:3:1"), state) is None
        assert Backend().locate_error(TileLangCompileError("x", "kernel.py", 7), state) == ("kernel.py", 7)
    finally:
        shutil.rmtree(state.workdir, ignore_errors=True)
