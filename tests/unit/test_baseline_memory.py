"""The torch.compile baseline's memory watch: a compiled reference whose live device memory keeps
growing (seen on the H200: +80 GB in 3 s) is stopped with a reason, before it starves the kernel's
own timing; a baseline whose memory stays flat, or rises and falls with its input refills, is not."""

from __future__ import annotations

import pytest

from kerneltui.core.worker.child.timing import CallSample, MemoryGrowth, MemoryWatch

GIB = 1 << 30


def _calls(watch: MemoryWatch, allocated: list[int], deltas: list[int]) -> int:
    def call(item: object) -> tuple[object, CallSample]:
        allocated[0] += deltas[min(len(deltas) - 1, done[0])]
        done[0] += 1
        return None, CallSample(ms=1.0, host_us=1.0, straggle_us=0.0)

    done = [0]
    watched = watch.wrap(call)
    for _ in range(len(deltas)):
        watched(object())
    return done[0]


def test_a_leaking_baseline_is_stopped_with_the_growth_named():
    allocated = [10 * GIB]
    watch = MemoryWatch(lambda: allocated[0], lambda: 4 * GIB)
    with pytest.raises(MemoryGrowth, match=r"grew by 4\.5 GiB over 10 calls \(allowed 4\.0 GiB"):
        _calls(watch, allocated, [GIB // 2] * 40)


def test_a_flat_or_refilling_baseline_runs_on():
    allocated = [10 * GIB]
    watch = MemoryWatch(lambda: allocated[0], lambda: 4 * GIB)
    # +1 GiB while a refill holds a new set beside the old one, then back: never past the allowance.
    assert _calls(watch, allocated, [0, GIB, -GIB] * 50) == 150
    assert watch.calls == 150


def test_torch_compile_baseline_compiles_a_per_seed_scalar_once_more_not_per_call():
    """A reference whose inputs hold Python floats drawn per seed (the bundled cuda_elementwise's
    ``a * x + b``): compiled with every number specialised, each new seed compiled again (eight
    times, then torch gave up and ran it uncompiled, the compiles inside the timed calls)."""
    import torch
    from torch._dynamo.utils import counters

    from kerneltui.core.worker.child.runtime import compile_baseline

    def ref_kernel(x: torch.Tensor, a: float, b: float) -> torch.Tensor:
        return a * x + b

    torch._dynamo.reset()
    counters.clear()
    fn = compile_baseline(torch, ref_kernel)
    x = torch.randn(64)
    for seed in range(5):
        a, b = 1.5 + seed / 10, -2.0 + seed
        assert torch.allclose(fn(x, a, b), ref_kernel(x, a, b))
    assert counters["stats"]["unique_graphs"] <= 2, dict(counters["stats"])
    torch._dynamo.reset()
