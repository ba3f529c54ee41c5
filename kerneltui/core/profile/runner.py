"""Run one profile: ncu around the profiling target, then read the report back and summarise it.

ncu runs in the sandbox a worker runs in (``core.sandbox``: scrubbed environment, supervisor,
network namespace, Landlock, limits), with its own scratch folder; it may write only there, in the
profile's work folder and in the version's folder (the report). The timeout and cancellation (a save
during the run) end it and everything below it, the profiled program included. The target compiles
its kernels into private caches in the scratch folder, so the line tables ncu imports the source
through name the target's own task copy: a kernel from the shared cache would name the copy of the
worker that first compiled it, removed with that worker. The report and the CSV pages stay in the
version's folder next to the kernel source they describe:

    <version>/profile.ncu-rep              open it in the Nsight Compute GUI
    <version>/profile-raw.csv              every metric of every profiled launch
    <version>/profile-details.csv          sections and ncu's rule results
    <version>/profile-source-sass.csv      samples per SASS instruction
    <version>/profile-source-cuda-sass.csv samples per source line, with its instructions
    <version>/profile.json                 the summary and hot spots (what the TUI and agent read)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui.core.backends import compile_caches
from kerneltui.core.profile.command import DEFAULT_LAUNCH_COUNT, REPORT_NAME, ProfileCommand, import_argv
from kerneltui.core.profile.csvpages import parse_details, parse_raw
from kerneltui.core.profile.errors import ProfilerProblem, diagnose, no_ncu
from kerneltui.core.profile.hotspots import KernelHotSpots, build_hotspots, task_relative
from kerneltui.core.profile.locate import find_ncu
from kerneltui.core.profile.spec import CaseChoiceError, choose_case, make_spec, target_argv, target_env
from kerneltui.core.profile.summary import ProfileResult, summarise_report
from kerneltui.core.redact import redact_tree
from kerneltui.core.sandbox.box import WorkerBox, defer_filesystem_rules, open_box
from kerneltui.core.sandbox.environment import SCRATCH_ENV
from kerneltui.core.sandbox.settings import load_settings
from kerneltui.core.sandbox.support import support
from kerneltui.core.task import Task
from kerneltui.core.worker.parent.runner import kill_group, wait_or_force

Progress = Callable[[str, float | None], None]
PAGES = {  # file suffix -> (page, source view)
    "raw": ("raw", None),
    "details": ("details", None),
    "source-sass": ("source", "sass"),
    "source-cuda-sass": ("source", "cuda,sass"),
}
IMPORT_TIMEOUT_S = 120.0
OUTPUT_KEEP = 256 * 1024
PROFILE_JSON = "profile.json"
NCU_LOCK = Path("/tmp/nsight-compute-lock")  # ncu serialises profiling sessions through this file
NCU_CAPABILITIES = ("kept for ncu: the driver lets only CAP_SYS_ADMIN read the GPU's performance counters "
                    "(RmProfilingAdminOnly=1)")
_PROFILING = re.compile(r'==PROF== Profiling "([^"]+)"(?: - \d+)?(?: \((\d+)/(\d+)\))?')


@dataclass
class ProfileOutcome:
    command: list[str] = field(default_factory=list)
    output: str = ""  # ncu's stdout and stderr, with the profiled program's (tail)
    problem: ProfilerProblem | None = None
    result: ProfileResult | None = None
    hotspots: list[KernelHotSpots] = field(default_factory=list)
    target: dict[str, Any] = field(default_factory=dict)  # what the profiling target reported
    report: Path | None = None
    files: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.problem is None and self.result is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "result": self.result.to_dict() if self.result else None,
            "hotspots": [h.to_dict() for h in self.hotspots],
            "case": self.target.get("case"),
            "kernels_launched": self.target.get("kernels"),
            "report": str(self.report) if self.report else None,
            "files": self.files,
            "command": self.command,
            "duration_s": round(self.duration_s, 3),
        }


def _no_progress(message: str, fraction: float | None = None) -> None:
    return None


async def profile_task(task: Task, files: dict[str, str], version_dir: Path, *, timeout_s: float,
                       case_index: int | None = None, kernel_name: str | None = None,
                       launch_count: int | None = None, arch: str | None = None,
                       on_progress: Progress | None = None, env: dict[str, str] | None = None,
                       override: str | None = None) -> ProfileOutcome:
    started = time.monotonic()
    progress: Progress = on_progress or _no_progress
    outcome = ProfileOutcome()
    ncu = find_ncu(env)
    if not isinstance(ncu, Path):
        outcome.problem = no_ncu(ncu)
        return outcome
    try:
        case = choose_case(task, case_index)
    except CaseChoiceError as exc:
        outcome.problem = ProfilerProblem("usage", str(exc), "pick one of the listed cases")
        return outcome
    version_dir.mkdir(parents=True, exist_ok=True)
    report = version_dir / f"{REPORT_NAME}.ncu-rep"
    _remove_old(version_dir, report)
    workdir = Path(tempfile.mkdtemp(prefix="kerneltui-profile-"))
    box: WorkerBox | None = None
    try:
        spec_path, result_path = workdir / "spec.json", workdir / "target.json"
        spec = make_spec(task, files, case, result_path, arch=arch, workdir=workdir)
        if override:
            spec["override"] = override
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        cmd = ProfileCommand(ncu=ncu, report=report, target=target_argv(spec_path), kernel_name=kernel_name,
                             launch_count=launch_count or DEFAULT_LAUNCH_COUNT)
        outcome.command = cmd.argv()
        progress(f"ncu on {case['label']}", None)
        deadline = started + timeout_s
        box = await _open_profile_box(ncu, workdir, version_dir, env)
        rc, output, timed_out = await _run_ncu(box, outcome.command, timeout_s, progress)
        outcome.output = output
        if result_path.exists():
            with contextlib.suppress(ValueError, OSError):
                outcome.target = json.loads(result_path.read_text(encoding="utf-8"))
        if timed_out:
            outcome.problem = ProfilerProblem(
                "timeout", f"the profile took longer than {timeout_s:.0f} s; ncu and the kernel were killed",
                "profile a smaller benchmark case (`--case N`), fewer kernels (`--kernel-name`, `--launch-count`), "
                "or raise [timeouts] profile in task.toml", evidence=_tail(output))
            return outcome
        error = outcome.target.get("error") if not outcome.target.get("ok", True) else None
        target_error = None
        if error:
            where = f"{error.get('file')}:{error.get('line')}: " if error.get("file") else ""
            target_error = f"{where}{error.get('message')}"
        outcome.problem = diagnose(output, rc, report.exists(), target_error, kernel_name)
        if outcome.problem is not None:
            return outcome
        outcome.report = report
        outcome.files["report"] = str(report)
        pages: dict[str, str] = {}
        for suffix, (page, source) in PAGES.items():
            left = max(10.0, deadline - time.monotonic())
            progress(f"reading the report ({page}{' ' + source if source else ''})", None)
            prc, text, ptimeout = await _run_simple(import_argv(ncu, report, page, source), min(left, IMPORT_TIMEOUT_S))
            if prc != 0 or ptimeout:
                outcome.problem = ProfilerProblem(
                    "ncu_failed", f"ncu could not read back its report ({page} page)",
                    f"open {report} in the Nsight Compute GUI, or run `{' '.join(import_argv(ncu, report, page, source))}`",
                    evidence=_tail(text))
                return outcome
            path = version_dir / f"{REPORT_NAME}-{suffix}.csv"
            path.write_text(text, encoding="utf-8")
            outcome.files[suffix] = str(path)
            pages[suffix] = text
        raw = parse_raw(pages["raw"])
        details = parse_details(pages["details"])
        outcome.result = summarise_report(raw, details, task_bytes=outcome.target.get("bytes_moved"),
                                          task_flops=outcome.target.get("flops"),
                                          case=str(outcome.target.get("case") or case["label"]))
        if outcome.result is None:
            outcome.problem = ProfilerProblem("no_kernels", "the report holds no kernel launch",
                                              "profile again; if it repeats, open the report in the GUI",
                                              evidence=_tail(output))
            return outcome
        outcome.hotspots = build_hotspots(pages["source-sass"], pages["source-cuda-sass"],
                                          task_relative(outcome.target.get("task_dir"), files))
        outcome.duration_s = time.monotonic() - started
        saved = version_dir / PROFILE_JSON
        saved.write_text(json.dumps(redact_tree(outcome.to_dict()), indent=1), encoding="utf-8")
        outcome.files["json"] = str(saved)
        return outcome
    finally:
        outcome.duration_s = time.monotonic() - started
        if box is not None:
            await asyncio.to_thread(box.release)
        shutil.rmtree(workdir, ignore_errors=True)


def _remove_old(version_dir: Path, report: Path) -> None:
    """A failed run must not leave an older profile looking like its result."""
    for path in [report, version_dir / PROFILE_JSON, *(version_dir / f"{REPORT_NAME}-{s}.csv" for s in PAGES)]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


def profiling_needs_admin(params: Path = Path("/proc/driver/nvidia/params")) -> bool:
    """Whether the driver lets only CAP_SYS_ADMIN read the GPU's performance counters (its default)."""
    try:
        for line in params.read_text().splitlines():
            if line.startswith("RmProfilingAdminOnly:"):
                return line.split(":", 1)[1].strip() != "0"
    except OSError:
        pass
    return True


