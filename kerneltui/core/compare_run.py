"""``kerneltui compare``'s work: is version B of a kernel faster than version A? (docs/compare.md)

1. Both versions pass correctness first, each in an ordinary run of the loop (the correctness rung
   and what it needs): a wrong kernel is not compared.
2. Then one judge (the reference, every input, every recheck) and one fresh candidate's worker that
   loads both kernels (``core.worker.child.ops_compare``); on every ``[[benchmarks]]`` case their calls are
   interleaved in ABBA and BAAB blocks (``core.rungs.compare_series``), timed with the benchmark's protocol.
3. The parent turns the raw times into each case's ratio B/A, its 95 % interval and the verdict, and
   the geometric mean over cases (``core.bench.compare``).

No GPU, no comparison: CPU wall times say nothing about GPU performance (``CompareError("no_gpu")``).
"""

from __future__ import annotations

import contextlib
import secrets
import uuid
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from kerneltui.core.bench import compare
from kerneltui.core.events import Emit
from kerneltui.core.loop import gpu_likely
from kerneltui.core.loop_factory import PoolKind, new_loop, new_pool
from kerneltui.core.rungs.compare_series import CaseTimes, CompareSettings, compare_case, judge_case
from kerneltui.core.rungs.context import RunContext, RunOptions
from kerneltui.core.task import Task, source_hash
from kerneltui.core.worker.contract.replies import DeviceInfo
from kerneltui.core.worker.contract.requests import LoadArgs
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess
from kerneltui.settings.bench import BenchSettings

ErrorKind = Literal["no_gpu", "wrong", "worker"]
NO_GPU = ("compare needs a CUDA GPU and this machine has none: on the CPU, kernels run under an interpreter "
          "whose times say nothing about GPU performance. Run it on the GPU machine (or with --remote)")


class CompareError(Exception):
    """A comparison that cannot be made, with what to do (``kind``: no_gpu, wrong, worker)."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class KernelVersion:
    """One side of a comparison: what a person calls it and the kernel text."""

    name: str  # e.g. "#3 (3f2a1b04)", "kernel.py (on disk)"
    source: str
    number: int | None = None  # in the task's history, where it came from there

    @property
    def source_hash(self) -> str:
        return source_hash(self.source)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source_hash": self.source_hash, "history_number": self.number}


@dataclass
class CompareReport:
    """The comparison's result: per case and the geometric mean."""

    task: str
    a: KernelVersion
    b: KernelVersion
    settings: CompareSettings
    cases: list[compare.CaseComparison] = field(default_factory=list)
    mean: compare.Verdict | None = None
    device: DeviceInfo = field(default_factory=lambda: DeviceInfo())

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task, "a": self.a.to_dict(), "b": self.b.to_dict(),
            "target": self.settings.target, "max_seconds": self.settings.max_seconds, "level": self.settings.level,
            "device": {k: self.device.get(k) for k in ("name", "arch", "gpu") if k in self.device},
            "cases": [c.to_dict() for c in self.cases],
            "geometric_mean": self.mean.to_dict() if self.mean else None,
        }


async def run_compare(task: Task, a: KernelVersion, b: KernelVersion, settings: CompareSettings,
                      pool: WorkerPool | None = None, emit: Emit | None = None,
                      progress: Any = None, checked: Collection[str] = (),
                      names: tuple[str, str] = ("A", "B")) -> CompareReport:
    """Check both versions, then compare them on every benchmark case (raises CompareError).

    ``checked`` names the sides ("A", "B") a caller has just checked, whose correctness runs are
    skipped (a proposal's trial checked B): the judge still rechecks every timed output of both kernels.
    ``names``: what the verdicts' sentences call A and B.
    """
    say = progress or (lambda message, fraction=None: None)
    own_pool = pool is None
    pool = pool or new_pool(PoolKind.ONE_RUN, task.backend, task.arch)
    try:
        if not task.benchmarks:
            raise CompareError("wrong", f"{task.name} has no [[benchmarks]] cases: add one to task.toml to compare "
                               "kernels on it")
        if getattr(pool.runner, "name", "local") == "local" and not gpu_likely(pool):
            raise CompareError("no_gpu", NO_GPU)
        loop = new_loop(task, pool, emit)
        for side, version in (("A", a), ("B", b)):
            if side in checked:
                continue
            say(f"checking {side}: {version.name}")
            report = await loop.run(RunOptions(rungs=["correctness"], kernel_source=version.source, origin="compare",
                                               record=False))
            if not report.ok:  # first: a kernel stopped by the static prechecks never reached a worker
                failed = next((r for r in report.results if r.status == "fail"), None)
                why = (failed.error or failed.summary).splitlines()[0] if failed else "it did not pass"
                raise CompareError("wrong", f"{side} ({version.name}) fails {failed.name if failed else 'its checks'}: "
                                   f"{why}. A wrong kernel is not compared: `kerneltui check` shows the details")
            if not report.device.get("gpu"):
                raise CompareError("no_gpu", NO_GPU)
        return await _interleave(task, pool, a, b, settings, emit, say, names)
    finally:
        if own_pool:
            await pool.close()


