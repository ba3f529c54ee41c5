"""The engine: a per-user background process that keeps workers warm and runs the loop for commands.

Started by the first command that wants it (``core.engine.client``) or by ``kerneltui engine start``;
it lives in a session of its own, serves clients on a Unix socket (mode 0600, in a folder of mode
0700) with the framed-JSON protocol and key of ``core.engine.channel``, and exits after ``[engine]
idle_s`` seconds with no client. Each run request loads the task from disk as the command named it
and runs the ordinary :class:`~kerneltui.core.loop.Loop` on a warm pool; the loop's events go back to
the client as they happen, then the report. Runs of one task wait for each other; runs of different
tasks share the machine (a run that times takes the GPU alone: ``core.engine.pools``).

The engine imports no torch and no candidate code: it is a parent like the TUI or ``check``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltui import __version__
from kerneltui.core import rungs as rung_registry
from kerneltui.core.engine.channel import AuthError, Channel, create_key, restore_key
from kerneltui.core.engine.messages import RunRequest, report_to_dict
from kerneltui.core.engine.pools import EnginePools
from kerneltui.core.engine.reaper import Reaper, ReapingRunner
from kerneltui.core.engine.settings import EngineFiles, EngineSettings, fingerprint, load_settings
from kerneltui.core.events import Event, Notice, event_to_dict
from kerneltui.core.loop import RunReport
from kerneltui.core.loop_factory import new_loop
from kerneltui.core.task import TaskError
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.contract.protocol import ProtocolError
from kerneltui.core.worker.parent.runner import default_runner


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} engine[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


class Engine:
    def __init__(self, settings: EngineSettings, files: EngineFiles, key: bytes, reaper: Reaper) -> None:
        self.settings = settings
        self.files = files
        self.key = key
        self.reaper = reaper
        spares = {"candidate": settings.candidate_spares, "judge": settings.judge_spares}
        self.pools = EnginePools(ReapingRunner(default_runner(), reaper), spares)
        self.started = time.time()
        self._last_activity = time.monotonic()
        self._clients = 0
        self._runs: dict[str, dict[str, Any]] = {}  # run key → what status shows
        self._task_locks: dict[str, asyncio.Lock] = {}
        self._served = 0
        self._stop = asyncio.Event()
        self._handlers: set[asyncio.Task[None]] = set()

    # -- life -------------------------------------------------------------------------------------

    async def serve(self) -> None:
        old = os.umask(0o177)  # the socket is created 0600: no moment when others could connect
        try:
            server = await asyncio.start_unix_server(self._client, path=str(self.files.socket))
        finally:
            os.umask(old)
        os.chmod(self.files.socket, 0o600)
        socket_inode = self.files.socket.stat().st_ino
        log(f"serving on {self.files.socket} (kerneltui {__version__}, idle stop after {self.settings.idle_s:.0f} s)")
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._stop.set)
        idle = asyncio.create_task(self._idle_watch())
        try:
            await self._stop.wait()
        finally:
            idle.cancel()
            server.close()
            with contextlib.suppress(OSError):
                if self.files.socket.stat().st_ino == socket_inode:
                    self.files.socket.unlink()
            for handler in list(self._handlers):
                handler.cancel()
            for handler in list(self._handlers):
                with contextlib.suppress(BaseException):
                    await handler
            await self.pools.close()
            log(f"stopped after {self._served} run(s)")

    async def _idle_watch(self) -> None:
        step = min(1.0, self.settings.idle_s / 4)
        while True:
            await asyncio.sleep(step)
            if self._clients == 0 and not self._runs and time.monotonic() - self._last_activity >= self.settings.idle_s:
                log(f"idle for {self.settings.idle_s:.0f} s: stopping")
                self._stop.set()
                return

    def _touch(self) -> None:
        self._last_activity = time.monotonic()

    def status(self) -> dict[str, Any]:
        idle = 0.0 if self._clients > 1 or self._runs else time.monotonic() - self._last_activity
        return {
            "pid": os.getpid(), "version": __version__, "fingerprint": fingerprint(), "socket": str(self.files.socket),
            "log": str(self.files.log), "uptime_s": round(time.time() - self.started, 1), "runs_served": self._served,
            "idle_s": round(idle, 1), "idle_limit_s": self.settings.idle_s, "python": sys.executable,
            "running": list(self._runs.values()), "pools": self.pools.describe(),
        }

    # -- one client -------------------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        current = asyncio.current_task()
        assert current is not None
        self._handlers.add(current)
        self._clients += 1
        self._touch()
        channel = Channel(reader, writer)
        try:
            restore_key(self.files.key, self.key)
        except OSError as exc:
            log(f"cannot write the engine key {self.files.key} again: {exc}")
        try:
            await channel.accept(self.key, {"pid": os.getpid(), "version": __version__})
            message = await channel.receive()
            op = (message or {}).get("op")
            if op == "status":
                channel.send({"status": self.status()})
            elif op == "stop":
                channel.send({"stopping": os.getpid()})
                self._stop.set()
            elif op == "warm":
                wanted = [(str(p.get("backend")), p.get("arch")) for p in (message or {}).get("pools") or []]
                for backend, arch in wanted:
                    self.pools.get(backend, str(arch) if arch else None)
                channel.send({"warming": len(wanted)})
            elif op == "run":
                await self._run(channel, (message or {}).get("run") or {})
            elif message is not None:
                channel.send({"error": {"kind": "engine", "message": f"unknown request {op!r}"}})
            await channel.drain()
        except AuthError as exc:
            log(f"refused a client: {exc}")
        except (ProtocolError, ConnectionError, TimeoutError) as exc:
            log(f"dropped a client: {exc}")
        finally:
            self._clients -= 1
            self._touch()
            self._handlers.discard(current)
            await channel.close()

    async def _run(self, channel: Channel, raw: dict[str, Any]) -> None:
        try:
            request = RunRequest.from_dict(raw)
            task = load_task(request.task, request.kernel, request.load)  # as the command loaded it
            options = request.run_options()
            names = rung_registry.resolve(options.rungs)
        except (TaskError, ValueError, TypeError) as exc:
            kind = "task" if isinstance(exc, TaskError) else "request"
            if kind == "request":
                log(f"refused a run request: {exc}")
            channel.send({"error": {"kind": kind, "message": str(exc)}})
            return

        def emit(event: Event) -> None:
            channel.send({"event": event_to_dict(event)})

        run = asyncio.create_task(self._run_in_turn(task, options, names, emit))
        listen = asyncio.create_task(channel.receive())
        try:
            await asyncio.wait({run, listen}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not run.done():
                # The client asked to cancel or hung up: the loop's cancellation kills the run's workers.
                run.cancel(_cancel_reason(listen))
                with contextlib.suppress(BaseException):
                    await run
                channel.send({"cancelled": True})
            listen.cancel()
            with contextlib.suppress(BaseException):
                await listen
        if run.cancelled():
            return
        error = run.exception()
        if isinstance(error, TaskError):
            channel.send({"error": {"kind": "task", "message": str(error)}})
        elif error is not None:
            log(f"a run failed inside the engine: {type(error).__name__}: {error}")
            channel.send({"error": {"kind": "engine", "message": f"{type(error).__name__}: {error}"}})
        else:
            channel.send({"report": report_to_dict(run.result())})

    async def _run_in_turn(self, task: Any, options: Any, names: list[str], emit: Callable[[Event], None]) -> RunReport:
        # Runs of one task take turns; a KernelBench folder holds many problems (tasks of one root),
        # whose runs (a suite's) go side by side like those of any two tasks.
        root = str(Path(task.root).resolve())
        key = f"{root}::{task.name}"
        lock = self._task_locks.setdefault(key, asyncio.Lock())
        if lock.locked():
            emit(Notice(level="info", source="engine", message="waiting for the run of this task in flight to finish"))
        async with lock:
            pool = self.pools.get(task.backend, options.arch or task.arch)
            alone = await self.pools.needs_gpu_alone(pool, names)
            run_key = f"{key}#{id(options)}"
            self._runs[run_key] = {"task": root, "name": task.name, "rungs": names, "since": round(time.time(), 1),
                                   "state": "waiting"}
            try:
                async with self.pools.gpu.hold(alone) as waited:
                    if waited:
                        emit(Notice(level="info", source="engine", message="waited for the GPU to be free"))
                    self._runs[run_key]["state"] = "running"
                    ready = pool.spares_ready()  # workers already warm when the run began
                    loop = new_loop(task, pool, emit, _observers(task, options))
                    report = await loop.run(options)
                    self._served += 1
                    report.data["engine"] = {"pid": os.getpid(), "run_number": self._served, "ready_at_start": ready,
                                             "waited_for_gpu": waited}
                    return report
            finally:
                del self._runs[run_key]
                self._touch()


def _cancel_reason(listen: asyncio.Task[dict[str, Any] | None]) -> str:
    """Why the client cancelled (its cancel message's reason), or that it hung up."""
    if listen.done() and not listen.cancelled() and listen.exception() is None:
        reason = (listen.result() or {}).get("reason")
        if isinstance(reason, str) and reason:
            return reason[:200]
    return "the command that asked for it stopped"


def _observers(task: Any, options: Any) -> list[Any]:
    if not options.record:
        return []
    from kerneltui.core.history import observer_for

    return [observer_for(task)]


def prepare_dir(folder: Path) -> None:
    """The engine's folder: the user's alone (0700), made if missing."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user: set [engine] dir to a folder of your own")
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)


def main() -> int:
    settings = load_settings()
    files = settings.files
    files.check_socket_path()
    prepare_dir(files.dir)
    lock_fd = os.open(files.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log("another engine for this installation is already running")
        return 0
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, f"{os.getpid()}\n".encode())
    key = create_key(files.key)
    with contextlib.suppress(FileNotFoundError):
        files.socket.unlink()  # a socket left by an engine that died (we hold the lock: none is running)
    reaper = Reaper.start()
    try:
        asyncio.run(Engine(settings, files, key, reaper).serve())
    finally:
        reaper.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
