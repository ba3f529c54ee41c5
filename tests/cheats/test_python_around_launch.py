"""Under the Triton interpreter a launch runs as Python: the kernel's own Python that the
interpreter calls around the programs (a grid function, an autotuner config's pre_hook, a pre-run
hook) must not write what the kernel is to compute (#47). Each cheat's kernel only stores the output
back; the right answer is written with numpy from that Python, which on a GPU would be host code
writing device memory. A grid function and a pre-run hook run inside the launch, between its start
and its first program; an autotuner's pre_hook runs before the launch, where the operator record's
seal on the output already sees the write."""

from __future__ import annotations

import pytest

from kerneltui.core.integrity import summarise
from tests.cheats.gallery import PYTHON_AROUND_THE_LAUNCH
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")


@pytest.mark.parametrize("name", sorted(PYTHON_AROUND_THE_LAUNCH))
def test_python_the_interpreter_runs_around_a_launch_cannot_write_its_output(gallery, name):
    report = gallery.check(name, "vector_add", PYTHON_AROUND_THE_LAUNCH[name])
    lines = [r.line() for r in report.results]
    assert not report.ok, lines
    failed = [r for r in report.results if r.status == "fail"]
    assert failed, lines
    message = failed[0].error or ""
    assert "keep_kernel" in message, message
    if name == "writes_the_output_from_an_autotune_pre_hook":
        assert "the work was done outside the Triton kernel" in message, message
    else:
        assert "outside the kernel's programs" in message and "out_ptr changed before its first program" in message, message
        assert ("the grid function grid (kernel.py:" in message or "the pre-run hook <lambda> (kernel.py:" in message), message
        assert failed[0].name == "run", lines
    # The integrity summary names the defence that caught it.
    assert any(f.state == "caught" for f in summarise(report.results).findings), summarise(report.results).to_dict()