class LoadedPair:
    """Both kernels loaded in one fresh candidate's worker beside one judge, ready to compare on any
    case, as often as asked (``compare_on``); made by ``loaded_pair``."""

    def __init__(self, ctx: RunContext, judge: WorkerProcess, worker: WorkerProcess, loaded: dict[str, Any],
                 say: Any) -> None:
        self.ctx = ctx
        self.loaded = loaded  # the worker's compare_load reply (compile times, notes, B's module)
        self.judge = judge
        self.worker = worker
        self.say = say
        self.device = worker.info.copy()

    async def compare_on(self, index: int, settings: CompareSettings, a_name: str = "A",
                         b_name: str = "B") -> tuple[compare.CaseComparison, CaseTimes]:
        """One comparison on case ``index``: its own fresh inputs (a new secret), warm-up and stopping rule."""
        try:
            times = await compare_case(self.judge, self.worker, index, secrets.randbits(62), settings,
                                       self.ctx.timeout("benchmark"), self.say)
        except WorkerFailure as exc:
            raise CompareError("worker", f"comparing on case {index}: {exc.message}") from exc
        return judge_case(times, settings.bench.straggle_us, a_name, b_name, settings.level), times


@contextlib.asynccontextmanager
async def loaded_pair(task: Task, pool: WorkerPool, a: KernelVersion, b: KernelVersion,
                      bench: BenchSettings | None = None, emit: Emit | None = None,
                      say: Any = None) -> AsyncIterator[LoadedPair]:
    """A judge and a candidate's worker holding A and B; no other worker starts on the GPU meanwhile
    (``WorkerPool.quiet``). Raises CompareError when they cannot be made."""
    say = say or (lambda message, fraction=None: None)
    files = task.read_sources({task.kernel_file: a.source})
    ctx = RunContext(task=task, source=a.source, files=files, options=RunOptions(origin="compare", record=False),
                     pool=pool, run_id=uuid.uuid4().hex[:12], emit=emit or (lambda event: None),
                     source_hash=a.source_hash, version_dir=task.version_dir(a.source_hash),
                     configured_benchmark=lambda: bench or BenchSettings())
    phase = "starting the judge"
    try:
        judging = await ctx.judging()
        async with pool.quiet():
            phase = "loading both kernels"
            worker = await pool.acquire()
            ctx.hold(worker)
            args: LoadArgs = {**await ctx.load_args(judging), "second": b.source}
            loaded = await worker.request("compare_load", args, timeout=ctx.timeout("compile"), on_progress=say)
            if loaded.get("first_call_error"):
                raise CompareError("wrong", f"A ({a.name}) failed when loaded: {loaded['first_call_error']['message']}")
            yield LoadedPair(ctx, judging.judge, worker, loaded, say)
    except WorkerFailure as exc:
        raise CompareError("worker", f"{phase}: {exc.message}") from exc
    finally:
        await ctx.release_workers()


async def _interleave(task: Task, pool: WorkerPool, a: KernelVersion, b: KernelVersion, settings: CompareSettings,
                      emit: Emit | None, say: Any, names: tuple[str, str] = ("A", "B")) -> CompareReport:
    out = CompareReport(task=task.name, a=a, b=b, settings=settings)
    async with loaded_pair(task, pool, a, b, settings.bench, emit, say) as pair:
        out.device = pair.device
        if not pair.device.get("gpu"):
            raise CompareError("no_gpu", NO_GPU)
        for index in range(len(task.benchmarks)):
            found, times = await pair.compare_on(index, settings, *names)
            out.cases.append(found)
            say(f"case {found.label}: {found.verdict.text}")
            if times.failure:
                break  # a wrong output: the next cases would say the same
    out.mean = compare.geometric_mean(out.cases, *names, level=settings.level)
    return out


async def trial_comparison(task: Task, proposal_source: str, settings: CompareSettings | None = None,
                           pool: WorkerPool | None = None, emit: Emit | None = None, *,
                           disk_source: str | None = None, disk_checked: bool = True,
                           proposal_name: str = "the proposal") -> CompareReport:
    """A proposal's trial as an interleaved comparison: the kernel file on disk (A, ``disk_source``
    when the caller read it already) against the proposed text (B), which the trial's loop run has
    checked. A is checked first unless ``disk_checked`` (its latest run passed). What a proposal's card
    shows and auto mode's keep rule reads (``core.agent.trial_compare``)."""
    disk = KernelVersion(f"{task.kernel_file} (on disk)", task.kernel_source() if disk_source is None else disk_source)
    return await run_compare(task, disk, KernelVersion(proposal_name, proposal_source), settings or CompareSettings(),
                             pool=pool, emit=emit, checked=("A", "B") if disk_checked else ("B",),
                             names=("the file on disk", proposal_name))
