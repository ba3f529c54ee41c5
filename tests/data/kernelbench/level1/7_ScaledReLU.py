import torch
import torch.nn as nn

class Model(nn.Module):
    """
    ReLU followed by a learnable per-feature scale.
    """
    def __init__(self, features: int):
        super(Model, self).__init__()
        self.scale = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * self.scale

batch_size = 16
features = 257

def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]

def get_init_inputs():
    return [features]
