import torch

EPS = 1e-5


def generate_input(seed: int, rows: int, cols: int, device: str = "cuda"):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, device=device) * 2.0 + 0.5
    # Rows where eps decides the answer: one constant (variance 0: no eps, no finite answer) and
    # one nearly so (variance ~1e-6, below eps = 1e-5); wide rows alone would hide a wrong eps.
    if rows >= 2:
        x[-1] = 0.5
    if rows >= 3:
        x[rows // 2] = 0.5 + 1e-3 * torch.randn(cols, generator=gen, device=device)
    x = x.to(torch.float16)
    w = (torch.rand(cols, generator=gen, device=device) + 0.5).to(torch.float16)
    b = (torch.randn(cols, generator=gen, device=device) * 0.1).to(torch.float16)
    return x, w, b


def ref_kernel(x, w, b):
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), EPS).to(x.dtype)


def flops(rows: int, cols: int) -> float:
    return 8.0 * rows * cols


def bytes_moved(rows: int, cols: int) -> float:
    return 2.0 * (2 * rows * cols + 2 * cols)
