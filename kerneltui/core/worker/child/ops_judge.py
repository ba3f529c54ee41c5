"""Worker ops of the judge: the process that holds the reference and decides every verdict.

The judge imports the task's reference (never the kernel), makes each check's inputs, runs the
reference first on clones, hands the candidate's worker a copy of the inputs in shared memory and
keeps the originals, then receives the kernel's outputs and decides (``core.worker.child.verdicts``).
Because the kernel runs in another process, nothing it does can reach the reference, the expected
outputs, the comparison or the verdict: it can only hand back outputs and evidence.

Checks are named by ``key`` (chosen by the parent); each holds the original inputs, the
reference's clone and output, the candidate's copy as the judge sees it (compared with the
originals at the verdict, to see it tampered with) and, once judged, a private copy of the kernel's
output (for the determinism comparison).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.backends import torch_is_the_kernel
from kerneltui.core.worker.child import tree, verdicts
from kerneltui.core.worker.child.ops_candidate import CheckFailure, exchange_for, poisoned_allocations
from kerneltui.core.worker.child.runtime import reference_runtime_for
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import JudgeInputsReply, JudgeLoadReply, Released, VerdictReply
from kerneltui.core.worker.contract.requests import (
    JudgeInputsArgs,
    JudgeReleaseArgs,
    JudgeVerdictArgs,
    LoadArgs,
)
from kerneltui.core.worker.contract.wire import Exchange

Progress = Any


@dataclass
class Check:
    key: str
    label: str
    inputs: Any  # the originals: the reference's check_implementation sees these
    copy: Any = None  # the candidate's copy, as this process sees the shared memory
    ref_inputs: Any = None
    ref_out: Any = None
    written_by_ref: set[str] = field(default_factory=set)
    out_buffers: set[str] = field(default_factory=set)  # inputs that are output buffers the task hands over
    out: Any = None  # the kernel's output, copied into this process once judged
    # Made with the reference's answer: a verdict may follow. Inputs made only for the kernel to run
    # on (the compile rung's first case, the dump, the trace) have no answer.
    judged: bool = False


class Judge:
    """What the judge holds between requests."""

    def __init__(self, state: WorkerState, exchange: Exchange) -> None:
        self.state = state
        self.exchange = exchange
        self.rt = reference_runtime_for(state)
        self.checks: dict[str, Check] = {}


def _judge(state: WorkerState) -> Judge:
    judge = state.judge
    if judge is None:
        raise CheckFailure("the reference is not loaded in this judge (judge_load must come first)")
    return judge


def op_judge_load(state: WorkerState, args: LoadArgs, progress: Progress) -> JudgeLoadReply:
    """Install the task copy (no kernel in it) and import the reference."""
    if state.role != "judge":
        raise CheckFailure("judge ops run only in a judge process")
    use_own_caches()
    state.install_task(args["task"], args["files"])
    judge = Judge(state, exchange_for(state, args, "j"))
    state.judge = judge
    progress("importing the reference")
    t0 = time.perf_counter()
    judge.rt.load()
    setup = judge.rt.candidate_setup()
    return {
        "setup": judge.exchange.export(setup, "setup") if setup is not None else None,
        "has_check": judge.rt.has_check,
        "input_names": judge.rt.input_names(),
        "load_s": round(time.perf_counter() - t0, 4),
    }


def use_own_caches() -> None:
    """Compile into the judge's own caches from here on (torch.compile of the reference for the
    baseline, Triton, kerneltui's CUDA builds), never the shared ones a candidate's box may write:
    code planted there must not run here. The judge's box grants these (``sandbox.box``, role judge);
    the libraries read the variables when they compile, not at import."""
    from kerneltui.core.sandbox.environment import judge_caches, shared_caches

    for cache in judge_caches(shared_caches(os.environ)):
        os.environ[cache.variable] = cache.path


def op_judge_inputs(state: WorkerState, args: JudgeInputsArgs, progress: Progress) -> JudgeInputsReply:
    """Make one case's inputs; for a check, run the reference first on a clone. The candidate's copy
    goes back as a wire value."""
    judge = _judge(state)
    rt = judge.rt
    judge.exchange.release([str(x) for x in args.get("release") or []])
    for key in args.get("release") or []:
        judge.checks.pop(str(key), None)
    key = str(args["key"])
    params = dict(args.get("params") or {})
    seed = int(args["seed"])
    label = str(args.get("label") or key)
    # Made with fresh allocations poisoned: a buffer the task hands over uninitialised (torch.empty
    # for an output) holds NaN or the integer maximum, never an earlier call's answer.
    with poisoned_allocations(state.torch):
        inputs = rt.make_inputs(params, seed)
    judged = bool(args.get("reference", True))
    check = Check(key, label, inputs, out_buffers=output_buffers(rt, inputs), judged=judged)
    if judged:
        check.ref_inputs = rt.clone(inputs)
        check.ref_out = rt.call(check.ref_inputs)
        state.sync()
        # Buffers the reference itself writes (GPU MODE's preallocated outputs) are outputs: what
        # differs now from the originals, which nothing has touched.
        check.written_by_ref = set(_changed(rt, check.ref_inputs, inputs))
    wire, copy = judge.exchange.export_with_view(inputs, key)
    state.sync()
    check.copy = copy
    judge.checks[key] = check
    return {"inputs": wire}


def op_judge_verdict(state: WorkerState, args: JudgeVerdictArgs, progress: Progress) -> VerdictReply:
    """Judge the kernel's output for check ``key``.

    ``mode``: ``check`` (correctness), ``run`` (structure too), ``again`` (the determinism call: the
    output is compared with the first call's, ``first``). ``sanity``: also run the checker sanity
    probes on this case. The reply carries ``ok``, ``reason`` and metrics, and the problems found.
    """
    judge = _judge(state)
    rt, torch = judge.rt, state.torch
    key = str(args["key"])
    check = judge.checks.get(key)
    if check is None:
        raise CheckFailure(f"no check {key!r} in this judge")
    if not check.judged:
        raise CheckFailure(f"check {key!r} was made without the reference (inputs for the kernel to run on): "
                           "it has no verdict")
    task = state.task
    inplace = bool(task.get("inplace"))
    tol = task.get("tolerance") or {}
    mode = str(args.get("mode") or "check")
    lot = str(args.get("lot") or f"{key}-out")
    received = judge.exchange.load(args["outputs"], lot)
    out = rt.clone(received)  # the judge's own copy: nothing the kernel does later can change it
    state.sync()
    judge.exchange.release([lot])
    check.out = out
    problems: list[str] = []
    result: VerdictReply = {"key": key, "problems": problems}
    problems.extend(verdicts.late_writes(out, args.get("returned"), check.label, torch))

    subclasses = [str(x) for x in args.get("subclasses") or []]
    subclass = f"{subclasses[0]} is a tensor subclass ({check.label}); return a plain torch.Tensor" if subclasses else None
    if subclass:
        problems.append(subclass)
    # The candidate's copy against the originals it was made from (untouched until the verdict below):
    # compared where they are, never hashed on the host (seconds for a GPU's gigabytes of inputs).
    changed = [k for k in _changed(rt, check.copy, check.inputs)
               if k not in check.written_by_ref and k not in check.out_buffers]
    if changed and not inplace:
        problems.append(
            f"the kernel modified its input {', '.join(changed)} ({check.label}); the task does not declare the op "
            "in-place (inplace = true in task.toml), and an edited input can make the reference agree with a wrong answer")
    input_names = [name for name, _ in rt.tensors(check.inputs)]
    aliases = [str(out_name) for out_name, index in _pairs(args.get("aliases"))
               if not (0 <= index < len(input_names) and input_names[index] in check.out_buffers)]
    alias = verdicts.aliasing_problem(rt, aliases, check.ref_out, check.ref_inputs, check.label)
    if alias and not inplace:
        problems.append(alias)
    evidence = args.get("evidence")
    if isinstance(evidence, dict):
        kernel_names = {str(k) for k in (evidence.get("launches") or {})}
        problems.extend(verdicts.evidence_problems(evidence, task, str(args.get("backend_label") or "backend"),
                                                   kernel_names))
        if evidence.get("gpu_trace_note") and not torch_is_the_kernel(task.get("backend")):
            result["warnings"] = [str(evidence["gpu_trace_note"])]
    if mode == "run":
        structure, described = verdicts.structure_problems(rt, out, check.ref_out)
        result["structure"] = ([subclass] if subclass else []) + structure
        result["described"] = described
    if mode == "again":
        first = judge.checks.get(str(args.get("first")))
        if first is None or first.out is None:
            raise CheckFailure("the determinism call has no first call to compare with")
        result["identical"] = tree.bitwise_equal(first.out, out, torch)
        if not result["identical"]:
            verdict = verdicts.judge_output(rt, check.inputs, out, check.ref_out, tol, state.sync)
            result["ok"] = verdict["ok"]
            result["reason"] = verdict["reason"]
        else:
            result["ok"], result["reason"] = True, "identical"
        return result
    verdict = verdicts.judge_output(rt, check.inputs, out, check.ref_out, tol, state.sync)
    result.update(verdict)
    if args.get("sanity"):
        result["sanity"] = verdicts.checker_sanity(rt, check.inputs, check.ref_out, tol, check.label)
    return result


def op_judge_release(state: WorkerState, args: JudgeReleaseArgs, progress: Progress) -> Released:
    judge = _judge(state)
    keys = [str(x) for x in args.get("keys") or []]
    for key in keys:
        judge.checks.pop(key, None)
    judge.exchange.release(keys or None)
    if not keys:
        judge.checks.clear()
    return {}


def output_buffers(rt: Any, inputs: Any) -> set[str]:
    """Names of input tensors that are nothing but poison: output buffers the task preallocates
    (GPU MODE's ``torch.empty`` outputs). The kernel may write them and return them."""
    torch = rt.torch
    found = set()
    for name, t in rt.tensors(inputs):
        if not t.numel() or t.dtype == torch.bool or t.is_complex():
            continue
        x = t.detach()
        # The first element first: an input the task filled with data is told in one look (a full
        # scan reads every byte: 0.18 s for vector_add's 512 MiB benchmark inputs on a CPU).
        if _all_poison(x[(0,) * x.dim()], torch) and _all_poison(x, torch):
            found.add(name)
    return found


def _all_poison(x: Any, torch: Any) -> bool:
    """Every element NaN (floating point) or the integer maximum (what a poisoned allocation holds)."""
    return bool(torch.isnan(x).all()) if x.is_floating_point() else bool((x == torch.iinfo(x.dtype).max).all())


def _pairs(value: Any) -> list[tuple[str, int]]:
    """[[output name, input index], …] from the kernel's side, kept only where well formed."""
    out = []
    for item in value or []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int):
            out.append((item[0], item[1]))
    return out


def _changed(rt: Any, now: Any, then: Any) -> list[str]:
    """Names of the tensors of ``now`` whose bytes differ from those of the same name in ``then``."""
    before = dict(rt.tensors(then))
    return [name for name, t in rt.tensors(now)
            if name not in before or not tree.same_bits(t, before[name], rt.torch)]


OPS = {
    "judge_load": op_judge_load,
    "judge_inputs": op_judge_inputs,
    "judge_verdict": op_judge_verdict,
    "judge_release": op_judge_release,
}
