"""Correct kernels that look suspicious pass every rung that runs here, and no defence fires."""

from __future__ import annotations

import pytest

from tests.cheats.conftest import assert_honest_kernel_passes
from tests.cheats.honest import CPU_HONEST, Honest
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")


@pytest.mark.parametrize("kernel", CPU_HONEST, ids=[h.name for h in CPU_HONEST])
def test_honest_kernel_is_not_flagged(gallery, kernel: Honest) -> None:
    assert_honest_kernel_passes(gallery, kernel)
