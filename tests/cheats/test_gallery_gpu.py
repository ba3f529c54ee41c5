"""The CPU gallery, cheats and honest kernels alike, compiled and run for real on the GPU.

On the CPU the operator record watches the Triton interpreter; on a GPU the same record sees
compiled launches, device memory (fill checks instead of host digests) and kernels that cannot call
Python. Every cheat must still fail a rung and every honest kernel must still pass with no warning.
A cheat built on the interpreter (numpy called from a kernel body) fails to compile on a GPU: any
rung failing counts as caught, the rung is printed so a run's log shows where each was stopped.

On the GPU machine: ``python -m pytest -q -m gpu -rP -n 4 tests/cheats/test_gallery_gpu.py``.
"""

from __future__ import annotations

import pytest

from tests.cheats.conftest import assert_honest_kernel_passes
from tests.cheats.gallery import CPU_CHEATS, Cheat
from tests.cheats.honest import CPU_HONEST, Honest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("cheat", CPU_CHEATS, ids=[c.name for c in CPU_CHEATS])
def test_cheat_fails_a_rung_on_the_gpu(gallery, cheat: Cheat) -> None:
    report = gallery.check(cheat.name, cheat.task, cheat.kernel, cheat.task_toml_prefix, cheat.task_toml_edits)
    lines = [r.line() for r in report.results]
    failed = [r for r in report.results if r.status == "fail"]
    print(f"GALLERY {cheat.name}: expected {cheat.rung}; "
          + ("; ".join(f"{r.name} failed: {(r.error or '')[:160]!r}" for r in failed) or "NOT CAUGHT"))
    assert not report.ok, lines
    assert failed, lines


@pytest.mark.parametrize("kernel", CPU_HONEST, ids=[h.name for h in CPU_HONEST])
def test_honest_kernel_passes_on_the_gpu(gallery, kernel: Honest) -> None:
    assert_honest_kernel_passes(gallery, kernel)
