"""Worker ops behind the benchmark and roofline rungs and ``kerneltui device``.

The benchmark rung drives one fresh worker through them in an order that keeps the baselines
clean: ``device_peaks`` (when the parent has none cached), ``bench_setup`` (task and reference
only), ``benchmark`` for the reference and torch.compile of it, then the ordinary ``load`` of the
candidate, then ``benchmark`` for the candidate. The baselines are measured before any candidate
code exists in the process, so nothing the candidate does can slow them down.

Replies carry raw samples; the parent computes every statistic (``core.benchstats``).
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from typing import Any

from kerneltui.core.benchstats import BenchSettings
from kerneltui.core.worker.integrity import check_identities
from kerneltui.core.worker.ops_check import CheckFailure
from kerneltui.core.worker.runtime import runtime_for
from kerneltui.core.worker.state import WorkerState

Progress = Any
TARGETS = ("candidate", "reference", "torch_compile")


def _guarded() -> dict[str, tuple[Any, str]]:
    """What the benchmark relies on beyond the integrity module's list: replaced, it could lie."""
    import threading

    import torch

    from kerneltui.core import benchstats, timing
    from kerneltui.core.worker import recheck

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
    for module in (timing, benchstats, recheck):
        for name, value in vars(module).items():
            if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
                guarded[f"{module.__name__}.{name}"] = (module, name)
    guarded["kerneltui.core.worker.recheck._kernel"] = (recheck, "_kernel")
    for cls in (timing.CallTimer, timing.InputPool, timing.InputTrap, timing.L2Flusher, timing.PersistingL2,
                recheck.OutputCheck, benchstats.RunningStats):
        for name, value in vars(cls).items():
            if inspect.isfunction(value):
                guarded[f"{cls.__qualname__}.{name}"] = (cls, name)
    return guarded


def _snapshot() -> dict[str, int]:
    return {name: id(getattr(owner, attr, None)) for name, (owner, attr) in _guarded().items()}


# Taken when the worker starts serving, before any candidate code can be imported.
if "torch" in sys.modules:
    from kerneltui.core.worker import recheck as _recheck

    if "triton" in sys.modules:
        _recheck.prepare()  # the check kernel is defined before a candidate could touch triton.jit
    _BASELINE = _snapshot()
else:  # imported outside a worker (documentation, tests of other parts): nothing to guard
    _BASELINE = {}


def _check_guarded(state: WorkerState, when: str) -> None:
    # The snapshot taken after the baselines (torch.compile has run, no kernel code has) is the
    # reference; the one from start-up serves when there were no baselines in this worker.
    baseline = getattr(state, "bench_guard", None) or _BASELINE
    if not baseline:
        return
    now = _snapshot()
    changed = sorted(name for name, ident in baseline.items() if now.get(name) != ident)
    if changed:
        raise CheckFailure(
            f"benchmark machinery replaced {when}: {', '.join(changed[:8])}"
            f"{f' (+{len(changed) - 8} more)' if len(changed) > 8 else ''}. Kernels must not patch the "
            "harness; the benchmark cannot be trusted."
        )


def _require_gpu(state: WorkerState, what: str) -> None:
    if not state.has_gpu:
        raise CheckFailure(
            f"{what} needs a CUDA GPU and this worker has none: on the CPU, Triton runs under its "
            "interpreter and its wall times say nothing about GPU performance"
        )


# ----------------------------------------------------------------------------------------------
# ops
# ----------------------------------------------------------------------------------------------


