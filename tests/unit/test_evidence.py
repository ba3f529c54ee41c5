"""The record of what produced each output: torch operators, the backend's launches, the record's
own off switches (real torch dispatch on the CPU)."""

from __future__ import annotations

import os
import sys

import torch

from kerneltui.core.worker.child.evidence import Recorder, describe, install_tripwires
from kerneltui.core.worker.child.known_code import known_code


def known_now():
    """The code loaded now, as a worker takes it at warm-up: after torch._dynamo, whose wrapper runs
    every dispatch mode's handler (imported by torch on a mode's first use otherwise: its code would
    be new, and the test would depend on which test used a mode first)."""
    import torch._dynamo  # noqa: F401

    return known_code(os.path.join(os.path.dirname(torch.__file__), ""))


def recorded(fn, *inputs, candidate_dirs=(), known=None):
    rec = Recorder(torch, candidate_dirs=candidate_dirs)
    rec.known = known
    rec.mark_provided(list(inputs))
    rec.new_call()
    with rec.start_mode():
        rec.in_call = True
        out = fn(rec, *inputs)
        rec.in_call = False
        rec.check_mode()
    return rec, describe(rec, [("out", out)])


def tripwires_for(rec):
    """Trip wires bound to ``rec`` (a worker has one recorder; this process makes many)."""
    import importlib

    from kerneltui.core.worker.child.evidence import TRIPWIRES

    for module_name, attr in TRIPWIRES:
        module = importlib.import_module(module_name)
        wired = getattr(module, attr, None)
        if getattr(wired, "_kerneltui_tripwire", False):
            cells = dict(zip(wired.__code__.co_freevars, wired.__closure__, strict=True))
            setattr(module, attr, cells["original"].cell_contents)
    printing = torch._tensor_str._str
    if getattr(printing, "_kerneltui_tripwire", False):
        cells = dict(zip(printing.__code__.co_freevars, printing.__closure__, strict=True))
        torch._tensor_str._str = cells["original"].cell_contents
    install_tripwires(torch, rec)


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
    assert ["torch:add", 8] in [t[:2] for t in ev["outputs"]["out"]["taints"]]


def test_allocations_inside_a_launch_belong_to_the_kernel():
    def fn(rec, x):
        rec.launch_begins("tile_kernel", [x])
        out = torch.empty_like(x)  # a DSL that allocates its own output while launching
        rec.launch_ends()
        return out

    # (this file plays the DSL's library: loaded before the candidate's code)
    _, ev = recorded(fn, torch.ones(4), candidate_dirs=("/nonexistent-task-copy",), known=known_now())
    assert writer(ev) == "kernel:tile_kernel"

    def candidate_allocates(rec, x):
        rec.launch_begins("noop_kernel", [x])
        out = torch.empty_like(x)  # the candidate's grid function allocating: not the kernel's memory
        out.copy_(x + 1)
        rec.launch_ends()
        return out

    _, ev = recorded(candidate_allocates, torch.ones(4))
    assert writer(ev) == "torch:add"


def test_an_input_returned_is_the_input_and_a_fresh_allocation_stays_unwritten():
    _, ev = recorded(lambda rec, x: x.view(-1), torch.ones(4))
    assert writer(ev) == "input"
    _, ev = recorded(lambda rec, x: torch.zeros_like(x), torch.ones(4))
    assert writer(ev) == "alloc"


def test_switching_the_record_off_is_noted():
    rec = Recorder(torch)
    tripwires_for(rec)
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


def test_a_freed_storage_does_not_pass_its_writer_to_memory_at_the_same_address():
    from kerneltui.core.worker.child.evidence import StorageFact, StorageFacts, _storage_key

    facts = StorageFacts()
    t = torch.ones(8)
    key = _storage_key(t)
    facts.set(key, StorageFact("torch:add"), t)
    assert facts.get(key).writer == "torch:add"
    del t  # torch may place the next allocation here, made by something the record never saw
    assert facts.get(key) is None


