"""Shared pieces of the command-line front end: the task options and the one task loader every command
uses (the same message, file:line, --json error object and exit status from each), printing results."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any, TypedDict

from kerneltui.core.rungs.result import RungResult
from kerneltui.core.task import BACKENDS, LoadOptions, Task, TaskError, operator_name
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.contract.replies import DeviceInfo

if TYPE_CHECKING:
    from kerneltui.core.loop import ReportError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_ENVIRONMENT = 3  # the machine stopped the run (no space, no permission, a bad setting): not the kernel

STATUS_COLOURS = {"ok": "32", "warn": "33", "fail": "31", "skip": "2"}
SET_ARG = re.compile(r"^([A-Za-z_]\w*)=(.+)$")


def add_format_options(p: argparse.ArgumentParser, per_problem: bool = False) -> None:
    """--backend, --set and --scale: what the command line adds to a task's own settings.
    ``per_problem`` (the suite): --set and --scale may also name the one problem they apply to."""
    p.add_argument("--backend", choices=BACKENDS,
                   help="the DSL the kernel must be written in (KernelBench: default triton or the file's "
                        "`# kerneltui: backend = …` line; GPU MODE: detected from the submission)")
    p.add_argument("--allow-ops", metavar="OP[,OP…]",
                   help="torch operators the kernel may leave to torch (e.g. conv2d: the convolution stays in "
                        "cuDNN, the rest is the kernel's), added to the task's own allow_ops; every other torch "
                        "compute op on the output's path still fails")
    scale_help = ("KernelBench: multiply every size constant (integers ≥ 16) by F, keeping their power-of-two "
                  "factors up to 16 (e.g. --scale 0.01 for GB-scale problems on a small machine)")
    if per_problem:
        p.add_argument("--set", dest="constants", action="append", default=[], metavar="[PROBLEM:]NAME=VALUE",
                       help="KernelBench: rewrite module constant NAME (a size) in every problem that defines it, "
                            "or in PROBLEM alone (its file's stem, e.g. 30_SoftsignWide:dim=4096); repeatable")
        p.add_argument("--scale", dest="scales", action="append", default=[], metavar="[PROBLEM:]F",
                       help=scale_help.replace("by F,", "by F (in PROBLEM alone with PROBLEM:F, which wins over "
                                                        "the suite's F; repeatable),"))
        return
    p.add_argument("--set", dest="constants", action="append", default=[], metavar="NAME=VALUE",
                   help="KernelBench: rewrite the problem's module constant NAME (a size) for this run; repeatable")
    p.add_argument("--scale", type=float, metavar="F", help=scale_help)


def load_options(args: argparse.Namespace) -> LoadOptions:
    """The command line's LoadOptions; a malformed --set or --scale raises ValueError. A command
    without ``add_format_options`` (compare, history, context) loads the task as it is."""
    pairs = []
    for text in getattr(args, "constants", None) or []:
        m = SET_ARG.match(text)
        if not m:
            raise ValueError(f"--set {text}: write NAME=VALUE, e.g. --set batch_size=16")
        pairs.append((m.group(1), m.group(2)))
    scale = getattr(args, "scale", None)
    if scale is not None and not scale > 0:
        raise ValueError(f"--scale must be a positive factor, not {scale}")
    ops = [op.strip() for op in (getattr(args, "allow_ops", None) or "").split(",") if op.strip()]
    bad = [op for op in ops if not operator_name(op)]
    if bad:
        raise ValueError(f"--allow-ops {bad[0]!r}: name torch operators, comma-separated, e.g. --allow-ops conv2d,linear")
    return LoadOptions(backend=getattr(args, "backend", None), constants=tuple(pairs), scale=scale,
                       allow_ops=tuple(operator_name(op) for op in ops))


class ErrorJson(TypedDict):
    """What --json prints when the task, the machine or the command line stopped a command."""

    ok: bool
    exit_code: int
    error: ReportError


def error_json(kind: str, message: str, file: str | None = None, line: int | None = None,
               exit_code: int = EXIT_USAGE) -> ErrorJson:
    """What --json prints when there is no report: the error, where to fix it, and the exit status."""
    return {"ok": False, "exit_code": exit_code,
            "error": {"kind": kind, "message": message, "file": file, "line": line}}


def usage_error(args: argparse.Namespace, message: str) -> int:
    print(f"kerneltui: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print_json(error_json("usage", message))
    return EXIT_USAGE


def load_or_report(args: argparse.Namespace, path: str, kernel: str | None) -> Task | int:
    """The task, or the exit status after saying why it cannot be loaded (with --json, on stdout too)."""
    try:
        options = load_options(args)
    except ValueError as exc:
        return usage_error(args, str(exc))
    try:
        return load_task(path, kernel, options)
    except TaskError as exc:
        return task_error(args, exc)


def task_error(args: argparse.Namespace, exc: TaskError) -> int:
    """The exit status after saying, at its file:line, why the task cannot be used (with --json, on stdout too)."""
    print(f"kerneltui: task error: {exc}", file=sys.stderr)
    if getattr(args, "json", False):
        print_json(error_json("task", exc.message, exc.file, exc.line))
    return EXIT_USAGE


def colour(text: str, code: str, stream: Any = None) -> str:
    stream = stream or sys.stdout
    if not getattr(stream, "isatty", lambda: False)():
        return text
    return f"\033[{code}m{text}\033[0m"


def rung_line(result: RungResult) -> str:
    line = result.line()
    return colour(line, STATUS_COLOURS.get(result.status, "0"))


def device_line(device: DeviceInfo) -> str:
    if not device:
        return "device: not used (no rung needed a worker)"
    if device.get("gpu"):
        return (f"device: {device.get('name')} ({device.get('arch')}, {device.get('sm_count')} SMs) · "
                f"torch {device.get('torch')} · triton {device.get('triton')}")
    extra = " · Triton interpreter" if device.get("interpreter") else ""
    return f"device: no GPU (CPU){extra} · torch {device.get('torch')} · triton {device.get('triton')}"


def json_safe(value: Any) -> Any:
    """Strict JSON: non-finite floats become null (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def print_json(data: Any) -> None:
    json.dump(json_safe(data), sys.stdout, indent=2, default=str, allow_nan=False)
    sys.stdout.write("\n")


def parse_rungs(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [r.strip() for r in text.split(",") if r.strip()]


def open_session_log(task: Task, origin: str, disabled: bool = False, config: Any = None) -> Any:
    """The session log a command writes (core.session), or None when off; a failure is said, not fatal."""
    if disabled:
        return None
    from kerneltui.config import ConfigError, load_config
    from kerneltui.core.session import SessionError
    from kerneltui.core.session.store import open_log_for

    try:
        config = config if config is not None else load_config()
    except ConfigError:
        config = None  # the command itself reports a broken config where it matters
    try:
        return open_log_for(task, origin, config)
    except SessionError as exc:
        print(f"kerneltui: not recording this session: {exc}", file=sys.stderr)
        return None


def close_session_log(log: Any) -> None:
    """Close a command's session log, saying if it could not record everything."""
    if log is None:
        return
    log.close()
    if log.problem():
        print(f"kerneltui: {log.problem()}", file=sys.stderr)


def tee(*sinks: Any) -> Any:
    """One emit callback that hands every event to each sink that is not None."""
    live = [s for s in sinks if s is not None]

    def emit(event: Any) -> None:
        for sink in live:
            sink(event)

    return emit
