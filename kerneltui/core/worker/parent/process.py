"""The parent's handle on one worker process (asyncio).

Every fault becomes a :class:`WorkerFailure` whose message says what happened: the op's exception
text, "no answer after N s" (the worker's process group was killed), or the signal that ended the
process (SIGSEGV, SIGABRT, …) with the last lines it wrote to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltui.core.sandbox.policy import EXIT_BOX_FAILED, SandboxState
from kerneltui.core.worker.contract.protocol import (
    HEADER,
    MAX_MESSAGE,
    ProtocolError,
    Verifier,
    encode,
    new_key,
)
from kerneltui.core.worker.contract.replies import DeviceInfo, WorkerError

if TYPE_CHECKING:
    from kerneltui.core.worker.parent.runner import WorkerHandle

ProgressCallback = Callable[[str, float | None], None]
CUDA_FAULT = re.compile(r"illegal memory access|illegal address|misaligned address|unspecified launch failure|"
                        r"device-side assert|CUDA error", re.IGNORECASE)
STDERR_KEEP = 256 * 1024

SIGNAL_MEANING = {
    "SIGSEGV": "segmentation fault: an invalid memory access on the host",
    "SIGABRT": "aborted: a failed assertion or a fatal error in native code",
    "SIGBUS": "bus error: a misaligned or unmapped memory access",
    "SIGFPE": "arithmetic exception",
    "SIGILL": "illegal instruction",
    "SIGKILL": "killed (out of memory, or by kerneltui)",
    "SIGTERM": "terminated",
}


def signal_words(name: str) -> str:
    """A signal by name with what it usually means: "SIGSEGV (segmentation fault: …)"."""
    meaning = SIGNAL_MEANING.get(name, "")
    return f"{name} ({meaning})" if meaning else name


@dataclass(frozen=True)
class WorkerDeath:
    """How a worker ended while it served a request: whose it was and what stopped it, for the rung
    that decides whose fault it was (a judge's death is not the kernel's)."""

    role: str  # "judge" or "candidate"
    op: str  # the request it was serving
    signal: str = ""  # the signal that ended it, by name ("SIGKILL"), where one did


@dataclass
class WorkerFailure(Exception):
    """A request that did not produce a result."""

    kind: str  # "error" (the op raised), "task" (the task cannot run here), "timeout", "crash", "start" (never ready), "tamper" (forged reply),
    #            "connection" (the link to a remote worker was lost)
    message: str
    error: WorkerError = field(default_factory=lambda: WorkerError())
    stderr: str = ""
    death: WorkerDeath | None = None  # kind "crash": how the worker ended

    def __str__(self) -> str:
        return self.message


class WorkerProcess:
    _ids = itertools.count(1)

    def __init__(self, proc: WorkerHandle, runner: Any, backend: str) -> None:
        self.proc = proc
        self.runner = runner
        self.backend = backend
        self.info: DeviceInfo = {}
        self.started_at = time.monotonic()
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._progress: dict[int, ProgressCallback] = {}
        self._ready: asyncio.Future[DeviceInfo] = asyncio.get_running_loop().create_future()
        self._stderr = bytearray()
        self._stderr_dropped = 0  # bytes trimmed from the front, so marks stay valid
        self._dead: str | None = None
        self._ops: dict[int, str] = {}
        self._last_progress: dict[int, str] = {}  # what the op said it was doing, for fault messages
        self._returned: dict[int, list[dict[str, str]]] = {}  # per request: digests of a call's outputs at return
        self._tampered: str | None = None
        # The reply key goes first, before the worker can have imported any candidate code.
        key = new_key()
        self._verifier = Verifier(key)
        if proc.stdin is not None:
            proc.stdin.write(encode({"key": key.hex()}))
        self._reader = asyncio.create_task(self._read_loop())
        self._err_reader = asyncio.create_task(self._read_stderr())
        self.used = False
        self.role = "candidate"
        self.sandbox: SandboxState | None = None  # the box it runs in, as the runner built it

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    async def start(cls, runner: Any, backend: str, arch: str | None = None, role: str = "candidate",
                    writable: Sequence[str] = ()) -> WorkerProcess:
        """A new worker of ``role``; ``writable``: folders it may write besides its own scratch folder
        (the exchange folders it shares with the other worker of a run)."""
        proc = await runner.spawn(backend, arch, role, writable)
        worker = cls(proc, runner, backend)
        worker.role = role
        worker.sandbox = runner.sandbox_of(proc)
        return worker

    async def wait_ready(self, timeout: float = 180.0) -> DeviceInfo:
        try:
            self.info = await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError as exc:
            self.kill()
            raise WorkerFailure("start", f"the worker did not start within {timeout:.0f} s", stderr=self.stderr_tail()) from exc
        except WorkerFailure as exc:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 5.0)
            lost = getattr(self.runner, "lost_connection", lambda _rc: None)(self.proc.returncode)
            if lost:
                raise WorkerFailure("connection", f"{lost} while the worker was starting", stderr=exc.stderr) from exc
            if self.proc.returncode == EXIT_BOX_FAILED:
                await asyncio.sleep(0.05)  # let the stderr reader take the supervisor's last line
                raise WorkerFailure("start", _box_failure(self.stderr_tail()), stderr=self.stderr_tail()) from exc
            raise
        return self.info

    @property
    def alive(self) -> bool:
        return self._dead is None and self.proc.returncode is None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """Kill the worker's whole process group (the candidate may have spawned children)."""
        self.runner.kill(self.proc)
        if self._dead is None:
            self._dead = "killed"

    async def close(self) -> None:
        """Let the worker finish (stdin closed), then kill whatever is left of it, every time: a
        kernel's children must not outlive a passing run any more than a hanging one."""
        if self.alive:
            with contextlib.suppress(Exception):
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), 2.0)
        self.kill()
        with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), 5.0)
        await self.runner.release(self.proc)
        for task in (self._reader, self._err_reader):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    # -- requests -----------------------------------------------------------------------------

    async def request(
        self, op: str, args: Mapping[str, Any] | None = None, timeout: float = 60.0,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        if self._tampered:
            raise WorkerFailure("tamper", self._tampered, stderr=self.stderr_tail())
        if not self.alive:
            raise WorkerFailure("crash", f"the worker is no longer running ({self._dead or 'exited'})", stderr=self.stderr_tail(),
                                death=WorkerDeath(self.role, op))
        self.used = True
        req_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = future
        self._ops[req_id] = op
        self._last_progress[req_id] = ""
        if on_progress is not None:
            self._progress[req_id] = on_progress
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode({"id": req_id, "op": op, "args": args or {}}))
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            self._pending.pop(req_id, None)
            raise await self._crash_failure(op, op) from exc
        try:
            reply = await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self.kill()
            raise WorkerFailure(
                "timeout",
                f"no answer after {timeout:.0f} s during {self._phase(req_id, op)}: the kernel hangs or is far too "
                "slow; the worker's process group was killed",
                stderr=self.stderr_tail(),
            ) from None
        except asyncio.CancelledError:
            # Cancelled by the caller (a save during a run): the worker is mid-op, so kill it.
            self.kill()
            raise
        finally:
            self._pending.pop(req_id, None)
            self._progress.pop(req_id, None)
        returned = self._returned.pop(req_id, [])
        phase = self._phase(req_id, op)
        self._last_progress.pop(req_id, None)
        if reply.get("tampered"):
            self.kill()
            raise WorkerFailure("tamper", f"{reply['tampered']} during {phase}", stderr=self.stderr_tail())
        if len(returned) > 1:
            self.kill()
            raise WorkerFailure("tamper", f"the worker's result channel carried bytes the harness did not write: "
                                f"{len(returned)} reports of what one call returned during {phase}",
                                stderr=self.stderr_tail())
        if reply.get("ok"):
            result = dict(reply.get("result") or {})
            result.pop("returned_digests", None)  # only ever what the sealed report said
            if returned:
                result["returned_digests"] = returned[0]
            return result
        if reply.get("crashed"):
            raise await self._crash_failure(op, phase)
        error: WorkerError = {}
        if reply.get("error"):
            error = reply["error"].copy()  # the worker's describe_exception, as JSON
        kind = "task" if error.get("task_error") is True else "error"  # the task cannot run here: exit 2
        raise WorkerFailure(kind, str(error.get("message") or "the worker reported an error"), error=error, stderr=self.stderr_tail())

    def _phase(self, req_id: int, op: str) -> str:
        doing = self._last_progress.get(req_id)
        return f"{op} ({doing})" if doing else op

    async def _crash_failure(self, op: str, phase: str) -> WorkerFailure:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 5.0)
        await asyncio.sleep(0.05)  # let the stderr reader drain the last lines
        rc = self.proc.returncode
        tail = self.stderr_tail(lines=15)
        # A remote runner knows what its transport's exit status means (ssh: 255 is a lost link).
        lost = getattr(self.runner, "lost_connection", lambda _rc: None)(rc)
        if lost:
            return WorkerFailure("connection", f"{lost} during {phase}", stderr=tail)
        remote_signal = getattr(self.runner, "exit_signal", lambda _rc: None)(rc)
        if remote_signal:
            rc = -remote_signal
        name = ""
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            msg = f"the worker died with {signal_words(name)} during {phase}"
        elif rc is not None:
            msg = f"the worker exited with status {rc} during {phase}"
        else:
            msg = f"the worker's connection closed during {phase}"
        last = [line for line in tail.splitlines() if line.strip()][-3:]
        cuda = next((line.strip() for line in tail.splitlines() if CUDA_FAULT.search(line)), None)
        if cuda and cuda not in last:
            # The fault itself, when native code aborted after it (its stack trace comes last).
            msg += f"; CUDA error: {cuda[:300]}"
        if last:
            msg += "; last output: " + " | ".join(line.strip()[:200] for line in last)
        return WorkerFailure("crash", msg, stderr=tail, death=WorkerDeath(self.role, op, name))

    # -- reading --------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        try:
            while True:
                header = await stream.readexactly(HEADER.size)
                (length,) = HEADER.unpack(header)
                if length > MAX_MESSAGE:
                    raise ProtocolError(f"message of {length} bytes")
                body = await stream.readexactly(length)
                self._dispatch(self._verifier.open(body))
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass
        except ProtocolError as exc:
            # Only the harness writes this channel, with the key: anything else is the candidate's.
            self._tampered = (
                f"the worker's result channel carried bytes the harness did not write ({exc}): the kernel wrote to "
                "the worker's reply descriptor to forge a result, so nothing this worker reported can be trusted"
            )
            self._dead = "result channel tampered"
            self.kill()
        finally:
            if self._dead is None:
                self._dead = "exited"
            if not self._ready.done():
                self._ready.set_exception(WorkerFailure("start", "the worker exited before it was ready", stderr=self.stderr_tail()))
                self._ready.exception()  # mark retrieved
            for future in self._pending.values():
                if not future.done():
                    future.set_result({"ok": False, "tampered": self._tampered} if self._tampered
                                      else {"ok": False, "crashed": True})

    def _dispatch(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "ready":
            if message.get("ok", True):
                if not self._ready.done():
                    info: DeviceInfo = {}
                    if message.get("info"):
                        info = message["info"].copy()  # the worker's describe_device, as JSON
                    self._ready.set_result(info)
            else:
                err: WorkerError = {}
                if message.get("error"):
                    err = message["error"].copy()  # the worker's describe_exception, as JSON
                if not self._ready.done():
                    self._ready.set_exception(
                        WorkerFailure("start", f"the worker could not start: {err.get('message')}", error=err, stderr=self.stderr_tail())
                    )
            return
        req_id = message.get("id")
        if not isinstance(req_id, int):
            return  # every request's events and reply carry its integer id: one without answers no request
        if event == "returned":
            # Kept apart from the reply, which code left running in the worker could still change.
            self._returned.setdefault(req_id, []).append(dict(message.get("digests") or {}))
            return
        if event == "progress":
            if req_id in self._last_progress:
                self._last_progress[req_id] = str(message.get("message", ""))
            cb = self._progress.get(req_id)
            if cb is not None:
                cb(str(message.get("message", "")), message.get("fraction"))
            return
        future = self._pending.get(req_id)
        if future is not None and not future.done():
            future.set_result(message)

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(Exception):
            while True:
                chunk = await self.proc.stderr.read(65536)
                if not chunk:
                    break
                self._stderr.extend(chunk)
                if len(self._stderr) > STDERR_KEEP:
                    cut = len(self._stderr) - STDERR_KEEP
                    del self._stderr[:cut]
                    self._stderr_dropped += cut

    def stderr_mark(self) -> int:
        return self._stderr_dropped + len(self._stderr)

    def stderr_since(self, mark: int) -> str:
        start = max(0, mark - self._stderr_dropped)
        return self._stderr[start:].decode("utf-8", errors="replace")

    def stderr_tail(self, lines: int = 40) -> str:
        text = self._stderr.decode("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def _box_failure(stderr: str) -> str:
    said = [line for line in stderr.splitlines() if line.startswith("kerneltui sandbox:")]
    why = said[-1].removeprefix("kerneltui sandbox:").strip() if said else "see the worker's output"
    return (f"the sandbox could not be applied ({why}); `kerneltui doctor` shows what this machine allows, "
            "and [sandbox] enabled = false (KERNELTUI_SANDBOX_ENABLED=false) runs workers without it")
