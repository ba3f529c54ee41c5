"""Worker ops of the candidate's worker: load the kernel, call it on inputs the judge made, hand
the outputs back with the evidence of how they were made.

This process never sees the reference: its task copy has no reference module, it receives inputs as
shared memory (``core.worker.contract.wire``) and returns outputs the same way, and it decides nothing. What
it reports besides the outputs — the launches, the operators torch dispatched and what wrote each
output (``core.worker.child.evidence``), whether an output shares memory with an input, whether the
previous call's output changed since — is evidence that the judge and the parent weigh.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kerneltui.core.backends import torch_is_the_kernel
from kerneltui.core.worker.child import tree
from kerneltui.core.worker.child.evidence import Recorder, describe, gpu_kernel_names, install_tripwires
from kerneltui.core.worker.child.integrity import IdentitySnapshot, check_identities
from kerneltui.core.worker.child.runtime import CandidateError, candidate_runtime_for, module_name
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import CallReply, LoadReply, Released
from kerneltui.core.worker.contract.requests import CallArgs, LoadArgs, ReleaseArgs
from kerneltui.core.worker.contract.wire import Exchange

Progress = Any


class CheckFailure(Exception):
    """A failed check with structured detail (raised inside ops, reported as a failed rung)."""

    harness_message = True

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.detail = detail


class ReferenceUnavailable(AttributeError):
    harness_message = True


class AbsentReference(types.ModuleType):
    """Stands in for the reference module in the kernel's process, so that reaching for it (by import
    or through ``sys.modules``) says plainly why there is nothing to reach."""

    def __init__(self, reference_file: str) -> None:
        super().__init__(module_name(reference_file))
        self._file = reference_file

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise ReferenceUnavailable(
            f"the reference ({self._file}) is not in the kernel's process: kerneltui runs it in a separate judge "
            f"process the kernel never shares, so {module_name(self._file)}.{name} does not exist here; compute the "
            "answer in your kernel")


def exchange_for(state: WorkerState, args: LoadArgs, prefix: str) -> Exchange:
    folder = args.get("exchange")
    return Exchange(state.torch, Path(folder) if folder else None, prefix)


# ----------------------------------------------------------------------------------------------
# load / compile
# ----------------------------------------------------------------------------------------------


def op_load(state: WorkerState, args: LoadArgs, progress: Progress) -> LoadReply:
    """Install the task copy (no reference in it), import the kernel, compile it on the first test
    case's inputs (made by the judge)."""
    t0 = time.perf_counter()
    state.install_task(args["task"], args["files"])
    state.exchange = exchange_for(state, args, "c")
    if args.get("override"):
        from kerneltui.core.worker.child.override import OverrideUnusable, activate

        try:
            activate(state, str(args["override"]))
        except OverrideUnusable as exc:
            raise CheckFailure(f"{exc}: write the override again from the asm view (e)") from exc
    torch = state.torch
    recorder = state.recorder = Recorder(torch, candidate_dirs=(str(state.task_dir), str(state.task_dir.resolve())))
    recorder.known = state.known_code
    task = args["task"]
    recorder.watching_memory = not torch_is_the_kernel(task.get("backend")) and "torch_ops" not in (task.get("allow") or [])
    if recorder.watching_memory:
        recorder.allowed_ops = frozenset(str(op) for op in task.get("allow_ops") or [])
    setup = state.exchange.load(args["setup"], "setup") if args.get("setup") is not None else None
    recorder.mark_provided([t for _, t in tree.tensors(setup, "setup", torch)])
    state.runtime = candidate_runtime_for(state)
    absent = AbsentReference(args["task"]["reference_file"])
    sys.modules.setdefault(absent.__name__, absent)
    state.backend.install_hooks(state)
    install_tripwires(torch, recorder)
    if recorder.watching_memory:
        recorder.dispatch_table = state.dispatch_table
    state.interpreter_hooks = (sys.getprofile(), sys.gettrace())  # the harness's own, before any candidate code
    state.integrity = IdentitySnapshot.take(torch)
    state.threads_at_load = {t.ident for t in threading.enumerate()}
    progress("importing the kernel")
    t_import = time.perf_counter()
    with candidate_code(state):
        state.runtime.load(setup)
    import_s = time.perf_counter() - t_import
    check_identities(state, "while the kernel module was imported")

    result: LoadReply = {"import_s": round(import_s, 4), "notes": list(state.notes)}
    can_run, why = state.backend.can_run(state)
    result["can_run"] = can_run
    if not can_run:
        result["run_skipped_reason"] = why
    progress("compiling: first call of the kernel on the first test case")
    first = args.get("first_inputs")

    def first_inputs() -> Any:
        inputs = state.exchange.load(first, "first")
        recorder.mark_provided([t for _, t in tree.tensors(inputs, "input", torch)])
        return inputs

    t_compile = time.perf_counter()
    recorder.new_call()
    with recorder_on(recorder):
        compiled = state.backend.compile(state, first_case_inputs=first_inputs)
    if not state.poisoned:
        # After a CUDA fault, unmapping the judge's memory aborts the process: the mapping stays
        # until the worker exits (it is never reused).
        state.exchange.release(["first"])
    result.update(compiled)
    result["compile_s"] = round(time.perf_counter() - t_compile, 4)
    result["total_s"] = round(time.perf_counter() - t0, 4)
    result["notes"] = list(dict.fromkeys(result.get("notes", []) + state.notes))
    return result


