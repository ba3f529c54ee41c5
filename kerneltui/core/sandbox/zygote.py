"""The zygote: a process that has imported what a worker imports at start and forks each new worker
from there, so that a worker is ready in tens of milliseconds instead of after seconds of imports
(``python -m kerneltui.core.sandbox.zygote FD --import MODULE … [--default VAR=VALUE …] [--nice N]``).

What a forked worker gets is what an exec'd one gets, in the same order: for each request the
zygote forks a child that becomes the worker's supervisor (``launch.Supervisor``: its own session,
the cgroup, the subreaper, the lifeline, the kill of everything below it at the end), which forks
the worker; the worker applies the box (``confine``) and then, instead of exec'ing
``python -m MODULE ARGS``, runs MODULE as ``__main__`` in the state the zygote prepared, with the
worker's own environment, folder and arguments. Only the imports are shared; the zygote itself
never runs task or candidate code, and a worker's state (the per-worker reply key, the task) arrives
after the fork, on the worker's own pipes.

On a GPU machine: a process that has initialised CUDA cannot hand its context to a forked child, so
the zygote imports without initialising it (importing torch maps the driver library, which is not
initialising it) and, before it serves, asks the driver that nothing did (``cuda_initialised``);
otherwise it refuses and its workers are exec'd. Each forked worker starts CUDA itself.

The protocol, on the SOCK_SEQPACKET socket FD the parent passed (one JSON object per packet):
- zygote → parent, once: ``{"ready": true, "pid": P}`` after the imports, or ``{"ready": false, "error": …}``;
- parent → zygote: ``{"id": N, "policy_file": …, "command": […], "env": {…}, "cwd": …}`` with the worker's
  stdin, stdout and stderr (and the lifeline's read end, when the policy has one) attached (SCM_RIGHTS);
- zygote → parent: ``{"id": N, "pid": SUPERVISOR}`` (or ``{"id": N, "error": …}``), and
  ``{"exit": SUPERVISOR, "status": WAIT_STATUS}`` when a supervisor ends;
- the parent closing its end (or dying): no more requests; the zygote exits once its supervisors
  have (their lifelines close with the parent, so they end everything below them first).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from kerneltui.core.sandbox import reaper
from kerneltui.core.sandbox.box import SCRATCH_PREFIX
from kerneltui.core.sandbox.policy import EXIT_BOX_FAILED

MAX_PACKET = 1 << 20  # a request carries the worker's environment (a few KB)
MAX_FDS = 4  # stdin, stdout, stderr, lifeline


def python_module_command(command: Sequence[str], python: str) -> tuple[str, list[str]] | None:
    """(MODULE, ARGS) when ``command`` is ``python -m MODULE ARGS…`` of this zygote's interpreter:
    the commands a zygote can run in a forked worker; None for any other (it is exec'd)."""
    if len(command) >= 3 and command[0] == python and command[1] == "-m":
        return command[2], list(command[3:])
    return None


class Zygote:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.children: set[int] = set()
        self.accepting = True
        # sys.path[0] of ``python -m`` is the folder it started in: a worker gets its own.
        self.start_folder = sys.path[0] if sys.path else ""
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # the parent died: its supervisors end with it
            self.sock.send(json.dumps(message).encode())

    def serve(self) -> int:
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a Python handler, so the wakeup fd is written
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        poller.register(self.sock.fileno(), select.POLLIN)
        while True:
            for pid, status in reaper.reap_children():
                self.children.discard(pid)
                self.send({"exit": pid, "status": status})
            if not self.accepting and not self.children:
                return 0
            for fd, _events in poller.poll(1000):
                if fd == self._wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 512)
                elif self.accepting:
                    if not self._take_request():
                        self.accepting = False
                        poller.unregister(self.sock.fileno())

    def _take_request(self) -> bool:
        """Serve one request; False when the parent closed its end."""
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_PACKET, MAX_FDS)
        except OSError:
            return False
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        request_id: Any = None
        try:
            request = json.loads(data)
            request_id = request["id"]
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self._become_supervisor(request, fds)
            self.children.add(pid)
            self.send({"id": request_id, "pid": pid})
        except Exception as exc:  # noqa: BLE001 - a bad request fails that request, not the zygote
            self.send({"id": request_id, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    # -- in the forked child ----------------------------------------------------------------------

    def _become_supervisor(self, request: dict[str, Any], fds: list[int]) -> NoReturn:
        try:
            os.setsid()  # a session and process group of its own, as an exec'd supervisor has
            for target, fd in enumerate(fds[:3]):
                os.dup2(fd, target)
            lifeline = fds[3] if len(fds) > 3 else -1
            # The zygote's wakeup descriptor first: a signal must not write to the number once it is closed.
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _close_fds_except({0, 1, 2, lifeline})
            from kerneltui.core.sandbox.launch import Supervisor, supervise, take_policy_file

            policy = take_policy_file(Path(request["policy_file"]))
            # The process that must stay alive is this zygote (its parent is the kerneltui that asked);
            # the lifeline is the one the parent passed, under this process's descriptor number.
            policy = dataclasses.replace(policy, parent_pid=os.getppid(), lifeline_fd=lifeline)
            os.chdir(request["cwd"])
            command = [str(part) for part in request["command"]]
            env = {str(k): str(v) for k, v in request["env"].items()}
            supervisor = Supervisor(policy, env, run_in_place=self._runner_for(command))
            supervise(supervisor, command)
        except BaseException as exc:  # noqa: BLE001 - whatever failed, no worker runs
            with contextlib.suppress(OSError):
                os.write(2, f"kerneltui sandbox: the worker was not started: {exc}\n".encode(errors="replace"))
        os._exit(EXIT_BOX_FAILED)

    def _runner_for(self, command: list[str]) -> Any:
        module = python_module_command(command, sys.executable)
        if module is None:
            return None
        name, args = module
        start_folder = self.start_folder

        def run(env: dict[str, str]) -> NoReturn:
            run_module_here(name, args, env, start_folder)

        return run


def run_module_here(module: str, args: list[str], env: dict[str, str], start_folder: str) -> NoReturn:
    """In the boxed worker: become ``python -m MODULE ARGS`` with ``env``, in the current folder."""
    code: Any = 1
    try:
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # computed from TMPDIR on first use: the zygote's own may be cached
        # What a new Python starts with (the supervisor left SIGINT at the system's default).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if sys.path and sys.path[0] == start_folder:
            sys.path[0] = os.getcwd()
        sys.argv = ["-m", *args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - reported as an exec'd Python would
        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code or 0)


def _close_fds_except(keep: set[int]) -> None:
    """Close every descriptor the zygote held but ``keep``: the control socket and other workers'
    pipes must not reach this worker."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def cuda_driver_mapped(maps: str) -> str:
    """The path of the CUDA driver library (libcuda.so*) if ``maps`` (``/proc/PID/maps``) maps it, else ""."""
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
        if len(fields) == 6 and os.path.basename(fields[5]).startswith("libcuda.so"):
            return fields[5]
    return ""


CUDA_ERROR_NOT_INITIALIZED = 3


def cuda_initialised(maps: str) -> str:
    """Why CUDA may be initialised in this process, or "" when it is not: the driver library is not
    mapped, or it is (importing torch or Triton on a GPU machine maps it) and answers
    ``cuCtxGetCurrent`` with CUDA_ERROR_NOT_INITIALIZED, which every driver call returns before
    ``cuInit`` without initialising anything."""
    path = cuda_driver_mapped(maps)
    if not path:
        return ""
    try:
        # RTLD_NOLOAD: the library already mapped, never a second copy.
        driver = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        context = ctypes.c_void_p()
        status = int(driver.cuCtxGetCurrent(ctypes.byref(context)))
    except (OSError, AttributeError) as exc:
        return f"the imports loaded the CUDA driver ({path}), which could not be asked whether CUDA is initialised ({exc})"
    if status != CUDA_ERROR_NOT_INITIALIZED:
        return f"the imports initialised CUDA (the driver {path} answers cuCtxGetCurrent with {status}, not {CUDA_ERROR_NOT_INITIALIZED})"
    return ""


def prepare(imports: Sequence[str], defaults: Sequence[str], nice: int) -> None:
    """Set the variables a worker sets before its imports, lower the priority as a worker would,
    import. Raises when an import fails or something initialised CUDA."""
    for item in defaults:
        name, _, value = item.partition("=")
        os.environ.setdefault(name, value)
    if nice:
        current = os.getpriority(os.PRIO_PROCESS, 0)
        if current < nice:
            os.nice(nice - current)
    for name in imports:
        importlib.import_module(name)
    torch = sys.modules.get("torch")
    # The driver itself says whether anybody (torch, Triton, a library) initialised CUDA before the
    # fork: torch's own flag (torch.cuda.is_initialized) would know only torch's calls.
    why = cuda_initialised(Path("/proc/self/maps").read_text())
    if why:
        raise RuntimeError(f"{why}; a forked worker could not use CUDA")
    # What a worker takes at warm-up as the state before any candidate code, worked out once here
    # (~0.25 s) so that a forked worker adds only what it imports itself: the code objects of what is
    # loaded (kerneltui.core.worker.child.known_code) and torch's dispatcher table (evidence.dispatch_table).
    if torch is not None:
        from kerneltui.core.worker.child.evidence import dispatch_table
        from kerneltui.core.worker.child.known_code import known_code

        known_code(os.path.join(os.path.dirname(str(torch.__file__)), ""))
        dispatch_table(torch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kerneltui-zygote")
    parser.add_argument("fd", type=int, help="the SOCK_SEQPACKET socket to the parent")
    parser.add_argument("--import", dest="imports", action="append", default=[])
    parser.add_argument("--default", dest="defaults", action="append", default=[],
                        help="VAR=VALUE set before the imports unless the environment has VAR")
    parser.add_argument("--nice", type=int, default=0)
    opts = parser.parse_args(argv)
    sock = socket.socket(fileno=opts.fd)
    zygote = Zygote(sock)
    try:
        prepare(opts.imports, opts.defaults, opts.nice)
    except BaseException as exc:  # noqa: BLE001 - the parent starts its workers the usual way
        zygote.send({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    zygote.send({"ready": True, "pid": os.getpid()})
    status = zygote.serve()
    # Its folder (the parent made it; it holds nothing a worker reads), also when the parent died first.
    here = Path.cwd()
    if here.name.startswith(SCRATCH_PREFIX):
        os.chdir("/")
        shutil.rmtree(here, ignore_errors=True)
    return status


if __name__ == "__main__":
    code = main()
    # Without the interpreter's teardown: with torch and the DSL loaded it takes most of a second, which
    # a command waiting for its idle zygotes at exit would pay.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
