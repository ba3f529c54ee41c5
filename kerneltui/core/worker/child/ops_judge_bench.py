"""The judge's ops behind the benchmark rung: the work per case, the baselines, the kernel's inputs
and the recheck of every output the kernel produced while it was timed.

The judge never runs kernel code, so the baselines (the reference and torch.compile of it) are
timed here with the protocol of ``core.worker.child.timing``, and the kernel's input sets are made here: an
``InputPool`` of slots in GPU memory that the candidate's worker maps (CUDA IPC), seeds from the
run's secret (the baselines saw the same sets). The parent drives the kernel's series in batches:
the candidate's worker times a batch of calls, one per slot, and hands back each output; the
judge rechecks every one against the reference's output for that slot, then renews the used slots
with data no call has seen (in place: the same memory, new contents) before the next batch.

Replies carry raw samples and facts; the parent computes every statistic (``core.bench.stats``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from kerneltui.core.bench.part_times import PartTimes
from kerneltui.core.case_params import CaseParams
from kerneltui.core.worker.child import timing
from kerneltui.core.worker.child.ops_bench import require_gpu, slot_lot, slot_lots
from kerneltui.core.worker.child.ops_candidate import CheckFailure
from kerneltui.core.worker.child.ops_judge import _judge
from kerneltui.core.worker.child.recheck import OutputCheck
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import (
    BenchSetupCase,
    BenchSetupReply,
    PoolReply,
    RecheckFailure,
    RecheckReply,
    SeriesReply,
)
from kerneltui.core.worker.contract.requests import BenchmarkArgs, NoArgs, PoolArgs, RecheckArgs
from kerneltui.settings.bench import BenchSettings

Progress = Any
BASELINES = ("reference", "torch_compile")


def op_judge_bench_setup(state: WorkerState, args: NoArgs, progress: Progress) -> BenchSetupReply:
    """flops()/bytes_moved() of the reference module per benchmark case."""
    judge = _judge(state)
    ref = judge.rt.reference
    cases = []
    for i, case in enumerate(state.task.get("benchmarks") or []):
        params = {k: v for k, v in case.items() if k != "seed"}
        entry: BenchSetupCase = {"index": i, "label": " ".join(f"{k}={v}" for k, v in params.items()) or "default case",
                                 "params": params}
        flops, flops_error = _count(state, getattr(ref, "flops", None), "flops", params)
        if flops is not None:
            entry["flops"] = flops
        if flops_error:
            entry["flops_error"] = flops_error
        moved, bytes_error = _count(state, getattr(ref, "bytes_moved", None), "bytes_moved", params)
        if moved is not None:
            entry["bytes"] = moved
        if bytes_error:
            entry["bytes_error"] = bytes_error
        cases.append(entry)
    return {"cases": cases, "format": state.task.get("format")}


def _count(state: WorkerState, fn: Callable[..., Any] | None, name: str,
           params: CaseParams) -> tuple[float | None, str]:
    """The reference's ``flops()`` or ``bytes_moved()`` for one case, or why there is none."""
    if fn is None:
        return None, ""
    where = f"{state.task['reference_file']}: {name}({_describe(params)})"
    try:
        value = float(_call_with_params(fn, params))
    except Exception as exc:
        return None, f"{where} raised {type(exc).__name__}: {exc}"
    if not value >= 0 or value == float("inf"):
        return None, f"{where} returned {value!r}"
    return value, ""


def op_judge_benchmark(state: WorkerState, args: BenchmarkArgs, progress: Progress) -> SeriesReply:
    """Time a baseline (the reference or torch.compile of it) on every benchmark case."""
    require_gpu(state, "benchmarking")
    judge = _judge(state)
    rt = judge.rt
    target = str(args.get("target"))
    if target not in BASELINES:
        raise CheckFailure(f"unknown baseline {target!r}; known: {', '.join(BASELINES)}")
    settings = BenchSettings.from_mapping(args.get("settings"))
    fn: Callable[[Any], Any]
    if target == "reference":
        fn = rt.call
    else:
        progress("torch.compile of the reference (compiles on the first call of each case)")
        fn = rt.compiled()
    torch = state.torch
    l2 = _l2_bytes(torch)
    t0 = time.perf_counter()
    flusher = timing.L2Flusher(torch, l2, settings.flush)
    persisting = timing.PersistingL2()
    cx = timing.CaseContext(state=state, rt=rt, target=target, fn=fn, secret=int(args["secret"]), settings=settings,
                            flusher=flusher, persisting=persisting, progress=progress)
    cases = [timing.benchmark_case(cx, i, case) for i, case in enumerate(state.task.get("benchmarks") or [])]
    flush_bytes = flusher.nbytes
    del cx, flusher, fn
    torch.cuda.empty_cache()
    return {"target": target, "cases": cases, "flush_bytes": flush_bytes, "l2_bytes": l2,
            "persisting_l2": persisting.status, "seconds": round(time.perf_counter() - t0, 4)}


