"""Triton region markers writing kerneltui's trace buffer (layout: kerneltui/core/trace/buffer.py).

    import kerneltui.ktrace.triton as kt

    @triton.jit
    def kernel(..., trace_ptr, TRACE: tl.constexpr):
        t = kt.begin(TRACE)
        ...  # the region's work
        kt.end(trace_ptr, 3, 0, t, TRACE)     # 3 regions, this is region 0

With ``TRACE`` False both calls fold away at compile time. ``begin`` reads ``%globaltimer``
through ``tl.inline_asm_elementwise`` (Triton's own ``extra.cuda.globaltimer``); ``end`` keeps the
record of this CTA: first begin, last end, busy time, count and SM id (no cycle counts: words 5-7
stay 0). Triton's pipeliner may move loads across a marker, so a region's time in a pipelined
loop is where the *issuing* thread waited, not where the bytes moved: compare with the untraced
time and read the regions as a split of the traced run.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import cuda as tl_cuda

WORDS: tl.constexpr = tl.constexpr(8)


@triton.jit
def begin(TRACE: tl.constexpr):
    if TRACE:
        return tl_cuda.globaltimer()
    else:
        return tl.zeros((), dtype=tl.int64)


@triton.jit
def end(trace_ptr, NUM_REGIONS: tl.constexpr, REGION: tl.constexpr, t0, TRACE: tl.constexpr):
    if TRACE:
        t1 = tl_cuda.globaltimer()
        cta = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
        base = trace_ptr + (cta.to(tl.int64) * NUM_REGIONS + REGION) * WORDS
        count = tl.load(base + 3, volatile=True)
        first = tl.where(count == 0, t0, tl.load(base + 0, volatile=True))
        tl.store(base + 0, first)
        tl.store(base + 1, t1)
        tl.store(base + 2, tl.load(base + 2, volatile=True) + (t1 - t0))
        tl.store(base + 3, count + 1)
        tl.store(base + 4, tl_cuda.smid().to(tl.int64))
