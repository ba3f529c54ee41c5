"""Worker op behind the ``trace`` rung: run the candidate untraced and traced, return raw numbers.

The candidate asks ``kerneltui.ktrace.buffer(...)`` for a trace buffer per launch; while this op
traces, that hands out real buffers (zeroed here between calls, outside the timed region) and
the kernel records its regions into them. Times are CUDA event pairs around single calls (after a
warm-up, L2 not flushed: the point is traced against untraced under the same conditions, not the
benchmark's number); the parent computes the medians and reads the buffers.
"""

from __future__ import annotations

from typing import Any

from kerneltui.core.case_params import CaseParams
from kerneltui.core.trace.buffer import TraceBufferData
from kerneltui.core.worker.child import tree
from kerneltui.core.worker.child.ops_candidate import CheckFailure
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import TraceReply
from kerneltui.core.worker.contract.requests import TraceArgs

Progress = Any
DEFAULT_REPS = 30
WARMUP = 3


def _case(state: WorkerState, index: int | None) -> tuple[int, CaseParams, str]:
    benches = state.task.get("benchmarks") or []
    cases = benches or state.task["tests"]
    i = int(index or 0)
    if not 0 <= i < len(cases):
        raise CheckFailure(f"trace case {i} does not exist: the task has {len(cases)} "
                           f"{'[[benchmarks]]' if benches else '[[tests]]'} cases (0 to {len(cases) - 1})")
    kind = "benchmark" if benches else "test"
    return i, cases[i], kind


def _time_calls(state: WorkerState, fn: Any, inputs: Any, reps: int, before: Any) -> list[float]:
    torch = state.torch
    out = []
    for _ in range(reps):
        before()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn(inputs)
        stop.record()
        torch.cuda.synchronize()
        out.append(float(start.elapsed_time(stop)))
    return out


def op_trace(state: WorkerState, args: TraceArgs, progress: Progress) -> TraceReply:
    if not state.has_gpu:
        raise CheckFailure("tracing needs a CUDA GPU: the markers read %globaltimer on the device")
    rt = state.runtime
    if rt is None or rt.candidate is None or state.exchange is None:
        raise CheckFailure("the kernel is not loaded in this worker (load must come first)")
    from kerneltui import ktrace

    torch = state.torch
    reps = max(3, int(args.get("reps") or DEFAULT_REPS))
    index, case, kind = _case(state, args.get("case"))
    params = {k: v for k, v in case.items() if k != "seed"}
    inputs = state.exchange.load(args["inputs"], "trace")  # made by the judge

    def call(data: Any) -> Any:
        return rt.call(data)

    progress(f"untraced: {reps} calls on {kind} case {index}")
    for _ in range(WARMUP):
        call(inputs)
    plain_out = call(tree.clone(inputs, torch))
    untraced = _time_calls(state, call, inputs, reps, lambda: None)
    reply: TraceReply = {"case": index, "case_kind": kind, "params": params, "untraced_ms": untraced, "device": state.info.get("name")}

    # -- a DSL's own tracer (core/trace/sources.py chose it; it says why when it cannot run) --
    if args.get("source") == "proton":
        from kerneltui.core.trace import proton_run

        reply["source_note"] = proton_run.unavailable()
        if reply["source_note"] is None:
            progress(f"traced by Proton: {reps} calls")
            traced_run = proton_run.trace(call, inputs, lambda: _time_calls(state, call, inputs, reps, lambda: None),
                                          state.workdir, torch.cuda.synchronize)
            matches = _same_output(state, traced_run["out"], plain_out)
            return {**reply, "traced_ms": traced_run["traced_ms"], "buffers": traced_run["buffers"],
                    "source": traced_run["source"], "traced_output_matches": matches}
    # -- end of the DSL tracers --

    progress(f"traced: {reps} calls")
    ktrace.start()
    try:
        for _ in range(WARMUP):  # the traced build compiles on its first call
            ktrace.rearm()
            call(inputs)
        traced = _time_calls(state, call, inputs, reps, ktrace.rearm)
        ktrace.rearm()
        out = call(inputs)
        torch.cuda.synchronize()
        buffers = ktrace.used()
        dumps: list[TraceBufferData] = [{"kernel": b.kernel, "regions": list(b.regions), "grid": list(b.grid),
                  "words": b.tensor.tolist()} for b in buffers]
    finally:
        ktrace.stop()
    return {**reply, "traced_ms": traced, "buffers": dumps, "traced_output_matches": _same_output(state, out, plain_out)}


def _same_output(state: WorkerState, out: Any, plain_out: Any) -> bool | None:
    """Tracing must not change what the kernel computes: traced vs untraced output, same inputs."""
    torch = state.torch
    try:
        if isinstance(out, torch.Tensor) and isinstance(plain_out, torch.Tensor) and out.shape == plain_out.shape:
            return bool(torch.equal(out, plain_out)) or bool(
                torch.allclose(out.float(), plain_out.float(), rtol=1e-3, atol=1e-3, equal_nan=True))
    except Exception as exc:  # a courtesy; the correctness rung is the judge
        state.notes.append(f"trace: could not compare the traced output ({type(exc).__name__}: {exc})")
    return None


OPS = {"trace": op_trace}
