"""Verifying many candidate kernels for one task, and ranking them.

Every candidate gets a whole verification run (the same rungs as ``kerneltui check``) in a *slot*:
one slot per visible GPU (``CUDA_VISIBLE_DEVICES`` pins its workers to it, so a benchmark never
shares a GPU with another), or ``-j`` slots on a machine without one. A slot runs one candidate
at a time with fresh single-use workers, so a crashing candidate costs only its own result.
The Ray executor (``core.remote.ray_runner``) runs the same runs as Ray tasks instead.

Ranking: correct candidates first, then by benchmark median (fastest first; no number last), then
by name, so the table reads the same on every run.

A candidate whose run a fault of the machine stopped (a full disk, a folder kerneltui may not write,
a bad setting: ``core.environment_fault``) has no verdict: it is marked ``ERROR (environment)`` with
what to do, never counted as incorrect, and ranked after the candidates that have one.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from kerneltui.core.loop import RunObserver, RunReport
from kerneltui.core.loop_factory import PoolKind, check_once, new_pool
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.rungs.rung_metrics import BenchmarkMetrics
from kerneltui.core.task import Task
from kerneltui.core.worker.parent.runner import LocalRunner, Runner

KERNEL_SUFFIXES = (".py", ".cu")
DEFAULT_CPU_SLOTS = 2


class BatchError(Exception):
    """A batch that cannot start as asked (no candidates, a bad glob, no such folder)."""


@dataclass(frozen=True)
class Candidate:
    name: str  # the file's path as given (relative where it was), shown in the table
    path: Path
    source: str


@dataclass(frozen=True)
class Slot:
    """Where one candidate at a time is verified: a GPU (by index) or a share of this CPU."""

    label: str  # "gpu 0", "cpu 1", "box gpu 1"
    gpu: str | None = None  # the CUDA_VISIBLE_DEVICES value its workers get
    make_runner: Callable[[dict[str, str]], Runner] | None = None  # default: this machine

    def runner(self) -> Runner:
        env = {"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None else {}
        if self.make_runner is not None:
            return self.make_runner(env)
        return LocalRunner(env=env)


class Placement(TypedDict, total=False):
    """Who held which GPU when: where a candidate's run went (the batch's and the suite's results);
    empty for a run that never started."""

    host: str
    gpu: str | None  # CUDA_VISIBLE_DEVICES of the run
    pid: int  # the Ray worker's process
    started_at: float  # epoch seconds
    finished_at: float


@dataclass
class CandidateResult:
    name: str
    correct: bool  # every check passed (compile, run, correctness and whatever else ran)
    median_ms: float | None  # the benchmark's median (geomean over cases), None without a GPU
    speedup: float | None  # against the reference, when benchmarked
    failure: str | None  # the first failed rung's line, for the table
    where: str  # the slot (or Ray node and GPU) that ran it
    duration_s: float
    report: Mapping[str, Any] = field(default_factory=dict)  # RunReport.to_json() (loop.RunReportJson); empty: none
    # host, gpu (CUDA_VISIBLE_DEVICES), started_at/finished_at (epoch s): who held which GPU when
    placement: Placement = field(default_factory=lambda: Placement())
    # the task could not be loaded where the run went (the engine loads it again by path): the problem's
    # error, not the candidate's
    task_error: bool = False
    # A fault of the machine stopped the run (core.environment_fault): what to do. No verdict.
    environment: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "correct": self.correct, "median_ms": self.median_ms, "speedup": self.speedup,
                "failure": self.failure, "environment": self.environment, "where": self.where,
                "duration_s": round(self.duration_s, 3), "placement": self.placement, "report": self.report}


def find_candidates(spec: str, task: Task) -> list[Candidate]:
    """Kernel files named by a folder (its kernel files), a glob pattern, or one file."""
    path = Path(spec).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in KERNEL_SUFFIXES
                       and not p.name.startswith((".", "_")))
        if not files:
            raise BatchError(f"{spec}: no kernel files (*.py, *.cu) in this folder")
    elif path.is_file():
        files = [path]
    else:
        matches = sorted(glob.glob(os.path.expanduser(spec), recursive=True))
        files = [Path(m) for m in matches if Path(m).is_file()]
        if not files:
            raise BatchError(f"{spec}: no such folder or file, and no file matches it as a glob pattern")
    wanted = Path(task.kernel_file).suffix
    wrong = [f for f in files if f.suffix != wanted]
    if wrong and len(wrong) == len(files):
        raise BatchError(f"{spec}: the task's kernel is a {wanted} file, but these are {wrong[0].suffix} files")
    out: list[Candidate] = []
    for f in files:
        if f.suffix != wanted:
            continue
        try:
            out.append(Candidate(name=str(f), path=f.resolve(), source=f.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise BatchError(f"{f}: cannot read it: {exc}") from exc
    return out


def visible_gpus() -> list[str]:
    """GPU indices this process may use, without importing torch: CUDA_VISIBLE_DEVICES, else nvidia-smi."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip().isdigit()] if out.returncode == 0 else []


def local_slots(jobs: int | None = None, gpus: list[str] | None = None) -> list[Slot]:
    """One slot per visible GPU (``jobs`` may lower that), else ``jobs`` CPU slots (default 2)."""
    gpus = visible_gpus() if gpus is None else gpus
    if gpus:
        count = min(len(gpus), jobs) if jobs else len(gpus)
        return [Slot(label=f"gpu {g}", gpu=g) for g in gpus[:count]]
    return [Slot(label=f"cpu {i}") for i in range(max(1, jobs or DEFAULT_CPU_SLOTS))]


