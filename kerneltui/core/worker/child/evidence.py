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
import dataclasses
import hashlib
import itertools
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.worker.child.gpu_trace import (
    PRINTING_OPS,
    GpuWindows,
    attribute,
    interference,
    read_events,
)
from kerneltui.core.worker.child.known_code import KnownCode
from kerneltui.core.worker.contract.replies import CallEvidence, OutputEvidence

# Operators that create memory or fill it with constants or random numbers: no data flows in.
FACTORY_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor", "arange", "linspace",
    "logspace", "eye", "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "fill_", "zero_", "fill", "zero", "uniform_", "normal_", "random_", "bernoulli_", "exponential_",
    "empty_permuted", "_efficientzerotensor",
})
# Uninitialised allocations: under the checks' poisoned allocations they hold NaN (integers: their maximum).
POISONED_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"})
# Allocations filled with zeros: until something writes them, they hold nothing else.
ZERO_OPS = frozenset({"zeros", "zeros_like", "new_zeros", "zero_"})
# Operators that change a tensor's size in place: new memory only when the storage had to grow.
RESIZE_OPS = frozenset({"resize_", "resize_as_"})
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


# A taint: (what made the data, its elements, a serial number). The serial keeps two results of the
# same operator and size apart, so that a result computed in equal pieces adds up to its whole.
Taint = tuple[str, int, int]
_serials = itertools.count(1)
# Operators whose results the record takes by their name's meaning rather than as torch's compute.
TRUSTED_BY_NAME = FACTORY_OPS | MOVE_OPS | RESIZE_OPS | HOST_OPS | QUERY_OPS


@dataclass
class StorageFact:
    writer: str
    numel: int = 0  # elements of the tensor that last wrote it (for torch:/host: writers)
    taints: frozenset[Taint] = frozenset()
    serial: int = field(default_factory=lambda: next(_serials))
    # "poison": made by an uninitialised allocation while fresh memory is poisoned, "zero": by a
    # zero fill; either way written by nothing recorded since, so it must still hold that fill, or
    # something outside the record wrote it.
    fill: str = ""
    fill_dtype: Any = None  # the dtype the fill was written in (a view of another dtype reads other bits)
    # A digest of the storage's bytes right after the recorded write (host memory only): a later
    # difference is a write the record did not see (numpy, ctypes, another thread, a kernel's body
    # calling Python on the CPU).
    digest: bytes = b""

    def taints_with_self(self) -> frozenset[Taint]:
        if self.writer.startswith(("torch:", "host:")):
            return self.taints | {(self.writer, self.numel, self.serial)}
        if self.writer == "unknown":
            return self.taints | {("unknown:", self.numel, self.serial)}
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


class StorageFacts:
    """The writer of each live storage. Keyed by (device, address), so each entry holds a weak
    reference to its storage: once that memory is freed, an allocation torch places at the same
    address (often at once) must not inherit the old writer."""

    def __init__(self) -> None:
        self._facts: dict[tuple[str, int], tuple[StorageFact, Any]] = {}

    def get(self, key: tuple[str, int]) -> StorageFact | None:
        entry = self._facts.get(key)
        if entry is None:
            return None
        fact, ref = entry
        if ref is not None and ref.expired():
            del self._facts[key]
            return None
        return fact

    def set(self, key: tuple[str, int], fact: StorageFact, t: Any = None) -> None:
        """``t``: a tensor on the storage (a new weak reference), else the entry's own is kept."""
        ref = _weak_storage(t) if t is not None else (self._facts[key][1] if key in self._facts else None)
        self._facts[key] = (fact, ref)


def _weak_storage(t: Any) -> Any:
    try:
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(t.untyped_storage())
    except Exception:  # a tensor without a storage of its own: no way to tell when it is freed
        return None


