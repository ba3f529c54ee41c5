import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Softmax over the feature dimension of a (batch_size, dim) matrix.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)

batch_size = 16
dim = 1000

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed
