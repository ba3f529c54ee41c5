"""The parent's side of judging one run: a judge process and the candidate's worker, and the
checks that pass between them.

The judge (``core.worker.child.ops_judge``) holds the reference and decides; the candidate's worker
(``core.worker.child.ops_candidate``) holds the kernel. The parent never touches a tensor: it asks the
judge for a check's inputs, hands their wire form to the candidate's worker, hands the outputs and
the evidence back to the judge, and reads the verdict. Tensors stay in shared memory (CUDA IPC on
a GPU, files in the run's exchange folder on the CPU); the folder is removed when the run ends.

Each check has a key; the candidate's copy of the inputs and its outputs live under that key on
both sides until the key is released (the last few are kept: the determinism call compares with
the first call of its case, and the next call checks that the previous output did not change).
"""

from __future__ import annotations

import itertools
import shutil
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kerneltui.core.case_params import CaseParams
from kerneltui.core.task import TaskData
from kerneltui.core.worker.contract import wire
from kerneltui.core.worker.contract.replies import CallReply, VerdictReply
from kerneltui.core.worker.contract.requests import CallArgs, JudgeInputsArgs, JudgeVerdictArgs
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess, signal_words

KEEP = 6  # checks kept alive on both sides (the pipeline has at most three in use)


@dataclass(frozen=True)
class StepLimit:
    """A step's whole time limit, and what a person changes when the reference alone needs longer."""

    seconds: float
    raise_it: str  # the setting that gives the step more time
    smaller: str  # how to run the task at smaller sizes
    reference_file: str


def reference_too_slow(exc: WorkerFailure, timeout: float, limit: StepLimit | None, doing: str) -> WorkerFailure:
    """A judge's timeout as the task error it is, where the reference alone used the step's time.

    The judge runs nothing but the reference, so a timeout of its own is the reference's; but where
    the step's limit is shared with the kernel's calls (correctness), a request given less than half
    of it may have been left little by the kernel, and stays an ordinary timeout."""
    if exc.kind != "timeout" or limit is None or timeout < limit.seconds / 2:
        return exc
    return WorkerFailure("task", (
        f"the task's reference ({limit.reference_file}) took longer than {timeout:.0f} s {doing}, and the judge "
        f"(which runs only the reference) was stopped: the reference, not the kernel, is too slow here; raise the "
        f"limit with {limit.raise_it}, or {limit.smaller}"), error=exc.error, stderr=exc.stderr)


def judge_ran_out(exc: WorkerFailure, timeout: float, limit: StepLimit | None, doing: str) -> WorkerFailure:
    """A judge's timeout while it checks the kernel's output: the task's fault where it had most of
    the step's time (``reference_too_slow``); otherwise the step's shared time ran out, mostly in
    the kernel's calls, and the message says so instead of the generic "the kernel hangs"."""
    if exc.kind != "timeout":
        return exc
    task = reference_too_slow(exc, timeout, limit, doing)
    if task is not exc:
        return task
    of = f" of the step's {limit.seconds:.0f} s" if limit is not None else ""
    more = f"; a kernel this slow fails here, or raise the limit with {limit.raise_it}" if limit is not None else ""
    return WorkerFailure("timeout", (
        f"the correctness checks ran out of time while the judge was {doing}: {timeout:.0f} s were left{of}, the "
        f"kernel's calls having taken the rest{more}"), error=exc.error, stderr=exc.stderr)


# The judge's requests that hold the kernel's output (a mapped copy of it): a death there other
# than by SIGKILL may be the kernel's doing (memory it handed over and then took away).
HOLDS_KERNEL_OUTPUT = ("judge_verdict", "judge_recheck")


def judge_died(exc: WorkerFailure, limit: StepLimit) -> WorkerFailure:
    """A judge's death as the task error it is, never the kernel's failure.

    The judge runs only the reference (and kerneltui's comparison), so whatever kills it while it
    makes inputs, runs or times the reference is the task's at this run's sizes. SIGKILL there is
    most often the out-of-memory killer: the judge's memory is the reference's sizes. The one
    exception is a death other than SIGKILL while the judge holds the kernel's output: that stays a
    crash, worded as the judge's."""
    death = exc.death
    if exc.kind != "crash" or death is None or death.role != "judge":
        return exc
    judge = f"the judge, which runs only the task's reference ({limit.reference_file}),"
    if death.signal == "SIGKILL":
        return WorkerFailure("task", (
            f"{judge} was killed (SIGKILL) during {death.op}: most likely by the system's out-of-memory killer, the "
            f"reference needing more host memory at this run's sizes than the machine has; the task's sizes, not the "
            f"kernel, are at fault here; {limit.smaller}"), error=exc.error, stderr=exc.stderr, death=death)
    ended = f"died with {signal_words(death.signal)}" if death.signal else "ended"
    if death.op in HOLDS_KERNEL_OUTPUT:
        return WorkerFailure("crash", (
            f"{judge} {ended} during {death.op}, while it held the kernel's output: {exc.message}"),
            error=exc.error, stderr=exc.stderr, death=death)
    return WorkerFailure("task", (
        f"{judge} {ended} during {death.op}: the reference (or a library it calls) crashed, not the kernel; "
        f"{exc.message}"), error=exc.error, stderr=exc.stderr, death=death)


@dataclass
class CaseRef:
    """One case and seed to make inputs for."""

    index: int
    params: CaseParams
    seed: int
    label: str


class Judging:
    def __init__(self, judge: WorkerProcess, exchange: Path, task_backend_label: str) -> None:
        self.judge = judge
        self.exchange = exchange
        self.backend_label = task_backend_label
        self.setup: Any = None  # the wire value the candidate's worker needs to build the candidate
        self.has_check = False
        self._ids = itertools.count(1)
        self._live: deque[str] = deque()
        self._release_judge: list[str] = []
        self._release_candidate: list[str] = []

    @classmethod
    async def start(cls, judge: WorkerProcess, run_id: str, task: TaskData, files: dict[str, str],
                    backend_label: str, timeout: float, progress: Any, limit: StepLimit | None = None) -> Judging:
        folder = wire.new_run_folder()
        folder.parent.mkdir(mode=0o700, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        self = cls(judge, folder, backend_label)
        try:
            reply = await judge.request("judge_load", {"task": task, "files": files, "exchange": str(folder)},
                                        timeout=timeout, on_progress=progress)
        except WorkerFailure as exc:
            self.remove_folder()
            slow = reference_too_slow(exc, timeout, limit, "importing the reference")
            raise (judge_died(slow, limit) if limit is not None else slow) from exc
        except BaseException:
            self.remove_folder()
            raise
        self.setup = reply.get("setup")
        self.has_check = bool(reply.get("has_check"))
        return self

    def remove_folder(self) -> None:
        shutil.rmtree(self.exchange, ignore_errors=True)

    # -- one check ------------------------------------------------------------------------------

    def new_key(self, rolling: bool = True) -> str:
        """A new check key. Rolling keys are released once KEEP newer ones exist; the others stay
        until ``release`` (inputs handed over in bulk, e.g. every case for the dump)."""
        key = f"k{next(self._ids)}"
        if rolling:
            self._live.append(key)
            while len(self._live) > KEEP:
                self.release([self._live.popleft()])
        return key

    def release(self, keys: list[str]) -> None:
        """Let both sides drop these checks' memory with their next request."""
        self._release_judge.extend(keys)
        self._release_candidate.extend(keys)

    async def inputs(self, case: CaseRef, timeout: float, reference: bool = True, rolling: bool = True,
                     limit: StepLimit | None = None) -> tuple[str, Any]:
        """Make a case's inputs in the judge (and run the reference on a clone when ``reference``);
        the key and the wire form of the candidate's copy. ``limit``: the step's whole limit, for
        the task error a judge's timeout becomes."""
        key = self.new_key(rolling)
        release, self._release_judge = self._release_judge, []
        args: JudgeInputsArgs = {"key": key, "params": case.params, "seed": case.seed, "label": case.label,
                                 "reference": reference, "release": release}
        try:
            reply = await self.judge.request("judge_inputs", args, timeout=timeout)
        except WorkerFailure as exc:
            doing = f"making the inputs ({case.label})" + (" and running the reference on them" if reference else "")
            raise reference_too_slow(exc, timeout, limit, doing) from exc
        return key, reply["inputs"]

    async def call(self, candidate: WorkerProcess, key: str, inputs: Any, timeout: float, *, fill: str = "poison",
                   garbage_seed: int = 0, gpu_trace: bool = False, on_progress: Any = None) -> CallReply:
        """One call of the kernel on a check's inputs, in the candidate's worker."""
        release, self._release_candidate = self._release_candidate, []
        args: CallArgs = {"inputs": inputs, "lot": key, "fill": fill, "garbage_seed": garbage_seed,
                          "gpu_trace": gpu_trace, "release": release}
        return cast(CallReply, await candidate.request("call", args, timeout=timeout, on_progress=on_progress))

    async def verdict(self, key: str, called: CallReply, timeout: float, *, mode: str = "check",
                      first: str | None = None, sanity: bool = False, limit: StepLimit | None = None) -> VerdictReply:
        """The judge's decision on the output the call returned. ``limit``: the step's whole limit,
        for what a judge's timeout becomes (``judge_ran_out``)."""
        args: JudgeVerdictArgs = {
            "key": key, "outputs": called["outputs"], "lot": f"{key}-out", "mode": mode, "first": first,
            "sanity": sanity, "evidence": called.get("evidence"), "aliases": called.get("aliases") or [],
            "subclasses": called.get("subclasses") or [], "backend_label": self.backend_label,
            "returned": called.get("returned_digests"),
        }
        try:
            return cast(VerdictReply, await self.judge.request("judge_verdict", args, timeout=timeout))
        except WorkerFailure as exc:
            doing = "checking the kernel's output (the task's check_implementation, or the comparison with the reference's)"
            raise judge_ran_out(exc, timeout, limit, doing) from exc

    async def close(self) -> None:
        if self.judge.alive:
            try:
                await self.judge.request("judge_release", {}, timeout=30)
            except WorkerFailure:
                pass
        self.remove_folder()
