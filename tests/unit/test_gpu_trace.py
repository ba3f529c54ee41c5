"""Which kernels of the GPU trace the judge sets aside: those launched inside the record's windows
(an allowed operator, torch's printing of a tensor), on the thread that opened them, and only while
nothing of the kernel's own could run inside. The attribution is judged here on hand-made traces;
the windows and the trace reading on torch's real profiler (its CPU side: this machine has no GPU)."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.profiler import ProfilerActivity, profile

from kerneltui.core.worker.child.evidence import Recorder
from kerneltui.core.worker.child.gpu_trace import (
    PRINTING_OPS,
    GpuWindows,
    TraceEvent,
    Window,
    attribute,
    interference,
    read_events,
)
from tests.unit.test_evidence import tripwires_for

MAIN, OTHER = 11, 12


def cpu(name, start, end, correlation, thread=MAIN):
    return TraceEvent(name, False, start, end, thread, correlation, 0)


def gpu(name, linked):
    return TraceEvent(name, True, 0, 0, 0, 0, linked)


ALLOWED = Window("the allowed conv2d", None)
PRINTING = Window("torch's printing of a tensor", PRINTING_OPS)


def trace(*launches, windows=((0, 100, 200),)):
    """Window ranges (index, start, end) on the main thread, then (launcher, kernel) pairs."""
    events = [cpu(f"kerneltui.window.{i}", start, end, 1000 + i) for i, start, end in windows]
    for launcher, kernel in launches:
        events += [launcher, gpu(kernel, launcher.correlation)]
    return events


def test_a_library_kernel_launched_inside_an_allowed_operator_is_set_aside():
    events = trace((cpu("aten::cudnn_convolution", 120, 150, 1), "cudnn_infer_conv2d_kernel"),
                   (cpu("aten::sigmoid", 250, 260, 2), "at::native::sigmoid_kernel"))
    found = attribute(events, [ALLOWED])
    assert found.judged == ["at::native::sigmoid_kernel"]
    assert found.excused == ["cudnn_infer_conv2d_kernel (inside the allowed conv2d)"]
    assert found.note == ""


def test_a_launch_on_another_thread_is_not_inside_the_window():
    events = trace((cpu("aten::mm", 120, 150, 1, thread=OTHER), "sm90_xmma_gemm"))
    assert attribute(events, [ALLOWED]).judged == ["sm90_xmma_gemm"]


def test_a_spoiled_window_sets_nothing_aside():
    events = trace((cpu("aten::cudnn_convolution", 120, 150, 1), "cudnn_infer_conv2d_kernel"))
    spoiled = Window("the allowed conv2d", None, spoiled="the kernel's own code ran inside it")
    assert attribute(events, [spoiled]).judged == ["cudnn_infer_conv2d_kernel"]


def test_printing_sets_aside_only_the_operators_printing_runs():
    events = trace((cpu("aten::abs", 110, 120, 1), "at::native::abs_kernel"),
                   (cpu("aten::masked_select", 130, 140, 2), "at::native::index_kernel"),
                   (cpu("aten::mm", 150, 160, 3), "sm90_xmma_gemm"))
    found = attribute(events, [PRINTING])
    assert found.judged == ["sm90_xmma_gemm"]
    assert len(found.excused) == 2


def test_a_kernel_launched_by_the_window_itself_is_set_aside_only_where_any_operator_is():
    # A launch outside any operator inside the range is linked to the range itself.
    events = [cpu("kerneltui.window.0", 100, 200, 7), gpu("cudnn_kernel", 7)]
    assert attribute(events, [ALLOWED]).excused == ["cudnn_kernel (inside the allowed conv2d)"]
    assert attribute(events, [PRINTING]).judged == ["cudnn_kernel"]


def test_a_kernel_with_no_launcher_is_judged():
    events = trace() + [gpu("sm90_xmma_gemm", 0), gpu("ampere_sgemm", 999)]
    assert attribute(events, [ALLOWED]).judged == ["sm90_xmma_gemm", "ampere_sgemm"]


def test_ranges_named_like_the_records_that_it_did_not_open_void_every_window():
    launch = (cpu("aten::mm", 120, 150, 1), "sm90_xmma_gemm")
    # The kernel opens a range with the number of the record's window: two of that number.
    twice = trace(launch, windows=((0, 100, 200), (0, 110, 190)))
    # One beyond the windows the record opened.
    beyond = trace(launch, windows=((0, 300, 400), (1, 100, 200)))
    for events in (twice, beyond):
        found = attribute(events, [ALLOWED])
        assert found.judged == ["sm90_xmma_gemm"] and not found.excused
        assert "did not open" in found.note


def test_windows_are_ranges_of_the_real_profiler_that_the_dispatcher_does_not_see():
    windows = GpuWindows(range_type=torch._C._profiler._RecordFunctionFast)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with windows.window("the allowed add"):
            torch.add(torch.ones(4), 1)
        with windows.window("torch's printing of a tensor", PRINTING_OPS):
            pass
    events = read_events(prof)
    names = [e.name for e in events]
    assert "kerneltui.window.0" in names and "kerneltui.window.1" in names
    window = next(e for e in events if e.name == "kerneltui.window.0")
    add = next(e for e in events if e.name == "aten::add")
    assert window.start_ns <= add.start_ns <= window.end_ns and window.thread == add.thread
    assert [w.label for w in windows.opened] == ["the allowed add", "torch's printing of a tensor"]
    assert attribute(events, windows.opened).note == ""


def test_code_of_the_kernels_that_could_run_inside_a_window_spoils_it():
    assert interference(torch, (), None, None) == ""

    class Watcher(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Watcher():
        assert "function mode" in interference(torch, (), None, None)
    assert "hook" in interference(torch, (), None, (lambda *a: None, None))


def printing_windows(value):
    rec = Recorder(torch)
    tripwires_for(rec)
    rec.new_call()
    rec.gpu_tracing = True
    with rec.start_mode():
        rec.in_call = True
        text = str(value)
        rec.in_call = False
    return rec, text


def test_printing_a_plain_tensor_opens_a_printing_window():
    rec, text = printing_windows(torch.arange(3.0))
    assert text.startswith("tensor([0., 1., 2.]")
    assert [(w.label, w.spoiled) for w in rec.windows.opened] == [("torch's printing of a tensor", "")]


def test_printing_a_subclass_opens_no_window():
    class Lazy(torch.Tensor):
        pass

    rec, _ = printing_windows(torch.arange(3.0).as_subclass(Lazy))
    assert rec.windows.opened == []


def test_a_cuda_call_numbered_like_an_operator_is_not_taken_for_it():
    # The launch calls on the CPU side are numbered by CUPTI, the operators by torch: the same
    # number inside a window must not pull a kernel launched outside into it.
    outside = cpu("aten::mm", 300, 320, 5)
    launch_inside = cpu("cudaLaunchKernel", 150, 151, 5)
    events = trace() + [outside, launch_inside, gpu("sm90_xmma_gemm", 5)]
    assert attribute(events, [ALLOWED]).judged == ["sm90_xmma_gemm"]


def replaced_printing(swap, restore):
    """The windows a print opens after ``swap`` changed torch's printing code (undone by ``restore``)."""
    rec = Recorder(torch)
    tripwires_for(rec)
    try:
        swap()
        rec.new_call()
        rec.gpu_tracing = True
        with rec.start_mode():
            rec.in_call = True
            str(torch.arange(3.0))
            rec.in_call = False
    finally:
        restore()
    return [(w.label, w.spoiled) for w in rec.windows.opened]


def test_printing_whose_code_the_kernel_replaced_opens_a_spoiled_window():
    printing = torch._tensor_str
    code, width = printing._tensor_str.__code__, printing._Formatter.width

    def swap_code():
        printing._tensor_str.__code__ = (lambda self, indent: "").__code__.replace(co_name="_tensor_str")

    def swap_method():
        printing._Formatter.width = lambda self: 1

    spoiled = [("torch's printing of a tensor", "torch's printing code was replaced")]
    assert replaced_printing(swap_code, lambda: setattr(printing._tensor_str, "__code__", code)) == spoiled
    assert replaced_printing(swap_method, lambda: setattr(printing._Formatter, "width", width)) == spoiled