# ----------------------------------------------------------------------------------------------
# one call
# ----------------------------------------------------------------------------------------------


def op_call(state: WorkerState, args: CallArgs, progress: Progress) -> CallReply:
    """Call the kernel once on the inputs in ``args["inputs"]``; outputs back as lot ``args["lot"]``.

    ``fill``: fresh allocations hold NaN (``poison``, the checked call) or seeded finite garbage
    (``garbage``, the determinism call). ``gpu_trace``: also read the names of the GPU kernels that
    ran from the GPU's own trace.
    """
    rt, ex, torch, recorder = _loaded(state)
    ex.release([str(x) for x in args.get("release") or []])
    lot = str(args["lot"])
    inputs = ex.load(args["inputs"], lot)
    input_tensors = [t for _, t in tree.tensors(inputs, "input", torch)]
    recorder.new_call()
    recorder.mark_provided(input_tensors)
    fill = str(args.get("fill") or "poison")
    trace_gpu = bool(args.get("gpu_trace")) and state.has_gpu
    state.launches.clear()
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if fill == "garbage":
            stack.enter_context(garbage_allocations(torch, int(args.get("garbage_seed") or 1)))
        else:
            stack.enter_context(poisoned_allocations(torch))
        if trace_gpu:
            stack.enter_context(gpu_kernel_names(torch, recorder))
        stack.enter_context(recorder_on(recorder))
        recorder.poisoning = fill != "garbage"
        try:
            out = call_candidate(state, inputs)
        finally:
            recorder.poisoning = False
    call_s = time.perf_counter() - t0
    # A profile or trace hook the kernel left would run its code inside the steps below, between
    # the record's look at the outputs and their export: taken off, and a reason to fail.
    hooks = _take_off_interpreter_hooks(state.interpreter_hooks)
    # What the call returned, sealed and on its way to the parent before any step below allocates:
    # code the kernel left running (a thread, a signal handler, a gc callback or finalizer, a hook set
    # later) may rewrite the exported output until the judge has copied it, and the judge's copy
    # must match these (``ops_judge``).
    progress.returned(returned_digests(out, torch))
    at_return = tree.contents(out, torch)
    # The previous call's output must be as it was returned: a reused or still-written buffer moves.
    previous = state.previous_output
    previous_changed = previous is not None and not previous[1].same(previous[0], torch)
    check_identities(state, "while the kernel ran")
    outputs = list(tree.tensors(out, "out", torch))
    evidence = describe(recorder, outputs)
    # [output, index of the input it shares memory with]: the judge knows which inputs may be returned.
    aliases = [[name, i] for name, t in outputs for i, x in enumerate(input_tensors) if tree.overlaps(t, x)]
    # A subclass decides what its own methods return (a lazy result computed when read, say).
    subclasses = sorted(name for name, t in outputs if type(t) not in recorder.plain_tensor_types)
    wire_out = ex.export(out, lot, share_storage=True)
    if hooks:
        evidence["left_mode"].append(f"the operator record was bypassed: the kernel left {' and '.join(hooks)} set, "
                                     "which runs its code inside kerneltui's own steps after the call")
    if not at_return.same(out, torch):
        evidence["left_mode"].append("the operator record was bypassed: an output changed after the kernel returned, "
                                     "while kerneltui read and exported it")
    state.previous_output = (out, at_return)
    return {
        "outputs": wire_out,
        "evidence": evidence,
        "launches": launch_counts(state),
        "aliases": aliases,
        "subclasses": subclasses,
        "previous_changed": previous_changed,
        "call_s": round(call_s, 5),
    }


def returned_digests(out: Any, torch: Any) -> dict[str, str]:
    """A digest of each host-memory output's bytes, by its name in the output's structure. Outputs
    on a GPU are shared with the judge as they lie (CUDA IPC, no copy): what the kernel's process
    could rewrite there is the same storage the checks below compare with its copy at return."""
    return {name: tree.tensor_digest(t) for name, t in tree.tensors(out, "out", torch) if t.device.type == "cpu"}


def _take_off_interpreter_hooks(before: tuple[Any, Any]) -> list[str]:
    """Remove the profile and trace hooks set since ``before``; their names."""
    found = []
    if sys.getprofile() is not before[0]:
        sys.setprofile(before[0])
        found.append("a profile hook (sys.setprofile)")
    if sys.gettrace() is not before[1]:
        sys.settrace(before[1])
        found.append("a trace hook (sys.settrace)")
    return found


