"""What a rung gets to work with during one verification run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from kerneltui.core.bench.device_peaks import DevicePeaks
from kerneltui.core.events import Emit, RungProgress
from kerneltui.core.rungs.judging import CaseRef, Judging, StepLimit, judge_died
from kerneltui.core.rungs.result import RungResult, SourceLocation, fail
from kerneltui.core.rungs.rung_metrics import (
    BenchmarkMetrics,
    BenchmarkRaw,
    CorrectnessOutcome,
    DumpMetrics,
    RunOutcome,
    TraceMetrics,
)
from kerneltui.core.task import Task
from kerneltui.core.task_remedies import raise_limit, smaller_sizes
from kerneltui.core.worker.contract.replies import DeviceInfo, LoadReply
from kerneltui.core.worker.contract.requests import LoadArgs
from kerneltui.core.worker.contract.seeds import seed_for
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess
from kerneltui.settings.bench import BenchSettings

if TYPE_CHECKING:  # the profiler's runner (and the sandbox under it) loads only when a profile runs
    from kerneltui.core.profile.runner import ProfileOutcome


@dataclass(frozen=True)
class ProfileOptions:
    """What the ``profile`` rung profiles (``kerneltui profile``'s flags)."""

    case: int | None = None  # index of the benchmark case; None: the first
    kernel_name: str | None = None  # a regex over kernel names
    launch_count: int | None = None
    timeout_s: float | None = None  # None: the task's [timeouts] profile


@dataclass(frozen=True)
class TraceOptions:
    """What the ``trace`` rung traces (``kerneltui trace``'s flags)."""

    case: int | None = None  # benchmark case index; None: the first
    reps: int | None = None  # traced calls; None: the worker's default


@dataclass
class RunOptions:
    rungs: list[str] | None = None  # None: the default set (every rung that is not on demand)
    seeds: int | None = None  # per test case (the hidden seed comes on top)
    timeout_s: float | None = None  # one limit for every rung, overriding the task's
    arch: str | None = None  # target for ahead-of-time compiles with no GPU
    kernel_source: str | None = None  # check this text instead of the kernel file (proposals)
    origin: str = "manual"
    record: bool = True  # store the version in the task's history
    # Who made the text, for the history: "agent p4", "agent p4, edited by you" (core.agent.written);
    # "": the caller does not know (core.history takes this text's earlier author, else "you").
    author: str = ""
    # A hand-edited compiler stage (core.override): its folder, relative to the task. Its files go
    # with the task and into the version hash; the judge never gets them.
    override_folder: str | None = None
    benchmark: BenchSettings | None = None  # this run's own; None: as configured ([benchmark])
    profile: ProfileOptions = field(default_factory=ProfileOptions)
    trace: TraceOptions = field(default_factory=TraceOptions)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, for the engine's socket and Ray (``from_dict`` reads it back)."""
        return asdict(self)

    def with_configured_benchmark(self) -> RunOptions:
        """These options with ``benchmark`` set to this process's ``[benchmark]`` (its config file and
        ``KERNELTUI_BENCHMARK_*``) unless they have their own: for a run handed to another process (the
        engine, a Ray node), which would otherwise time it with its own configuration."""
        if self.benchmark is not None:
            return self
        from kerneltui.config import benchmark_settings

        return replace(self, benchmark=benchmark_settings())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOptions:
        """The options ``to_dict`` wrote; keys this version does not know are ignored. A value of the
        wrong type raises ValueError naming the option (the engine's socket and Ray carry these from
        another process, perhaps another version of kerneltui)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        _check_types("run option ", values, _OPTION_TYPES)
        if values.get("benchmark") is not None:
            if not isinstance(values["benchmark"], Mapping):
                raise ValueError(f"run option benchmark must be an object of [benchmark] settings, "
                                 f"not {type(values['benchmark']).__name__}")
            values["benchmark"] = BenchSettings.from_mapping(values["benchmark"])
        values["profile"] = ProfileOptions(**_nested("profile", values.get("profile"), _PROFILE_TYPES))
        values["trace"] = TraceOptions(**_nested("trace", values.get("trace"), _TRACE_TYPES))
        return cls(**values)


# The JSON types each option may take (None where the option is optional); ints are numbers too.
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "rungs": (list, type(None)), "seeds": (int, type(None)), "timeout_s": (int, float, type(None)),
    "arch": (str, type(None)), "kernel_source": (str, type(None)), "origin": (str,), "record": (bool,),
    "author": (str,),
    "override_folder": (str, type(None)),
}
_PROFILE_TYPES: dict[str, tuple[type, ...]] = {
    "case": (int, type(None)), "kernel_name": (str, type(None)), "launch_count": (int, type(None)),
    "timeout_s": (int, float, type(None)),
}
_TRACE_TYPES: dict[str, tuple[type, ...]] = {"case": (int, type(None)), "reps": (int, type(None))}


def _check_types(prefix: str, values: Mapping[str, Any], types: Mapping[str, tuple[type, ...]]) -> None:
    for key, want in types.items():
        if key not in values:
            continue
        value = values[key]
        # bool is an int to Python, never to a person: seeds=true is a mistake, record=1 too
        fits = isinstance(value, bool) if bool in want else isinstance(value, want) and not isinstance(value, bool)
        if not fits:
            names = " or ".join("null" if t is type(None) else _JSON_NAMES.get(t, t.__name__) for t in want)
            raise ValueError(f"{prefix}{key} must be {names}, not {value!r}")
    if isinstance(values.get("rungs"), list) and not all(isinstance(r, str) for r in values["rungs"]):
        raise ValueError(f"{prefix}rungs must be a list of rung names, not {values['rungs']!r}")


_JSON_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list"}


def _nested(name: str, raw: Any, types: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"run option {name} must be an object, not {raw!r}")
    unknown = sorted(set(raw) - set(types))
    if unknown:
        raise ValueError(f"run option {name} has field(s) this version does not know: {', '.join(unknown)}")
    _check_types(f"run option {name}.", raw, types)
    return dict(raw)


class DumpData(TypedDict):
    """The dump rung's folder, its one-line summary and its metrics (``RunData.dump``)."""

    dir: str
    summary: str
    metrics: DumpMetrics


@dataclass
class RunData:
    """What rungs hand each other during a run; the report keeps it as ``RunReport.data`` (``to_dict``)."""

    load: LoadReply | None = None  # compile → run, correctness: the candidate worker's ``load`` reply
    run: RunOutcome | None = None  # the run rung's outputs, problems and launches
    correctness: CorrectnessOutcome | None = None  # checks, cases, seeds, worst metrics
    benchmark: BenchmarkMetrics | None = None  # the benchmark rung's metrics → roofline
    benchmark_raw: BenchmarkRaw | None = None  # the raw replies of the three functions timed
    device_peaks: DevicePeaks | None = None  # the device's measured peaks → roofline
    dump: DumpData | None = None  # the dump's folder, summary and metrics
    profile: ProfileOutcome | None = None
    trace: TraceMetrics | None = None  # the trace rung's metrics

    def to_dict(self) -> dict[str, Any]:
        """The parts the run produced, by name (what ``check --json`` and the engine carry)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
        return out


@dataclass
class RunContext:
    task: Task
    source: str
    files: dict[str, str]
    options: RunOptions
    pool: WorkerPool
    run_id: str
    emit: Emit
    source_hash: str
    version_dir: Path
    results: dict[str, RungResult] = field(default_factory=dict)
    device: DeviceInfo = field(default_factory=lambda: DeviceInfo())
    data: RunData = field(default_factory=RunData)
    # Where the benchmark's settings come from when the run brings none of its own (the Loop's).
    configured_benchmark: Callable[[], BenchSettings] = BenchSettings
    _check_worker: WorkerProcess | None = None
    _workers: list[WorkerProcess] = field(default_factory=list)
    _judging: Judging | None = None

    # -- workers --------------------------------------------------------------------------------

    async def check_worker(self) -> WorkerProcess:
        """The worker the compile/run/correctness/dump rungs share for this run."""
        if self._check_worker is None or not self._check_worker.alive:
            if self._check_worker is not None and self.data.load is not None:
                raise WorkerFailure("crash", "the check worker is gone (it crashed or was killed in an earlier rung)")
            self._check_worker = await self.pool.acquire()
            self._workers.append(self._check_worker)
            self.device = self._check_worker.info.copy()
        return self._check_worker

    async def judging(self) -> Judging:
        """The run's judge (reference loaded), started once and shared by every rung of the run."""
        if self._judging is None:
            judge = await self.pool.acquire("judge")
            self._workers.append(judge)
            self._judging = await Judging.start(
                judge, self.run_id, self.task.to_dict(), self.judge_files(), self.backend_label(),
                self.timeout("compile"), self.progress_for("compile"), self.step_limit("compile"))
        elif not self._judging.judge.alive:
            raise WorkerFailure("crash", "the judge is gone (it crashed or was killed in an earlier rung)")
        return self._judging

    async def loaded_worker(self, purpose: str) -> WorkerProcess:
        """A fresh worker with the task and candidate loaded (e.g. benchmark: separate from checks)."""
        judging = await self.judging()
        worker = await self.pool.acquire()
        self._workers.append(worker)
        if not self.device:
            self.device = worker.info.copy()
        await worker.request("load", await self.load_args(judging), timeout=self.timeout("compile"),
                             on_progress=self.progress_for(purpose))
        return worker

    async def load_args(self, judging: Judging) -> LoadArgs:
        """What the candidate's worker loads: the task's files without the reference, what the judge
        says it needs to build the candidate, and the first test case's inputs to compile on."""
        first = self.task.tests[0]
        case = CaseRef(0, dict(first.params), self.seed_for(0, 0), first.label)
        key, first_inputs = await judging.inputs(case, self.timeout("compile"), reference=False, rolling=False,
                                                 limit=self.step_limit("compile"))
        judging.release([key])  # with the next request: the worker has loaded by then
        args: LoadArgs = {"task": self.task.to_dict(), "files": self.candidate_files(), "setup": judging.setup,
                                "first_inputs": first_inputs, "exchange": str(judging.exchange)}
        if self.options.override_folder:  # hand-edited compiler output (core.override)
            args["override"] = self.options.override_folder
        return args

    def candidate_files(self) -> dict[str, str]:
        """The task's files as the candidate's worker gets them: never the reference."""
        return {name: text for name, text in self.files.items() if name != self.task.reference_file}

    def judge_files(self) -> dict[str, str]:
        """The task's files as the judge gets them: never the kernel or its launcher (nor an edited
        compiler output of it)."""
        edited = self.options.override_folder
        return {name: text for name, text in self.files.items()
                if name not in (self.task.kernel_file, self.task.entry_file)
                and not (edited and name.startswith(f"{edited}/"))}

    def seed_for(self, case_index: int, k: int) -> int:
        case = self.task.tests[case_index]
        return seed_for(case_index, case.seed, k)

    def backend_label(self) -> str:
        return self.task.backend_spec.label

    def hold(self, worker: WorkerProcess) -> None:
        """A worker a rung acquired itself, released with the run's others."""
        self._workers.append(worker)

    async def release_workers(self) -> None:
        if self._judging is not None:
            await self._judging.close()
            self._judging = None
        # Side by side: each close may wait for its worker to exit.
        await asyncio.gather(*(self.pool.release(worker) for worker in self._workers))
        self._workers.clear()
        self._check_worker = None

    # -- helpers --------------------------------------------------------------------------------

    def timeout(self, rung: str) -> float:
        if self.options.timeout_s is not None:
            return float(self.options.timeout_s)
        return self.task.timeouts.for_rung(rung)

    def step_limit(self, rung: str) -> StepLimit:
        """``rung``'s whole limit and how to change it, for the task error of a reference too slow for it."""
        raise_it = "--timeout SECONDS" if self.options.timeout_s is not None else \
            raise_limit(self.task.format, rung, self.task.reference_file)
        return StepLimit(self.timeout(rung), raise_it, smaller_sizes(self.task.format), self.task.reference_file)

    def progress_for(self, rung: str) -> Callable[[str, float | None], None]:
        def progress(message: str, fraction: float | None = None) -> None:
            self.emit(RungProgress(run_id=self.run_id, rung=rung, message=message, fraction=fraction))

        return progress

    @property
    def has_gpu(self) -> bool:
        info = self.device or self.pool.device_info
        return bool(info.get("gpu"))

    @property
    def arch(self) -> str:
        return self.options.arch or str(self.device.get("arch") or self.task.arch)

    def failure(self, rung: str, exc: WorkerFailure, worker: WorkerProcess | None = None, mark: int = 0,
                message: str | None = None) -> RungResult:
        """The failed result of a rung whose worker request failed: the message (``message`` where the
        rung words it itself), the candidate's file:line, the worker's traceback and its stderr since
        ``mark``, and the kind of failure in ``metrics["failure"]``. A judge's death is worded as the
        judge's (``judge_died``: the task's, at this run's sizes), never as the kernel's failure."""
        judged = judge_died(exc, self.step_limit(rung))
        if judged is not exc:
            exc, message = judged, None
        details = (exc.error.get("traceback") or "") + (worker.stderr_since(mark) if worker is not None else "")
        return fail(rung, exc.message if message is None else message, location=self.location_from(exc.error),
                    details=details, metrics={"failure": exc.kind})

    def location_from(self, error: Mapping[str, Any]) -> SourceLocation | None:
        file, line = error.get("file"), error.get("line")
        if file and line:
            return SourceLocation(str(file), int(line))
        return None


RungFn = Callable[[RunContext], Awaitable[RungResult]]


@dataclass(frozen=True)
class RungSpec:
    name: str
    title: str
    run: RungFn
    requires: tuple[str, ...] = ()  # rungs that must pass first (added automatically)
    needs_gpu: bool = False
    on_demand: bool = False  # not part of the default set (profile, trace)
    own_worker: bool = False  # runs in a worker of its own (benchmark: separate from the checks)
    no_gpu_reason: Callable[[RunContext], str] | None = None  # a needs_gpu rung's own "skipped: no GPU" sentence


class Stopwatch:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start
