import torch
from task import input_t, output_t
from utils import DeterministicContext, device, exactly_equal


def ref_kernel(data: input_t) -> output_t:
    """Counts per byte value, written into the output buffer that came with the data."""
    with DeterministicContext():
        values, output = data
        output[...] = torch.bincount(values.to(torch.int64), minlength=256)
        return output


def generate_input(size: int, contention: float, seed: int) -> input_t:
    gen = torch.Generator(device=device()).manual_seed(seed)
    values = torch.randint(0, 256, (size,), dtype=torch.uint8, device=device(), generator=gen)
    common = torch.randint(0, 256, (), dtype=torch.uint8, device=device(), generator=gen)
    crowded = torch.rand(size, device=device(), generator=gen) < contention / 100.0
    values[crowded] = common
    output = torch.empty(256, dtype=torch.int64, device=device())
    return values.contiguous(), output


def check_implementation(data: input_t, output: output_t):
    expected = ref_kernel(data)
    problems = exactly_equal(output, expected)
    if problems:
        return False, "histogram differs from the reference: " + "; ".join(problems)
    return True, ""
