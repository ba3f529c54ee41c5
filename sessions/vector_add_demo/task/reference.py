import torch


def generate_input(seed: int, n: int, device: str = "cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    y = torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    return x, y


def ref_kernel(x, y):
    return x + y


def flops(n: int) -> float:
    return float(n)


def bytes_moved(n: int) -> float:
    return 3.0 * 4 * n
