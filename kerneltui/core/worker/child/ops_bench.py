"""The candidate's worker's ops behind the benchmark rung (and ``device_peaks``, served by both kinds
of worker for ``kerneltui device`` and the roofline).

The kernel is timed here with the protocol of ``core.worker.child.timing`` on inputs the judge made
(``core.worker.child.ops_judge_bench``): the judge's slots are mapped once per case (CUDA IPC) and
renewed by the judge between batches, so every call sees data no call has seen. The parent drives
the series in batches (``bench_calls``: one call per slot); each output goes back for the judge's
recheck. This process never holds the reference or an expected output.

Replies carry raw samples; the parent computes every statistic (``core.bench.stats``).
"""

from __future__ import annotations

import inspect
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.bench.part_times import PartTimes
from kerneltui.core.worker.child import timing, tree
from kerneltui.core.worker.child.integrity import Identity, check_identities, identity
from kerneltui.core.worker.child.ops_candidate import CheckFailure
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import (
    BenchBeginReply,
    BenchCallsReply,
    BenchEndReply,
    BenchGraphReply,
    PeaksReply,
)
from kerneltui.core.worker.contract.requests import (
    BenchBeginArgs,
    BenchCallsArgs,
    BenchEndArgs,
    DevicePeaksArgs,
)
from kerneltui.settings.bench import BenchSettings

Progress = Any


def _guarded() -> dict[str, tuple[Any, str]]:
    """What the benchmark relies on beyond the integrity module's list: replaced, it could lie."""
    import threading

    import torch

    from kerneltui.core.bench import stats as benchstats

    guarded: dict[str, tuple[Any, str]] = {
        "threading.active_count": (threading, "active_count"),
        "torch.cuda.Event.synchronize": (torch.cuda.Event, "synchronize"),
        "torch.cuda.set_stream": (torch.cuda, "set_stream"),
        "torch.cuda.mem_get_info": (torch.cuda, "mem_get_info"),
        "torch.Tensor.zero_": (torch.Tensor, "zero_"),
        "torch.Tensor.copy_": (torch.Tensor, "copy_"),
        "torch.Tensor.tolist": (torch.Tensor, "tolist"),
        "torch.zeros": (torch, "zeros"),
        "torch.isfinite": (torch, "isfinite"),
        "torch.where": (torch, "where"),
        "torch.cuda.CUDAGraph.replay": (torch.cuda.CUDAGraph, "replay"),
    }
    for module in (timing, benchstats):
        for name, value in vars(module).items():
            if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
                guarded[f"{module.__name__}.{name}"] = (module, name)
    for cls in (timing.CallTimer, timing.InputTrap, timing.L2Flusher, timing.PersistingL2, benchstats.RunningStats):
        for name, value in vars(cls).items():
            if inspect.isfunction(value):
                guarded[f"{cls.__qualname__}.{name}"] = (cls, name)
    return guarded


def _snapshot() -> dict[str, Identity]:
    return {name: identity(getattr(owner, attr, None)) for name, (owner, attr) in _guarded().items()}


# Taken when the worker starts serving, before any candidate code can be imported.
if "torch" in sys.modules:
    _BASELINE = _snapshot()
else:  # imported outside a worker (documentation, tests of other parts): nothing to guard
    _BASELINE = {}


def _check_guarded(state: WorkerState, when: str) -> None:
    baseline = _BASELINE  # taken when the worker started serving, before any kernel code existed
    if not baseline:
        return
    now = _snapshot()
    changed = sorted(name for name, held in baseline.items() if not held.same_as(now.get(name)))
    if changed:
        raise CheckFailure(
            f"benchmark machinery replaced {when}: {', '.join(changed[:8])}"
            f"{f' (+{len(changed) - 8} more)' if len(changed) > 8 else ''}. Kernels must not patch the "
            "harness; the benchmark cannot be trusted."
        )


def _remap(bench: KernelBench, ex: Any, args: BenchCallsArgs) -> None:
    """Slots the judge had to give new memory (inputs whose layout changes with the seed)."""
    for slot, wire in (args.get("remap") or {}).items():
        # The slot's old mapping goes first: kept, it would pin the judge's old buffers too.
        lot = slot_lot(bench.index, int(slot))
        ex.release([lot])
        bench.slots[int(slot)] = ex.load(wire, lot)


def slot_lot(case: int, slot: int) -> str:
    """The exchange lot of one benchmark input slot, on either side (the judge's export of its
    buffers, the candidate's mapping of them): released alone when the slot gets new buffers, since
    a side that kept every earlier set would pin them all (the CUDA elementwise task's judge held
    130 GB after a few seconds of timing), and with the rest of its case when the next case begins."""
    return f"slot{case}.{slot}"


