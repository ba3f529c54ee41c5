"""Run a CuTe DSL kernel under IKET (``run-iket`` from nvidia-cutlass-dsl) and read its trace.

IKET works from outside the program: ``run-iket profile -- <program>`` runs the program twice with
its CUDA injection library (a tracker pass, then the instrumented pass) and turns on the DSL's
``iket`` compile option in the program's environment. So, as the profile rung does for ncu, the
program is the one-shot target ``python -m kerneltui.core.profile.target SPEC`` (the task loaded
the way a worker loads it; warm-up calls, then one call), run in its own process group under the
trace rung's timeout; cancelling kills the group. The decoded JSON is read into kerneltui's
buffers (``iket.read_decoded``: the last launch of each kernel is the measured call); IKET's own
Perfetto trace and decoded JSON are kept in ``<version>/trace/`` beside kerneltui's.

IKET runs where this process runs: with workers on a remote GPU host (``--gpu-host``) the rung
says so and uses the markers.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltui.core.profile.runner import _open_profile_box, _run_ncu
from kerneltui.core.profile.spec import CaseChoiceError, choose_case, make_spec, target_argv
from kerneltui.core.task import Task
from kerneltui.core.trace.buffer import TraceFormatError
from kerneltui.core.trace.iket import read_decoded
from kerneltui.core.worker.contract.replies import TraceReply

Progress = Callable[[str, float | None], None]


class IketFailed(RuntimeError):
    """IKET ran and failed, or left nothing kerneltui can read; the message says what to do."""


def run_iket_command() -> list[str] | None:
    """How to start run-iket: the script next to this Python, on PATH, or its module."""
    beside = Path(sys.executable).with_name("run-iket")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("run-iket")
    if found:
        return [found]
    if importlib.util.find_spec("iket") is not None:
        return [sys.executable, "-m", "iket.cli.main"]
    return None


def unavailable(runner_name: str = "local") -> str | None:
    """Why IKET cannot trace from this process, or None."""
    if runner_name != "local":
        return "IKET runs only with the GPU on this machine (the workers run elsewhere)"
    if run_iket_command() is None:
        return ("run-iket is not installed for this Python (it ships with nvidia-cutlass-dsl 4.8; "
                "pip install -U nvidia-cutlass-dsl)")
    return None


async def trace(task: Task, files: dict[str, str], version_dir: Path, *, timeout_s: float,
                case_index: int | None = None, progress: Progress | None = None,
                override: str | None = None) -> TraceReply:
    """The trace op's reply shape (``buffers`` as ``TraceBuffer.to_dict()``), from IKET."""
    command = run_iket_command()
    if command is None:
        raise IketFailed(unavailable() or "run-iket is not installed")
    say: Progress = progress or _silent
    try:
        case = choose_case(task, case_index)
    except CaseChoiceError as exc:
        raise IketFailed(str(exc)) from exc
    workdir = Path(tempfile.mkdtemp(prefix="kerneltui-iket-"))
    try:
        spec_path, result_path, out = workdir / "spec.json", workdir / "target.json", workdir / "iket"
        spec = make_spec(task, files, case, result_path, workdir=workdir / "target")
        if override:
            spec["override"] = override
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        argv = [*command, "--output-dir", str(out), "--clobber", "profile", "--postprocess", "all", "--",
                *target_argv(spec_path)]
        say(f"run-iket on {case['label']} (the program runs twice: tracker, then traced)", None)
        # run-iket and its target run in the box ncu's target gets (core.sandbox): scrubbed, no network.
        box = await _open_profile_box(Path(shutil.which(command[0]) or command[0]), workdir, workdir, None)
        try:
            rc, output, timed_out = await _run_ncu(box, argv, timeout_s, say)
        finally:
            await asyncio.to_thread(box.release)
        if timed_out:
            raise IketFailed(f"IKET took longer than {timeout_s:.0f} s; run-iket and the kernel were killed "
                             "(trace a smaller benchmark case with --case N)")
        target = _read_json(result_path)
        if target and not target.get("ok", True):
            error = target.get("error") or {}
            where = f"{error.get('file')}:{error.get('line')}: " if error.get("file") else ""
            raise IketFailed(f"{where}{error.get('message')}")
        decoded = sorted(out.glob("iket_pid_*.trace.json"))
        if rc != 0 or not decoded:
            raise IketFailed(f"run-iket exited with {rc} and wrote no decoded trace: {_tail(output)}")
        try:
            buffers = read_decoded(json.loads(decoded[-1].read_text(encoding="utf-8")))
        except (TraceFormatError, ValueError) as exc:
            kept = _keep(out, version_dir)
            raise IketFailed(f"IKET's trace could not be read: {exc} (its own files: {', '.join(kept) or 'none'})") from exc
        kept = _keep(out, version_dir)
        return {"case": case["index"], "case_kind": case["kind"], "params": case["params"], "untraced_ms": None,
                "traced_ms": None, "buffers": [b.to_dict() for b in buffers], "source": "iket",
                "source_files": kept, "traced_output_matches": None}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _silent(message: str, fraction: float | None = None) -> None:
    return None


def _keep(out: Path, version_dir: Path) -> list[str]:
    """IKET's Perfetto trace and decoded JSON, copied beside kerneltui's trace files."""
    dest = version_dir / "trace"
    dest.mkdir(parents=True, exist_ok=True)
    kept = []
    for path in sorted([*out.glob("iket_pid_*.pftrace"), *out.glob("iket_pid_*.trace.json")]):
        target = dest / ("iket" + "".join(path.suffixes[-2:] if path.name.endswith(".trace.json") else path.suffixes[-1:]))
        shutil.copyfile(path, target)
        kept.append(str(target))
    return kept


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
