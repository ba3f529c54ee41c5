import torch
from task import input_t, output_t
from utils import make_match_reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def ref_kernel(data: input_t) -> output_t:
    x, alpha, out = data
    out.copy_(x * alpha)
    return out


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(size, generator=gen, device=DEVICE)
    alpha = float(torch.rand(1, generator=gen, device=DEVICE).item() * 4 - 2)
    out = torch.empty_like(x)
    return x, alpha, out


check_implementation = make_match_reference(ref_kernel)
