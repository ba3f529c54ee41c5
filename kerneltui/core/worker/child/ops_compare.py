"""The candidate's worker's ops behind ``kerneltui compare``: two kernels, A and B, in one worker.

Both kernels are candidate code and both untrusted; they may share a worker because nothing here
decides anything: the judge rechecks every output of both (as the benchmark does), and the parent
turns the raw event times into the ratio, its interval and the verdict (``core.bench.compare``).
What one process cannot rule out is one kernel slowing the other down on purpose; the import of B
is watched for the plain form of it (replacing names in A's module), docs/compare.md says the rest.

``compare_load`` loads A exactly as ``load`` does (the task copy without the reference, the launch
hooks, the integrity snapshot, the first compile), then B's text as a second module beside it.
A case is then opened and closed with the benchmark's own ops (``bench_begin``, ``bench_end``: the
judge's slots mapped, the timer, the guards), and ``compare_calls`` times one call per slot with
the kernel the parent names for each call (blocks of ABBA or BAAB), with the benchmark's ``CallTimer``:
device-wide synchronisation, persisting L2 reset, flush, NaN trap, pad, events.
"""

from __future__ import annotations

import threading
from pathlib import PurePosixPath
from typing import Any

from kerneltui.core.bench.part_times import PartTimes
from kerneltui.core.worker.child.integrity import Identity, check_identities, identity
from kerneltui.core.worker.child.ops_bench import _bench, _release, _remap
from kerneltui.core.worker.child.ops_candidate import CheckFailure, candidate_code, op_load
from kerneltui.core.worker.child.runtime import candidate_runtime_for, module_name
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import BenchCallsReply, CompareLoadReply
from kerneltui.core.worker.contract.requests import BenchCallsArgs, LoadArgs

Progress = Any
KERNELS = ("a", "b")


def second_file(entry_file: str) -> str:
    """Where B's text goes in the task copy: beside A's file (its sibling imports resolve the same way)."""
    path = PurePosixPath(entry_file)
    return str(path.with_name(f"kerneltui_compare_b_{path.stem}{path.suffix or '.py'}"))


def op_compare_load(state: WorkerState, args: LoadArgs, progress: Progress) -> CompareLoadReply:
    """``load`` for A, then B (``args["second"]``: its kernel text) as a module of its own."""
    task = args["task"]
    if task.get("entry_file") != task.get("kernel_file"):
        raise CheckFailure(
            f"compare loads two kernel files side by side; this task's harness calls {task.get('entry_file')}, "
            f"a launcher of {task.get('kernel_file')}, so both would run the same kernel. Compare the two "
            "versions with `kerneltui check` on each instead"
        )
    result: CompareLoadReply = {**op_load(state, args, progress)}
    rel = second_file(str(task["entry_file"]))
    target = state.task_dir / rel
    target.write_text(str(args["second"]), encoding="utf-8")
    first = state.runtime
    before = _names(first.module)
    second = candidate_runtime_for(state)
    second.task = {**state.task, "entry_file": rel}
    progress("importing kernel B")
    with candidate_code(state):
        second.load(state.exchange.load(args["setup"], "setup_b") if args.get("setup") is not None else None)
    check_identities(state, "while kernel B was imported")
    changed = sorted(name for name, held in before.items() if not held.same_as(_names(first.module).get(name)))
    if changed:
        raise CheckFailure(
            f"importing kernel B replaced {', '.join(changed[:6])} in kernel A's module: a kernel that changes "
            "the kernel it is compared with cannot be compared"
        )
    state.compare_runtimes = {"a": first, "b": second}
    result["second_module"] = module_name(rel)
    return result


def _names(module: Any) -> dict[str, Identity]:
    """What a kernel module's names hold (values and, for functions, their code), to see B's import
    replace A's. Only the import is watched: a kernel may rebind its own globals when it runs."""
    return {name: identity(value) for name, value in vars(module).items()}


def op_compare_calls(state: WorkerState, args: BenchCallsArgs, progress: Progress) -> BenchCallsReply:
    """Time one call per slot in ``order``, each of the kernel named at the same place in ``kernels``;
    each output goes back for the judge's recheck (the reply of ``bench_calls``)."""
    bench, ex = _bench(state)
    runtimes = state.compare_runtimes
    if runtimes is None:
        raise CheckFailure("the two kernels are not loaded in this worker (compare_load must come first)")
    order = [int(s) for s in args["order"]]
    kernels = [str(k) for k in args["kernels"]]
    if len(kernels) != len(order) or any(k not in KERNELS for k in kernels):
        raise CheckFailure(f"compare_calls needs one kernel, a or b, per slot; got {kernels!r} for {len(order)} slots")
    _release(bench, ex, args)
    _remap(bench, ex, args)
    lot = str(args["lot"])
    samples: list[list[float]] = []
    controls: list[float] = []
    outputs: list[Any] = []
    kept: list[Any] = []
    every = int(args.get("controls_every") or 0)
    spent = PartTimes("calls", "export", "controls")
    for n, (slot, kernel) in enumerate(zip(order, kernels, strict=True)):
        with spent("calls"):
            out, sample = bench.timer.call(runtimes[kernel].call, bench.slots[slot])
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


OPS = {
    "compare_load": op_compare_load,
    "compare_calls": op_compare_calls,
}
