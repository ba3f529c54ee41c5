"""A command's side of the engine: find it (start it when it is not running), prove who we are, ask.

:class:`EngineClient` speaks the requests of ``core.engine.messages``; :class:`EngineLoop` has the
loop's face (``run(options) -> RunReport``, ``emit``, ``close``) so a front end that drives a
:class:`~kerneltui.core.loop.Loop` (the watcher's scheduler, the agent's trials, later the TUI) can
drive the engine instead, and falls back to a loop of its own when the engine cannot serve it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltui import __version__
from kerneltui.core.engine.channel import AuthError, Channel, KeyFileError, read_key
from kerneltui.core.engine.messages import RunRequest, report_from_dict
from kerneltui.core.engine.server import prepare_dir
from kerneltui.core.engine.settings import EngineFiles, EngineSettings
from kerneltui.core.events import Emit, Event, Notice, RunFinished, RunStarted, event_from_dict
from kerneltui.core.loop import Loop, RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.sandbox.reaper import pid_alive
from kerneltui.core.task import Task, TaskError
from kerneltui.core.worker.contract.protocol import ProtocolError

CANCEL_GRACE_S = 5.0  # after a cancel, how long the client waits for the engine's last events
LOST_GRACE_S = 2.0  # after the connection ends mid-run, how long the engine has to be gone before "killed"


async def _until_gone(pid: int, wait_s: float, poll_s: float) -> None:
    """Wait until process ``pid`` has ended, at most ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(poll_s)


class EngineUnavailable(Exception):
    """The engine could not be reached, started or trusted; nothing ran there."""


class EngineLost(Exception):
    """The engine stopped answering during a run (it died or was killed)."""


class EngineRunError(Exception):
    """The engine took the run but could not carry it out."""


