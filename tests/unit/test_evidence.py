"""The record of what produced each output: torch operators, the backend's launches, the record's
own off switches (real torch dispatch on the CPU)."""

from __future__ import annotations

import torch

from kerneltui.core.worker.evidence import Recorder, describe, install_tripwires


def recorded(fn, *inputs):
    rec = Recorder(torch)
    rec.mark_provided(list(inputs))
    rec.new_call()
    with rec.start_mode():
        rec.in_call = True
        out = fn(rec, *inputs)
        rec.in_call = False
        rec.check_mode()
    return rec, describe(rec, [("out", out)])


def writer(ev):
    return ev["outputs"]["out"]["writer"]


def test_a_torch_op_is_the_writer_of_its_result_whatever_its_name():
    _, ev = recorded(lambda rec, x, y: getattr(torch, "ad" + "d")(x, y), torch.ones(8), torch.ones(8))
    assert writer(ev) == "torch:add" and ev["ops"] == {"add": 1}


def test_a_copy_passes_the_writer_on():
    def fn(rec, x, y):
        out = torch.empty_like(x)
        out.copy_(x * y)
        return out.view(2, 4).t()

    _, ev = recorded(fn, torch.ones(8), torch.ones(8))
    assert writer(ev) == "torch:mul"


def test_a_kernel_launch_writes_its_arguments_and_carries_what_they_were_made_from():
    def honest(rec, x, y):
        out = torch.empty_like(x)
        rec.launch_begins("add_kernel", [x, y, out])
        rec.launch_ends()
        return out

    _, ev = recorded(honest, torch.ones(8), torch.ones(8))
    assert writer(ev) == "kernel:add_kernel" and ev["outputs"]["out"]["taints"] == []

    def laundered(rec, x, y):
        summed = x + y
        out = torch.empty_like(x)
        rec.launch_begins("copy_kernel", [summed, out])
        rec.launch_ends()
        return out

    _, ev = recorded(laundered, torch.ones(8), torch.ones(8))
    assert writer(ev) == "kernel:copy_kernel"
    assert ["torch:add", 8] in ev["outputs"]["out"]["taints"]


def test_allocations_inside_a_launch_belong_to_the_kernel():
    def fn(rec, x):
        rec.launch_begins("tile_kernel", [x])
        out = torch.empty_like(x)  # a DSL that allocates its own output while launching
        rec.launch_ends()
        return out

    _, ev = recorded(fn, torch.ones(4))
    assert writer(ev) == "kernel:tile_kernel"


def test_an_input_returned_is_the_input_and_a_fresh_allocation_stays_unwritten():
    _, ev = recorded(lambda rec, x: x.view(-1), torch.ones(4))
    assert writer(ev) == "input"
    _, ev = recorded(lambda rec, x: torch.zeros_like(x), torch.ones(4))
    assert writer(ev) == "alloc"


def test_switching_the_record_off_is_noted():
    rec = Recorder(torch)
    install_tripwires(torch, rec)
    x = torch.ones(4)
    rec.new_call()
    with rec.start_mode():
        rec.in_call = True
        with torch._C._DisableTorchDispatch():
            out = x + x
        rec.in_call = False
    ev = describe(rec, [("out", out)])
    assert writer(ev) == "unknown"
    assert any("_DisableTorchDispatch" in note for note in ev["left_mode"])


def test_a_mode_taken_off_the_stack_is_noted():
    from torch.utils._python_dispatch import _pop_mode

    rec = Recorder(torch)
    mode = rec.start_mode()
    mode.__enter__()
    _pop_mode()
    rec.check_mode()
    assert any("removed" in note for note in rec.evidence.left_mode)
