"""ReLU followed by a learnable per-feature scale (KernelBench format)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * self.scale


batch_size = 16
features = 257


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
