"""The parent's side of the zygotes (``zygote.py``): start one per kind of worker, ask it for
workers, and hand the loop a process object that behaves as asyncio's does.

One zygote serves every worker of one kind (the same interpreter, imports and environment) that this
process starts, whatever event loop asks: a reader thread takes the zygote's replies and passes
each to the loop that is waiting for it. A change in the environment workers get (a variable set,
another PYTHONPATH) starts a new zygote, because what a module read while the zygote imported it
must be what the worker would have read; the old one ends once its workers have.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from kerneltui.core.sandbox import reaper
from kerneltui.core.sandbox.box import SCRATCH_PREFIX, WorkerBox
from kerneltui.core.sandbox.zygote import MAX_PACKET

ZYGOTE_MODULE = "kerneltui.core.sandbox.zygote"
READY_TIMEOUT_S = 300.0  # the imports, on a loaded 2-core machine
REPLY_TIMEOUT_S = 60.0  # a fork
KEEP_PER_IMPORTS = 3  # zygotes of the same imports kept for different environments


class ZygoteError(Exception):
    """The zygote could not start or could not fork a worker; the worker is started the usual way."""


@dataclass(frozen=True)
class ZygoteKind:
    """What makes two workers' start the same: the interpreter, what is imported and the environment
    with each worker's own folder taken out."""

    python: str
    modules: tuple[str, ...]
    defaults: tuple[str, ...]
    nice: int
    environment: tuple[tuple[str, str], ...]


def kind_of(python: str, modules: Sequence[str], defaults: Sequence[str], nice: int, box: WorkerBox) -> ZygoteKind:
    scratch = str(box.scratch)
    shared = tuple(sorted((name, value.replace(scratch, "\0")) for name, value in box.env.items()))
    return ZygoteKind(python, tuple(modules), tuple(defaults), nice, shared)