class Recorder:
    """Storage writers across the whole life of the candidate's worker, and per-call evidence."""

    def __init__(self, torch: Any, candidate_dirs: tuple[str, ...] = ()) -> None:
        self.torch = torch
        # The candidate's files (the task copy): torch compute inside a launch counts when code from
        # there asked for it, not when the backend's own library did (an autotuner's timing, say).
        # Empty: every such operator counts.
        self.candidate_dirs = tuple(os.path.join(d, "") for d in candidate_dirs)
        self.known: KnownCode | None = None  # the code loaded before the candidate's (known_code)
        self.torch_dir = os.path.join(os.path.dirname(torch.__file__), "")
        # What counts as a plain tensor (a Parameter is one to torch; a class merely named so is not):
        # any other class decides what its own methods do.
        self.plain_tensor_types = (torch.Tensor, torch.nn.Parameter)
        self.facts = StorageFacts()
        self.evidence = Evidence()
        self.launch_depth = 0
        self.launch_count = 0  # launches over the worker's life (an operator that launched is told apart)
        self.launch_name = ""
        self.launch_taints: set[Taint] = set()  # torch compute run from inside that launch
        self.mode: Any = None
        self.allocated_in_call: set[tuple[str, int]] = set()  # fresh allocations of the current call
        self.call_serial = 0
        self.provided: set[tuple[str, int]] = set()  # storages the judge handed over
        self.launch_tensors: list[tuple[tuple[str, int], Any]] = []  # what the outermost launch took
        self.launch_read: frozenset[Taint] = frozenset()  # and what its arguments were made from
        # A launch whose arguments the backend cannot show wrote memory the record cannot name: the
        # digests say nothing for the rest of the call.
        self.blind = False
        self.in_call = False  # candidate code is running (the trip wires below only count then)
        self.poisoning = False  # fresh allocations are poisoned (the checked calls)
        # Whether the record will be judged (not for a torch task, or one that allows torch ops): the
        # looks at memory (digests, fills) cost a read of each written storage, for nothing there.
        self.watching_memory = True
        # The GPU's own trace is recording (gpu_kernel_names): a look at device memory now would launch
        # torch's kernels into the trace of the candidate's call, and the trace is the check there.
        self.gpu_tracing = False
        # Stretches of the call whose GPU kernels are torch's work for the task (an allowed operator,
        # printing a tensor), marked in that trace; a range type that does not pass the dispatcher.
        self.windows = GpuWindows(range_type=getattr(torch._C._profiler, "_RecordFunctionFast", None))
        self.interpreter_hooks: tuple[Any, Any] | None = None  # the profile and trace hooks as the trace began
        # Taken before the trip wires replace it: the record's own look at memory must not count.
        self._no_dispatch = torch._C._DisableTorchDispatch
        # With torch's Python dispatcher on, an operator runs the Python kernels registered on it
        # (``OpOverload.py_impl``) while the record's mode is off: whatever they compute is unseen.
        self._key_included = torch._C._dispatch_tls_is_dispatch_key_included
        self._python_dispatcher = torch._C.DispatchKey.PythonDispatcher
        # Operators the task lets the kernel leave to torch (``allow_ops``), by the name the kernel
        # calls (conv2d: the function mode below sees it) or ATen's (convolution: the dispatcher's).
        self.allowed_ops: frozenset[str] = frozenset()
        self.allowed_call = ""  # the allowed torch function running now
        self.allowed_frame: Any = None  # the function mode's frame around it
        self.function_mode_type: type = type(None)  # the class of that mode (no mode of its is the kernel's)
        # The dispatcher's kernels for every ATen operator as they were before the kernel was
        # imported (``registrations``): an operator that now runs a kernel of the candidate's (a
        # Python function registered through torch.library) computes where the record cannot see,
        # since the mode is off while the operator it saw runs.
        self.dispatch_table: dict[str, str] | None = None
        self.ops_seen: set[Any] = set()  # operators (OpOverload) dispatched in the current call
        self.replaced: list[str] = []  # what the candidate registered over torch's own (every call reports it)

    # -- what the harness tells it --------------------------------------------------------------

    def mark_provided(self, tensors: list[Any]) -> None:
        for t in tensors:
            key = _storage_key(t)
            if key is not None:
                self.provided.add(key)
                self.facts.set(key, self.sealed(StorageFact("input"), t), t)

    def new_call(self) -> None:
        self.evidence = Evidence()
        self.ops_seen = set()
        self.allocated_in_call = set()
        self.blind = False
        self.windows.reset()
        # Taints numbered below this were made by earlier calls (or the import): data made before
        # this call's inputs existed cannot hold this call's answer (a workspace kept between calls
        # does not pile up every call's side data; a table built at import is the kernel's own).
        self.call_serial = next(_serials)

    # -- what memory holds ----------------------------------------------------------------------

    def sealed(self, fact: StorageFact, t: Any) -> StorageFact:
        """``fact`` with the digest of ``t``'s storage as it is now."""
        digest = self._digest(t)
        return dataclasses.replace(fact, digest=digest) if digest else fact

    def moved_since(self, fact: StorageFact | None, t: Any) -> bool:
        """Whether ``t``'s storage changed since ``fact`` was recorded, other than by what the record saw."""
        if fact is None or self.blind or not self.watching_memory:
            return False
        if fact.digest:
            return self._digest(t) != fact.digest
        return bool(fact.fill) and self.written_unseen(t, fact.fill, fact.fill_dtype)

    def _digest(self, t: Any) -> bytes:
        if not self.watching_memory or t.device.type != "cpu":
            return b""  # on a GPU the GPU's own trace is the second source; host code cannot write there
        try:
            with self._no_dispatch():
                raw = _whole_storage(self.torch, t).view(self.torch.uint8).numpy()
                return hashlib.blake2b(raw.data, digest_size=16).digest()
        except Exception:  # a storage numpy cannot view: no evidence either way
            return b""

    def digest(self, t: Any) -> bytes:
        """The digest of ``t``'s whole storage (b"" where memory is not watched or cannot be read):
        for a backend that must tell whether something changed it between two of its own steps."""
        return self._digest(t)

    def writer_of(self, t: Any) -> StorageFact | None:
        key = _storage_key(t)
        return self.facts.get(key) if key is not None else None

    # -- the backend's launches -----------------------------------------------------------------

    def launch_begins(self, kernel: str, tensors: list[Any] | None) -> None:
        self.evidence.launches[kernel] += 1
        self.launch_count += 1
        self.launch_depth += 1
        if self.launch_depth == 1:
            self.launch_name = kernel
        if tensors is None:
            return
        keyed = [(k, t) for k, t in ((_storage_key(t), t) for t in tensors) if k is not None]
        taints: set[Taint] = set()
        for key, t in keyed:
            fact = self.facts.get(key)
            if self.moved_since(fact, t):
                taints.add(("unknown:", _storage_numel(t), next(_serials)))
            elif fact is not None:
                taints |= {x for x in fact.taints_with_self() if x[2] >= self.call_serial}
            else:
                # Memory no recorded operator made (numpy's, another library's, an operator that
                # went past the record): what it holds came from outside the record.
                taints.add(("unknown:", _storage_numel(t), next(_serials)))
        for key, t in keyed:
            self.facts.set(key, StorageFact(f"kernel:{kernel}", 0, frozenset(taints)), t)
        if self.launch_depth == 1:
            self.launch_tensors = keyed
            self.launch_taints = set()
            self.launch_read = frozenset(taints)

    def _asked_by_candidate(self) -> bool:
        """Whether the nearest caller outside torch, the standard library and this module is code
        the worker did not have before the candidate's arrived (``known_code``: by code object, so
        no file name the candidate's code claims counts)."""
        if not self.candidate_dirs or self.known is None:
            return True
        frame: Any = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if not self.known.looked_through(code):
                return not self.known.library(code)
            frame = frame.f_back
        return False

    def written_unseen(self, t: Any, fill: str, dtype: Any = None) -> bool:
        """An allocation nothing recorded wrote since: does it still hold only its fill (written
        in ``dtype``)?"""
        torch = self.torch
        try:
            if t.is_cuda and (self.gpu_tracing or torch.cuda.is_current_stream_capturing()):
                # A look at the data would launch torch's kernels into the GPU trace (which sees any
                # device write the dispatcher did not: another library's kernels, copies from the
                # host) or synchronise and break a capture.
                return False
            with self._no_dispatch():
                t = _whole_storage(torch, t, dtype)  # a view's neighbours are memory the kernel can read too
                if fill == "zero":
                    return bool(t.count_nonzero() > 0)
                if t.is_floating_point() or t.is_complex():
                    return not bool(torch.isnan(t).all())
                if t.dtype == torch.bool:
                    return False
                return not bool((t == torch.iinfo(t.dtype).max).all())
        except Exception:  # a dtype the comparison does not cover: no evidence either way
            return False

    def launch_ends(self) -> None:
        self.launch_depth = max(0, self.launch_depth - 1)
        if self.launch_depth:
            return
        # Torch compute that ran inside the launch (from a grid function, a hook, or the
        # interpreter running the kernel body as Python) fed what the launch wrote; what the launch
        # wrote is sealed as the kernel left it.
        for key, t in self.launch_tensors:
            fact = self.facts.get(key)
            if fact is not None and fact.writer.startswith("kernel:"):
                fact = StorageFact(fact.writer, fact.numel, fact.taints | frozenset(self.launch_taints))
            else:
                # Written by the candidate's code from inside the launch (an autotuner config's
                # pre_hook zeroing an output), then by the kernel, which ran last.
                before = fact.taints_with_self() if fact is not None else frozenset()
                fact = StorageFact(f"kernel:{self.launch_name}", 0,
                                   self.launch_read | before | frozenset(self.launch_taints))
            self.facts.set(key, self.sealed(fact, t))
        self.launch_taints = set()
        self.launch_tensors = []

    def launch_without_arguments(self, kernel: str, allocated_since: set[tuple[str, int]]) -> None:
        """A backend whose launch hook cannot see the arguments: the fresh, still unwritten
        allocations of this call are taken as what it wrote."""
        self.blind = True
        for key in allocated_since:
            fact = self.facts.get(key)
            if fact is not None and fact.writer == "alloc":
                self.facts.set(key, StorageFact(f"kernel:{kernel}"))

    # -- torch's dispatcher ---------------------------------------------------------------------

    def about_to_write(self, func: Any, args: Any, kwargs: Any) -> set[tuple[str, int]]:
        """Before an operator writes into existing memory: the storages it writes that changed since
        the record last saw them (the write must not re-seal what the record never saw)."""
        if not func._schema.is_mutable or not self.watching_memory:
            return set()
        changed: set[tuple[str, int]] = set()
        for t in _written_arguments(self.torch, func, args, kwargs):
            key = _storage_key(t)
            if key is not None and self.moved_since(self.facts.get(key), t):
                changed.add(key)
        return changed

    def _library_op_wrote(self, name: str, func: Any, args: Any, kwargs: Any, result: Any, op_serial: int) -> None:
        from torch.utils._pytree import tree_leaves

        written = [t for t in tree_leaves(result) if isinstance(t, self.torch.Tensor)]
        for t in [*written, *_written_arguments(self.torch, func, args, kwargs)]:
            key = _storage_key(t)
            fact = self.facts.get(key) if key is not None else None
            if key is None or (fact is not None and fact.writer.startswith("kernel:") and fact.serial > op_serial):
                continue  # a launch inside the op wrote it
            self.evidence.ops[name] += 1
            self.facts.set(key, self.sealed(StorageFact(f"torch:{name}", _storage_numel(t)), t), t)

    def dispatched(self, func: Any, args: Any, kwargs: Any, result: Any, launched: bool = False,
                   unseen: set[tuple[str, int]] | None = None, op_serial: int = 0) -> None:
        """One operator torch dispatched; ``launched``: the backend launched kernels while it ran
        (a custom operator wrapping a kernel); ``unseen``: storages it wrote into that had changed
        outside the record before it ran."""
        torch = self.torch
        from torch.utils._pytree import tree_leaves

        name = func.overloadpacket.__name__
        if name in TRUSTED_BY_NAME or self.allowed_call or name in self.allowed_ops or any(
                r.alias_info is not None for r in func._schema.returns):
            # An operator whose result the record takes on its word (a copy, an allocation, a view,
            # an allowed one): its kernels must still be torch's (check_registrations). A compute
            # operator's result is torch's work whatever kernel ran.
            self.ops_seen.add(func)
        if getattr(func, "namespace", "aten") != "aten":
            # Only ATen's own operators are known by name (a library op named "clone" computes what
            # it likes): another namespace's op is compute, except for what kernels of the backend
            # launched inside it wrote (their launches filed it, after the op started).
            name = f"{func.namespace}::{name}"
            if launched:
                self._library_op_wrote(name, func, args, kwargs, result, op_serial)
                return
        if name in QUERY_OPS:
            return
        ins = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        written = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor)]
        written.extend(_written_arguments(torch, func, args, kwargs))
        schema = func._schema
        in_keys = {k for k in (_storage_key(t) for t in ins) if k is not None}
        is_view = not schema.is_mutable and all(_storage_key(t) in in_keys for t in written)
        if self.launch_depth and not self._asked_by_candidate():
            # The backend's own work inside a launch (the Triton interpreter moves data with torch;
            # TileLang allocates outputs; an autotuner times configs): allocations belong to the
            # kernel, the rest is its business.
            if name in FACTORY_OPS:
                for t in written:
                    key = _storage_key(t)
                    if key is not None and key not in in_keys:
                        self.facts.set(key, StorageFact(f"kernel:{self.launch_name}"), t)
            return
        if self.launch_depth and not (is_view or name in FACTORY_OPS or name in MOVE_OPS or name in HOST_OPS
                                      or name in RESIZE_OPS):
            # The candidate's code run from inside a launch (a grid function, the interpreted kernel
            # body calling Python): recorded as anywhere else, and it taints what the launch writes.
            self.launch_taints.add((f"torch:{name}", _numel(written), next(_serials)))
        if is_view and name not in HOST_OPS:
            return  # no new data
        if name in RESIZE_OPS and all(_storage_key(t) in in_keys for t in written):
            return  # the same storage, the same data
        written_keys = {k for k in (_storage_key(t) for t in written) if k is not None}
        sources = [self.facts.get(k) for k in in_keys]
        partial = schema.is_mutable and written_keys <= in_keys and _numel(written) < max(
            (_storage_numel(t) for t in written), default=0)
        if name in FACTORY_OPS and partial:
            # A constant written into part of a buffer joins what the buffer held: a zero carries
            # nothing, another constant one value from the host (padding with -inf is one value; an
            # answer written element by element with out[i].fill_(v) is as many as elements).
            old = sources[0] if len(sources) == 1 and sources[0] is not None else None
            held = old.taints_with_self() if old is not None else frozenset()
            if name not in ZERO_OPS:
                held = held | {(f"host:{name}", 1, next(_serials))}
            fact = StorageFact(old.writer if old is not None else "alloc", old.numel if old is not None else 0,
                               held, serial=old.serial if old is not None else next(_serials))
        elif name in FACTORY_OPS:
            fill = "poison" if self.poisoning and name in POISONED_OPS else "zero" if name in ZERO_OPS else ""
            fact = StorageFact("alloc", fill=fill, fill_dtype=written[0].dtype if written else None)
        elif name in HOST_OPS:
            fact = StorageFact(f"host:{name}", _numel(written))
        elif name in MOVE_OPS or name in RESIZE_OPS:  # a resize that moved the data to a larger storage
            # What a copy overwrites does not flow into it; only the sources do. A copy into part of a
            # storage (or within one) leaves the rest as it was: the storage holds both.
            read = in_keys - written_keys if schema.is_mutable else in_keys
            fact = _moved([self.facts.get(k) for k in read])
            bulk = self.facts.get(next(iter(written_keys))) if partial and len(written_keys) == 1 else None
            if bulk is not None and bulk.writer != "alloc":
                # The bulk keeps its writer; what was copied in joins it as data it holds.
                fact = StorageFact(bulk.writer, bulk.numel, bulk.taints | fact.taints_with_self(), serial=bulk.serial)
            source_moved = any(self.moved_since(self.facts.get(k), t) for t in ins if (k := _storage_key(t)) in read)
            # A source without memory of its own (a wrapper subclass) made its data where the record
            # cannot see.
            source_moved = source_moved or any(_storage_key(t) is None and t.numel() > 0 for t in ins)
            if fact.writer == "unknown" or source_moved:  # a copy of memory written outside the record
                fact = StorageFact("unknown", _numel(written), fact.taints)
        else:
            # Its own size is what flows on: a one-element scale reduced from a full-size
            # intermediate hands the kernel one element, not the intermediate.
            name = self._allowed_label(name)
            self.evidence.ops[name] += 1
            fact = StorageFact(f"torch:{name}", _numel(written))
        if unseen and written_keys & unseen:
            fact = StorageFact("unknown", max((_storage_numel(t) for t in written), default=0))
        for t in written:
            key = _storage_key(t)
            if key is not None:
                self.facts.set(key, self.sealed(fact, t), t)
                if fact.writer == "alloc":
                    self.allocated_in_call.add(key)

    def _allowed_label(self, name: str) -> str:
        """An operator run inside an allowed torch function is filed under that function's name,
        when nothing but torch's own code ran between the two: a tensor subclass's handler or a
        Python kernel registered for an ATen operator would be code of the kernel's, computing
        under the allowed name."""
        if not self.allowed_call:
            return name
        frame: Any = sys._getframe(2)
        while frame is not None and frame is not self.allowed_frame:
            if not self.torch_code(frame.f_code):
                self.windows.spoil("the kernel's own code ran inside it")
                return name
            frame = frame.f_back
        return self.allowed_call if frame is not None else name

    def gpu_window(self, label: str, ops: frozenset[str] | None = None, changed: str = "") -> Any:
        """A window of the GPU trace (``gpu_trace``) around torch's work for the task, while the trace
        records; spoiled from the start when the kernel's own code could run inside it (``changed``:
        the caller found torch's code for the work replaced)."""
        if not (self.gpu_tracing and self.in_call) or self.windows.range_type is None:
            return contextlib.nullcontext()
        return self.windows.window(label, ops, changed or interference(
            self.torch, (self.function_mode_type,), self.mode, self.interpreter_hooks))

    def torch_code(self, code: Any) -> bool:
        """Code of torch, contextlib or the record itself: by its file, and by the code object where
        the worker knows the code it had before the candidate's (``known_code``): a file name can
        be claimed."""
        where = code.co_filename
        if not (where.startswith(self.torch_dir) or where == __file__ or where == contextlib.__file__):
            return False
        return self.known is None or self.known.looked_through(code)

    # -- torch's own operators, replaced -----------------------------------------------------------

    def check_registrations(self) -> None:
        """After candidate code ran: the operators it dispatched must still run torch's kernels."""
        if self.dispatch_table is None:
            return
        for name in sorted({op.name() for op in self.ops_seen}):
            before = self.dispatch_table.get(name)
            now = registrations(self.torch, name)
            if before is not None and now != before:
                added = [line for line in now.splitlines() if line not in before.splitlines()]
                where = added[0].split(" :: ")[0] if added else "a kernel removed"
                self.note_replaced(f"the kernel replaced torch's own {name} ({where}): the operator record cannot see "
                                   "what runs inside it")

    def note_replaced(self, note: str) -> None:
        if note not in self.replaced:
            self.replaced.append(note)

    # -- the mode -------------------------------------------------------------------------------

    def function_mode(self) -> Any:
        """The torch function mode that tells when an allowed operator runs (none when the task
        allows none): its name is the one a kernel calls, before torch decomposes it."""
        if not self.allowed_ops:
            return contextlib.nullcontext()
        from torch.overrides import TorchFunctionMode
        from torch.utils._pytree import tree_leaves

        recorder = self
        torch = self.torch
        plain = self.plain_tensor_types

        class AllowedOperators(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                name = _function_operator(func, recorder.allowed_ops)
                if (not name or recorder.allowed_call or not recorder.in_call
                        or any(isinstance(t, torch.Tensor) and type(t) not in plain for t in tree_leaves((args, kwargs)))):
                    return func(*args, **kwargs)
                recorder.allowed_call, recorder.allowed_frame = name, sys._getframe()
                try:
                    with recorder.gpu_window(f"the allowed {name}"):
                        return func(*args, **kwargs)
                finally:
                    recorder.allowed_call, recorder.allowed_frame = "", None

        self.function_mode_type = AllowedOperators
        return AllowedOperators()

    def start_mode(self) -> Any:
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class OperatorRecord(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                launches = recorder.launch_count
                op_serial = next(_serials)
                if recorder.in_call and recorder._key_included(recorder._python_dispatcher):
                    recorder.note_replaced("the kernel switched torch's Python dispatcher on while it ran: operators "
                                           "then run Python kernels (py_impl) the operator record cannot see")
                try:
                    unseen = recorder.about_to_write(func, args, kwargs or {})
                except Exception:  # the record must never break the kernel
                    unseen = set()
                result = func(*args, **(kwargs or {}))
                try:
                    recorder.dispatched(func, args, kwargs or {}, result, launched=recorder.launch_count != launches,
                                        unseen=unseen, op_serial=op_serial)
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


def _function_operator(func: Any, allowed: frozenset[str]) -> str:
    """The allowed operator a torch function is (``F.conv2d`` -> conv2d, ``Tensor.__matmul__`` ->
    matmul, ``__radd__``/``__iadd__`` -> add), or ""."""
    name = getattr(func, "__name__", "") or ""
    if name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        for candidate in (core, core[1:] if core[:1] in ("r", "i") else ""):
            if candidate and candidate in allowed:
                return candidate
        return ""
    return name if name in allowed else ""


def _written_arguments(torch: Any, func: Any, args: Any, kwargs: Any) -> list[Any]:
    """The tensors among an operator's arguments that its schema says it writes (``out=``, ``self`` of
    an in-place op)."""
    from torch.utils._pytree import tree_leaves

    found: list[Any] = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = kwargs.get(arg.name) if arg.name in kwargs else (args[i] if i < len(args) else None)
            found.extend(t for t in tree_leaves(value) if isinstance(t, torch.Tensor))
    return found


def _storage_numel(t: Any) -> int:
    """Elements of the whole storage behind ``t`` (a view of one element can hand over a buffer)."""
    try:
        return max(int(t.numel()), t.untyped_storage().nbytes() // max(t.element_size(), 1))
    except (RuntimeError, NotImplementedError):
        return int(t.numel())


def _whole_storage(torch: Any, t: Any, dtype: Any = None) -> Any:
    storage = t.untyped_storage()
    dtype = dtype or t.dtype
    whole = torch.empty(0, dtype=dtype, device=t.device)
    whole.set_(storage, 0, (storage.nbytes() // whole.element_size(),))
    return whole


def _numel(tensors: list[Any]) -> int:
    return max((int(t.numel()) for t in tensors), default=0)


def _moved(sources: list[StorageFact | None]) -> StorageFact:
    known = [s for s in sources if s is not None]
    if not known:
        return StorageFact("alloc") if not sources else StorageFact("unknown")
    for prefix in ("torch:", "host:", "unknown", "kernel:", "input", "alloc"):
        for s in known:
            if s.writer.startswith(prefix):
                # Every source's own part is kept (cat of five torch results is five parts, not one).
                taints: frozenset[Taint] = frozenset()
                for k in known:
                    taints |= k.taints_with_self()
                return StorageFact(s.writer, s.numel, taints, serial=s.serial)
    return known[0]


def describe(recorder: Recorder, outputs: list[tuple[str, Any]]) -> CallEvidence:
    """The evidence of the last call, as plain data: every output's writer and taints."""
    out: dict[str, OutputEvidence] = {}
    for name, t in outputs:
        if t.numel() == 0:
            continue
        fact = recorder.writer_of(t)
        if recorder.moved_since(fact, t):
            fact = StorageFact("unknown", _storage_numel(t))  # written after its last recorded writer
        out[name] = {
            # "input" in memory the judge did not hand over: a copy of an input, which no kernel wrote
            "copy": bool(fact and fact.writer == "input" and _storage_key(t) not in recorder.provided),
            "writer": fact.writer if fact else "unknown",
            "taints": sorted([list(x) for x in fact.taints_with_self()]) if fact else [],
            "numel": int(t.numel()),
        }
    ev = recorder.evidence
    return {
        "outputs": out,
        "ops": dict(ev.ops),
        "launches": dict(ev.launches),
        "left_mode": list(ev.left_mode) + [note for note in recorder.replaced if note not in ev.left_mode],
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
    ("torch._C", "_ExcludeDispatchKeyGuard"),  # with the Python key: the mode's dispatch is skipped
    ("torch.utils._python_dispatch", "_disable_current_modes"),
    ("torch.utils._python_dispatch", "_pop_mode"),
    ("torch.utils._python_dispatch", "_pop_mode_temporarily"),
)


# Kernels registered at these dispatch keys never run on real data (shape inference): torch
# registers its own there lazily, and none of them computes an output.
_INERT_KEYS = ("Meta:",)


_DISPATCH_TABLE: dict[str, str] | None = None


def dispatch_table(torch: Any) -> dict[str, str]:
    """Every ATen operator's kernels (``registrations``), taken once per process before any candidate
    code runs (a zygote takes it before it forks: its workers share it)."""
    global _DISPATCH_TABLE
    if _DISPATCH_TABLE is None:
        _DISPATCH_TABLE = {name: registrations(torch, name) for name in torch._C._dispatch_get_all_op_names()
                           if name.startswith("aten::")}
    return _DISPATCH_TABLE


def registrations(torch: Any, name: str) -> str:
    """One operator's kernels in torch's dispatcher, each with where it was registered and how it is
    called (a Python function is boxed only), less the inert keys."""
    try:
        dump = torch._C._dispatch_dump(name)
    except Exception:  # an operator torch cannot describe: nothing to compare
        return ""
    return "\n".join(line for line in dump.splitlines() if not line.startswith(_INERT_KEYS))


# The namespaces whose operators the record trusts by name: a library handle for one of them made
# by candidate code is a way to run its own code as one of torch's operators.
TRUSTED_NAMESPACES = frozenset({"aten", "prims"})


def _library_tripwire(original: Any, recorder: Recorder) -> Any:
    library_file = os.path.join(recorder.torch_dir, "library.py")

    def wrapper(kind: Any, ns: Any, *args: Any, **kwargs: Any) -> Any:
        if recorder.in_call and str(ns) in TRUSTED_NAMESPACES and str(kind) != "DEF":
            frame: Any = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename == library_file:
                frame = frame.f_back
            where = frame.f_code.co_filename if frame is not None else ""
            if not where.startswith(recorder.torch_dir):  # torch registering its own, imported late: fine
                line = frame.f_lineno if frame is not None else 0
                recorder.note_replaced(f"the kernel registers its own implementations of torch's {ns} operators "
                                       f"(torch.library, {os.path.basename(where)}:{line}): the operator record cannot "
                                       "see what runs inside them")
        return original(kind, ns, *args, **kwargs)

    wrapper._kerneltui_tripwire = True  # type: ignore[attr-defined]  # a marker on the wrapper: mypy does not model attributes set on functions
    return wrapper


def _printing_window(original: Any, recorder: Recorder) -> Any:
    """torch's printing of a plain tensor in a window of the GPU trace: a debugging print of a CUDA
    tensor runs torch's reductions on the GPU, which compute nothing the kernel returns."""
    torch = recorder.torch
    plain = recorder.plain_tensor_types
    printing = torch._tensor_str
    # The printing module's functions as torch made them: one the kernel replaced (or whose code it
    # replaced) would run its code inside the window.
    as_made = _functions_of(printing)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if type(self) not in plain or not recorder.gpu_tracing:
            return original(self, *args, **kwargs)
        changed = "torch's printing code was replaced" if _functions_of(printing) != as_made else ""
        with recorder.gpu_window("torch's printing of a tensor", PRINTING_OPS, changed):
            return original(self, *args, **kwargs)

    wrapper._kerneltui_tripwire = True  # type: ignore[attr-defined]  # as above
    as_made["_str"] = (id(wrapper), id(wrapper.__code__))  # installed just below, in its place
    return wrapper


def _functions_of(module: Any) -> dict[str, tuple[int, int]]:
    """Each function or class of a module, and each method of its classes, by identity with its code's."""
    found = {}
    for name, value in list(vars(module).items()):
        if not callable(value):
            continue
        found[name] = (id(value), id(getattr(value, "__code__", None)))
        if isinstance(value, type) and value.__module__ == module.__name__:
            for member, method in list(vars(value).items()):
                found[f"{name}.{member}"] = (id(method), id(getattr(method, "__code__", None)))
    return found


def install_tripwires(torch: Any, recorder: Recorder) -> None:
    import importlib

    original = torch._C._dispatch_library
    if not getattr(original, "_kerneltui_tripwire", False):
        torch._C._dispatch_library = _library_tripwire(original, recorder)
    printing = torch._tensor_str._str
    if not getattr(printing, "_kerneltui_tripwire", False):
        torch._tensor_str._str = _printing_window(printing, recorder)

    for module_name, attr in TRIPWIRES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        original = getattr(module, attr, None)
        if original is None or getattr(original, "_kerneltui_tripwire", False):
            continue
        setattr(module, attr, _tripwire(original, f"{module_name}.{attr}", recorder))


def _inside_tensor_printing(recorder: Recorder) -> bool:
    """Whether the trip wire's caller is torch's tensor printing, which turns dispatch modes off to
    format a tensor (a debugging print, a tensor descriptor's repr): it computes no answer. Frames
    count by code object where the worker knows its code (``known_code``): a file name can be claimed."""
    printing = os.path.join(recorder.torch_dir, "_tensor_str.py")
    frame: Any = sys._getframe(2)
    while frame is not None and recorder.torch_code(frame.f_code):
        if frame.f_code.co_filename == printing:
            return True
        frame = frame.f_back
    return False


def _tripwire(original: Any, name: str, recorder: Recorder) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if recorder.in_call and not _inside_tensor_printing(recorder):
            note = f"the kernel called {name}, which switches the operator record off"
            if note not in recorder.evidence.left_mode:
                recorder.evidence.left_mode.append(note)
        return original(*args, **kwargs)

    # No __wrapped__ (functools.wraps would set it): the original is not handed to whoever asks.
    wrapper._kerneltui_tripwire = True  # type: ignore[attr-defined]  # as above
    return wrapper


@contextlib.contextmanager
def gpu_kernel_names(torch: Any, recorder: Recorder) -> Iterator[None]:
    """The names of the GPU kernels that ran, from the GPU's own trace (CUPTI through torch's
    profiler): a second source that does not depend on the dispatch mode staying in place. The CPU
    side of the trace says what launched each kernel: those launched inside the record's windows
    (``gpu_trace``) are set aside."""
    try:
        from torch.profiler import ProfilerActivity, profile
    except ImportError as exc:
        recorder.evidence.gpu_trace_note = f"torch's profiler is unavailable: {exc}"
        yield
        return
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    try:
        prof.__enter__()
    except Exception as exc:  # CUPTI unavailable: say so, keep the call
        recorder.evidence.gpu_trace_note = f"the GPU trace could not start: {type(exc).__name__}: {exc}"
        yield
        return
    recorder.interpreter_hooks = (sys.getprofile(), sys.gettrace())  # the harness's own (candidate code runs later)
    recorder.gpu_tracing = True
    try:
        yield
    finally:
        recorder.gpu_tracing = False
        try:
            prof.__exit__(None, None, None)
            found = attribute(read_events(prof), list(recorder.windows.opened))
            recorder.evidence.gpu_kernels = found.judged
            recorder.evidence.gpu_trace_note = found.note
        except Exception as exc:
            recorder.evidence.gpu_trace_note = f"the GPU trace could not be read: {type(exc).__name__}: {exc}"