def result_from_report(name: str, report: Mapping[str, Any], where: str,
                       placement: Placement | None = None) -> CandidateResult:
    rungs = report.get("rungs") or []
    failed = next((r for r in rungs if r.get("status") == "fail"), None)
    bench = next((r for r in rungs if r.get("name") == "benchmark" and r.get("status") in ("ok", "warn")), None)
    metrics: BenchmarkMetrics = {}
    if bench and bench.get("metrics"):
        metrics = bench["metrics"]
    failure = None
    if failed is not None:
        failure = f"{failed.get('name')}: {failed.get('error') or failed.get('summary')}".splitlines()[0][:200]
    environment = report.get("environment") or None
    return CandidateResult(
        name=name, correct=bool(report.get("ok")) and failed is None and environment is None,
        median_ms=_num(metrics.get("median_ms")), speedup=_num(metrics.get("speedup_vs_reference")),
        failure=environment or failure, where=where, duration_s=float(report.get("duration_s") or 0.0), report=report,
        placement=(placement or Placement()).copy(), environment=environment)


def failed_result(name: str, message: str, where: str, duration_s: float = 0.0,
                  task_error: bool = False) -> CandidateResult:
    """A candidate whose run never produced a report (its Ray task died, the runner failed, the task
    could not be loaded there)."""
    return CandidateResult(name=name, correct=False, median_ms=None, speedup=None, failure=message, where=where,
                           duration_s=duration_s, task_error=task_error)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value == value else None


def rank(results: list[CandidateResult]) -> list[CandidateResult]:
    return sorted(results, key=lambda r: (not r.correct, r.environment is not None, r.median_ms is None,
                                          r.median_ms if r.median_ms is not None else 0.0, r.name))


Progress = Callable[[CandidateResult], None]


async def verify_local(task: Task, candidates: list[Candidate], slots: list[Slot], options: RunOptions,
                       observers: list[RunObserver] | None = None, on_result: Progress | None = None,
                       ) -> list[CandidateResult]:
    """Verify every candidate, one at a time per slot; results in ranked order."""
    results = await verify_pairs([(task, c) for c in candidates], slots, options, observers, on_result)
    return rank(results)


async def verify_pairs(pairs: list[tuple[Task, Candidate]], slots: list[Slot], options: RunOptions,
                       observers: list[RunObserver] | None = None, on_result: Progress | None = None,
                       ) -> list[CandidateResult]:
    """Verify each (task, candidate) pair, one at a time per slot; results in finishing order
    (a suite gives every pair a task of its own, a batch the same task)."""
    queue: asyncio.Queue[tuple[Task, Candidate]] = asyncio.Queue()
    for pair in pairs:
        queue.put_nowait(pair)
    results: list[CandidateResult] = []

    async def drain(slot: Slot) -> None:
        runner = slot.runner()
        try:
            while True:
                try:
                    task, candidate = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                result = await verify_one(task, candidate, runner, options, slot.label, observers, slot.gpu)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        finally:
            close = getattr(runner, "close", None)  # an SSH slot holds a master connection
            if close is not None:
                await close()

    await asyncio.gather(*(drain(slot) for slot in slots))
    return results


async def verify_one(task: Task, candidate: Candidate, runner: Runner, options: RunOptions, where: str,
                     observers: list[RunObserver] | None = None, gpu: str | None = None) -> CandidateResult:
    from kerneltui.core import rungs as rung_registry

    # A second worker only when a rung must not share the check worker (the benchmark).
    needs_own = any(rung_registry.spec(n).own_worker for n in rung_registry.resolve(options.rungs))
    kind = PoolKind.STANDING if needs_own else PoolKind.ONE_RUN
    pool = new_pool(kind, task.backend, options.arch or task.arch, runner)
    opts = replace(options, kernel_source=candidate.source, origin="batch")
    started_at = time.time()
    try:
        report: RunReport = await check_once(task, opts, observers=observers, pool=pool)
    except Exception as exc:  # a run that cannot even start must not stop the rest of the batch
        return failed_result(candidate.name, f"could not run: {type(exc).__name__}: {exc}", where)
    finally:
        await pool.close()
    placement: Placement = {"host": runner.describe(), "gpu": gpu, "started_at": started_at, "finished_at": time.time()}
    return result_from_report(candidate.name, report.to_json(), where, placement)


def format_table(results: list[CandidateResult]) -> str:
    """The ranked table: rank, verdict, median, speedup, where it ran, and the failure if any."""
    rows = [("#", "kernel", "verdict", "median", "speedup", "where", "note")]
    for i, r in enumerate(results, 1):
        verdict = "correct" if r.correct else "ERROR (environment)" if r.environment else "FAILED"
        median = f"{r.median_ms * 1000:.1f} µs" if r.median_ms is not None else "—"
        speed = f"{r.speedup:.2f}×" if r.speedup is not None else "—"
        rows.append((str(i), r.name, verdict, median, speed, r.where, r.failure or ""))
    widths = [max(len(row[c]) for row in rows) for c in range(6)]
    lines = ["  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:6])) + ("  " + row[6] if row[6] else "")
             for row in rows]
    return "\n".join(line.rstrip() for line in lines)
