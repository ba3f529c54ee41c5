"""What a boxed process may read and write, as Landlock rules.

Landlock only grants, so "everything except the home folder" is spelled out: every entry of ``/``
that is neither hidden nor on the way to something hidden is granted whole (read and execute); the
folders on the way (``/``, ``/etc``, ``/root`` …) are walked one level down and the same is done
there. ``/`` and those folders on the way are not listable: a listing granted on a folder covers
everything beneath it, the temp folder and ``/dev/shm`` included.

Hidden by default: the user's home and every other home (keys, cloud and tool credentials, shell
history, kerneltui's own config with API keys), the temp folder (other workers' scratch folders,
other programs' files), credential files of the system (``/etc/shadow``, ``/etc/ssh``, mounted
service secrets) and ``/dev`` but for the device nodes CUDA and Python use. Readable again although
beneath a hidden folder: the Python installation and its paths, ``PYTHONPATH``, ``PATH`` and library
folders. Writable: the worker's scratch folder, the shared compile caches (a judge: its own), and,
by name only (no listing), ``/dev/shm`` and the caller's exchange folders.

Sealed: the engine's folder (its key, log and socket). A sealed folder is hidden like the others and,
unlike them, no read grant may cover it again: a readable path that contains it (an import path that
is the engine's working folder, a worktree holding it) is granted around it, entry by entry.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass

from kerneltui.core.sandbox.landlock import DEVICE, READ, READ_DIR, TRUNCATE, WRITE, WRITE_FILE, Rule

# Device nodes a worker uses: Python and the C library (null, random, tty), CUDA (nvidia*), shared
# memory (CUDA IPC reference counts, exchange folders). Not the disks, not the kernel's memory.
STANDARD_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
                    "/dev/ptmx", "/dev/pts")
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*")
SHARED_MEMORY = "/dev/shm"
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/sudoers",
                  "/etc/sudoers.d", "/run/secrets", "/var/run/secrets", "/home", "/root")


@dataclass(frozen=True)
class FilesystemPlan:
    hidden: tuple[str, ...]
    readable: tuple[str, ...]  # readable again although beneath a hidden path
    writable: tuple[str, ...]
    devices: tuple[str, ...]
    sealed: tuple[str, ...] = ()  # hidden, and never readable again through ``readable``
    # Written and read by name, never listed: /dev/shm and the exchange folders, where other workers'
    # and other runs' folders lie (a run's own folder has a name no one can guess).
    unlisted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {"hidden": list(self.hidden), "readable": list(self.readable), "writable": list(self.writable),
                "devices": list(self.devices), "sealed": list(self.sealed), "unlisted": list(self.unlisted)}

    @classmethod
    def from_dict(cls, data: dict[str, list[str]]) -> FilesystemPlan:
        return cls(tuple(data.get("hidden") or ()), tuple(data.get("readable") or ()),
                   tuple(data.get("writable") or ()), tuple(data.get("devices") or ()),
                   tuple(data.get("sealed") or ()), tuple(data.get("unlisted") or ()))


def device_nodes() -> tuple[str, ...]:
    found = [p for p in STANDARD_DEVICES if os.path.exists(p)]
    for pattern in GPU_DEVICE_GLOBS:
        found += sorted(glob.glob(pattern))
    return tuple(found)


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _beneath(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def plan_hidden(home: str, temp: str, also: Iterable[str] = ()) -> tuple[str, ...]:
    """The paths to hide, real and existing. ``/`` is never hidden (a home of ``/``: nothing to hide)."""
    hidden = []
    for path in (home, temp, "/dev", *SYSTEM_SECRETS, *also):
        if not path:
            continue
        real = _real(path)
        if real != "/" and os.path.lexists(real) and real not in hidden:
            hidden.append(real)
    return tuple(hidden)


def grants_around(root: str, avoid: set[str], access: int) -> list[Rule]:
    """``access`` to everything beneath ``root`` except beneath the paths of ``avoid`` (real paths):
    ``root`` whole when none of them lies beneath it, else each entry of ``root`` and of the folders
    on the way down to them that neither is one nor leads to one (a link into one neither)."""
    if any(_beneath(root, a) for a in avoid):
        return []
    inside = [a for a in avoid if _beneath(a, root)]
    if not inside:
        return [Rule(root, access)]
    ancestors = {root}
    for a in inside:
        parent = os.path.dirname(a)
        while parent not in ancestors and _beneath(parent, root):
            ancestors.add(parent)
            parent = os.path.dirname(parent)
    rules: list[Rule] = []
    for folder in sorted(ancestors):
        if folder in avoid:
            continue  # an avoided folder on the way to another avoided path (/home and /home/me)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if path in avoid or path in ancestors:
                continue
            target = _real(path)
            if any(_beneath(target, a) for a in avoid):
                continue  # a link into something avoided: granting it would undo the hiding
            rules.append(Rule(path, access))
    return rules


def read_rules(hidden: Iterable[str], readable: Iterable[str], sealed: Iterable[str] = ()) -> list[Rule]:
    """Read (and execute) everywhere except beneath ``hidden`` and ``sealed``, plus ``readable`` inside
    the hidden paths but never inside a sealed one."""
    sealed_set = {_real(s) for s in sealed}
    # No listing granted on ``/`` itself: Landlock grants beneath a path, so it would let every folder
    # be listed, the temp folder (other workers' scratch folders) and /dev/shm (other runs' exchange
    # folders) included. The folders on the way to a hidden path cannot be listed; their entries open.
    rules = grants_around("/", {_real(h) for h in hidden} | sealed_set, READ)
    for path in readable:
        if path and os.path.exists(path):
            rules += grants_around(_real(path), sealed_set, READ)
    return rules


def own_threads_rule(pid: int) -> Rule:
    """Writing the names of the process's own threads (``/proc/<pid>/task/<tid>/comm``).

    CUDA names the threads it starts during ``cuInit`` by writing those files, opened with
    ``O_TRUNC``, and ``cuInit`` fails with error 304 (operating system call failed) when it cannot
    (measured on an H200 VM: everything granted beneath ``/`` but truncating or writing fails). The
    grant is made by the boxed process itself, for its own pid (``exec`` keeps the pid): Landlock binds a rule to the inode it
    names, so a grant on ``/proc/self`` made anywhere else would name another process. ``/proc`` as a
    whole is never granted: a worker that runs as root without capabilities could then write
    sysctls, whose permission check is the file's owner, not a capability."""
    return Rule(f"/proc/{pid}/task", READ | WRITE_FILE | TRUNCATE)


def rules_for(plan: FilesystemPlan) -> list[Rule]:
    rules = read_rules(plan.hidden, plan.readable, plan.sealed)
    rules += [Rule(p, DEVICE) for p in plan.devices]
    rules += [Rule(p, WRITE) for p in plan.writable]
    rules += [Rule(p, WRITE & ~READ_DIR) for p in plan.unlisted]
    return rules


def rules_here(plan: FilesystemPlan) -> list[Rule]:
    """The rules for the process about to restrict itself: the plan's, and its own threads' names."""
    return [*rules_for(plan), own_threads_rule(os.getpid())]