class EngineClient:
    def __init__(self, settings: EngineSettings, files: EngineFiles | None = None) -> None:
        self.settings = settings
        self.files = files or settings.files
        self.started_engine = False  # this client started the engine it talks to

    # -- connecting -------------------------------------------------------------------------------

    async def open(self, start: bool = True) -> tuple[Channel, dict[str, Any]] | None:
        """An authenticated channel and the engine's hello; None when no engine runs and ``start`` is
        false. Raises EngineUnavailable with what to do when one cannot be reached or trusted."""
        try:
            self.files.check_socket_path()
        except Exception as exc:
            raise EngineUnavailable(str(exc)) from exc
        streams = await self._connect()
        if streams is None:
            if not start:
                return None
            streams = await self._start_and_connect()
        channel = Channel(*streams)
        try:
            # The key is read once the engine has said hello: a running engine writes a key file deleted
            # by hand again as it takes the connection, before its hello (``channel.restore_key``), however
            # long a busy engine takes to get to it. The key and its folder are checked as ever (``read_key``).
            greeting = await channel.greeting()
            key = read_key(self.files.key)
            hello = await channel.connect(key, {"client_pid": os.getpid(), "version": __version__}, greeting)
        except (KeyFileError, AuthError, ProtocolError, ConnectionError, TimeoutError) as exc:
            await channel.close()
            raise EngineUnavailable(f"the engine on {self.files.socket} cannot be used: {exc}") from exc
        return channel, hello

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await asyncio.open_unix_connection(str(self.files.socket))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        except OSError as exc:
            raise EngineUnavailable(f"cannot connect to the engine's socket {self.files.socket}: {exc}") from exc

    async def _start_and_connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        proc = self.spawn()
        deadline = time.monotonic() + self.settings.start_timeout_s
        while time.monotonic() < deadline:
            streams = await self._connect()
            if streams is not None:
                self.started_engine = True
                return streams
            code = proc.poll()
            if code is not None and code != 0:
                raise EngineUnavailable(f"the engine could not start (exit status {code}): {self.log_tail()}")
            await asyncio.sleep(0.05)
        raise EngineUnavailable(f"the engine did not answer within {self.settings.start_timeout_s:.0f} s of its start "
                                f"([engine] start_timeout_s); its log: {self.files.log}")

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start an engine in a session of its own (it outlives this command); its stderr goes to its log."""
        try:
            prepare_dir(self.files.dir)
            log = os.fdopen(os.open(self.files.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
        except OSError as exc:
            raise EngineUnavailable(f"cannot prepare the engine's folder {self.files.dir}: {exc}") from exc
        # -P: the working folder (the engine's own) is not an import path, which every box would be
        # granted to read (``sandbox.box.python_paths``); the folder is sealed from boxes besides.
        with log:
            return subprocess.Popen([sys.executable, "-P", "-m", "kerneltui.core.engine.server"],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(self.files.dir),
                                    start_new_session=True)

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.files.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return f"(no log at {self.files.log})"
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or f"(its log {self.files.log} is empty)"

    # -- requests ---------------------------------------------------------------------------------

    async def request(self, message: dict[str, Any], start: bool = False) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """One request and its one reply, with the engine's hello; None when no engine runs and
        ``start`` is false."""
        opened = await self.open(start=start)
        if opened is None:
            return None
        channel, hello = opened
        try:
            channel.send(message)
            await channel.drain()
            reply = await channel.receive()
        finally:
            await channel.close()
        return reply or {}, hello

    async def status(self) -> dict[str, Any] | None:
        """The running engine's status, or None when none runs (never starts one)."""
        answer = await self.request({"op": "status"})
        return None if answer is None else dict(answer[0].get("status") or {})

    async def stop(self, wait_s: float = 30.0) -> int | None:
        """Ask the running engine to stop and wait until it has; its pid, or None when none ran."""
        answer = await self.request({"op": "stop"})
        if answer is None:
            return None
        pid = int(answer[1].get("pid") or 0)
        await _until_gone(pid, wait_s, poll_s=0.05)
        return pid

    async def run(self, request: RunRequest, emit: Emit) -> RunReport:
        """Run the loop in the engine; every event goes to ``emit`` as it happens.

        Raises EngineUnavailable (nothing ran: also when the engine refused the request), EngineLost (the engine died during the run),
        TaskError (the engine could not load the task) or EngineRunError.
        """
        opened = await self.open(start=True)
        assert opened is not None
        channel, hello = opened
        pid = int(hello.get("pid") or 0)
        run = _RunSeen(emit)
        try:
            channel.send({"op": "run", "run": request.to_dict()})
            await channel.drain()
            while True:
                try:
                    message = await channel.receive()
                except ProtocolError as exc:
                    raise EngineLost(f"the engine's replies could not be read ({exc})") from exc
                if message is None:
                    raise EngineLost(await self._lost(pid))
                if "event" in message:
                    run.emit(event_from_dict(message["event"]))
                elif "report" in message:
                    return await _finished_despite_a_late_cancel(report_from_dict(message["report"]))
                elif "error" in message:
                    error = message["error"]
                    if error.get("kind") == "task":
                        raise TaskError(str(error.get("message")))
                    if error.get("kind") == "request":
                        raise EngineUnavailable(f"the engine refused the run: {error.get('message')}")
                    raise EngineRunError(str(error.get("message")))
                elif "cancelled" in message:  # not asked for by us: the engine is stopping
                    raise EngineLost(f"the engine (pid {pid}) stopped during the run (`kerneltui engine stop`, "
                                     "or it was told to end); it stopped the run's workers")
        except asyncio.CancelledError as exc:
            reason = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else ""
            finished = await self._cancel(channel, run, reason)
            if finished is not None:
                # The engine had finished the run before the cancel reached it: the run's end is its
                # verdict (the front end has shown it, the engine recorded it), not a cancellation.
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                return finished
            run.end_unconfirmed(reason)
            raise
        finally:
            await channel.close()

    async def _cancel(self, channel: Channel, run: _RunSeen, reason: str) -> RunReport | None:
        """Tell the engine to stop the run (it kills the run's workers) and why (its ``RunFinished`` says
        so), and pass on its last events. The run's report when the engine had finished it before the
        cancel reached it, else None."""
        with contextlib.suppress(Exception):
            channel.send({"cancel": True, "reason": reason})
            await channel.drain()
            async with asyncio.timeout(CANCEL_GRACE_S):
                while (message := await channel.receive()) is not None and "cancelled" not in message:
                    if "event" in message:
                        run.emit(event_from_dict(message["event"]))
                    elif "report" in message:
                        return report_from_dict(message["report"])
        return None

    async def _lost(self, pid: int) -> str:
        # The connection ends as the dying engine's files are closed, a moment before the process is
        # gone (on a loaded machine, more than a moment): give it LOST_GRACE_S to be.
        await _until_gone(pid, LOST_GRACE_S, poll_s=0.02)
        how = "was killed or crashed" if pid and not pid_alive(pid) else "closed the connection"
        return (f"the engine (pid {pid}) {how} during the run; the run's workers were stopped with it. "
                f"Its log: {self.files.log} (last lines: {self.log_tail(3)})")


