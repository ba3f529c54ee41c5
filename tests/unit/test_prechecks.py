"""Static prechecks: strict findings for reward hacks, warnings for things worth a look."""

from __future__ import annotations

import pytest

from kerneltui.core.rungs.prechecks import has_backend_kernel, scan_cuda, scan_python
from tests.conftest import EXAMPLES

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"


def findings(src: str, backend: str = "triton"):
    found, syntax = scan_python(HEADER + src, backend)
    assert syntax is None
    return found


def strict(src: str, backend: str = "triton") -> list[str]:
    return [f.message for f in findings(src, backend) if f.level == "strict"]


def warnings(src: str) -> list[str]:
    return [f.message for f in findings(src) if f.level == "warning"]


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layernorm", "matmul"])
def test_bundled_triton_examples_are_clean(name):
    found, syntax = scan_python((EXAMPLES / name / "kernel.py").read_text(), "triton")
    assert syntax is None
    assert [f for f in found if f.level == "strict"] == []


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("def custom_kernel(a, b):\n    return torch.matmul(a, b)\n", "calls torch.matmul"),
        ("import torch.nn.functional as F\ndef custom_kernel(x):\n    return F.softmax(x, -1)\n", "calls F.softmax"),
        ("from reference import ref_kernel\n", "imports the reference"),
        ("import reference\ndef custom_kernel(x):\n    return reference.ref_kernel(x)\n", "imports the reference"),
        ("def custom_kernel(x):\n    s = torch.cuda.Stream()\n    return x\n", "creates or switches a CUDA stream"),
        ("import threading\n", "imports threading"),
        ("import concurrent.futures\n", "imports concurrent"),
        ("class Lazy(torch.Tensor):\n    pass\n", "subclasses torch.Tensor"),
        ("torch.cuda.Event = object\n", "reassigns torch.cuda.Event"),
        ("import time\ntime.perf_counter = lambda: 0.0\n", "reassigns time.perf_counter"),
        ("setattr(torch.cuda, 'synchronize', lambda: None)\n", "setattr on torch.cuda"),
        ("import torch as T\ndef custom_kernel(a, b):\n    return T.bmm(a, b)\n", "calls T.bmm"),
    ],
)
def test_strict_findings(src, expected):
    assert any(expected in m for m in strict(src)), strict(src)


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("def custom_kernel(x):\n    return x.half()\n", ".half() lowers precision"),
        ("def custom_kernel(x):\n    return x.to(torch.bfloat16)\n", "converts to torch.bfloat16"),
        ("import functools\n@functools.lru_cache\ndef custom_kernel(x):\n    return x\n", "memoised with @lru_cache"),
        ("def custom_kernel(x):\n    return x @ x\n", "@ operator outside a kernel"),
        ("def custom_kernel(x):\n    cache = {x.data_ptr(): x}\n    return x\n", "data_ptr()"),
        ("torch.backends.cuda.matmul.allow_tf32 = True\n", "tf32 lowers float32 precision"),
    ],
)
def test_warnings(src, expected):
    assert any(expected in m for m in warnings(src)), warnings(src)


def test_dsl_ops_inside_kernels_are_fine():
    src = (
        "@triton.jit\n"
        "def k(x_ptr, o_ptr, BLOCK: tl.constexpr):\n"
        "    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n"
        "    s = tl.sum(x, axis=0)\n"
        "    tl.store(o_ptr, (x / s).to(tl.float16))\n"
        "def custom_kernel(x):\n"
        "    out = torch.empty_like(x)\n"
        "    k[(1,)](x, out, BLOCK=128)\n"
        "    return out\n"
    )
    assert findings(src) == []


def test_torch_backend_may_call_torch():
    assert strict("def custom_kernel(a, b):\n    return torch.matmul(a, b)\n", backend="torch") == []


def test_backend_kernel_markers():
    assert has_backend_kernel("@triton.jit\ndef k(): pass", "triton")
    assert not has_backend_kernel("def custom_kernel(x): return x", "triton")
    assert has_backend_kernel("@cute.kernel\ndef k(): pass", "cute")
    assert has_backend_kernel("__global__ void k() {}", "cuda")


def test_cuda_streams_are_strict():
    found = scan_cuda("cudaStream_t s;\ncudaStreamCreate(&s);  // side stream\n")
    assert [f.line for f in found if f.level == "strict"] == [2]


def test_syntax_error_is_reported():
    _, syntax = scan_python("def custom_kernel(:\n", "triton")
    assert syntax is not None and syntax.lineno == 1


@pytest.mark.parametrize("call", ["torch.reshape(x, (2, -1))", "torch.broadcast_to(y, x.shape)", "torch.flatten(x)",
                                  "torch.transpose(x, 0, 1)", "torch.movedim(x, 0, -1)", "torch.unsqueeze(x, 0)",
                                  "torch.cat([x, y])", "torch.is_grad_enabled()"])
def test_views_and_questions_written_as_torch_functions_are_not_compute(call):
    # Their method forms (x.reshape(...)) were never flagged; the function forms were refused as
    # "a torch library op computes the answer", failing honest KernelBench kernels.
    src = f"def custom_kernel(x, y):\n    v = {call}\n    out = torch.empty_like(x)\n    return out\n"
    assert strict(src) == []


def test_registering_over_a_torch_operator_is_named_and_a_message_that_mentions_one_is_not():
    # The rule is for registration calls: an operator's name as the whole argument, not text about one.
    for registration in ('torch.library.impl("aten::add.Tensor", "CPU")(fn)\n',
                         'lib = torch.library.Library("aten", "IMPL")\n',
                         'torch.library.register_kernel("prims.mul", "cuda")(fn)\n'):
        assert any("registers a kernel for one of torch's own operators" in m for m in strict(registration)), registration
    for message in ('print("aten::add is where the time goes")\n', 'log = ["aten::mm: 3 calls"]\nprint(*log)\n',
                    'lib = torch.library.Library("mylib", "DEF")\n'):
        assert strict(message) == [], message