def op_release(state: WorkerState, args: ReleaseArgs, progress: Progress) -> Released:
    if state.exchange is not None:
        state.exchange.release([str(x) for x in args.get("lots") or []] or None)
    return {}


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _loaded(state: WorkerState) -> tuple[Any, Exchange, Any, Recorder]:
    if state.runtime is None or state.exchange is None or state.recorder is None:
        raise CheckFailure("the kernel is not loaded in this worker (load must come first)")
    return state.runtime, state.exchange, state.torch, state.recorder


@contextlib.contextmanager
def recorder_on(recorder: Recorder) -> Iterator[None]:
    """The operator record around candidate code; it must still be in place when the code returns."""
    mode = recorder.start_mode()
    with recorder.function_mode(), mode:
        recorder.in_call = True
        try:
            yield
        finally:
            recorder.in_call = False
            recorder.check_mode()
            recorder.check_registrations()


@contextlib.contextmanager
def candidate_code(state: WorkerState) -> Iterator[None]:
    """Importing or building the candidate: launches counted, operators recorded."""
    assert state.recorder is not None
    state.recording = True
    try:
        with recorder_on(state.recorder):
            yield
    finally:
        state.recording = False


def call_candidate(state: WorkerState, inputs: Any) -> Any:
    state.recording = True
    try:
        out = state.runtime.call(inputs)
        state.sync()
    finally:
        state.recording = False
    return out


def launch_counts(state: WorkerState) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rec in state.launches:
        counts[rec.kernel] = counts.get(rec.kernel, 0) + 1
    return counts


@contextlib.contextmanager
def poisoned_allocations(torch: Any) -> Iterator[None]:
    """Fresh torch allocations are filled with NaN (ints: their max) while the candidate runs."""
    try:
        import torch.utils.deterministic as det
    except ImportError:
        yield
        return
    prev_algos = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_fill = det.fill_uninitialized_memory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        set_deterministic_algorithms(torch, True, warn_only=True)
        det.fill_uninitialized_memory = True
        try:
            yield
        finally:
            det.fill_uninitialized_memory = prev_fill
            set_deterministic_algorithms(torch, prev_algos, warn_only=prev_warn)


def set_deterministic_algorithms(torch: Any, mode: bool, warn_only: bool) -> None:
    """``torch.use_deterministic_algorithms`` without its Inductor part.

    torch's function also sets ``torch._inductor.config.deterministic``, importing Inductor to do so
    (about 1 s of CPU in a worker that has not loaded it: the judge). What is wanted here is the fill
    of fresh allocations; Inductor's flag would also make a torch.compile'd kernel compile differently
    for the checks than for the benchmark, which runs without it."""
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:  # a torch without the private setter: torch's own function
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        setter(mode, warn_only=warn_only)


FACTORY_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


@contextlib.contextmanager
def garbage_allocations(torch: Any, seed: int) -> Iterator[None]:
    """Every fresh torch allocation made while the candidate runs is filled with seeded garbage
    (finite floats in ±1000, random integers) instead of the first run's NaN poison. It works at
    the dispatcher, so it sees ``torch.empty`` however the kernel reached it (an alias taken at
    import, a method, ``new_empty``); the allocator's reuse of freed blocks plays no part."""
    from torch.utils._python_dispatch import TorchDispatchMode

    try:
        import torch.utils.deterministic as det

        prev_fill = det.fill_uninitialized_memory
        det.fill_uninitialized_memory = False
    except ImportError:
        det, prev_fill = None, None
    gen_cpu = torch.Generator().manual_seed(seed ^ 0x6A5D)

    class GarbageFill(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            result = func(*args, **(kwargs or {}))
            if func.overloadpacket.__name__ in FACTORY_OPS and isinstance(result, torch.Tensor) and result.numel():
                _fill_garbage(torch, result, gen_cpu)
            return result

    try:
        with GarbageFill():
            yield
    finally:
        if det is not None:
            det.fill_uninitialized_memory = prev_fill


def _fill_garbage(torch: Any, t: Any, gen: Any) -> None:
    with torch.no_grad():
        if t.is_floating_point():
            noise = torch.empty(t.shape, dtype=torch.float32).uniform_(-1000.0, 1000.0, generator=gen)
        elif t.dtype == torch.bool:
            noise = torch.randint(0, 2, t.shape, generator=gen).bool()
        elif t.is_complex():
            return
        else:
            noise = torch.randint(0, 100, t.shape, generator=gen)
        t.copy_(noise.to(device=t.device, dtype=t.dtype))


OPS = {
    "load": op_load,
    "call": op_call,
    "release": op_release,
}

__all__ = ["OPS", "CheckFailure", "CandidateError"]
