import torch


def generate_input(seed: int, m: int, n: int, k: int, device: str = "cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, generator=gen, device=device).to(torch.float16)
    b = torch.randn(k, n, generator=gen, device=device).to(torch.float16)
    return a, b


def ref_kernel(a, b):
    return (a.float() @ b.float()).to(torch.float16)


def flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def bytes_moved(m: int, n: int, k: int) -> float:
    return 2.0 * (m * k + k * n + m * n)
