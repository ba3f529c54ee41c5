"""One verification run: the rungs in order, each result emitted as it lands.

The loop is the engine every front end drives: ``kerneltui check`` (headless), ``watch``, the TUI,
the agent's trials and auto mode, and session re-verification. It emits plain events
(``core.events``) and returns a :class:`RunReport`; it never prints and never touches a widget.

Cancellation (a save during a run) cancels the asyncio task running :meth:`Loop.run`; the worker
request in flight kills its worker's process group, and the loop reports the run as cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from kerneltui import config
from kerneltui.core import override
from kerneltui.core import rungs as rung_registry
from kerneltui.core.environment_fault import EnvironmentFault, from_os_error
from kerneltui.core.events import (
    Emit,
    Event,
    RunFinished,
    RungFinished,
    RungStarted,
    RunStarted,
    VerdictReached,
)
from kerneltui.core.integrity import summarise as summarise_integrity
from kerneltui.core.rungs.context import RunContext, RunOptions, Stopwatch
from kerneltui.core.rungs.result import RungResult, fail, skip
from kerneltui.core.rungs.rung_metrics import failure_of
from kerneltui.core.task import Task, source_hash
from kerneltui.core.verdict import VerdictState, verdict_of
from kerneltui.core.worker.contract.replies import DeviceInfo
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.core.worker.parent.process import WorkerFailure
from kerneltui.settings.bench import BenchSettings


class LocationJson(TypedDict):
    file: str
    line: int


class RungJson(TypedDict):
    """One rung in a report's JSON form (``check --json``, batch and suite results)."""

    name: str
    status: str
    summary: str
    metrics: Mapping[str, object]  # the rung's (rungs.rung_metrics)
    error: str | None
    duration_s: float
    location: LocationJson | None


class ReportError(TypedDict):
    kind: str  # "task", "environment", "usage" …
    message: str
    file: str | None
    line: int | None


class VerdictJson(TypedDict):
    """A verdict announced while the run went on (``VerdictReached``), and when."""

    ok: bool
    final: bool
    failed_rung: str | None
    after_s: float
    pending: list[str]  # the rungs still to end when it was announced


class RunReportJson(TypedDict):
    """``RunReport.to_json()``: what ``check --json`` prints and batch, suite and Ray runs carry."""

    ok: bool
    task: str
    device: DeviceInfo
    source_hash: str
    version: str | None
    duration_s: float
    cancelled: bool
    environment: str | None
    integrity: dict[str, Any]  # IntegritySummary.to_dict()
    verdicts: list[VerdictJson]
    rungs: list[RungJson]
    # Added by ``check --json`` when the task or the machine stopped the run:
    exit_code: NotRequired[int]
    error: NotRequired[ReportError]


@dataclass
class RunReport:
    run_id: str
    task: str
    ok: bool
    results: list[RungResult]
    device: DeviceInfo
    source_hash: str
    duration_s: float
    cancelled: bool = False
    version_id: str | None = None
    version_dir: str | None = None
    data: dict[str, Any] = field(default_factory=dict)  # raw op results (not serialised to JSON output)
    # A fault of the machine stopped the run (core.environment_fault): what to do. Not the kernel's
    # verdict: no history row, and `check` exits 3.
    environment: str | None = None
    # The verdicts announced while the run went on (VerdictReached): a PASS so far, then the final one.
    verdicts: list[VerdictReached] = field(default_factory=list)

    def result(self, name: str) -> RungResult | None:
        return next((r for r in self.results if r.name == name), None)

    def to_json(self) -> RunReportJson:
        return {
            "ok": self.ok,
            "task": self.task,
            "device": self.device,
            "source_hash": self.source_hash,
            "version": self.version_id,
            "duration_s": round(self.duration_s, 3),
            "cancelled": self.cancelled,
            "environment": self.environment,
            "integrity": summarise_integrity(self.results).to_dict(),
            # When the verdict was known, before the rungs that only describe the version ended.
            "verdicts": [{"ok": v.ok, "final": v.final, "failed_rung": v.failed_rung or None,
                          "after_s": round(v.after_s, 3), "pending": v.pending} for v in self.verdicts],
            "rungs": [
                {"name": r.name, "status": r.status, "summary": r.summary, "metrics": r.metrics, "error": r.error,
                 "duration_s": round(r.duration_s, 3),
                 "location": {"file": r.location.file, "line": r.location.line} if r.location else None}
                for r in self.results
            ],
        }


# Called after every run with the report; the history store registers itself here.
RunObserver = Callable[[Task, str, RunReport, RunOptions], Any]