class ForkedProcess:
    """A worker's supervisor forked by a zygote, seen as ``asyncio.subprocess.Process``: ``pid``,
    ``returncode`` (negative: the signal), ``stdin``/``stdout``/``stderr`` streams, ``wait``, ``kill``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.pid = 0
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._loop = loop
        self._exited: asyncio.Future[int] = loop.create_future()

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _exit_from_thread(self, status: int) -> None:
        with contextlib.suppress(RuntimeError):  # the loop that started it has closed
            self._loop.call_soon_threadsafe(self._set_exit, status)

    def _set_exit(self, status: int) -> None:
        if self.returncode is not None:
            return
        self.returncode = os.waitstatus_to_exitcode(status)
        if self.stdin is not None:
            self.stdin.close()
        if not self._exited.done():
            self._exited.set_result(self.returncode)


class RunningZygote:
    """One zygote process and the thread that reads its replies."""

    def __init__(self, kind: ZygoteKind, proc: subprocess.Popen[bytes], sock: socket.socket, scratch: Path) -> None:
        self.kind = kind
        self.proc = proc
        self.sock = sock
        self.scratch = scratch
        self.forks = 0  # workers forked, for tests and benchmarks
        self.retired = False
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[ForkedProcess, asyncio.Future[int]]] = {}
        self._live: dict[int, ForkedProcess] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read_replies, name="kerneltui-zygote", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return not self._closed

    @classmethod
    def start(cls, kind: ZygoteKind, env: Mapping[str, str], scratch: Path) -> RunningZygote:
        """Start it and wait for its imports (blocking: call from a thread)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [kind.python, "-m", ZYGOTE_MODULE, str(theirs.fileno())]
        for module in kind.modules:
            argv += ["--import", module]
        for default in kind.defaults:
            argv += ["--default", default]
        if kind.nice:
            argv += ["--nice", str(kind.nice)]
        log = scratch / "zygote.log"
        try:
            with open(log, "wb") as err:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                        env=dict(env), cwd=str(scratch), pass_fds=(theirs.fileno(),),
                                        start_new_session=True)
        finally:
            theirs.close()
        ours.settimeout(READY_TIMEOUT_S)
        try:
            first = ours.recv(MAX_PACKET)
        except OSError as exc:
            first = b""
            why = f"no answer ({exc})"
        else:
            why = "it exited"
        message = json.loads(first) if first else {}
        if not message.get("ready"):
            ours.close()
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()
            tail = _tail(log)
            shutil.rmtree(scratch, ignore_errors=True)
            raise ZygoteError(str(message.get("error") or why) + (f": {tail}" if tail else ""))
        ours.settimeout(None)
        return cls(kind, proc, ours, scratch)

    async def spawn(self, box: WorkerBox, command: Sequence[str]) -> ForkedProcess:
        """Fork a supervised worker running ``command`` in ``box``, as ``LocalRunner.spawn`` would exec one."""
        if self._closed:
            raise ZygoteError("the zygote has exited")
        if box.policy_file is None:
            raise ZygoteError("the box has no policy file")
        loop = asyncio.get_running_loop()
        process = ForkedProcess(loop)
        started: asyncio.Future[int] = loop.create_future()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        # Our ends are file objects from the start, each closed once whoever closes it (the stream made
        # of it, or a spawn that fails or is cancelled half-way): a descriptor closed twice is a number
        # that another worker's pipe may hold by the second time, which that worker then loses.
        ours = [os.fdopen(stdin_w, "wb", 0), os.fdopen(stdout_r, "rb", 0), os.fdopen(stderr_r, "rb", 0)]
        transports: list[asyncio.BaseTransport] = []
        request_id = next(self._ids)
        request = {"id": request_id, "policy_file": str(box.policy_file), "command": list(command),
                   "env": dict(box.env), "cwd": str(box.scratch)}
        with self._lock:
            self._waiting[request_id] = (process, started)
        try:
            try:
                socket.send_fds(self.sock, [json.dumps(request).encode()], [stdin_r, stdout_w, stderr_w, *box.pass_fds])
            finally:
                for fd in (stdin_r, stdout_w, stderr_w):
                    os.close(fd)
            await asyncio.wait_for(started, REPLY_TIMEOUT_S)
            process.stdout = await _read_stream(loop, ours[1], transports)
            process.stderr = await _read_stream(loop, ours[2], transports)
            process.stdin = await _write_stream(loop, ours[0], transports)
        except BaseException as exc:
            with self._lock:
                self._waiting.pop(request_id, None)
            for transport in transports:  # off the loop's selector before its descriptor closes
                transport.close()
            for pipe in ours:
                with contextlib.suppress(OSError):
                    pipe.close()
            if isinstance(exc, (OSError, TimeoutError)):
                raise ZygoteError(f"the zygote did not fork the worker: {exc}") from exc
            raise
        self.forks += 1
        return process

    def retire(self) -> None:
        """No more workers from this one: it exits once those it started have."""
        with self._lock:
            self.retired = True
            idle = not self._live and not self._waiting
        if idle:
            self.close()

    def retired_idle(self) -> bool:
        with self._lock:
            return self.retired and not self._live and not self._waiting

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    # -- the reader thread ------------------------------------------------------------------------

    def _read_replies(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_PACKET)
            except OSError:
                data = b""
            if not data:
                break
            try:
                self._on_message(json.loads(data))
            except (ValueError, KeyError, TypeError):  # not from this zygote's protocol: nothing to settle
                continue
        self._on_exit()

    def _on_message(self, message: dict[str, Any]) -> None:
        retire_now = False
        with self._lock:
            if "exit" in message:
                process = self._live.pop(int(message["exit"]), None)
                if process is not None:
                    process._exit_from_thread(int(message["status"]))
                retire_now = self.retired and not self._live and not self._waiting
            elif "id" in message:
                entry = self._waiting.pop(int(message["id"]), None)
                if entry is None:
                    return
                process, started = entry
                if "pid" in message:
                    process.pid = int(message["pid"])
                    self._live[process.pid] = process
                    _resolve(started, result=process.pid)
                else:
                    _resolve(started, error=ZygoteError(str(message.get("error") or "no worker")))
        if retire_now:
            self.close()

    def _on_exit(self) -> None:
        """The zygote has gone (or was closed): its supervisors end with it (their parent-death
        signal); each is reported ended once it has."""
        with self._lock:
            self._closed = True
            live = list(self._live.values())
            self._live.clear()
            waiting = list(self._waiting.values())
            self._waiting.clear()
        for _process, started in waiting:
            _resolve(started, error=ZygoteError("the zygote exited"))
        deadline = time.monotonic() + 30.0
        while any(reaper.pid_alive(p.pid) for p in live) and time.monotonic() < deadline:
            time.sleep(0.05)
        for process in live:
            process._exit_from_thread(signal.SIGKILL)  # the wait status of a process killed by SIGKILL
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(30)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _resolve(future: asyncio.Future[int], result: int = 0, error: BaseException | None = None) -> None:
    def settle() -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the waiting loop has closed
        future.get_loop().call_soon_threadsafe(settle)


