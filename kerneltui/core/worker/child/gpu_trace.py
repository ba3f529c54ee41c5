"""The GPU's own trace of one call of the kernel (CUPTI through torch's profiler), and which of its
kernels the judge may set aside.

The trace is the operator record's second source: the names of the GPU kernels that really ran,
whatever became of the dispatch mode. A library kernel among them (cuBLAS, cuDNN, torch's own) fails
the call, unless it was launched inside a *window*: a stretch of the call in which torch did work on
the kernel's behalf that computes no answer or that the task allows:

- an operator the task lists in ``allow_ops`` (cuDNN's convolution kernels for ``conv2d``);
- torch's printing of a plain tensor (a debugging ``print(out)`` formats a CUDA tensor with torch's
  own reductions on the GPU), and then only for the operators printing uses.

Each window is a profiler range the record opens, numbered in the order it opens them; the trace
links every kernel to the operator (or range) that launched it, on the thread that launched it, so a
kernel is set aside only when that launch lies inside one of the record's windows. A window excuses
nothing when the kernel's own code could have run inside it (``spoiled``: a tensor subclass's
handler, a function mode of its own, a profile hook), and no window counts when the trace holds a
range named like one that the record did not open exactly once (the kernel can open profiler ranges
too). Whatever ran inside a window is still the operator record's business: memory written there
by anything but the allowed operator is written outside the record.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

WINDOW_PREFIX = "kerneltui.window."
_CUDA_API = re.compile(r"cu(da)?[A-Z]")  # cudaLaunchKernel, cuLaunchKernelEx, cudaMemcpyAsync …

# The ATen operators torch's tensor printing runs on a CUDA tensor (``torch/_tensor_str.py``): finding
# the finite non-zero values, their smallest and largest magnitude, whether they are integers, the
# summarised edges of a large tensor, and the copies to the host that read them. A kernel launched by
# anything else inside a printing window is judged as any other.
PRINTING_OPS = frozenset({
    "abs", "ne", "eq", "gt", "lt", "ge", "le", "isfinite", "isnan", "isinf", "bitwise_and", "logical_and",
    "__and__", "mul", "div", "true_divide", "masked_select", "nonzero", "index", "index_select", "min", "max",
    "amin", "amax", "ceil", "copy_", "_to_copy", "to", "clone", "contiguous", "cat", "stack", "select", "slice",
    "item", "_local_scalar_dense", "view_as_real", "real", "imag", "fill_", "ones_like", "zeros_like", "empty",
    "empty_like", "empty_strided", "resize_", "expand", "reshape", "view",
})


@dataclass(frozen=True)
class TraceEvent:
    """One event of the profiler's results, as much as the attribution needs."""

    name: str
    on_gpu: bool
    start_ns: int
    end_ns: int
    thread: int
    correlation: int  # a CPU event's own id
    linked: int  # a GPU event's: the id of the CPU event (operator or range) that launched it


@dataclass
class Window:
    label: str  # what ran inside: "the allowed conv2d", "torch's printing of a tensor"
    ops: frozenset[str] | None  # the ATen operators whose kernels it sets aside; None: every one
    spoiled: str = ""  # why it sets nothing aside


@dataclass(frozen=True)
class Attribution:
    judged: list[str]  # the names of the kernels the verdict looks at, each once
    excused: list[str]  # "name (inside <window>)", each once
    note: str = ""  # why nothing was set aside, when a window was forged


@dataclass
class GpuWindows:
    """The windows opened during the current call (``window``) and the ones open now."""

    opened: list[Window] = field(default_factory=list)
    open_now: list[int] = field(default_factory=list)
    range_type: Any = None  # torch's profiler range that does not pass through the dispatcher

    def reset(self) -> None:
        self.opened.clear()
        self.open_now.clear()

    @contextlib.contextmanager
    def window(self, label: str, ops: frozenset[str] | None = None, spoiled: str = "") -> Iterator[None]:
        index = len(self.opened)
        self.opened.append(Window(label, ops, spoiled))
        self.open_now.append(index)
        try:
            # A range that a dispatch mode does not see (``record_function`` is an operator: the
            # record would file it).
            with self.range_type(f"{WINDOW_PREFIX}{index}"):
                yield
        finally:
            self.open_now.pop()

    def spoil(self, why: str) -> None:
        """The kernel's own code ran inside the windows open now: they set nothing aside."""
        for index in self.open_now:
            if not self.opened[index].spoiled:
                self.opened[index].spoiled = why