class Loop:
    def __init__(self, task: Task, pool: WorkerPool, emit: Emit | None = None,
                 observers: list[RunObserver] | None = None,
                 benchmark_settings: Callable[[], BenchSettings] | None = None) -> None:
        self.task = task
        # Read per run, so an edited [benchmark] applies to the next run (a run may bring its own).
        self.benchmark_settings = benchmark_settings or config.benchmark_settings
        self.pool = pool  # built by core.loop_factory, as every pool is
        self.emit: Emit = emit or (lambda event: None)
        self.observers: list[RunObserver] = list(observers or [])

    async def close(self) -> None:
        await self.pool.close()

    async def run(self, options: RunOptions | None = None) -> RunReport:
        """One verification run; a run whose remote worker lost its connection is run once more."""
        options = options or RunOptions()
        report = await self._run_once(options, final=False)
        lost = lost_connection(report.results)
        if lost is None or report.cancelled:
            return report
        self.emit(_notice("warning", f"{lost}: running the check again on a fresh connection"))
        retry = await self._run_once(options, final=True)
        retry.data["connection_retry"] = lost
        return retry

    async def _run_once(self, options: RunOptions, final: bool) -> RunReport:
        task = self.task
        names = rung_registry.resolve(options.rungs)
        source = options.kernel_source if options.kernel_source is not None else task.kernel_source()
        files = task.read_sources({task.kernel_file: source})
        digest = source_hash(source)
        edited = options.override_folder
        if edited:  # hand-edited PTX/TTGIR: a version of its own (core.override)
            edited_files = override.read_files(task, str(edited))
            files.update(edited_files)
            digest = source_hash(source + override.fingerprint(edited_files))
        run_id = uuid.uuid4().hex[:12]
        version_dir = task.version_dir(digest)
        ctx = RunContext(
            task=task, source=source, files=files, options=options, pool=self.pool, run_id=run_id,
            emit=self.emit, source_hash=digest, version_dir=version_dir,
            configured_benchmark=self.benchmark_settings,
        )
        if options.arch:
            self.pool.arch = options.arch
        clock = Stopwatch()
        self.emit(RunStarted(run_id=run_id, task=task.name, kernel_file=task.kernel_file, source_hash=digest,
                             rungs=names, origin=options.origin))
        if not self.pool.replenish and gpu_likely(self.pool) and any(rung_registry.spec(n).own_worker for n in names):
            # A one-shot pool on a GPU box: the benchmark's own worker starts now, beside the checks'
            # judge and worker, instead of after the compile rung (its start is seconds of imports).
            self.pool.prestart(("candidate",), count=2)
        results: list[RungResult] = []
        verdicts: list[VerdictReached] = []
        cancelled = False
        cancel_reason = ""
        environment: str | None = None
        # A run of checks alone (no rung with a worker of its own) replaces the spares it takes when
        # it ends, not beside it; a run that needs a further worker before it ends replaces as it goes.
        holding = (contextlib.nullcontext() if any(rung_registry.spec(n).own_worker for n in names)
                   else self.pool.hold_spares())
        try:
            with holding:
                for i, name in enumerate(names):
                    try:
                        result = await self._run_rung(ctx, name)
                    except EnvironmentFault as fault:
                        environment = fault.message
                        break
                    results.append(result)
                    ctx.results[name] = result
                    self.emit(RungFinished(run_id=run_id, result=result))
                    verdict = _verdict_news(verdicts, verdict_of(names, ctx.results, ctx.has_gpu), run_id, clock)
                    if verdict is not None:
                        verdicts.append(verdict)
                        self.emit(verdict)
                    if name == "compile" and not self.pool.replenish and ctx.has_gpu and any(
                        rung_registry.spec(n).own_worker for n in names[i + 1:]
                    ):
                        # A pool that does not keep spares (one-shot commands) learns only now that a
                        # GPU rung with a worker of its own will follow: start that worker while the
                        # checks run (the run's judge serves that rung too).
                        self.pool.prestart(("candidate",))
        except asyncio.CancelledError as exc:
            cancelled = True
            # Whoever cancelled says why through the cancel message (core.scheduler: a newer save).
            cancel_reason = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else ""
            raise
        finally:
            late = await _release_workers(ctx)
            if late is not None and not cancelled:  # cancelled while it released: a cancelled run
                cancelled, cancel_reason = True, late
            device = ctx.device or self.pool.device_info.copy()
            ok = bool(results) and all(r.status != "fail" for r in results) and not cancelled and environment is None
            report = RunReport(
                run_id=run_id, task=task.name, ok=ok, results=results, device=device, source_hash=digest,
                duration_s=clock.seconds, cancelled=cancelled, version_dir=str(version_dir), data=ctx.data.to_dict(),
                environment=environment, verdicts=verdicts,
            )
            # A run that lost its connection is not this version's result; the retry's is. A run the
            # machine stopped is no version's result.
            superseded = not final and lost_connection(results) is not None
            if not cancelled and not superseded and environment is None:
                self._save_version(ctx, report)
                for observer in self.observers:
                    try:
                        value = observer(task, source, report, options)
                        if asyncio.iscoroutine(value):
                            await value
                    except Exception as exc:  # an observer must never lose the run's result
                        self.emit(_notice("error", f"could not record the run: {exc}"))
            self.emit(RunFinished(run_id=run_id, ok=ok, results=results, duration_s=clock.seconds,
                                  cancelled=cancelled, version_id=report.version_id, device=device,
                                  cancel_reason=cancel_reason, environment=environment or ""))
        if late is not None:
            raise asyncio.CancelledError(late)
        return report

    async def _run_rung(self, ctx: RunContext, name: str) -> RungResult:
        spec = rung_registry.spec(name)
        for dep in spec.requires:
            dep_result = ctx.results.get(dep)
            if dep_result is not None and not dep_result.passed:
                verb = "was skipped" if dep_result.status == "skip" else "failed"
                return skip(name, f"{dep} {verb}")
        pre = ctx.results.get("prechecks")
        if name != "prechecks" and pre is not None and pre.status == "fail":
            return skip(name, "prechecks failed (fix the strict findings first)")
        if spec.needs_gpu and ctx.device and not ctx.has_gpu:
            return skip(name, spec.no_gpu_reason(ctx) if spec.no_gpu_reason else
                        "no GPU: this rung needs one (CPU numbers are never shown as GPU performance)")
        self.emit(RungStarted(run_id=ctx.run_id, rung=name))
        watch = Stopwatch()
        try:
            result = await spec.run(ctx)
        except (asyncio.CancelledError, EnvironmentFault):
            raise
        except OSError as exc:
            fault = from_os_error(exc, under=str(ctx.version_dir))
            if fault is not None:
                raise fault from exc
            import traceback

            result = fail(name, f"internal error in the {name} rung: {type(exc).__name__}: {exc}",
                          details=traceback.format_exc())
        except WorkerFailure as exc:
            result = fail(name, exc.message, details=exc.stderr, location=ctx.location_from(exc.error),
                          metrics={"failure": exc.kind})
        except Exception as exc:
            import traceback

            result = fail(name, f"internal error in the {name} rung: {type(exc).__name__}: {exc}",
                          details=traceback.format_exc())
        if not result.duration_s:
            result = _with_duration(result, watch.seconds)
        return result

    def _save_version(self, ctx: RunContext, report: RunReport) -> None:
        """Keep the checked source beside its dumps: the version folder is named by its hash."""
        try:
            ctx.version_dir.mkdir(parents=True, exist_ok=True)
            target = ctx.version_dir / Path(ctx.task.kernel_file).name
            if not target.exists():
                target.write_text(ctx.source, encoding="utf-8")
            edited = ctx.options.override_folder
            if edited:  # the edited compiler output is part of this version's source
                for name, text in ctx.files.items():
                    if name.startswith(f"{edited}/"):
                        copy = ctx.version_dir / "override" / name[len(edited) + 1:]
                        copy.parent.mkdir(parents=True, exist_ok=True)
                        copy.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.emit(_notice("warning", f"could not save the version to {ctx.version_dir}: {exc.strerror}"))


