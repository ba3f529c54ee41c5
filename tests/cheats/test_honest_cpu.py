"""Correct kernels that look suspicious pass every rung that runs here, and no defence fires."""

from __future__ import annotations

import pytest

from kerneltui.core.integrity import summarise
from tests.cheats.conftest import rung
from tests.cheats.honest import CPU_HONEST, Honest
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")


@pytest.mark.parametrize("kernel", CPU_HONEST, ids=[h.name for h in CPU_HONEST])
def test_honest_kernel_is_not_flagged(gallery, kernel: Honest) -> None:
    report = gallery.check(kernel.name, kernel.task, kernel.kernel, kernel.task_toml_prefix,
                           suffix=kernel.task_toml_suffix)
    lines = [r.line() for r in report.results]
    assert report.ok, lines
    for name in ("prechecks", "compile", "run", "correctness"):
        assert rung(report, name).status == "ok", lines  # not even a warning
    summary = summarise(report.results)
    assert not summary.caught, summary.to_dict()
    assert rung(report, "correctness").metrics["passed"] == rung(report, "correctness").metrics["checks"]
