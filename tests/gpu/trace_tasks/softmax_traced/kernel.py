import torch
import triton
import triton.language as tl

import kerneltui.ktrace.triton as kt
from kerneltui import ktrace

REGIONS = ("load", "reduce", "store")


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride, trace_ptr, BLOCK: tl.constexpr,
                   TRACE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    t = kt.begin(TRACE)
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf"))
    kt.end(trace_ptr, 3, 0, t, TRACE)
    t = kt.begin(TRACE)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    kt.end(trace_ptr, 3, 1, t, TRACE)
    t = kt.begin(TRACE)
    tl.store(out_ptr + row * out_stride + cols, y, mask=mask)
    kt.end(trace_ptr, 3, 2, t, TRACE)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    trace = ktrace.buffer("softmax_kernel", REGIONS, (rows,))
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), trace.tensor, BLOCK=block, TRACE=trace.enabled,
                            num_warps=num_warps)
    return out
