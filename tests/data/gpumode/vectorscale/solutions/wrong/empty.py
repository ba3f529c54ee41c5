# does nothing: hands back the output buffer it was given
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    _, _, out = data
    return out
