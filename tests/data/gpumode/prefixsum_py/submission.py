import triton
import triton.language as tl
from task import input_t, output_t

BLOCK = 1024


@triton.jit
def scan_blocks(x_ptr, y_ptr, totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.cumsum(v, axis=0), mask=mask)
    tl.store(totals_ptr + pid, tl.sum(v, axis=0))


@triton.jit
def add_carries(y_ptr, totals_ptr, n, BLOCK: tl.constexpr, BLOCKS: tl.constexpr):
    pid = tl.program_id(0)
    idx = tl.arange(0, BLOCKS)
    carry = tl.sum(tl.load(totals_ptr + idx, mask=idx < pid, other=0.0), axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask) + carry, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, y = data
    n = x.numel()
    blocks = triton.cdiv(n, BLOCK)
    totals = x.new_empty(blocks)
    scan_blocks[(blocks,)](x, y, totals, n, BLOCK=BLOCK)
    add_carries[(blocks,)](y, totals, n, BLOCK=BLOCK, BLOCKS=triton.next_power_of_2(blocks))
    return y  # float32: the task's check_implementation compares it with the float64 reference
