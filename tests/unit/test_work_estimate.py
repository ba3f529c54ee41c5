"""Work estimated from one call of a reference: bytes from the tensors in and out, FLOPs from
torch's own counter (which counts matmul-class operators and nothing elementwise)."""

from __future__ import annotations

import torch

from kerneltui.core.worker.child.work_estimate import estimate_work


def test_matmul_flops_and_bytes():
    a, b = torch.rand(32, 16), torch.rand(16, 8)
    work = estimate_work(torch, lambda data: data[0] @ data[1], (a, b))
    assert work.flops == 2 * 32 * 16 * 8
    assert work.bytes == (32 * 16 + 16 * 8 + 32 * 8) * 4


def test_elementwise_has_bytes_only():
    x = torch.rand(1000)
    work = estimate_work(torch, lambda data: torch.relu(data[0]), (x,))
    assert work.flops is None and work.bytes == 2 * 1000 * 4
    assert "counted none" in work.method


def test_a_preallocated_output_and_the_model_weights():
    x, out = torch.rand(100), torch.empty(100)
    weight = torch.rand(100)

    def ref(data):
        data[1].copy_(data[0] * weight)
        return data[1]

    work = estimate_work(torch, ref, (x, out), reads=[weight])
    assert work.bytes == 3 * 100 * 4  # x read, out written once (it is an input's buffer), weight read
