"""Where workers start. The loop asks a runner for a process; the protocol is the same everywhere.

:class:`LocalRunner` starts ``python -m kerneltui.core.worker.child`` on this machine in a new
process group (so a kill takes the candidate's children too). Other runners (SSH, Ray) live in
``core.remote``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any, Protocol

from kerneltui.core.worker.protocol import MAX_MESSAGE


class Runner(Protocol):
    """Starts and kills workers. Remote runners may also define ``lost_connection(returncode)``
    (a message when the exit status means the link dropped: the loop retries the run once),
    ``exit_signal(returncode)`` (the signal that ended a remote worker) and ``async close()``."""

    name: str

    async def spawn(self, backend: str, arch: str | None, role: str = "candidate") -> asyncio.subprocess.Process: ...

    def kill(self, proc: asyncio.subprocess.Process) -> None: ...

    def describe(self) -> str: ...


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


class LocalRunner:
    name = "local"

    def __init__(self, python: str | None = None, env: dict[str, str] | None = None) -> None:
        self.python = python or sys.executable
        self.env = env or {}

    async def spawn(self, backend: str, arch: str | None, role: str = "candidate") -> asyncio.subprocess.Process:
        cmd = [self.python, "-m", "kerneltui.core.worker.child", "--backend", backend, "--role", role]
        if arch:
            cmd += ["--arch", arch]
        return await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=worker_env(self.env),
            limit=MAX_MESSAGE,
        )

    def kill(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                proc.kill()
            except ProcessLookupError:
                pass

    def describe(self) -> str:
        return "this machine"


# Set once by the front end (``--gpu-host``, ``[remote] gpu_host``) so that every pool the loop,
# the watcher or the TUI creates starts its workers there; None: this machine.
_configured: Runner | None = None


def set_default_runner(runner: Runner | None) -> None:
    global _configured
    _configured = runner


def default_runner(**kwargs: Any) -> Runner:
    if _configured is not None and not kwargs:
        return _configured
    return LocalRunner(**kwargs)
