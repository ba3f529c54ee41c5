"""A task's files are the files inside its folder: the one rule every loader and reader applies.

kerneltui reads a task's files outside the box (the command, the TUI, the engine) and hands them to
its workers, stores the kernel's text as a version and shows it to the model. A name in the folder
that resolves elsewhere (a symbolic link, a ``kernel = "../x.py"``) would make it read, run and
store a file the task does not hold: an SSH key linked as ``kernel.py`` in a folder that a boxed
kernel can write. So every file a task names, and every source file found in its folder, must
resolve inside the folder; anything else is a :class:`TaskError` naming the file and the rule.

Declared exceptions, read where they are because the person named them: GPU MODE's ``files:``
entries (``../utils.py`` shared by a set of problems; ``gpumode.linked_files``) and a candidate
passed with ``--kernel`` from another folder (a folder of submissions, a KernelBench run folder):
both are ``Task.linked_files``.
"""

from __future__ import annotations

import os
from pathlib import Path

from kerneltui.core.task_error import TaskError

RULE = ("kerneltui reads a task's files only inside its folder: a symbolic link or `..` that leads out is "
        "refused, so that no file outside it is read, run or stored as a version")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _refusal(name: str, real: str, root: str, path: Path) -> TaskError:
    return TaskError(f"{name} leads outside the task folder {root} (to {real}); {RULE}: copy the file into the "
                     "folder", path)


def contained(root: Path, name: str) -> Path:
    """``root / name``, which must resolve inside ``root`` (raises TaskError saying so otherwise)."""
    path = root / name
    folder = os.path.realpath(root)
    real = os.path.realpath(path)
    if not _inside(real, folder):
        raise _refusal(name, real, folder, path)
    return path


def read_contained(root: Path, name: str) -> bytes:
    """The bytes of ``root / name``, checked inside ``root`` on the file actually opened: a link swapped
    in between the check and the read (by a kernel that may write the folder) is refused too."""
    path = contained(root, name)
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc (not Linux): the path's own resolution, checked above
            real = os.path.realpath(path)
        folder = os.path.realpath(root)
        if not _inside(real, folder):
            raise _refusal(name, real, folder, path)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read()
    finally:
        if fd >= 0:
            os.close(fd)
