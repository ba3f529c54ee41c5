import torch


def generate_input(seed: int, n: int, device: str = "cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    # Scalars drawn per seed, away from the identity (a = 1, b = 0) so that returning x fails.
    ab = torch.rand(2, generator=gen, device=device, dtype=torch.float64).tolist()
    a = 1.5 + ab[0]
    b = -2.0 + 4.0 * ab[1]
    return x, a, b


def ref_kernel(x, a, b):
    return a * x + b


def flops(n: int) -> float:
    return 2.0 * n


def bytes_moved(n: int) -> float:
    return 2.0 * 4 * n