def op_device_peaks(state: WorkerState, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """Measure memory bandwidth and matmul rates (``core.worker.peaks``)."""
    _require_gpu(state, "measuring the device's peaks")
    from kerneltui.core.worker.peaks import measure_peaks

    dtypes = tuple(args["dtypes"]) if args.get("dtypes") else None
    return measure_peaks(state.torch, progress, dtypes)


def op_bench_setup(state: WorkerState, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """Install the task and import the reference only; evaluate flops()/bytes_moved() per case."""
    state.install_task(args["task"], args["files"])
    state.runtime = runtime_for(state)
    progress("importing the reference")
    state.runtime.load_reference()
    ref = state.runtime.reference
    cases = []
    for i, case in enumerate(state.task.get("benchmarks") or []):
        params = {k: v for k, v in case.items() if k != "seed"}
        entry: dict[str, Any] = {"index": i, "label": " ".join(f"{k}={v}" for k, v in params.items()) or "default case",
                                 "params": params}
        for fn_name, key in (("flops", "flops"), ("bytes_moved", "bytes")):
            fn = getattr(ref, fn_name, None)
            if fn is None:
                continue
            try:
                value = float(_call_with_params(fn, params))
            except Exception as exc:
                entry[f"{key}_error"] = f"{state.task['reference_file']}: {fn_name}({_describe(params)}) raised {type(exc).__name__}: {exc}"
                continue
            if not value >= 0 or value == float("inf"):
                entry[f"{key}_error"] = f"{state.task['reference_file']}: {fn_name}({_describe(params)}) returned {value!r}"
                continue
            entry[key] = value
        cases.append(entry)
    return {"cases": cases, "format": state.task.get("format")}


def op_benchmark(state: WorkerState, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """Time one target on every benchmark case (``core.timing``); raw samples back."""
    _require_gpu(state, "benchmarking")
    from kerneltui.core import timing

    target = str(args.get("target"))
    if target not in TARGETS:
        raise CheckFailure(f"unknown benchmark target {target!r}; known: {', '.join(TARGETS)}")
    rt = state.runtime
    if rt is None or rt.reference is None:
        raise CheckFailure("the task is not loaded in this worker (bench_setup or load must come first)")
    if target == "candidate" and rt.candidate is None:
        raise CheckFailure("the kernel is not loaded in this worker (load must come first)")
    settings = BenchSettings.from_mapping(args.get("settings"))
    if target == "candidate":
        check_identities(state, "before the benchmark")
        _check_guarded(state, "before the benchmark")
        fn = rt.call_candidate
    elif target == "reference":
        fn = rt.call_reference
    else:
        progress("torch.compile of the reference (compiles on the first call of each case)")
        fn = timing.compiled_reference(state)
    torch = state.torch
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    t0 = time.perf_counter()
    flusher = timing.L2Flusher(torch, l2)
    persisting = timing.PersistingL2()
    cx = timing.CaseContext(state=state, target=target, fn=fn, secret=int(args["secret"]), settings=settings,
                            flusher=flusher, persisting=persisting, progress=progress)
    state.recording = False  # the launch hooks' bookkeeping must stay out of the timed calls
    cases = []
    for i, case in enumerate(state.task.get("benchmarks") or []):
        cases.append(timing.benchmark_case(cx, i, case))
        if any((c.get("failure") or (c.get("graph") or {}).get("failure")) for c in cases[-1:]):
            break  # a wrong output ends the benchmark: the next cases would say the same
    threads = {t.ident: t.name for t in threading.enumerate()}
    new_threads: list[str] = []
    if target == "candidate":
        check_identities(state, "while the kernel was benchmarked")
        _check_guarded(state, "while the kernel was benchmarked")
        before = getattr(state, "bench_threads", None)
        if before is not None:
            # Threads that appeared between the baselines and now: started by the kernel's module.
            new_threads = sorted(name for ident, name in threads.items() if ident not in before)
    else:
        state.bench_threads = set(threads)  # type: ignore[attr-defined]
        if _BASELINE:
            state.bench_guard = _snapshot()  # type: ignore[attr-defined]
    flush_bytes = flusher.nbytes
    del cx, flusher, fn
    torch.cuda.empty_cache()
    return {
        "target": target,
        "cases": cases,
        "flush_bytes": flush_bytes,
        "l2_bytes": l2,
        "persisting_l2": persisting.status,
        "threads_started_by_kernel": new_threads,
        "seconds": round(time.perf_counter() - t0, 4),
    }


def _call_with_params(fn: Any, params: dict[str, Any]) -> Any:
    """Call ``fn`` with the case parameters it accepts (all of them if it takes ``**kwargs``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn(**params)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn(**params)
    return fn(**{k: v for k, v in params.items() if k in sig.parameters})


def _describe(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


OPS = {
    "device_peaks": op_device_peaks,
    "bench_setup": op_bench_setup,
    "benchmark": op_benchmark,
}
