"""The benchmark protocol: how one function is timed on one benchmark case (worker side).

Methodology, per ``[[benchmarks]]`` case and per function timed (the candidate, the reference,
torch.compile of the reference). The baselines are timed in the judge (``benchmark_case``); the
kernel in its own worker, on input slots the judge makes and renews, every output rechecked by the
judge (``core.worker.child.ops_bench``, ``core.worker.child.ops_judge_bench``, driven by
``core.rungs.bench_series``); both use the same ``CallTimer``.

1. **Inputs.** Every call, warm-up and timed alike, gets an input set it has never seen: sets come
   from the task's ``generate_input`` (in the judge) with seeds derived from a secret the parent
   draws per run (the same seeds for every function timed in that run, so the baselines see the
   same inputs). A pool of sets is generated ahead (sized to a share of free device memory),
   outside the timed region; each set is used once, then its memory gets new contents. A cache
   keyed on pointers therefore returns stale results, and one keyed on content never hits. Only the
   first sets of a case come from ``generate_input``; the others are made from them on the device
   (``core.worker.child.fresh_inputs``), so a generator that runs on the host does not stall the series.
2. **Each call** runs the same code path, warm-up or not: a device-wide synchronisation (nothing
   left running), the persisting-L2 lines reset (``cuCtxResetPersistingL2Cache``), an L2 flush (a
   memset of a buffer at least twice the device's L2) on the launch stream, a spin kernel that
   keeps the stream busy until the host has launched the call (sized from the recent calls' host
   time), a CUDA start event on the launch stream, the call, an end event on the launch stream.
   Only the event time is the kernel time; the flush is not inside it, and host launch overhead is
   inside it only where the GPU waited for the host after the call's first launch.
3. **Side work.** The host then waits for the end event, notes the time, synchronises the whole
   device, and notes the time again. For honest work that gap is the cost of the two calls
   (calibrated per case on an idle device, after a spin kernel as long as the call, and with such
   a spin kernel after every fourth timed call); a kernel that left work running on another stream or thread makes it
   grow on every call. The parent flags it: the time would otherwise miss that work. Work on
   another stream could also run early, while the flush still occupies the launch stream and
   before the start event: so a sparse lattice of input elements is set to NaN before the flush
   and restored after it, on the launch stream. Work that waits for the launch stream (as correct
   multi-stream code does) never sees the NaNs; work that does not, reads them and fails the
   recheck.
4. **Recheck.** The output of every call is compared, in the judge, with the reference's output for
   the same inputs (``worker.child.recheck``): a cached or unfinished result fails the benchmark.
5. **Adaptive stopping.** Warm-up (at least ``warmup_runs`` calls and ``warmup_ms``) is discarded;
   timed calls continue until at least ``min_runs`` calls and ``min_kernel_ms`` of kernel time with
   a standard error under ``rel_stderr`` of the mean, or until the ``max_seconds`` cap.
6. **CUDA-graph mode** (optional, for launch-bound kernels): the flush and the call are captured
   in one graph, a flush-only graph is captured too; both replay after the same L2 scrub, fresh
   inputs are copied into the captured buffers before each pair, and the flush-only time is
   subtracted (by the parent) from each full replay.

The worker returns raw event times only; ``core.bench.stats`` computes the statistics in the parent.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.bench.stats import CONTROL_EVERY, RunningStats, median, stop_reason
from kerneltui.core.case_params import CaseParams
from kerneltui.core.worker.child.fresh_inputs import BASE_SETS, FreshInputs
from kerneltui.core.worker.contract.replies import CaseSeries, PoolFacts, SeriesData, SeriesFailure
from kerneltui.settings.bench import BenchSettings

Progress = Callable[..., None]
MIN_FLUSH_BYTES = 32 << 20
DEFAULT_FLUSH_BYTES = 256 << 20  # when the device does not report its L2 size
IDLE_CALIBRATION_CALLS = 30
# The spin kernel before the start event lasts PAD_MIN_US + PAD_FACTOR × the median host time of
# the last PAD_HISTORY calls (PAD_FIRST_US before there is one), at most PAD_MAX_US.
PAD_MIN_US = 20.0
PAD_FACTOR = 2.0
PAD_MAX_US = 2000.0
PAD_FIRST_US = 200.0
PAD_HISTORY = 8
BUSY_CALIBRATION_CAP_MS = 1.0  # the busy calibration's spin kernel lasts the kernel's median, at most this
PROGRESS_EVERY_S = 0.25


class BenchmarkError(Exception):
    """A benchmark that cannot go on, with a message a person can act on."""

    harness_message = True


# ----------------------------------------------------------------------------------------------
# the device side of every call: persisting L2, flush, events
# ----------------------------------------------------------------------------------------------


class PersistingL2:
    """``cuCtxResetPersistingL2Cache`` through the driver library: demotes persisting L2 lines so
    the flush evicts them too (a kernel could otherwise pin its inputs in L2 across calls)."""

    def __init__(self) -> None:
        self._fn: Any = None
        self.status = "reset before every call"
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuCtxResetPersistingL2Cache
            fn.restype = ctypes.c_int
            fn.argtypes = []
            self._fn = fn
        except (OSError, AttributeError) as exc:
            self.status = f"unavailable: {exc}"

    def reset(self) -> None:
        if self._fn is None:
            return
        rc = self._fn()
        if rc != 0:
            # e.g. a device without persisting-L2 support; say so once and stop asking.
            self.status = f"unavailable: cuCtxResetPersistingL2Cache returned CUresult {rc}"
            self._fn = None


class L2Flusher:
    """Evicts the L2 with buffers at least twice its size, on the current stream.

    ``write``: a memset of one buffer (L2 is left full of its dirty lines, whose write-back the
    timed call pays for as it evicts them). ``read``: a read of a second buffer that is never
    written (L2 is left holding clean lines; the previous call's dirty lines are written back during
    the flush). ``write_read``: both, in that order. The choice is measured against ncu, which
    invalidates L2 before a profiled launch (bench/l2_flush_study.py, bench/RESULTS.md).
    """

    def __init__(self, torch: Any, l2_bytes: int, mode: str = "write") -> None:
        self.torch = torch
        self.mode = mode
        self.nbytes = max(2 * l2_bytes, MIN_FLUSH_BYTES) if l2_bytes > 0 else DEFAULT_FLUSH_BYTES
        self.buffer = torch.empty(self.nbytes // 4, dtype=torch.int32, device="cuda")
        self._clean = torch.ones_like(self.buffer) if mode != "write" else None
        self._sink = torch.empty((), dtype=torch.int64, device="cuda") if mode != "write" else None
        self._scrub: Any = None

    def flush(self) -> None:
        if self.mode != "read":
            self.buffer.zero_()
        if self._clean is not None:
            self.torch.sum(self._clean, (0,), dtype=self.torch.int64, out=self._sink)

    def scrub(self) -> None:
        """Fill L2 with other lines (graph mode: both replays then start from the same L2 state)."""
        if self._scrub is None:
            self._scrub = self.torch.empty_like(self.buffer)
        self._scrub.zero_()


class InputTrap:
    """NaN on every TRAP_STRIDE-th element of the floating-point inputs while the flush runs
    (step 3 of the module docstring). Few elements, so the restore leaves L2 nearly cold."""

    TRAP_STRIDE = 4096

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.torch = rt.torch
        self._saved: list[tuple[Any, Any]] = []

    def arm(self, inputs: Any) -> None:
        torch = self.torch
        with torch.no_grad():
            for _, t in self.rt.tensors(inputs):
                if t.is_floating_point() and t.is_cuda and t.is_contiguous() and t.numel() > 0:
                    lattice = t.view(-1)[:: self.TRAP_STRIDE]
                    self._saved.append((lattice, lattice.clone()))
                    lattice.fill_(float("nan"))

    def disarm(self) -> None:
        with self.torch.no_grad():
            for lattice, values in self._saved:
                lattice.copy_(values)
        self._saved = []


@dataclass
class CallSample:
    ms: float  # CUDA event time on the launch stream
    host_us: float  # how long the Python call took to return
    straggle_us: float  # end event done -> whole device idle, seen from the host


class CallTimer:
    """Times one call with the full protocol (steps 2 and 3 of the module docstring)."""

    def __init__(self, torch: Any, flusher: L2Flusher, persisting: PersistingL2, trap: InputTrap | None = None,
                 pad: bool = True) -> None:
        self.torch = torch
        self.pad = pad  # off only to show what the pad changes (bench/timing_ablation.py)
        self.flusher = flusher
        self.persisting = persisting
        self.trap = trap
        self.stream = torch.cuda.current_stream()
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.stream_changes = 0
        self._host_us: deque[float] = deque(maxlen=PAD_HISTORY)  # recent calls' host time (launch cost)
        self._cycles_per_ms = self._measure_sleep_rate()  # 0 where torch has no spin kernel

    def _launch_stream(self) -> Any:
        torch = self.torch
        if torch.cuda.current_stream() != self.stream:
            # The kernel changed the current stream and left it so; time on the launch stream anyway.
            self.stream_changes += 1
            torch.cuda.set_stream(self.stream)
        return self.stream

    def call(self, fn: Callable[[Any], Any], inputs: Any) -> tuple[Any, CallSample]:
        torch = self.torch
        stream = self._launch_stream()
        torch.cuda.synchronize()
        self.persisting.reset()
        if self.trap is not None:
            self.trap.arm(inputs)
        self.flusher.flush()
        if self.trap is not None:
            self.trap.disarm()
        if self.pad:
            self._pad()
        self.start.record(stream)
        t0 = time.perf_counter_ns()
        out = fn(inputs)
        t1 = time.perf_counter_ns()
        self.end.record(stream)
        self.end.synchronize()
        t2 = time.perf_counter_ns()
        torch.cuda.synchronize()
        t3 = time.perf_counter_ns()
        host_us = (t1 - t0) / 1e3
        self._host_us.append(host_us)
        return out, CallSample(self.start.elapsed_time(self.end), host_us, (t3 - t2) / 1e3)

    def _pad(self) -> None:
        """Keep the launch stream busy (a spin kernel) until the host has launched the call.

        Without it the GPU finishes the flush and the trap's restore, reaches the start event and
        then waits while Python launches the kernel (tens of µs for a Triton launch): the host's
        launch cost lands inside the kernel's time, and varies with the host's mood from run to
        run. Padded, the kernel is already queued when the start event is reached; a call whose
        GPU work waits for the host later on (several launches with host work between them, a
        synchronisation inside the call) still pays for it, as it should.
        """
        recent = median(self._host_us) if self._host_us else PAD_FIRST_US
        pad_us = min(PAD_MAX_US, PAD_MIN_US + PAD_FACTOR * recent)
        cycles = self._sleep_cycles(pad_us / 1e3)
        if cycles:
            self.torch.cuda._sleep(cycles)

    def idle_gaps(self, calls: int = IDLE_CALIBRATION_CALLS, busy_ms: float = 0.0) -> list[float]:
        """The end-event-to-idle gap of honest work: what the side-work detector compares to.

        With ``busy_ms`` the launch stream first runs a spin kernel of about that length, so the host
        waits for the end event the way it does after a real call (a wait of a few hundred µs can cost
        the host more on the way out than an event that is already done); without it the device is idle.
        """
        torch = self.torch
        cycles = self._sleep_cycles(min(busy_ms, BUSY_CALIBRATION_CAP_MS)) if busy_ms > 0 else 0
        if busy_ms > 0 and not cycles:
            return []
        gaps = []
        for _ in range(calls):
            torch.cuda.synchronize()
            if cycles:
                torch.cuda._sleep(cycles)
            self.end.record(self.stream)
            self.end.synchronize()
            t2 = time.perf_counter_ns()
            torch.cuda.synchronize()
            gaps.append((time.perf_counter_ns() - t2) / 1e3)
        return gaps

    def _sleep_cycles(self, ms: float) -> int:
        """Cycles of ``torch.cuda._sleep`` that last about ``ms`` here (0 where the spin kernel is missing)."""
        return max(1, int(self._cycles_per_ms * ms)) if self._cycles_per_ms > 0 else 0

    def _measure_sleep_rate(self) -> float:
        torch = self.torch
        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is None:
            return 0.0
        probe = 1 << 20
        sleep(probe)  # the first launch loads the module
        torch.cuda.synchronize()
        self.start.record(self.stream)
        sleep(probe)
        self.end.record(self.stream)
        self.end.synchronize()
        took_ms = self.start.elapsed_time(self.end)
        return probe / took_ms if took_ms > 0 else 0.0


# ----------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------


def bench_seed(secret: int, case_index: int, k: int) -> int:
    """The k-th input seed of a case: unpredictable without the run's secret, equal across targets."""
    digest = hashlib.blake2b(f"{secret}:{case_index}:{k}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (2**31 - 2) + 1


@dataclass
class InputSet:
    seed: int
    inputs: Any
    ref_out: Any = None


@dataclass
class InputPool:
    """A fixed set of input buffers ("slots") whose contents are renewed after every use.

    The first batch generates ``sets`` input sets (as many as the memory budget allows, at most
    ``max_sets``); they become the slots. Each is handed out once; when all have been used, every
    slot gets the contents of a newly generated set (copied in place, outside the timed region) and
    the reference output is recomputed. So call t always sees slot t mod sets, with data no call
    has seen before: a cache keyed on pointers hits and returns stale results (the recheck fails
    it), a cache keyed on content never hits. Inputs whose layout changes from seed to seed cannot
    be copied in place; they are handed out as generated (``in_place`` turns False).
    """

    rt: Any
    params: CaseParams
    seeds: Iterator[int]
    with_reference: bool  # also compute the reference output for the recheck
    budget_bytes: int
    max_sets: int
    sets: int = 0  # slots, decided from the first set's size
    set_bytes: int = 0
    out_bytes: int = 0  # of the reference's output: what any correct call must write at least
    generated: int = 0
    generate_s: float = 0.0
    in_place: bool = True
    dtypes: list[str] = field(default_factory=list)  # of the first set's input tensors
    fresh: str = "derive"  # how each set is made: derived on the device from a base set, or generated
    source: FreshInputs = field(init=False)
    _slots: list[Any] = field(default_factory=list)
    _ready: list[InputSet] = field(default_factory=list)
    _ready_slots: list[InputSet] = field(default_factory=list)  # what each slot holds now (judge side)

    def __post_init__(self) -> None:
        # The first seeds become the base sets (core.worker.child.fresh_inputs); no call is given one.
        bases = [next(self.seeds) for _ in range(BASE_SETS)]
        self.source = FreshInputs(self.rt, self.params, bases, self.fresh)

    def inputs_for(self, seed: int) -> Any:
        """The set of ``seed`` made again, untouched by any call (the recheck's full gate)."""
        return self.source.inputs_for(seed)

    def next(self) -> InputSet:
        if not self._ready:
            self._refill()
        return self._ready.pop(0)

    def make(self, seed: int, into: Any = None) -> InputSet:
        """A new input set for ``seed`` (copied into the buffers ``into`` when given) and, for the
        recheck, the reference's output on a clone of it."""
        rt = self.rt
        t0 = time.perf_counter()
        inputs = self.source(seed)
        if not self.dtypes:
            self.dtypes = input_dtypes(rt, inputs)
        if into is not None:
            _copy_into(rt, into, inputs)
            inputs = into
        ref_out = rt.call(rt.clone(inputs)) if self.with_reference else None
        rt.state.sync()
        self.generate_s += time.perf_counter() - t0
        self.generated += 1
        return InputSet(seed, inputs, ref_out)

    def renew(self, slots: list[int]) -> list[int]:
        """New data (new seeds) in the buffers of ``slots``, in place where the layout allows; the
        reference outputs recomputed. The judge renews every slot the candidate has used. Returns
        the slots that got new buffers instead (their layout changed with the seed)."""
        if not self.sets:
            raise ValueError("the pool has no slots yet")
        moved = []
        for i in slots:
            seed = next(self.seeds)
            if self.in_place:
                try:
                    self._ready_slots[i] = self.make(seed, into=self._slots[i])
                    continue
                except ValueError:
                    self.in_place = False  # this task's inputs change layout between seeds
            item = self.make(seed)
            self._slots[i] = item.inputs
            self._ready_slots[i] = item
            moved.append(i)
        return moved

    def first_batch(self) -> list[InputSet]:
        """Generate the slots (as many sets as the memory budget allows) and return them in order."""
        self._refill()
        self._ready_slots = list(self._ready)
        return list(self._ready)

    def slot(self, i: int) -> InputSet:
        return self._ready_slots[i]

    def _refill(self) -> None:
        if not self.sets:
            first = self.make(next(self.seeds))
            self.out_bytes = _nbytes(self.rt, first.ref_out)
            self.set_bytes = _nbytes(self.rt, first.inputs) + 2 * self.out_bytes
            self.sets = max(1, min(self.max_sets, self.budget_bytes // max(self.set_bytes, 1)))
            self._ready = [first] + [self.make(next(self.seeds)) for _ in range(self.sets - 1)]
            self._slots = [item.inputs for item in self._ready]
            return
        ready = []
        for i, slot in enumerate(self._slots):
            seed = next(self.seeds)
            if self.in_place:
                try:
                    ready.append(self.make(seed, into=slot))
                    continue
                except ValueError:
                    self.in_place = False  # this task's inputs change layout between seeds
            item = self.make(seed)
            self._slots[i] = item.inputs
            ready.append(item)
        self._ready = ready


def _nbytes(rt: Any, data: Any) -> int:
    if data is None:
        return 0
    torch = rt.torch
    if isinstance(data, torch.Tensor):
        return data.numel() * data.element_size()
    return sum(t.numel() * t.element_size() for _, t in rt.tensors(data, "x"))


def input_dtypes(rt: Any, inputs: Any) -> list[str]:
    return [str(t.dtype).replace("torch.", "") for _, t in rt.tensors(inputs)]


def main_dtype(params: CaseParams, dtypes: list[str]) -> str | None:
    """The dtype the roofline's math roof is chosen by: the case's own ``dtype`` parameter, else the
    first floating-point input."""
    if isinstance(params.get("dtype"), str):
        return str(params["dtype"]).replace("torch.", "")
    for d in dtypes:
        if d.startswith(("float", "bfloat", "complex")):
            return d
    return dtypes[0] if dtypes else None


# ----------------------------------------------------------------------------------------------
# one series: warm-up, then timed calls until the stopping rule says enough
# ----------------------------------------------------------------------------------------------


@dataclass
class Series:
    times_ms: list[float] = field(default_factory=list)
    host_us: list[float] = field(default_factory=list)
    straggle_us: list[float] = field(default_factory=list)
    control_straggle_us: list[float] = field(default_factory=list)  # honest spin kernels between the calls
    warmup_ms: list[float] = field(default_factory=list)
    stopped: str = ""
    warmup_s: float = 0.0
    wall_s: float = 0.0
    failure: SeriesFailure | None = None
    threads_left: int = 0  # threads alive after a timed call that were not there after warm-up

    def to_dict(self) -> SeriesData:
        return {
            "times_ms": self.times_ms, "host_us": self.host_us, "straggle_us": self.straggle_us,
            "control_straggle_us": self.control_straggle_us,
            "warmup_ms": self.warmup_ms, "stopped": self.stopped, "warmup_s": round(self.warmup_s, 4),
            "wall_s": round(self.wall_s, 4), "failure": self.failure, "threads_left": self.threads_left,
        }


Verify = Callable[[Any, InputSet], "str | None"]


def run_series(call: Callable[[InputSet], tuple[Any, CallSample]], pool: InputPool, verify: Verify | None,
               settings: BenchSettings, progress: Progress, label: str,
               control: Callable[[float], list[float]] | None = None) -> Series:
    """Warm-up and timed calls through one code path; the stopping rule ends the timed phase.

    ``control`` (every CONTROL_EVERY timed calls, given the last call's time) measures the side-work
    gap of an honest spin kernel as long as the call, under the host's conditions of that moment.
    """
    series = Series()
    began = time.perf_counter()
    # Warm-up: the same calls, discarded. The first may compile (a new shape), so only the count
    # and the wall time decide when it ends.
    while True:
        item = pool.next()
        out, sample = call(item)
        if verify is not None:
            reason = verify(out, item)
            if reason:
                series.failure = {"phase": "warm-up", "call": len(series.warmup_ms) + 1, "seed": item.seed,
                                  "reason": reason}
                series.warmup_s = time.perf_counter() - began
                return series
        del out, item
        series.warmup_ms.append(sample.ms)
        elapsed = time.perf_counter() - began
        if (len(series.warmup_ms) >= settings.warmup_runs and elapsed * 1e3 >= settings.warmup_ms) \
                or elapsed >= settings.max_seconds:
            break
    series.warmup_s = time.perf_counter() - began
    threads_after_warmup = threading.active_count()

    running = RunningStats()
    timed_began = time.perf_counter()
    last_progress = 0.0
    while True:
        item = pool.next()
        out, sample = call(item)
        if verify is not None:
            reason = verify(out, item)
            if reason:
                series.failure = {"phase": "timed", "call": len(series.times_ms) + 1, "seed": item.seed,
                                  "reason": reason}
                break
        del out, item
        series.threads_left = max(series.threads_left, threading.active_count() - threads_after_warmup)
        series.times_ms.append(sample.ms)
        series.host_us.append(sample.host_us)
        series.straggle_us.append(sample.straggle_us)
        if control is not None and len(series.times_ms) % CONTROL_EVERY == 0:
            series.control_straggle_us.extend(control(sample.ms))
        running.add(sample.ms)
        wall = time.perf_counter() - timed_began
        reason_to_stop = stop_reason(running.n, running.total, running.mean, running.stderr, wall, settings)
        if reason_to_stop:
            series.stopped = reason_to_stop
            break
        if wall - last_progress >= PROGRESS_EVERY_S:
            last_progress = wall
            progress(f"{label}: {running.n} runs, mean {running.mean * 1e3:.1f} µs", min(1.0, wall / settings.max_seconds))
    series.wall_s = time.perf_counter() - timed_began
    return series


# ----------------------------------------------------------------------------------------------
# CUDA-graph mode (the kernel's side: core.worker.child.ops_bench.op_bench_graph)
# ----------------------------------------------------------------------------------------------


def _scalar_leaves(torch: Any, data: Any, prefix: str = "input") -> Iterator[tuple[str, Any]]:
    """(name, value) for every leaf of ``data`` that is not a tensor, depth first."""
    if isinstance(data, torch.Tensor):
        return
    if isinstance(data, (tuple, list)):
        for i, x in enumerate(data):
            yield from _scalar_leaves(torch, x, f"{prefix}[{i}]")
    elif isinstance(data, dict):
        for k, v in data.items():
            yield from _scalar_leaves(torch, v, f"{prefix}[{k!r}]")
    else:
        yield prefix, data


def _copy_into(rt: Any, static: Any, fresh: Any) -> None:
    torch = rt.torch
    # A graph bakes in the scalar arguments it was captured with; only tensors can be refreshed.
    # Inputs whose scalars change with the seed (e.g. axpb's a and b) cannot be replayed honestly.
    for (name, old), (_, new) in zip(_scalar_leaves(torch, static), _scalar_leaves(torch, fresh), strict=False):
        if old != new:
            raise ValueError(f"the scalar argument {name} changes with the seed ({old!r}, then {new!r}) and a "
                             "CUDA graph keeps the value it was captured with")
    dst = list(rt.tensors(static, "x"))
    src = list(rt.tensors(fresh, "x"))
    if [n for n, _ in dst] != [n for n, _ in src]:
        raise ValueError("the input structure changed between seeds")
    for (name, d), (_, s) in zip(dst, src, strict=True):
        if d.shape != s.shape or d.dtype != s.dtype:
            raise ValueError(f"{name} is {tuple(s.shape)} {s.dtype} for one seed and {tuple(d.shape)} {d.dtype} for another")
        with torch.no_grad():
            d.copy_(s)


# ----------------------------------------------------------------------------------------------
# one case
# ----------------------------------------------------------------------------------------------


@dataclass
class CaseContext:
    """Everything one baseline case's measurement needs, built once per benchmark op (judge side)."""

    state: Any
    rt: Any  # the reference runtime (core.worker.child.runtime.ReferenceRuntime)
    target: str  # "reference" | "torch_compile"
    fn: Callable[[Any], Any]
    secret: int
    settings: BenchSettings
    flusher: L2Flusher
    persisting: PersistingL2
    progress: Progress


def benchmark_case(cx: CaseContext, case_index: int, case: CaseParams) -> CaseSeries:
    """Time one baseline (the reference or torch.compile of it) on one case, in the judge; raw
    samples and facts only (the parent decides). The kernel is timed by the candidate's worker on
    the judge's inputs (``core.worker.child.ops_bench``), the same way."""
    torch, rt, settings = cx.state.torch, cx.rt, cx.settings
    params = {k: v for k, v in case.items() if k != "seed"}
    label = " ".join(f"{k}={v}" for k, v in params.items()) or "default case"
    seeds = (bench_seed(cx.secret, case_index, k) for k in range(1 << 30))
    free, _ = torch.cuda.mem_get_info()
    pool = InputPool(rt=rt, params=params, seeds=seeds, with_reference=False,
                     budget_bytes=int(free * settings.pool_fraction), max_sets=settings.max_pool,
                     fresh=settings.fresh_inputs)
    timer = CallTimer(torch, cx.flusher, cx.persisting, InputTrap(rt))
    result: CaseSeries = {"index": case_index, "label": label, "params": params, "target": cx.target}
    if cx.target == "torch_compile":
        # Each case compiles afresh: with the earlier case's graphs cached, torch would take this
        # case's new shapes for dynamic ones and time a shape-generic kernel.
        torch._dynamo.reset()
        problem = _first_compiled_call(cx, pool, params)
        if problem:
            result["error"] = problem
            return result

    result["idle_straggle_us"] = timer.idle_gaps()
    call: Callable[[InputSet], tuple[Any, CallSample]] = lambda item: timer.call(cx.fn, item.inputs)  # noqa: E731
    if cx.target == "torch_compile":
        watch = MemoryWatch(torch.cuda.memory_allocated, lambda: BASELINE_GROWTH_BYTES + 2 * pool.set_bytes)
        call = watch.wrap(call)
    try:
        series = run_series(call, pool, None, settings, cx.progress, f"{cx.target.replace('_', '.')} {label}",
                            control=lambda ms: timer.idle_gaps(calls=1, busy_ms=max(ms, 1e-3)))
    except Exception as exc:
        if cx.target != "torch_compile":
            raise  # the reference failing while timed is the task's problem: the rung reports it
        # torch.compile is a second opinion, not the verdict: its failure (seen on the H200: a compiled
        # reference whose device memory grew by 80 GB in 3 s while other processes shared the GPU)
        # is noted and its memory given back, so the kernel is still timed.
        del pool, call
        release_compiled(torch)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        result["error"] = f"torch.compile's baseline failed while timed: {type(exc).__name__}: {first[:300]}; not used"
        return result
    result.update(series.to_dict())
    if series.times_ms:
        result["busy_straggle_us"] = timer.idle_gaps(busy_ms=median(series.times_ms))
    result["stream_changes"] = timer.stream_changes
    result["pool"] = pool_facts(pool)
    result["dtypes"] = pool.dtypes
    if pool.out_bytes:
        result["out_bytes"] = pool.out_bytes
    result["dtype"] = main_dtype(params, pool.dtypes)
    return result


# How much a baseline's live device memory may grow past its input pool while it is timed: a timed
# call's output is dropped before the next call, so steady growth is a leak that would starve the
# kernel's own timing (and every other process on the GPU).
BASELINE_GROWTH_BYTES = 4 << 30


class MemoryGrowth(RuntimeError):
    """A baseline kept more device memory with every call than its inputs explain."""


@dataclass
class MemoryWatch:
    """Stops a series whose live memory (``read``: bytes allocated now) grows past ``allowance()``
    above what it held after its first call."""

    read: Callable[[], int]
    allowance: Callable[[], int]
    calls: int = 0
    start: int | None = None

    def wrap(self, call: Callable[[InputSet], tuple[Any, CallSample]]) -> Callable[[InputSet], tuple[Any, CallSample]]:
        def watched(item: InputSet) -> tuple[Any, CallSample]:
            out = call(item)
            self.check()
            return out

        return watched

    def check(self) -> None:
        self.calls += 1
        now = int(self.read())
        if self.start is None:
            self.start = now
            return
        grown = now - self.start
        if grown > self.allowance():
            raise MemoryGrowth(f"device memory in use grew by {grown / 2**30:.1f} GiB over {self.calls} calls "
                               f"(allowed {self.allowance() / 2**30:.1f} GiB beyond its inputs)")


def release_compiled(torch: Any) -> None:
    """Give back what torch.compile holds (its compiled graphs and their buffers) and the cached blocks."""
    import gc

    try:
        torch._dynamo.reset()
    except Exception:  # an older torch or a failed compile: the caches below still go
        pass
    gc.collect()
    torch.cuda.empty_cache()


def pool_facts(pool: InputPool) -> PoolFacts:
    return {"sets": pool.sets, "set_bytes": pool.set_bytes, "generated": pool.generated, "in_place": pool.in_place,
            "generate_ms": round(pool.generate_s / max(pool.generated, 1) * 1e3, 3), **pool.source.facts()}


def _first_compiled_call(cx: CaseContext, pool: InputPool, params: CaseParams) -> str | None:
    """Compile torch.compile's version of the reference for this case and check it once."""
    rt, torch = cx.rt, cx.state.torch
    item = pool.make(bench_seed(cx.secret ^ 0x5EED, 0, 0))
    try:
        out = cx.fn(item.inputs)
        torch.cuda.synchronize()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"torch.compile of the reference failed: {type(exc).__name__}: {first[:300]}"
    from kerneltui.core.worker.child.recheck import OutputCheck

    ref_out = rt.call(pool.inputs_for(item.seed))
    reason = OutputCheck(cx.state, rt, "torch.compile", pool.inputs_for).verify(
        out, ref_out, item.seed)
    if reason:
        return f"torch.compile's output differs from the reference ({reason}); it is not used as a baseline"
    return None