def attribute(events: list[TraceEvent], windows: list[Window]) -> Attribution:
    """Which GPU kernels of the trace the verdict judges, and which a window sets aside."""
    ranges: dict[int, list[TraceEvent]] = {}
    forged = False
    for event in events:
        if event.on_gpu or not event.name.startswith(WINDOW_PREFIX):
            continue
        suffix = event.name[len(WINDOW_PREFIX):]
        if not suffix.isdigit() or int(suffix) >= len(windows):
            forged = True
            continue
        ranges.setdefault(int(suffix), []).append(event)
    forged = forged or any(len(found) != 1 for found in ranges.values())
    note = ("the trace holds profiler ranges named like kerneltui's own that kerneltui did not open: no GPU kernel "
            "was set aside as torch's own work") if forged else ""
    # A GPU event's link names an operator or a range; the CUDA API calls on the CPU side carry
    # numbers of another count (CUPTI's), which may equal an operator's: they are not looked up.
    on_cpu = {event.correlation: event for event in events
              if not event.on_gpu and event.correlation and not _CUDA_API.match(event.name)}
    judged: list[str] = []
    excused: list[str] = []
    for event in events:
        if not event.on_gpu:
            continue
        launcher = on_cpu.get(event.linked) if event.linked else None
        window = None if forged or launcher is None else _window_of(launcher, ranges, windows)
        if window is None:
            if event.name not in judged:
                judged.append(event.name)
        else:
            entry = f"{event.name} (inside {window.label})"
            if entry not in excused:
                excused.append(entry)
    return Attribution(judged, excused, note)


def _window_of(launcher: TraceEvent, ranges: dict[int, list[TraceEvent]], windows: list[Window]) -> Window | None:
    """A window that sets aside a kernel launched by ``launcher``, or None."""
    op = launcher.name.split("::", 1)[1] if launcher.name.startswith("aten::") else ""
    for index, (span,) in ranges.items():
        window = windows[index]
        inside = span is launcher or (span.thread == launcher.thread
                                      and span.start_ns <= launcher.start_ns <= span.end_ns)
        if inside and not window.spoiled and (window.ops is None or op in window.ops):
            return window
    return None


def read_events(prof: Any) -> list[TraceEvent]:
    """The profiler's raw events (torch's ``_KinetoEvent``), read into ``TraceEvent``s."""
    events = []
    for event in prof.profiler.kineto_results.events():
        start = int(event.start_ns())
        events.append(TraceEvent(
            name=str(event.name()),
            on_gpu=str(event.device_type()).endswith("CUDA"),
            start_ns=start,
            end_ns=start + int(event.duration_ns()),
            thread=int(event.start_thread_id()),
            correlation=int(event.correlation_id()),
            linked=int(event.linked_correlation_id()),
        ))
    return events


def interference(torch: Any, own_function_modes: tuple[type, ...], own_dispatch_mode: Any,
                 hooks: tuple[Any, Any] | None) -> str:
    """How the kernel's own code could run inside a window opened now (a function mode or a dispatch
    mode of its own, a profile or trace hook), or ""."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    if any(not isinstance(mode, own_function_modes) for mode in _get_current_function_mode_stack()):
        return "a torch function mode of the kernel's was active"
    if any(mode is not own_dispatch_mode for mode in _get_current_dispatch_mode_stack()):
        return "a torch dispatch mode of the kernel's was active"
    if hooks is not None and (sys.getprofile(), sys.gettrace()) != hooks:
        return "a profile or trace hook was set"
    return ""
