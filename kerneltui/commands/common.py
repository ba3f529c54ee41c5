"""Shared pieces of the command-line front end: loading a task with a clean error, printing results."""

from __future__ import annotations

import json
import sys
from typing import Any

from kerneltui.core.rungs.result import RungResult
from kerneltui.core.task import Task, TaskError
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.contract.replies import DeviceInfo

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_ENVIRONMENT = 3  # the machine stopped the run (no space, no permission, a bad setting): not the kernel

STATUS_COLOURS = {"ok": "32", "warn": "33", "fail": "31", "skip": "2"}


def load_task_or_exit(path: str, kernel: str | None = None) -> Task:
    try:
        return load_task(path, kernel)
    except TaskError as exc:
        print(f"kerneltui: task error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from exc


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
