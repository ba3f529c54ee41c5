# The convolution stays in torch (cuDNN on a GPU); the ReLU and the bias are one Triton kernel.
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_bias_kernel(x_ptr, bias_ptr, out_ptr, n, hw, channels, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(bias_ptr + (offs // hw) % channels, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        relu_bias_kernel[(triton.cdiv(n, 1024),)](y, self.bias, out, n, y.shape[2] * y.shape[3], y.shape[1], BLOCK=1024)
        return out
