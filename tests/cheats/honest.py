"""The honest gallery: correct kernels that look suspicious. None may be flagged.

In-place updates the task declares, errors near the tolerance's edge, reduced-precision tasks
judged by PSNR and cosine similarity, a workspace reused across calls (scratch, not the output),
single-element and odd shapes, float64 accumulation, several launches per call.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.cheats.gallery import ADD_KERNEL, HONEST_ADD


@dataclass(frozen=True)
class Honest:
    name: str
    task: str
    kernel: str
    why_suspicious: str
    task_toml_prefix: str = ""
    task_toml_suffix: str = ""
    gpu: bool = False


HONEST: tuple[Honest, ...] = (
    Honest("declared_in_place_update", "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    launch(x, y, x)  # x += y, as the task allows
    return x
''', "writes its input and returns it: allowed because the task declares inplace = true",
           task_toml_prefix="inplace = true\n"),
    Honest("reused_workspace", "softmax", '''
import torch
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, m_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(m_ptr + row, tl.max(x, axis=0))


@triton.jit
def normalise_kernel(x_ptr, m_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.load(m_ptr + row))
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


_workspace = {}


def custom_kernel(x):
    # A per-shape workspace for the row maxima, kept across calls: scratch, fully rewritten each call.
    rows, cols = x.shape
    m = _workspace.get(rows)
    if m is None:
        m = _workspace[rows] = torch.empty(rows, dtype=torch.float32, device=x.device)
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    row_max_kernel[(rows,)](x, m, cols, x.stride(0), BLOCK=block)
    normalise_kernel[(rows,)](x, m, out, cols, x.stride(0), BLOCK=block)
    return out
''', "keeps a buffer between calls and launches two kernels"),
    Honest("exp2_near_the_tolerance", "softmax", '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # exp2 with a folded log2(e) and a reciprocal multiply: not bitwise equal to torch.softmax.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")) * 1.4426950408889634
    num = tl.exp2(x - tl.max(x, axis=0))
    inv = 1.0 / tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride + cols, num * inv, mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
''', "differs from the reference in the last bits on every element"),
    Honest("fp16_task_judged_by_psnr", "layernorm", '''
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    # One-pass statistics (E[x^2] - E[x]^2) in float32: a different rounding path from the reference.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    var = tl.sum(x * x, axis=0) / n_cols - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride + cols, ((x - mean) * rstd * w + b).to(tl.float16), mask=mask)


def custom_kernel(x, w, b):
    rows, cols = x.shape
    out = torch.empty_like(x)
    layernorm_kernel[(rows,)](x, w, b, out, cols, x.stride(0), 1e-5, BLOCK=triton.next_power_of_2(cols))
    return out
''', "float16 output off by an ulp here and there, judged with PSNR and cosine floors",
           task_toml_suffix="\n[tolerance]\nmin_psnr_db = 60.0\nmin_cosine = 0.9999\n"),
    Honest("float64_accumulation", "vector_add", '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs, mask=mask).to(tl.float64) + tl.load(y_ptr + offs, mask=mask).to(tl.float64)
    tl.store(out_ptr + offs, s.to(tl.float32), mask=mask)


def custom_kernel(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out
''', "converts precision inside the kernel (upwards)"),
    Honest("grid_stride_loop", "vector_add", '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, PROGRAMS: tl.constexpr):
    # A fixed, small grid that strides over the vector: looks like a hard-coded grid, covers every size.
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, PROGRAMS * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x, y):
    out = torch.empty_like(x)
    add_kernel[(4,)](x, y, out, x.numel(), BLOCK=512, PROGRAMS=4)
    return out
''', "launches the same 4 programs whatever the size"),
    Honest("keeps_dynamo_off_its_launcher", "vector_add", ADD_KERNEL + '''

@torch.compiler.disable
def custom_kernel(x, y):
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
''', "uses torch._dynamo, which replaces torch.manual_seed when it loads: that must not read as a patch "
        "of a harness function"),
    Honest('zeroes_only_its_padding', "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    # padded buffer: the kernel writes the first n elements, the padding is zeroed on the host
    n = x.numel()
    padded = triton.cdiv(n, 1024) * 1024
    buf = torch.empty(padded, device=x.device, dtype=x.dtype)
    buf[n:].zero_()
    add_kernel[(padded // 1024,)](x, y, buf, n, BLOCK=1024)
    return buf[:n]
''', 'a torch.empty buffer whose padding the host zeroes: part of a fresh allocation no longer holds its poison'),
    Honest('writes_floats_through_an_int_view', "vector_add", '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_bits_kernel(x_ptr, y_ptr, out_bits_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_bits_ptr + offs, s.to(tl.int32, bitcast=True), mask=mask)


def custom_kernel(x, y):
    n = x.numel()
    out = torch.empty_like(x)
    # the kernel writes the float32 result's bits through an int32 view of the output
    add_bits_kernel[(triton.cdiv(n, 1024),)](x, y, out.view(torch.int32), n, BLOCK=1024)
    return out
''', 'writes the output through a view of another dtype: the poison reads differently there'),
    Honest('prints_its_output_while_debugging', "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    add_kernel[grid](x, y, out, x.numel(), BLOCK=512)
    import sys
    print('debug: first elements', out[:2], file=sys.stderr)  # a leftover debug print
    return out
''', "printing a tensor switches torch's dispatch modes off to format it"),
    Honest('launches_with_tensor_descriptors', "vector_add", '''
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def add_desc_kernel(x_desc, y_desc, out_desc, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK
    x = x_desc.load([off])
    y = y_desc.load([off])
    out_desc.store([off], x + y)   # out-of-bounds elements are not written


def custom_kernel(x, y):
    n = x.numel()
    BLOCK = 256
    out = torch.empty_like(x)
    descs = [TensorDescriptor(t, [n], [1], [BLOCK]) for t in (x, y, out)]
    add_desc_kernel[(triton.cdiv(n, BLOCK),)](*descs, BLOCK=BLOCK)
    return out
''', 'its arguments are descriptors, not tensors (their repr prints the tensor)'),
    Honest("grid_from_a_lambda", "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda META: (triton.cdiv(n, META["BLOCK"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK=512)
    return out
''', "the interpreter runs its grid function inside the launch, with the launch's arguments"),
    Honest("autotuned_configs_with_hooks", "vector_add", '''
import torch
import triton
import triton.language as tl


def _zero(nargs):
    nargs["out_ptr"].zero_()


# One config: choosing among several times them, which needs a GPU driver.
@triton.autotune(configs=[triton.Config({"BLOCK": 256}, pre_hook=_zero)], key=["n"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[lambda META: (triton.cdiv(META["n"], META["BLOCK"]),)](x, y, out, n)
    return out
''', "autotuner configs zero the output from a hook, and the grid reads the launch's arguments"),
    Honest("reference_example", "vector_add", HONEST_ADD, "the plain kernel, as a control"),
)

CPU_HONEST = tuple(h for h in HONEST if not h.gpu)