class _RunSeen:
    """The events of one run passed on to the front end, and whether its end was among them: a run a
    front end saw start always ends there, even when the engine never says how (``end_unconfirmed``)."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self.started: RunStarted | None = None
        self.ended = False  # the started run's RunFinished was passed on
        self.given_up = False  # the run was ended here (end_unconfirmed)
        self._since = time.monotonic()

    def emit(self, event: Event) -> None:
        if self.given_up:
            return  # the run was ended here already: nothing later is its
        if isinstance(event, RunStarted):  # the first, or a retry's on a fresh connection (core.loop)
            self.started, self.ended, self._since = event, False, time.monotonic()
        elif isinstance(event, RunFinished) and self.started is not None and event.run_id == self.started.run_id:
            self.ended = True
        self._emit(event)

    def end_unconfirmed(self, reason: str) -> None:
        """The cancel was not confirmed in time (the connection is closed next): end the started run as
        cancelled, saying so, so that no front end shows a run that never ends."""
        if self.started is None or self.ended:
            return
        why = f"the engine did not confirm the cancel within {CANCEL_GRACE_S:g} s"
        self._emit(RunFinished(run_id=self.started.run_id, ok=False, results=[],
                               duration_s=time.monotonic() - self._since, cancelled=True,
                               cancel_reason=f"{reason} ({why})" if reason else why))
        self.ended = self.given_up = True


async def _finished_despite_a_late_cancel(report: RunReport) -> RunReport:
    """The report of a run the engine finished; a cancel asked for while its last message was being
    read (not yet delivered to this task) is taken back: the run finished, and its caller gets it."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        try:
            await asyncio.sleep(0)  # where the pending cancel lands
        except asyncio.CancelledError:
            task.uncancel()
    return report


class EngineLoop:
    """The loop's face over the engine: ``run(options)`` runs in the engine, events reach ``emit``.

    When the engine cannot be reached, or dies during a run, it says so (a warning notice) and runs
    the check with a loop of its own from ``local()`` instead, from then on.
    """

    def __init__(self, client: EngineClient, task: Task, task_path: str | Path, kernel_path: str | Path | None,
                 emit: Emit, local: Callable[[], Loop]) -> None:
        self.client = client
        self.task = task
        self.task_path = task_path
        self.kernel_path = kernel_path
        self.emit: Emit = emit
        self._local_factory = local
        self._local: Loop | None = None

    @property
    def local(self) -> Loop | None:
        """The loop of its own it fell back to, if it had to."""
        return self._local

    async def run(self, options: RunOptions | None = None) -> RunReport:
        options = options or RunOptions()
        if self._local is None:
            # The task's own load options: the engine loads it from disk as this command did.
            request = RunRequest.make(self.task_path, self.kernel_path, self.task.load, options)
            try:
                return await self.client.run(request, self.emit)
            except EngineUnavailable as exc:
                self._fall_back(f"{exc}; running without the engine")
            except (EngineLost, EngineRunError) as exc:
                self._fall_back(f"{exc}; running the check again without the engine")
        assert self._local is not None
        return await self._local.run(options)

    def _fall_back(self, message: str) -> None:
        self.emit(Notice(level="warning", source="engine", message=message))
        self._local = self._local_factory()

    async def close(self) -> None:
        if self._local is not None:
            await self._local.close()
