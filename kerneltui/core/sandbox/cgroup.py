"""A cgroup (v2) per worker: every process the worker starts is in it, whatever it does to its
process group or session, and ``cgroup.kill`` ends all of them at once.

kerneltui makes its cgroups beneath its own (``/proc/self/cgroup``'s ``0::`` line, under the
``cgroup2`` mount of ``/proc/self/mountinfo``): that works as root and where the service manager
delegated the subtree; elsewhere the process tree is the only line, and ``kerneltui doctor`` says so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def cgroup2_mount() -> str | None:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split()[4]
    except OSError:
        pass
    return None


def own_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


def base_folder() -> tuple[Path | None, str]:
    """The folder beneath which worker cgroups go, or (None, why not)."""
    mount = cgroup2_mount()
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted"
    own = own_cgroup()
    if own is None:
        return None, "this process is in no cgroup v2 group (/proc/self/cgroup has no 0:: line)"
    folder = Path(mount) / own.lstrip("/")
    if not (folder / "cgroup.procs").exists():
        return None, f"{folder} is not visible (the cgroup mount is of another namespace)"
    return folder, ""


def create(base: Path, name: str) -> Path:
    path = base / name
    path.mkdir()
    return path


def join(path: Path, pid: int = 0) -> None:
    """Move ``pid`` (0: the caller) into the cgroup at ``path``."""
    with open(path / "cgroup.procs", "w", encoding="ascii") as fh:
        fh.write(str(pid or os.getpid()))


def limit_processes(path: Path, count: int) -> bool:
    """Set ``pids.max`` where the pids controller is delegated here; False where it is not."""
    try:
        if "pids" not in (path / "cgroup.controllers").read_text().split():
            return False
        (path / "pids.max").write_text(str(count))
        return True
    except OSError:
        return False


def kill(path: Path) -> bool:
    """SIGKILL every process in the cgroup (Linux 5.14+: ``cgroup.kill``); False if that is not possible."""
    try:
        with open(path / "cgroup.kill", "w", encoding="ascii") as fh:
            fh.write("1")
        return True
    except OSError:
        return False


def populated(path: Path) -> bool:
    try:
        for line in (path / "cgroup.events").read_text().splitlines():
            if line.startswith("populated "):
                return line.split()[1] != "0"
    except OSError:
        return False
    return False


def remove(path: Path, wait_s: float = 2.0) -> bool:
    """Remove the (killed) cgroup once its last process is gone; False if it could not be."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
