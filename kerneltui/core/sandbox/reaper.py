"""Finding and killing every process below one: the supervisor's second line after the cgroup.

The supervisor is a child subreaper, so a process whose parent exits (a double fork) is re-parented
to it instead of to init, and ``setsid`` changes a process's session, not its parent: every process
the worker ever started stays below the supervisor in the parent links of ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) for every process visible in /proc."""
    table: dict[int, tuple[int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read().decode(errors="replace")
        except OSError:
            continue
        # The command name is in parentheses and may itself hold spaces and parentheses.
        fields = raw[raw.rfind(")") + 2:].split()
        if len(fields) >= 2:
            table[int(name)] = (int(fields[1]), fields[0])
    return table


def descendants(root: int, include_zombies: bool = False) -> list[int]:
    table = _parents()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    if include_zombies:
        return found
    return [p for p in found if table.get(p, (0, "Z"))[1] not in ("Z", "X")]


def reap_children() -> list[tuple[int, int]]:
    """Collect every exited child without blocking: [(pid, wait status)]."""
    done = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        done.append((pid, status))
    return done


def kill_descendants(root: int, timeout_s: float = 10.0) -> tuple[list[tuple[int, int]], list[int]]:
    """SIGKILL every process below ``root`` (the caller) until none is left; returns the children
    reaped on the way and the pids still there at the deadline (stuck in the kernel, e.g. a GPU
    driver call that does not return)."""
    reaped: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout_s
    while True:
        alive = descendants(root)
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reaped += reap_children()
        if not alive and not descendants(root, include_zombies=True):
            return reaped, []
        if time.monotonic() > deadline:
            return reaped, alive
        time.sleep(0.005)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie is not; another user's process is)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of ours that exited stays a zombie until reaped: that is not alive.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True