def test_a_poisoned_allocation_written_outside_the_record_taints_the_kernel_that_reads_it():
    from kerneltui.core.worker.child.ops_candidate import poisoned_allocations

    def numpy_wrote_it(rec, x):
        out = torch.empty_like(x)
        out.numpy()[:] = 3.0  # not a torch operator: the record does not see it
        rec.launch_begins("touch_kernel", [out])
        rec.launch_ends()
        return out

    def kernel_wrote_it(rec, x):
        out = torch.empty_like(x)
        rec.launch_begins("add_kernel", [x, out])
        out.numpy()[:] = 3.0  # the kernel's own write, inside its launch
        rec.launch_ends()
        return out

    with poisoned_allocations(torch):
        rec = Recorder(torch)
        rec.poisoning = True
        rec.mark_provided([x := torch.ones(8)])
        with rec.start_mode():
            cheat, honest = numpy_wrote_it(rec, x), kernel_wrote_it(rec, x)
    ev = describe(rec, [("cheat", cheat), ("honest", honest)])
    assert [t[0] for t in ev["outputs"]["cheat"]["taints"]] == ["unknown:"]
    assert ev["outputs"]["honest"]["writer"] == "kernel:add_kernel" and ev["outputs"]["honest"]["taints"] == []


def test_torch_compute_inside_a_launch_taints_what_the_launch_wrote():
    def fn(rec, x):
        out = torch.empty_like(x)
        rec.launch_begins("add_kernel", [x, out])
        out.copy_(x + 1)  # a grid function or an interpreted kernel body calling torch
        rec.launch_ends()
        return out

    _, ev = recorded(fn, torch.ones(8))
    # the copy is recorded like any other, and what the kernel then wrote carries it
    assert writer(ev) == "kernel:add_kernel"
    assert ["torch:add", 8] in [t[:2] for t in ev["outputs"]["out"]["taints"]]

    def in_grid(rec, x):
        out = torch.empty_like(x)
        rec.launch_begins("add_kernel", [x, out])
        x + 1  # computed here, written by the kernel's (interpreted) body in ways torch does not see
        rec.launch_ends()
        return out

    _, ev = recorded(in_grid, torch.ones(8))
    assert writer(ev) == "kernel:add_kernel"
    assert ["torch:add", 8] in [t[:2] for t in ev["outputs"]["out"]["taints"]]


def test_a_resize_that_keeps_the_storage_keeps_its_writer():
    def fn(rec, x):
        out = torch.softmax(x, -1)
        out.resize_(out.shape)
        return out

    _, ev = recorded(fn, torch.ones(2, 4))
    assert writer(ev) == "torch:_softmax"


def test_a_trip_wire_does_not_hand_out_what_it_wraps():
    install_tripwires(torch, Recorder(torch))
    assert not hasattr(torch._C._DisableTorchDispatch, "__wrapped__")


def test_torch_compute_inside_a_launch_counts_only_when_the_candidates_code_asked_for_it(tmp_path):
    # A backend's own library (an autotuner timing its configs) may use torch inside a launch:
    # code loaded before the candidate's, told apart by code object, not by file name.
    import importlib.util

    library = tmp_path / "library.py"
    library.write_text("def timing(x):\n    return x * 2\n")
    spec = importlib.util.spec_from_file_location("library_under_test", library)
    module = importlib.util.module_from_spec(spec)
    sys.modules["library_under_test"] = module
    try:
        spec.loader.exec_module(module)
        known = known_now()
    finally:
        del sys.modules["library_under_test"]

    def inside_a_launch(timing):
        rec = Recorder(torch, candidate_dirs=(str(tmp_path / "task"),))
        rec.known = known
        x = torch.ones(8)
        rec.mark_provided([x])
        with rec.start_mode():
            out = torch.empty_like(x)
            rec.launch_begins("add_kernel", [x, out])
            timing(x)
            rec.launch_ends()
        return describe(rec, [("out", out)])

    ev = inside_a_launch(module.timing)
    assert ev["outputs"]["out"]["taints"] == [] and ev["ops"] == {}
    # Code made after the snapshot is the candidate's, whatever file it claims to be from.
    scope: dict = {}
    exec(compile("def timing(x):\n    return x * 2\n", str(library), "exec"), scope)
    ev = inside_a_launch(scope["timing"])
    assert [t[:2] for t in ev["outputs"]["out"]["taints"]] == [["torch:mul", 8]], ev