def slot_lots(ex: Any, case: int | None = None) -> list[str]:
    """The slot lots ``ex`` holds: of ``case``, or of every case when None."""
    prefix = "slot" if case is None else f"slot{case}."
    return [lot for lot in ex.lots() if lot.startswith(prefix)]


def require_gpu(state: WorkerState, what: str) -> None:
    if not state.has_gpu:
        raise CheckFailure(
            f"{what} needs a CUDA GPU and this worker has none: on the CPU, Triton runs under its "
            "interpreter and its wall times say nothing about GPU performance"
        )



# ----------------------------------------------------------------------------------------------
# ops
# ----------------------------------------------------------------------------------------------


def op_device_peaks(state: WorkerState, args: DevicePeaksArgs, progress: Progress) -> PeaksReply:
    """Measure memory bandwidth and matmul rates (``core.worker.child.peaks``)."""
    require_gpu(state, "measuring the device's peaks")
    from kerneltui.core.worker.child.peaks import measure_peaks

    dtypes = tuple(args["dtypes"]) if args.get("dtypes") else None
    return measure_peaks(state.torch, progress, dtypes)


class _Tensors:
    """The tensors of an input tree (what the NaN trap and graph mode's copies walk)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def tensors(self, data: Any, prefix: str = "input") -> Any:
        return tree.tensors(data, prefix, self.torch)


@dataclass
class KernelBench:
    """The candidate's side of one benchmark case: the slots it maps, its timer, what it keeps."""

    index: int
    slots: list[Any]
    timer: timing.CallTimer
    flusher: timing.L2Flusher
    persisting: timing.PersistingL2
    threads_at_start: int
    kept: dict[str, list[Any]] = field(default_factory=dict)  # outputs waiting for the judge's recheck
    graph: Any = None


def op_bench_begin(state: WorkerState, args: BenchBeginArgs, progress: Progress) -> BenchBeginReply:
    """Map one case's input slots (made by the judge) and calibrate the side-work check."""
    require_gpu(state, "benchmarking")
    ex = state.exchange
    if state.runtime is None or ex is None:
        raise CheckFailure("the kernel is not loaded in this worker (load must come first)")
    check_identities(state, "before the benchmark")
    _check_guarded(state, "before the benchmark")
    torch = state.torch
    index = int(args["case"])
    previous = state.bench_case
    if previous is not None:
        ex.release(slot_lots(ex, previous.index) + list(previous.kept))
    slots = [ex.load(w, slot_lot(index, i)) for i, w in enumerate(args["slots"])]
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    flusher = timing.L2Flusher(torch, l2, BenchSettings.from_mapping(args.get("settings")).flush)
    persisting = timing.PersistingL2()
    timer = timing.CallTimer(torch, flusher, persisting, timing.InputTrap(_Tensors(torch)))
    state.recording = False  # the launch hooks' bookkeeping must stay out of the timed calls
    bench = KernelBench(index, slots, timer, flusher, persisting, threading.active_count())
    state.bench_case = bench
    return {"idle_straggle_us": timer.idle_gaps(), "flush_bytes": flusher.nbytes, "l2_bytes": l2,
            "persisting_l2": persisting.status}


def op_bench_calls(state: WorkerState, args: BenchCallsArgs, progress: Progress) -> BenchCallsReply:
    """Time one call per slot in ``order``; each output goes back for the judge's recheck.

    ``controls_every``: after every that many calls of the batch (0: none), an honest spin kernel as
    long as the call measures the side-work gap under the host's conditions of that moment.
    """
    bench, ex = _bench(state)
    _release(bench, ex, args)
    _remap(bench, ex, args)
    lot = str(args["lot"])
    fn = state.runtime.call
    samples: list[list[float]] = []
    controls: list[float] = []
    outputs: list[Any] = []
    kept: list[Any] = []
    every = int(args.get("controls_every") or 0)
    spent = PartTimes("calls", "export", "controls")
    for n, slot in enumerate(int(s) for s in args["order"]):
        with spent("calls"):
            out, sample = bench.timer.call(fn, bench.slots[slot])
        samples.append([sample.ms, sample.host_us, sample.straggle_us])
        with spent("export"):
            outputs.append(ex.export(out, lot, share_storage=True))
        kept.append(out)
        if every and (n + 1) % every == 0:
            with spent("controls"):
                controls.extend(bench.timer.idle_gaps(calls=1, busy_ms=max(sample.ms, 1e-3)))
    bench.kept[lot] = kept
    return {"samples": samples, "controls": controls, "outputs": outputs,
            "threads_left": max(0, threading.active_count() - bench.threads_at_start),
            "stream_changes": bench.timer.stream_changes, "spent_s": spent.seconds()}


