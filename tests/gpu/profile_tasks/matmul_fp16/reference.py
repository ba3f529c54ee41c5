import torch


def generate_input(seed: int, M: int, N: int, K: int, device: str = "cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(M, K, generator=gen, device=device, dtype=torch.float32).to(torch.float16)
    b = torch.randn(K, N, generator=gen, device=device, dtype=torch.float32).to(torch.float16)
    return a, b


def ref_kernel(a, b):
    return (a.float() @ b.float()).to(torch.float16)


def flops(M: int, N: int, K: int) -> float:
    return 2.0 * M * N * K


def bytes_moved(M: int, N: int, K: int) -> float:
    return 2.0 * (M * K + K * N + M * N)
