"""What really produced the kernel's outputs: a record of the operators torch dispatched and the
backend's kernel launches while candidate code ran (the candidate's worker side).

Static rules (``rungs/prechecks.py``) read the source and can be dodged by spelling a name
differently (``getattr(torch, "ad" + "d")``); this module watches what executed instead. A torch
dispatch mode sees every aten operator the candidate's Python causes, however it was reached, and
the backend's launch hook (``WorkerState.record_launch``) sees its kernels. Each tensor storage
gets a *writer* — what last wrote its contents:

* ``input``       memory the judge handed over (inputs, reference weights)
* ``alloc``       a fresh allocation or a constant fill (``empty``, ``zeros``, ``fill_`` …)
* ``kernel:NAME`` a launch of the task's backend that took the storage as an argument
* ``torch:OP``    a torch compute operator (``add``, ``mm``, ``_softmax`` …)
* ``host:OP``     data made from Python or numpy values (``torch.tensor``, ``from_numpy``)

Copies and layout changes (``copy_``, ``clone``, ``cat``, ``_to_copy`` …) pass the source's writer on,
so a result computed by torch and copied into the output is still torch's. A kernel's arguments
carry *taints*: the torch compute operators (and sizes) whose results they were made from, so a
torch result handed through a copy kernel is still visible. The judge decides what the record
means (``core.worker.judge``); this module only records. It is evidence, not a sandbox: code in the
same process can switch the mode off, so leaving it is recorded too (and the static rules flag the
calls that do it), and on a GPU the names of the GPU kernels that ran are read as a second source.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Operators that create memory or fill it with constants or random numbers: no data flows in.
FACTORY_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor", "arange", "linspace",
    "logspace", "eye", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "fill_", "zero_", "fill", "zero", "uniform_", "normal_", "random_", "bernoulli_", "exponential_",
    "resize_", "resize_as_", "empty_permuted", "_efficientzerotensor",
})
# Operators that move or re-lay values without computing new ones: the writer passes through.
MOVE_OPS = frozenset({
    "copy_", "copy", "clone", "_to_copy", "to", "contiguous", "cat", "stack", "hstack", "vstack", "concat",
    "concatenate", "_unsafe_view", "view_copy", "expand_copy", "permute_copy", "transpose_copy", "t_copy",
    "slice_copy", "select_copy", "unsqueeze_copy", "squeeze_copy", "as_strided_copy", "alias_copy", "detach_copy",
    "narrow_copy", "unfold_copy", "_reshape_copy", "reshape", "repeat", "tile", "flip", "roll", "constant_pad_nd",
    "_reshape_alias", "_unsafe_view_copy", "split_with_sizes_copy", "unbind_copy", "_copy_from",
    "_copy_from_and_resize", "lift", "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
})
# Data made on the host from Python or numpy values.
HOST_OPS = frozenset({"lift_fresh", "lift_fresh_copy"})
# Operators that return Python numbers or metadata only.
QUERY_OPS = frozenset({
    "_local_scalar_dense", "is_nonzero", "equal", "item", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    "is_same_size", "_has_compatible_shallow_copy_type", "record_stream", "set_", "_nested_tensor_size",
})


@dataclass
class StorageFact:
    writer: str
    numel: int = 0  # elements of the tensor that last wrote it (for torch:/host: writers)
    taints: frozenset[tuple[str, int]] = frozenset()

    def taints_with_self(self) -> frozenset[tuple[str, int]]:
        if self.writer.startswith(("torch:", "host:")):
            return self.taints | {(self.writer, self.numel)}
        return self.taints


@dataclass
class Evidence:
    """The record of one call (or of the import), sent to the judge as plain data."""

    ops: Counter[str] = field(default_factory=Counter)  # compute operators dispatched outside launches
    launches: Counter[str] = field(default_factory=Counter)
    left_mode: list[str] = field(default_factory=list)  # how the record was escaped, if it was
    gpu_kernels: list[str] = field(default_factory=list)  # names read from the GPU's own trace (CUPTI)
    gpu_trace_note: str = ""


def _storage_key(t: Any) -> tuple[str, int] | None:
    try:
        if t.numel() == 0:
            return None
        ptr = t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return (t.device.type, int(ptr)) if ptr else None


class Recorder:
    """Storage writers across the whole life of the candidate's worker, and per-call evidence."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.facts: dict[tuple[str, int], StorageFact] = {}
        self.evidence = Evidence()
        self.launch_depth = 0
        self.launch_name = ""
        self.mode: Any = None
        self.allocated_in_call: set[tuple[str, int]] = set()  # fresh allocations of the current call
        self.in_call = False  # candidate code is running (the trip wires below only count then)

    # -- what the harness tells it --------------------------------------------------------------

    def mark_provided(self, tensors: list[Any]) -> None:
        for t in tensors:
            key = _storage_key(t)
            if key is not None:
                self.facts[key] = StorageFact("input")

    def new_call(self) -> None:
        self.evidence = Evidence()
        self.allocated_in_call = set()

    def writer_of(self, t: Any) -> StorageFact | None:
        key = _storage_key(t)
        return self.facts.get(key) if key is not None else None

    # -- the backend's launches -----------------------------------------------------------------

    def launch_begins(self, kernel: str, tensors: list[Any] | None) -> None:
        self.evidence.launches[kernel] += 1
        self.launch_depth += 1
        if self.launch_depth == 1:
            self.launch_name = kernel
        if tensors is None:
            return
        keys = [k for k in (_storage_key(t) for t in tensors) if k is not None]
        taints: set[tuple[str, int]] = set()
        for key in keys:
            fact = self.facts.get(key)
            if fact is not None:
                taints |= fact.taints_with_self()
        for key in keys:
            self.facts[key] = StorageFact(f"kernel:{kernel}", 0, frozenset(taints))

    def launch_ends(self) -> None:
        self.launch_depth = max(0, self.launch_depth - 1)

    def launch_without_arguments(self, kernel: str, allocated_since: set[tuple[str, int]]) -> None:
        """A backend whose launch hook cannot see the arguments: the fresh, still unwritten
        allocations of this call are taken as what it wrote."""
        for key in allocated_since:
            fact = self.facts.get(key)
            if fact is not None and fact.writer == "alloc":
                self.facts[key] = StorageFact(f"kernel:{kernel}")

    # -- torch's dispatcher ---------------------------------------------------------------------

    def dispatched(self, func: Any, args: Any, kwargs: Any, result: Any) -> None:
        torch = self.torch
        from torch.utils._pytree import tree_leaves

        name = func.overloadpacket.__name__
        if name in QUERY_OPS:
            return
        ins = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        written = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor)]
        schema = func._schema
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is not None and arg.alias_info.is_write:
                value = kwargs.get(arg.name) if arg.name in (kwargs or {}) else (args[i] if i < len(args) else None)
                written.extend(t for t in tree_leaves(value) if isinstance(t, torch.Tensor))
        in_keys = {k for k in (_storage_key(t) for t in ins) if k is not None}
        if self.launch_depth:
            # Inside the backend's own launch (the Triton interpreter moves data with torch; TileLang
            # allocates outputs): allocations belong to the kernel, the rest is its business.
            if name in FACTORY_OPS:
                for t in written:
                    key = _storage_key(t)
                    if key is not None and key not in in_keys:
                        self.facts[key] = StorageFact(f"kernel:{self.launch_name}")
            return
        if not schema.is_mutable and all(_storage_key(t) in in_keys for t in written):
            return  # a view: no new data
        written_keys = {k for k in (_storage_key(t) for t in written) if k is not None}
        sources = [self.facts.get(k) for k in in_keys]
        if name in FACTORY_OPS:
            fact = StorageFact("alloc")
        elif name in HOST_OPS:
            fact = StorageFact(f"host:{name}", _numel(written))
        elif name in MOVE_OPS:
            # What a copy overwrites does not flow into it; only the sources do.
            fact = _moved([self.facts.get(k) for k in in_keys - written_keys] if schema.is_mutable else sources)
        else:
            self.evidence.ops[name] += 1
            taints: frozenset[tuple[str, int]] = frozenset()
            for s in sources:
                if s is not None:
                    taints |= s.taints_with_self()
            fact = StorageFact(f"torch:{name}", _numel(written), taints)
        for t in written:
            key = _storage_key(t)
            if key is not None:
                self.facts[key] = fact
                if fact.writer == "alloc":
                    self.allocated_in_call.add(key)

    # -- the mode -------------------------------------------------------------------------------

    def start_mode(self) -> Any:
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class OperatorRecord(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                result = func(*args, **(kwargs or {}))
                try:
                    recorder.dispatched(func, args, kwargs or {}, result)
                except Exception as exc:  # the record must never break the kernel
                    recorder.evidence.left_mode.append(f"record error in {func}: {type(exc).__name__}: {exc}")
                return result

        self.mode = OperatorRecord()
        return self.mode

    def check_mode(self) -> None:
        """After a call: the mode must still be the innermost one (the kernel may not pop it)."""
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        current = _get_current_dispatch_mode()
        if current is not self.mode:
            what = "removed" if current is None else f"covered by {type(current).__name__}"
            self.evidence.left_mode.append(f"the operator record was {what} while the kernel ran")


def _numel(tensors: list[Any]) -> int:
    return max((int(t.numel()) for t in tensors), default=0)


def _moved(sources: list[StorageFact | None]) -> StorageFact:
    known = [s for s in sources if s is not None]
    if not known:
        return StorageFact("alloc") if not sources else StorageFact("unknown")
    for prefix in ("torch:", "host:", "unknown", "kernel:", "input", "alloc"):
        for s in known:
            if s.writer.startswith(prefix):
                taints: frozenset[tuple[str, int]] = frozenset()
                for k in known:
                    taints |= k.taints
                return StorageFact(s.writer, s.numel, taints)
    return known[0]


def describe(recorder: Recorder, outputs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The evidence of the last call, as plain data: every output's writer and taints."""
    out: dict[str, Any] = {}
    for name, t in outputs:
        if t.numel() == 0:
            continue
        fact = recorder.writer_of(t)
        out[name] = {
            "writer": fact.writer if fact else "unknown",
            "taints": sorted([list(x) for x in fact.taints_with_self()]) if fact else [],
            "numel": int(t.numel()),
        }
    ev = recorder.evidence
    return {
        "outputs": out,
        "ops": dict(ev.ops),
        "launches": dict(ev.launches),
        "left_mode": list(ev.left_mode),
        "gpu_kernels": list(ev.gpu_kernels),
        "gpu_trace_note": ev.gpu_trace_note,
    }


# Entry points that switch the operator record off or take its mode off the stack. Replaced by
# wrappers that note their use while candidate code runs, then do what they always did.
TRIPWIRES = (
    ("torch._C", "_DisableTorchDispatch"),
    ("torch._C", "_pop_torch_dispatch_stack"),
    ("torch._C", "_unset_dispatch_mode"),
    ("torch._C", "_set_dispatch_mode"),
    ("torch.utils._python_dispatch", "_disable_current_modes"),
    ("torch.utils._python_dispatch", "_pop_mode"),
    ("torch.utils._python_dispatch", "_pop_mode_temporarily"),
)


def install_tripwires(torch: Any, recorder: Recorder) -> None:
    import importlib

    for module_name, attr in TRIPWIRES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        original = getattr(module, attr, None)
        if original is None or getattr(original, "_kerneltui_tripwire", False):
            continue
        setattr(module, attr, _tripwire(original, f"{module_name}.{attr}", recorder))


def _tripwire(original: Any, name: str, recorder: Recorder) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if recorder.in_call:
            note = f"the kernel called {name}, which switches the operator record off"
            if note not in recorder.evidence.left_mode:
                recorder.evidence.left_mode.append(note)
        return original(*args, **kwargs)

    wrapper._kerneltui_tripwire = True  # type: ignore[attr-defined]
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


@contextlib.contextmanager
def gpu_kernel_names(torch: Any, recorder: Recorder) -> Iterator[None]:
    """The names of the GPU kernels that ran, from the GPU's own trace (CUPTI through torch's
    profiler): a second source that does not depend on the dispatch mode staying in place."""
    try:
        from torch.profiler import ProfilerActivity, profile
    except ImportError as exc:
        recorder.evidence.gpu_trace_note = f"torch's profiler is unavailable: {exc}"
        yield
        return
    prof = profile(activities=[ProfilerActivity.CUDA])
    try:
        prof.__enter__()
    except Exception as exc:  # CUPTI unavailable: say so, keep the call
        recorder.evidence.gpu_trace_note = f"the GPU trace could not start: {type(exc).__name__}: {exc}"
        yield
        return
    try:
        yield
    finally:
        try:
            prof.__exit__(None, None, None)
            names = []
            for event in prof.events():
                if str(getattr(event, "device_type", "")).endswith("CUDA") and event.name not in names:
                    names.append(event.name)
            recorder.evidence.gpu_kernels = names
        except Exception as exc:
            recorder.evidence.gpu_trace_note = f"the GPU trace could not be read: {type(exc).__name__}: {exc}"