def test_a_scale_torch_reduced_from_a_full_size_intermediate_hands_the_kernel_one_element():
    def fn(rec, x):
        scale = x.abs().amax()  # the full-size abs feeds torch's reduction, not the kernel
        out = torch.empty_like(x)
        rec.launch_begins("scale_kernel", [x, scale, out])
        rec.launch_ends()
        return out

    _, ev = recorded(fn, torch.ones(1000))
    assert [t[:2] for t in ev["outputs"]["out"]["taints"]] == [["torch:amax", 1]]


def test_side_data_of_earlier_calls_does_not_pile_up_on_a_workspace_kept_between_calls():
    rec = Recorder(torch)
    workspace = torch.empty(64)
    for _ in range(3):
        x = torch.ones(64)
        rec.mark_provided([x])
        rec.new_call()
        with rec.start_mode():
            scale = x.amax()
            out = torch.empty_like(x)
            rec.launch_begins("scale_rows", [x, scale, workspace])
            rec.launch_ends()
            rec.launch_begins("copy_kernel", [workspace, out])
            rec.launch_ends()
    ev = describe(rec, [("out", out)])
    assert [t[:2] for t in ev["outputs"]["out"]["taints"]] == [["torch:amax", 1]]  # this call's, once


def test_a_table_from_a_python_list_is_host_data_and_one_built_before_the_call_is_the_kernels_own():
    rec = Recorder(torch)
    with rec.start_mode():
        table = torch.tensor([0.5, 1.0, 2.0])  # aten::lift_fresh aliases its argument
    assert rec.writer_of(table).writer == "host:lift_fresh"
    x = torch.ones(8)
    rec.mark_provided([x])
    rec.new_call()
    with rec.start_mode():
        out = torch.empty_like(x)
        rec.launch_begins("lookup_kernel", [x, table, out])
        rec.launch_ends()
    assert describe(rec, [("out", out)])["outputs"]["out"]["taints"] == []


def test_an_output_written_through_a_view_of_another_dtype_is_the_kernels():
    from kerneltui.core.worker.child.ops_candidate import poisoned_allocations

    with poisoned_allocations(torch):
        rec = Recorder(torch)
        rec.poisoning = True
        x = torch.ones(8)
        rec.mark_provided([x])
        rec.new_call()
        with rec.start_mode():
            out = torch.empty(8, dtype=torch.bool)
            rec.launch_begins("gt_kernel", [x, out.view(torch.uint8)])
            out.view(torch.uint8).numpy()[:] = 1  # the kernel's own store, inside its launch
            rec.launch_ends()
    ev = describe(rec, [("out", out)])
    assert ev["outputs"]["out"]["writer"] == "kernel:gt_kernel" and ev["outputs"]["out"]["taints"] == []


def test_printing_a_tensor_is_not_switching_the_record_off():
    rec = Recorder(torch)
    tripwires_for(rec)
    rec.new_call()
    with rec.start_mode():
        rec.in_call = True
        str(torch.ones(3))
        with torch._C._DisableTorchDispatch():  # the kernel's own call still counts
            pass
        rec.in_call = False
    assert rec.evidence.left_mode == ["the kernel called torch._C._DisableTorchDispatch, which switches the "
                                      "operator record off"]


def test_a_copy_into_part_of_a_buffer_joins_what_it_held():
    def fixed_up(rec, x):
        out = torch.empty_like(x)
        rec.launch_begins("add_kernel", [x, out])
        rec.launch_ends()
        out[:1].copy_(x[:1] * 2)  # an honest fix-up of one element after the kernel
        return out

    _, ev = recorded(fixed_up, torch.ones(64))
    assert writer(ev) == "kernel:add_kernel"
    assert [t[:2] for t in ev["outputs"]["out"]["taints"]] == [["torch:mul", 1]]

    def relabelled(rec, x):
        buf = torch.empty(65)
        buf[:64] = x + 1  # torch's answer ...
        buf[64:].copy_(x[:1])  # ... and one element copied from an input
        return buf[:64]

    _, ev = recorded(relabelled, torch.ones(64))
    assert writer(ev) == "torch:add"
