import torch
import triton
import triton.language as tl


@triton.jit
def chain_kernel(x_ptr, out_ptr, n, steps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = x
    for _ in range(steps):
        y = y * 0.5 + x
    tl.store(out_ptr + offs, y, mask=mask)


def custom_kernel(x: torch.Tensor, steps: int) -> torch.Tensor:
    out = torch.empty_like(x)
    BLOCK = 128
    chain_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), steps, BLOCK=BLOCK, num_warps=4)
    return out
