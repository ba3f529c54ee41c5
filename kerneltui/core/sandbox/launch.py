"""The supervisor a worker runs under: ``python -m kerneltui.core.sandbox.launch POLICY -- COMMAND…``
(or ``--here SETTINGS`` on a remote host, where it decides the policy itself).

It stays between the parent and the worker for the worker's whole life, and is small on purpose:

1. joins the worker's cgroup, becomes a child subreaper (orphans of the worker are re-parented to
   it, not to init) and asks for SIGTERM when its parent thread dies (``PR_SET_PDEATHSIG``);
2. forks the worker, which applies the box (``confine.py``: network namespace, limits, Landlock,
   capabilities), asks for SIGKILL when the supervisor dies, and execs COMMAND. The supervisor itself
   stays outside the box: with Landlock's signal scope the worker cannot even signal it;
3. waits until the worker exits, the parent closes the lifeline pipe (the parent's ``kill``), the
   parent dies (the lifeline closes too, and the death signal fires), or SIGTERM/SIGHUP/SIGINT;
4. then kills every process below it (the cgroup at once, then the process tree until it is empty),
   removes the cgroup and the scratch folder, and exits as the worker did: the same exit status,
   or the same signal, so the parent's crash messages read as before.

Why both a lifeline and the death signal: ``PR_SET_PDEATHSIG`` fires when the *thread* that forked
the supervisor exits. asyncio forks from the thread running the event loop, and a worker belongs to
that loop (its pipes are the loop's transports), so that thread ending is the end of its workers
too; the lifeline closes only when the parent process itself closes it or dies, whichever thread.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from kerneltui.core.sandbox import cgroup, linux, reaper
from kerneltui.core.sandbox.policy import EXIT_BOX_FAILED, LaunchPolicy

# Runs the worker's program in the boxed process itself, given its environment, instead of exec'ing
# the command (a zygote's workers: ``zygote.py``); never returns.
RunInPlace = Callable[[dict[str, str]], NoReturn]


class Supervisor:
    def __init__(self, policy: LaunchPolicy, env: dict[str, str] | None = None,
                 run_in_place: RunInPlace | None = None) -> None:
        self.policy = policy
        self.env = env  # None: the environment this process was given (already the worker's)
        self.run_in_place = run_in_place
        self.stop_reason = ""
        self.worker = 0
        self.status: int | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)

    # -- signals ----------------------------------------------------------------------------------

    def _on_stop(self, signum: int, _frame: object) -> None:
        self.stop_reason = self.stop_reason or signal.Signals(signum).name

    def install_signals(self) -> None:
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a Python handler, so the wakeup fd is written
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, self._on_stop)

    # -- start ------------------------------------------------------------------------------------

    def start(self, command: list[str]) -> None:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != self.policy.parent_pid:
            self.stop_reason = "the parent exited before the worker started"
            return
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        if self.policy.cgroup:
            cgroup.join(Path(self.policy.cgroup))
        supervisor = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker-to-be
            self._become_worker(command, supervisor)
        self.worker = pid
        # The protocol pipes are the worker's: holding them here would keep them open after it exits.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)

    def _become_worker(self, command: list[str], supervisor: int) -> None:
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            os.close(self._wake_r)
            os.close(self._wake_w)
            if self.policy.lifeline_fd >= 0:
                os.close(self.policy.lifeline_fd)
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != supervisor:
                os._exit(EXIT_BOX_FAILED)
            if self.policy.box is not None:
                from kerneltui.core.sandbox.confine import confine

                confine(self.policy.box)
            os.chdir(self.policy.scratch)
            env = self.env if self.env is not None else dict(os.environ)
            if self.run_in_place is not None:
                self.run_in_place(env)
            os.execvpe(command[0], command, env)
        except BaseException as exc:  # noqa: BLE001 - whatever failed, the worker must not run unboxed
            os.write(2, f"kerneltui sandbox: the worker was not started: {exc}\n".encode(errors="replace"))
        os._exit(EXIT_BOX_FAILED)

    # -- wait -------------------------------------------------------------------------------------

    def wait(self) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        if self.policy.lifeline_fd >= 0:
            poller.register(self.policy.lifeline_fd, select.POLLIN | select.POLLHUP)
        while not self.stop_reason:
            for pid, status in reaper.reap_children():
                if pid == self.worker:
                    self.status = status
            if self.status is not None:
                return
            if os.getppid() != self.policy.parent_pid:
                self.stop_reason = "the parent died"
                return
            for fd, events in poller.poll(1000):
                if fd == self._wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 512)
                elif events & (select.POLLHUP | select.POLLERR | select.POLLIN):
                    self.stop_reason = "the parent closed the lifeline"

    # -- end --------------------------------------------------------------------------------------

    def end(self) -> int:
        """Kill everything below, clean up, and return the worker's wait status (or a SIGKILL one)."""
        group = Path(self.policy.cgroup) if self.policy.cgroup else None
        if group is not None:
            # Leave the group first, so that killing it does not kill the supervisor mid-cleanup.
            with contextlib.suppress(OSError):
                cgroup.join(group.parent)
                cgroup.kill(group)
        reaped, stuck = reaper.kill_descendants(os.getpid())
        for pid, status in reaped:
            if pid == self.worker and self.status is None:
                self.status = status
        if stuck:
            os.write(2, f"kerneltui sandbox: processes {stuck} did not die (stuck in the kernel)\n".encode())
        if group is not None:
            cgroup.remove(group)
        shutil.rmtree(self.policy.scratch, ignore_errors=True)
        if self.status is None:
            return signal.SIGKILL  # the wait status of a process killed by SIGKILL
        return self.status