async def _read_stream(loop: asyncio.AbstractEventLoop, pipe: BinaryIO,
                       transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    """A stream reading ``pipe``; its transport is added to ``transports``."""
    from kerneltui.core.worker.contract.protocol import MAX_MESSAGE

    reader = asyncio.StreamReader(limit=MAX_MESSAGE, loop=loop)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    transports.append(transport)
    return reader


async def _write_stream(loop: asyncio.AbstractEventLoop, pipe: BinaryIO,
                        transports: list[asyncio.BaseTransport]) -> asyncio.StreamWriter:
    """A stream writing ``pipe``; its transport is added to ``transports``."""
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop), pipe)
    transports.append(transport)
    return asyncio.StreamWriter(transport, protocol, None, loop)


def _tail(path: Path, limit: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return path.read_bytes()[-limit:].decode(errors="replace").strip()
    return ""


# -- the zygotes of this process ----------------------------------------------------------------------

_zygotes: dict[ZygoteKind, RunningZygote] = {}
_refused: dict[ZygoteKind, str] = {}  # kinds whose zygote failed to start: their workers are exec'd
_registry_lock = threading.Lock()
_closes_at_exit = False


def zygote_for(kind: ZygoteKind, box: WorkerBox) -> RunningZygote:
    """The running zygote of ``kind``, started on first use (blocking: call from a thread). Raises
    :class:`ZygoteError` when it cannot start (and for every later call of that kind)."""
    with _registry_lock:
        running = _zygotes.get(kind)
        if running is not None and running.alive:
            _zygotes[kind] = _zygotes.pop(kind)  # most recently used last
            return running
        if kind in _refused:
            raise ZygoteError(_refused[kind])
        # Zygotes of the same imports with other environments: the oldest goes past a few (two runners
        # with different environments take turns; a variable changed for good leaves one unused).
        for other_kind, other in list(_zygotes.items()):
            if not other.alive:
                del _zygotes[other_kind]
        same = [k for k in _zygotes if k.python == kind.python and k.modules == kind.modules]
        for old_kind in same[:max(0, len(same) - KEEP_PER_IMPORTS + 1)]:
            _zygotes.pop(old_kind).retire()
        scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-zygote-"))
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        env = {name: value.replace(str(box.scratch), str(scratch)) for name, value in box.env.items()}
        try:
            running = RunningZygote.start(kind, env, scratch)
        except (OSError, ZygoteError) as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            _refused[kind] = str(exc)
            raise ZygoteError(str(exc)) from exc
        _zygotes[kind] = running
        global _closes_at_exit
        if not _closes_at_exit:
            _closes_at_exit = True
            atexit.register(close_zygotes, 10.0)
        return running


def running_zygotes() -> list[RunningZygote]:
    with _registry_lock:
        return [z for z in _zygotes.values() if z.alive]


def close_zygotes(timeout_s: float = 30.0) -> None:
    """Retire every zygote of this process and wait until those without workers have exited and
    removed their folders (blocking). Runs when this process exits, so that a command leaves no
    zygote behind; one still serving workers ends with them, after this process."""
    with _registry_lock:
        zygotes = list(_zygotes.values())
        _zygotes.clear()
    for zygote in zygotes:
        zygote.retire()
    for zygote in zygotes:
        if zygote.retired_idle():
            with contextlib.suppress(subprocess.TimeoutExpired):
                zygote.proc.wait(timeout_s)