def op_judge_pool(state: WorkerState, args: PoolArgs, progress: Progress) -> PoolReply:
    """Make the kernel's input slots for one case (and the reference's output for each); the slots go
    to the candidate's worker as shared memory (no copy: renewals in place are seen there)."""
    require_gpu(state, "benchmarking")
    judge = _judge(state)
    rt, torch = judge.rt, state.torch
    index = int(args["case"])
    case = (state.task.get("benchmarks") or [])[index]
    params = {k: v for k, v in case.items() if k != "seed"}
    label = " ".join(f"{k}={v}" for k, v in params.items()) or "default case"
    settings = BenchSettings.from_mapping(args.get("settings"))
    secret = int(args["secret"])
    # The earlier case's slots (its exchange lot and the pool holding them) go before this case's
    # are made: a judge that kept them would hold every case's pool at once.
    state.bench_pool = None
    judge.exchange.release(slot_lots(judge.exchange))
    free, _ = torch.cuda.mem_get_info()
    pool = timing.InputPool(rt=rt, params=params, seeds=(timing.bench_seed(secret, index, k) for k in range(1 << 30)),
                            with_reference=True, budget_bytes=int(free * settings.pool_fraction),
                            max_sets=settings.max_pool, fresh=settings.fresh_inputs)
    progress(f"making {label}'s inputs")
    sets = pool.first_batch()
    checker = OutputCheck(state, rt, label, pool.inputs_for)
    state.bench_pool = (index, pool, checker)
    slots = [judge.exchange.export(item.inputs, slot_lot(index, i), share_storage=True) for i, item in enumerate(sets)]
    state.sync()
    return {"case": index, "label": label, "params": params, "slots": slots, "sets": pool.sets,
            "set_bytes": pool.set_bytes, "out_bytes": pool.out_bytes, "dtypes": pool.dtypes,
            "dtype": timing.main_dtype(params, pool.dtypes), "in_place": pool.in_place}


def op_judge_recheck(state: WorkerState, args: RecheckArgs, progress: Progress) -> RecheckReply:
    """Recheck a batch of the kernel's outputs (one per slot used), then renew those slots."""
    judge = _judge(state)
    held = state.bench_pool
    if held is None or held[0] != int(args["case"]):
        raise CheckFailure("no input pool for this case in the judge (judge_pool must come first)")
    index: int = held[0]
    pool: timing.InputPool = held[1]
    checker: OutputCheck = held[2]
    lot = str(args.get("lot") or "recheck")
    failure: RecheckFailure | None = None
    slots = [int(s) for s in args.get("slots") or []]
    outputs = list(args.get("outputs") or [])
    if len(slots) != len(outputs):
        raise CheckFailure("a recheck batch needs one output per slot")
    spent = PartTimes("load", "verify", "renew")
    for n, (slot, wire) in enumerate(zip(slots, outputs, strict=True)):
        item = pool.slot(slot)
        with spent("load"):
            out = judge.exchange.load(wire, lot)
        with spent("verify"):
            reason = checker.verify(out, item.ref_out, item.seed)
        if reason:
            failure = {"call": int(args.get("first_call") or 0) + n + 1, "seed": item.seed, "reason": reason}
            break
    judge.exchange.release([lot])
    renewed = 0
    moved: dict[str, object] = {}
    generate_ms = 0.0
    if failure is None and args.get("renew", True):
        t0 = time.perf_counter()
        for slot in pool.renew(sorted(set(slots))):
            lot = slot_lot(index, slot)  # the slot got new buffers: its old export goes (see slot_lot)
            judge.exchange.release([lot])
            moved[str(slot)] = judge.exchange.export(pool.slot(slot).inputs, lot, share_storage=True)
        state.sync()
        renewed = len(set(slots))
        generate_ms = (time.perf_counter() - t0) * 1e3
        spent.add("renew", generate_ms / 1e3)
    return {"failure": failure, "checked": checker.quick + checker.full, "quick": checker.quick, "full": checker.full,
            "one_pass": checker.one_pass,
            "renewed": renewed, "moved": moved, "generate_ms": round(generate_ms, 3), "in_place": pool.in_place,
            "pool": timing.pool_facts(pool), "spent_s": spent.seconds()}


def _l2_bytes(torch: Any) -> int:
    props = torch.cuda.get_device_properties(0)
    return int(getattr(props, "L2_cache_size", 0) or 0)


def _call_with_params(fn: Any, params: CaseParams) -> Any:
    """Call ``fn`` with the case parameters it accepts (all of them if it takes ``**kwargs``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn(**params)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn(**params)
    return fn(**{k: v for k, v in params.items() if k in sig.parameters})


def _describe(params: CaseParams) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


OPS = {
    "judge_bench_setup": op_judge_bench_setup,
    "judge_benchmark": op_judge_benchmark,
    "judge_pool": op_judge_pool,
    "judge_recheck": op_judge_recheck,
}
