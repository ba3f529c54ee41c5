"""Where workers start. The loop asks a runner for a process; the protocol is the same everywhere.

:class:`LocalRunner` starts ``python -m kerneltui.core.worker.child.serve`` on this machine inside the
sandbox (``core.sandbox``): a scrubbed environment, a scratch folder (its ``HOME`` and ``TMPDIR``,
removed on release), a supervisor that kills every process the worker started when it ends, and
where the machine allows (and ``[sandbox] enabled`` is not false) a network namespace, Landlock and
resource limits. Other runners (SSH, Ray) live in ``core.remote``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from kerneltui import paths
from kerneltui.config import ConfigError
from kerneltui.core.environment_fault import bad_setting, from_os_error
from kerneltui.core.sandbox.box import WorkerBox, forked, open_box
from kerneltui.core.sandbox.policy import SandboxState
from kerneltui.core.sandbox.settings import SandboxSettings, load_settings
from kerneltui.core.sandbox.support import support
from kerneltui.core.sandbox.zygote_client import RunningZygote, ZygoteError, kind_of, zygote_for
from kerneltui.core.worker.contract.protocol import MAX_MESSAGE
from kerneltui.core.worker.contract.start import NICE_ENV, SERVE_MODULE, warm_imports

EXIT_WAIT_S = 5.0  # how long release() waits for a killed worker before SIGKILL to its process group


class WorkerHandle(Protocol):
    """The parent's handle on a started worker: ``asyncio.subprocess.Process``, or a zygote's
    ``ForkedProcess`` (``core/sandbox/zygote_client.py``), which behaves the same."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    async def wait(self) -> int: ...

    def kill(self) -> None: ...


def _nice_of(raw: str | None) -> int:
    try:
        return max(0, int(raw or 0))
    except ValueError:
        return 0


class Runner(Protocol):
    """Starts and kills workers. Remote runners may also define ``lost_connection(returncode)``
    (a message when the exit status means the link dropped: the loop retries the run once),
    ``exit_signal(returncode)`` (the signal that ended a remote worker) and ``async close()``."""

    name: str

    async def spawn(self, backend: str, arch: str | None, role: str = "candidate",
                    writable: Sequence[str] = ()) -> WorkerHandle:
        """Start a worker of ``role`` (candidate or judge); ``writable``: folders it may write besides
        its scratch folder (the exchange folders it shares with the other worker of a run)."""
        ...

    def kill(self, proc: WorkerHandle) -> None:
        """End the worker and every process it started, now; never blocks."""
        ...

    async def release(self, proc: WorkerHandle) -> None:
        """After ``kill``: wait for the end (forcing it if need be), remove the scratch folder and cgroup."""
        ...

    def sandbox_of(self, proc: WorkerHandle) -> SandboxState | None:
        """The box the worker runs in (None where the runner cannot tell)."""
        ...

    def describe(self) -> str: ...


def kill_group(proc: WorkerHandle) -> None:
    """SIGKILL the process group of ``proc`` (it was started in a new session)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


async def wait_or_force(proc: WorkerHandle, wait_s: float = EXIT_WAIT_S) -> None:
    """Wait for a killed process; a supervisor that does not finish in time loses its group to SIGKILL."""
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), wait_s)
    except TimeoutError:
        kill_group(proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), wait_s)


class LocalRunner:
    name = "local"

    def __init__(self, python: str | None = None, env: dict[str, str] | None = None,
                 sandbox: SandboxSettings | None = None) -> None:
        self.python = python or sys.executable
        self.env = env or {}  # added to the worker's environment (CUDA_VISIBLE_DEVICES, PYTHONPATH)
        self._settings = sandbox
        self._boxes: dict[int, WorkerBox] = {}

    @property
    def settings(self) -> SandboxSettings:
        if self._settings is None:
            try:
                self._settings = load_settings()
            except ConfigError as exc:  # the machine's setting, not the kernel: no worker starts
                where = os.environ.get("KERNELTUI_CONFIG") or str(paths.config_file())
                raise bad_setting(f"{where} (or KERNELTUI_SANDBOX_*): {exc}") from exc
        return self._settings

    async def open_box(self, writable: Sequence[str] = (), readable: Sequence[str] = (),
                       role: str = "candidate") -> WorkerBox:
        measured = await asyncio.to_thread(support)  # a child process, once per process
        return open_box(self.settings, measured, python=self.python, extra_env=self.env, writable=writable,
                        readable=readable, role=role)

    async def spawn(self, backend: str, arch: str | None, role: str = "candidate",
                    writable: Sequence[str] = ()) -> WorkerHandle:
        cmd = [self.python, "-m", SERVE_MODULE, "--backend", backend, "--role", role]
        if arch:
            cmd += ["--arch", arch]
        try:
            box = await self.open_box(writable, role=role)
        except OSError as exc:  # its scratch folder: a full disk, a folder it may not write
            fault = from_os_error(exc)
            if fault is None:
                raise
            raise fault from exc
        proc: WorkerHandle | None = None
        try:
            try:
                zygote = await self._zygote(backend, box)
                if zygote is not None:
                    proc = await zygote.spawn(box, cmd)
                    box.state = forked(box.state)
            except ZygoteError as exc:  # started the usual way, and the rung's sandbox lines say why
                box.state = forked(box.state, why_not=str(exc))
            if proc is None:
                proc = await self._exec(box, cmd)
        except BaseException:
            box.release()
            raise
        box.started()
        self._boxes[proc.pid] = box
        return proc

    async def _zygote(self, backend: str, box: WorkerBox) -> RunningZygote | None:
        """The zygote to fork this worker from (ZygoteError when it cannot start), or None: with
        another interpreter than this one, without a supervisor, with ``[sandbox] zygote = false``, or
        where a GPU is with ``[sandbox] zygote_on_gpu = false`` (on a GPU the zygote imports without
        initialising CUDA, which does not survive a fork, and each worker starts CUDA itself)."""
        if not (self.settings.zygote and box.supervised and self.python == sys.executable):
            return None
        measured = await asyncio.to_thread(support)
        if measured.gpu and not self.settings.zygote_on_gpu:
            return None
        warm = warm_imports(backend, gpu=measured.gpu)
        nice = _nice_of(box.env.get(NICE_ENV))
        kind = kind_of(self.python, warm.modules, warm.defaults, nice, box)
        return await asyncio.to_thread(zygote_for, kind, box)

    async def _exec(self, box: WorkerBox, cmd: list[str]) -> WorkerHandle:
        return await asyncio.create_subprocess_exec(
            *box.argv(cmd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=box.env,
            cwd=str(box.scratch),
            pass_fds=box.pass_fds,
            limit=MAX_MESSAGE,
        )

    def kill(self, proc: WorkerHandle) -> None:
        box = self._boxes.get(proc.pid)
        if box is not None and box.supervised:
            box.kill()  # the cgroup at once; the supervisor kills the process tree when its lifeline closes
        else:
            kill_group(proc)

    async def release(self, proc: WorkerHandle) -> None:
        self.kill(proc)
        await wait_or_force(proc)
        box = self._boxes.pop(proc.pid, None)
        if box is not None:
            await asyncio.to_thread(box.release)

    def sandbox_of(self, proc: WorkerHandle) -> SandboxState | None:
        box = self._boxes.get(proc.pid)
        return box.state if box is not None else None

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
