import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


N = 4096


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