def _verdict_news(announced: list[VerdictReached], state: VerdictState | None, run_id: str,
                  clock: Stopwatch) -> VerdictReached | None:
    """The verdict to announce now: the first one known, or one that settles a PASS so far (None when
    nothing new is known)."""
    if state is None:
        return None
    last = announced[-1] if announced else None
    if last is not None and (last.final or state.undecided):
        return None  # settled already, or still a PASS so far
    return VerdictReached(run_id=run_id, ok=state.ok, failed_rung=state.failed_rung, undecided=list(state.undecided),
                          pending=list(state.pending), after_s=clock.seconds)


def gpu_likely(pool: WorkerPool) -> bool:
    """Whether this machine has a GPU, before any worker has said so (the parent imports no torch)."""
    if pool.device_info:
        return bool(pool.device_info.get("gpu"))
    return getattr(pool.runner, "name", "local") == "local" and os.path.exists("/dev/nvidiactl")


def lost_connection(results: list[RungResult]) -> str | None:
    """The message of the first rung that failed because a remote worker's connection was lost."""
    for r in results:
        if r.status == "fail" and failure_of(r) == "connection":
            return r.summary
    return None


async def _release_workers(ctx: RunContext) -> str | None:
    """Release the run's workers to the end even when cancelled meanwhile (a second cancel of a
    cancelled run, a shutdown): cut short, they would run on unreleased. The reason of such a cancel
    ("" without one), or None."""
    release = asyncio.ensure_future(ctx.release_workers())
    late: str | None = None
    while not release.done():
        try:
            await asyncio.shield(release)
        except asyncio.CancelledError as exc:
            late = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else ""
    release.result()  # its own error, if it had one
    return late


def _with_duration(result: RungResult, seconds: float) -> RungResult:
    from dataclasses import replace

    return replace(result, duration_s=seconds)


def _notice(level: str, message: str) -> Event:
    from kerneltui.core.events import Notice

    return Notice(level=level, message=message, source="loop")
