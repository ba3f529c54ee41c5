"""How the Triton backend's launch hook sees a launch's arguments."""

from __future__ import annotations

import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from kerneltui.core.backends.triton import _tensor_arguments, describe_arg


class _ReprCounting(torch.Tensor):
    reprs = 0

    def __repr__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        type(self).reprs += 1
        return super().__repr__(*args, **kwargs)


def test_a_tensor_descriptor_is_described_without_printing_its_tensor():
    # Its repr prints the tensor: on a GPU that runs torch's kernels inside the candidate's launch,
    # where the GPU trace took them for the candidate's work (every honest descriptor kernel failed).
    base = torch.arange(12, dtype=torch.float32).as_subclass(_ReprCounting)
    desc = TensorDescriptor(base, [12], [1], [4])
    described = describe_arg(desc)
    assert _ReprCounting.reprs == 0
    assert described == {"descriptor": "float32", "shape": [12], "strides": [1], "block_shape": [4]}


def test_tensors_inside_tuples_and_descriptors_are_launch_arguments():
    x, y, z = torch.zeros(4), torch.ones(4), torch.empty(8)
    found = _tensor_arguments((x, (y, 3), TensorDescriptor(z, [8], [1], [4]), "name"), torch)
    assert [t.data_ptr() for t in found] == [x.data_ptr(), y.data_ptr(), z.data_ptr()]