def op_bench_end(state: WorkerState, args: BenchEndArgs, progress: Progress) -> BenchEndReply:
    """The busy calibration at the series' median, and the guards after the timed calls."""
    bench, ex = _bench(state)
    _release(bench, ex, args)
    median_ms = float(args.get("median_ms") or 0.0)
    busy = bench.timer.idle_gaps(busy_ms=median_ms) if median_ms > 0 else []
    check_identities(state, "while the kernel was benchmarked")
    _check_guarded(state, "while the kernel was benchmarked")
    before = state.threads_at_load
    new_threads = sorted(t.name for t in threading.enumerate() if before is not None and t.ident not in before)
    return {"busy_straggle_us": busy, "stream_changes": bench.timer.stream_changes,
            "threads_started_by_kernel": new_threads}


def op_bench_graph(state: WorkerState, args: BenchCallsArgs, progress: Progress) -> BenchGraphReply:
    """CUDA-graph mode (step 6 of ``core.worker.child.timing``): capture once, then time replays, one per slot in
    ``order``; each replay's output goes back for the recheck (copied: the graph reuses it)."""
    bench, ex = _bench(state)
    _release(bench, ex, args)
    _remap(bench, ex, args)
    torch = state.torch
    if bench.graph is None:
        captured = _capture(state, bench)
        if isinstance(captured, str):
            return {"error": captured}
        bench.graph = captured
    graph, flush_graph, static_inputs, static_out = bench.graph
    events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    stream = torch.cuda.current_stream()
    lot = str(args["lot"])
    total: list[float] = []
    flush: list[float] = []
    outputs: list[Any] = []
    for slot in (int(s) for s in args["order"]):
        try:
            timing._copy_into(_Tensors(torch), static_inputs, bench.slots[slot])
        except ValueError as exc:
            return {"error": f"graph mode needs inputs that differ only in tensor contents: {exc}"}
        torch.cuda.synchronize()
        bench.persisting.reset()
        bench.flusher.scrub()
        events[0].record(stream)
        flush_graph.replay()
        events[1].record(stream)
        bench.flusher.scrub()
        events[2].record(stream)
        graph.replay()
        events[3].record(stream)
        torch.cuda.synchronize()
        flush.append(events[0].elapsed_time(events[1]))
        total.append(events[2].elapsed_time(events[3]))
        outputs.append(ex.export(static_out, lot))  # a copy: the next replay writes the same buffers
    return {"total_ms": total, "flush_ms": flush, "outputs": outputs}


def _capture(state: WorkerState, bench: KernelBench) -> tuple[Any, Any, Any, Any] | str:
    torch = state.torch
    fn = state.runtime.call
    # The graph's own copy of the inputs: the judge renews the slots in place between batches.
    static_inputs = tree.clone(bench.slots[0], torch)
    stream = torch.cuda.current_stream()
    try:
        side = torch.cuda.Stream()
        side.wait_stream(stream)
        with torch.cuda.stream(side):  # warm-up before capture, on a side stream (CUDA-graph rule)
            for _ in range(2):
                fn(static_inputs)
        stream.wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            bench.flusher.flush()
            static_out = fn(static_inputs)
        flush_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(flush_graph):
            bench.flusher.flush()
        torch.cuda.synchronize()
    except Exception as exc:
        torch.cuda.synchronize()  # raises if the capture left the context unusable: the worker must go
        return f"the call could not be captured in a CUDA graph: {type(exc).__name__}: {exc}"
    return graph, flush_graph, static_inputs, static_out


def _bench(state: WorkerState) -> tuple[KernelBench, Any]:
    bench = state.bench_case
    if bench is None or state.exchange is None:
        raise CheckFailure("no benchmark case is open in this worker (bench_begin must come first)")
    return bench, state.exchange


def _release(bench: KernelBench, ex: Any, args: BenchCallsArgs | BenchEndArgs) -> None:
    lots = [str(x) for x in args.get("release") or []]
    ex.release(lots)
    for lot in lots:
        bench.kept.pop(lot, None)


OPS = {
    "device_peaks": op_device_peaks,
    "bench_begin": op_bench_begin,
    "bench_calls": op_bench_calls,
    "bench_end": op_bench_end,
    "bench_graph": op_bench_graph,
}