def _ncu_lock_ready() -> bool:
    """ncu's lock file, made here if it is missing (inside the box /tmp cannot be written), as ncu
    makes it: writable by every user, so that it serialises their profiles too."""
    if NCU_LOCK.exists():
        return True
    try:
        fd = os.open(NCU_LOCK, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    except FileExistsError:
        return True
    except OSError:
        return False
    os.fchmod(fd, 0o666)
    os.close(fd)
    return True


async def _open_profile_box(ncu: Path, workdir: Path, version_dir: Path, env: dict[str, str] | None) -> WorkerBox:
    """The box ncu and its target run in: the worker's, plus the profile's folders and ncu's lock file."""
    writable = [str(workdir), str(version_dir)]
    if _ncu_lock_ready():
        writable.append(str(NCU_LOCK))
    box = open_box(load_settings(), await asyncio.to_thread(support), python=sys.executable, base_env=env,
                   writable=writable, readable=[str(ncu.parent), str(ncu.resolve().parent.parent)],
                   keep_capabilities=NCU_CAPABILITIES if profiling_needs_admin() else "")
    box.env = target_env(box.env)
    defer_filesystem_rules(box)  # the target inits CUDA under its own pid: it applies Landlock itself
    box.env.pop(SCRATCH_ENV, None)  # the target makes its task copy in the work folder, not the scratch
    caches = box.scratch / "caches"
    for cache in compile_caches():
        if cache.holds_candidate_kernels:
            box.env[cache.variable] = str(caches / cache.variable.lower())
    return box


async def _reap(box: WorkerBox, proc: asyncio.subprocess.Process) -> None:
    """End ncu and everything below it, and wait, so nothing outlives the run (not even its pipes)."""
    box.kill()
    await wait_or_force(proc)


async def _run_ncu(box: WorkerBox, argv: list[str], timeout_s: float,
                   progress: Progress) -> tuple[int | None, str, bool]:
    """Run ncu, passing its progress lines on; end it and its children on timeout or cancellation."""
    proc = await asyncio.create_subprocess_exec(
        *box.argv(argv), cwd=str(box.scratch), env=box.env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        pass_fds=box.pass_fds)
    box.started()
    chunks: list[str] = []
    size = 0

    async def read() -> None:
        nonlocal size
        assert proc.stdout is not None
        async for raw_line in proc.stdout:
            line = raw_line.decode("utf-8", errors="replace")
            chunks.append(line)
            size += len(line)
            while size > OUTPUT_KEEP and len(chunks) > 1:
                size -= len(chunks.pop(0))
            m = _PROFILING.search(line)
            if m:
                what = f"profiling {m.group(1)}"
                if m.group(2):
                    what += f" (launch {m.group(2)} of at most {m.group(3)})"
                progress(what, None)
        await proc.wait()

    try:
        await asyncio.wait_for(read(), timeout_s)
    except TimeoutError:
        await _reap(box, proc)
        return proc.returncode, "".join(chunks), True
    except asyncio.CancelledError:
        await _reap(box, proc)
        raise
    finally:
        # ncu has exited here, but the profiled program may have left children behind.
        box.kill()
    return proc.returncode, "".join(chunks), False


async def _run_simple(argv: list[str], timeout_s: float) -> tuple[int | None, str, bool]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        kill_group(proc)
        await wait_or_force(proc)
        return proc.returncode, "", True
    except asyncio.CancelledError:
        kill_group(proc)
        await wait_or_force(proc)
        raise
    text = out.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        text += err.decode("utf-8", errors="replace")
    return proc.returncode, text, False


def load_profile(version_dir: Path) -> dict[str, Any] | None:
    """The saved summary and hot spots of a version (``profile.json``), if it was profiled."""
    path = Path(version_dir) / PROFILE_JSON
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_hotspots(version_dir: Path) -> list[KernelHotSpots]:
    """Per-kernel hot spots for the PTX/SASS viewer's heat column (empty when not profiled)."""
    data = load_profile(version_dir) or {}
    return [KernelHotSpots.from_dict(h) for h in data.get("hotspots") or []]
