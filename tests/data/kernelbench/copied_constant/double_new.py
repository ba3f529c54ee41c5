import torch
import torch.nn as nn
import triton
import triton.language as tl

N = 4096  # a copy of the problem's constant, which sizes the launch
BLOCK = 1024


@triton.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(N, device=x.device)
        double[(triton.cdiv(N, BLOCK),)](x, out, N, BLOCK=BLOCK)
        return out