def exit_like(status: int) -> None:
    """Leave with the worker's exit: its code, or death by its signal (no core file)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # their handlers cannot be changed (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal this process cannot die of (SIGCHLD, SIGSTOP)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _policy_from_args(argv: list[str]) -> tuple[LaunchPolicy, list[str], dict[str, str] | None]:
    if "--" not in argv:
        raise SystemExit("usage: python -m kerneltui.core.sandbox.launch (POLICY | --here SETTINGS) -- COMMAND…")
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    if not command:
        raise SystemExit("kerneltui sandbox: no command to run after --")
    if head[:1] == ["--here"] and len(head) == 2:
        from kerneltui.core.sandbox.box import policy_here, summary

        policy, env, state = policy_here(head[1])
        print(f"kerneltui sandbox on {os.uname().nodename}: {summary(state)}", file=sys.stderr, flush=True)
        os.environ.clear()  # the remote login's environment, credentials included, leaves with it
        os.environ.update(env)
        return policy, command, env
    if len(head) != 1:
        raise SystemExit("kerneltui sandbox: give one policy file (written by kerneltui) before --")
    return take_policy_file(Path(head[0])), command, None


def take_policy_file(path: Path) -> LaunchPolicy:
    """Read the policy the parent wrote, and remove the file before any worker exists to read it."""
    text = path.read_text(encoding="utf-8")
    path.unlink()
    return LaunchPolicy.from_json(text)


def main(argv: list[str] | None = None) -> int:
    try:
        policy, command, env = _policy_from_args(list(sys.argv[1:] if argv is None else argv))
    except (OSError, ValueError) as exc:
        print(f"kerneltui sandbox: cannot read the policy: {exc}", file=sys.stderr)
        return EXIT_BOX_FAILED
    return supervise(Supervisor(policy, env), command)


def supervise(supervisor: Supervisor, command: list[str]) -> int:
    """Start the worker, wait for its end, kill what is left, and leave as it did (or return
    EXIT_BOX_FAILED when it never started)."""
    supervisor.install_signals()
    try:
        supervisor.start(command)
    except OSError as exc:
        print(f"kerneltui sandbox: cannot supervise the worker: {exc}", file=sys.stderr)
        supervisor.stop_reason = str(exc)
    if supervisor.worker:
        supervisor.wait()
    status = supervisor.end()
    if not supervisor.worker:
        print(f"kerneltui sandbox: the worker was not started: {supervisor.stop_reason}", file=sys.stderr)
        return EXIT_BOX_FAILED
    exit_like(status)
    return 1


if __name__ == "__main__":
    sys.exit(main())
