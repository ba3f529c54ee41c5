# an exclusive scan (each element left out of its own sum): off by one element everywhere
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def scan_exclusive(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.cumsum(v, axis=0) - v, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, y = data
    n = x.numel()
    scan_exclusive[(1,)](x, y, n, BLOCK=triton.next_power_of_2(n))
    return y
