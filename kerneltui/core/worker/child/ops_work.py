"""The judge's op behind the estimated roofline: the work of the reference on every benchmark case.

``judge_estimate_work`` runs in the run's judge (the reference loaded, no kernel code in the
process) for tasks that declare no ``flops``/``bytes_moved``. Each case's inputs are generated as the
benchmark will generate them and the reference is called once under the FLOP counter
(``core.worker.child.work_estimate``).
"""

from __future__ import annotations

from typing import Any

from kerneltui.core.worker.child.ops_judge import _judge
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.child.work_estimate import estimate_work
from kerneltui.core.worker.contract.replies import WorkEstimateCase, WorkEstimateReply
from kerneltui.core.worker.contract.requests import NoArgs

Progress = Any
ESTIMATE_SEED = 20250


def op_estimate_work(state: WorkerState, args: NoArgs, progress: Progress) -> WorkEstimateReply:
    rt = _judge(state).rt
    model = getattr(rt, "model", None)  # KernelBench: the model's weights are read too
    reads = [*model.parameters(), *model.buffers()] if model is not None else []
    cases: list[WorkEstimateCase] = []
    for i, case in enumerate(state.task.get("benchmarks") or []):
        params = {k: v for k, v in case.items() if k != "seed"}
        progress(f"estimating the work of case {i + 1}", i / max(len(state.task["benchmarks"]), 1))
        try:
            inputs = rt.make_inputs(params, ESTIMATE_SEED)
            work = estimate_work(state.torch, rt.call, inputs, reads)
            state.sync()
        except Exception as exc:  # a reference the counter cannot follow: no estimate, said so
            cases.append({"index": i, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"})
            continue
        cases.append({"index": i, "flops": work.flops, "bytes": work.bytes, "method": work.method})
    return {"cases": cases}


OPS = {"judge_estimate_work": op_estimate_work}
