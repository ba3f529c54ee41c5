"""Kills the engine's workers when the engine dies, however it dies.

Workers run in process groups of their own (a kill takes the candidate's children too), so they
outlive an engine killed with SIGKILL. The reaper is a small process in a session of its own that
reads the engine's notes on a pipe: ``+PGID`` when a worker starts, ``-PGID`` once it has exited.
When the pipe closes (the engine exited, cleanly or not) it kills every group still listed and
exits. Run as ``python -m kerneltui.core.engine.reaper``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltui.core.worker.parent.runner import WorkerHandle


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl+C meant for the terminal is not for us
    live: set[int] = set()
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if len(line) < 2 or line[:1] not in (b"+", b"-"):
            continue
        try:
            pgid = int(line[1:])
        except ValueError:
            continue
        if pgid <= 1:
            continue
        (live.add if line[:1] == b"+" else live.discard)(pgid)
    for pgid in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return 0


class Reaper:
    """The engine's side: starts the reaper and tells it about each worker."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    @classmethod
    def start(cls) -> Reaper:
        proc = subprocess.Popen([sys.executable, "-m", "kerneltui.core.engine.reaper"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        return cls(proc)

    def _say(self, text: str) -> None:
        if self.proc.stdin is None or self.proc.stdin.closed:
            return
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.write(text.encode() + b"\n")
            self.proc.stdin.flush()

    def watch(self, pgid: int) -> None:
        self._say(f"+{pgid}")

    def forget(self, pgid: int) -> None:
        self._say(f"-{pgid}")

    def close(self) -> None:
        """Let it kill what is left and exit."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


class ReapingRunner:
    """A runner that registers every worker it starts with the reaper (and drops it once it exits);
    everything else is the wrapped runner's."""

    def __init__(self, inner: Any, reaper: Reaper) -> None:
        self.inner = inner
        self.reaper = reaper
        self.name = inner.name
        self._waiters: set[asyncio.Task[None]] = set()

    async def spawn(self, backend: str, arch: str | None, role: str = "candidate",
                    writable: Sequence[str] = ()) -> WorkerHandle:
        proc = await self.inner.spawn(backend, arch, role, writable)
        self.reaper.watch(proc.pid)  # the worker leads a process group of its own
        waiter = asyncio.create_task(self._forget_when_done(proc))
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)
        return proc

    async def _forget_when_done(self, proc: WorkerHandle) -> None:
        await proc.wait()
        # Whatever the candidate left in the worker's group goes with it: workers are single-use.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        self.reaper.forget(proc.pid)

    def kill(self, proc: WorkerHandle) -> None:
        self.inner.kill(proc)

    def describe(self) -> str:
        return str(self.inner.describe())

    def __getattr__(self, name: str) -> Any:  # lost_connection, exit_signal, close … of the wrapped runner
        return getattr(self.inner, name)


if __name__ == "__main__":
    sys.exit(main())
