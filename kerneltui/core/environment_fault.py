"""Faults of the machine, not of the kernel: a full disk, a folder kerneltui may not write, a bad setting.

A rung that meets one raises :class:`EnvironmentFault`; the loop stops the run there and reports it
as its own outcome (``RunReport.environment``, ``RunFinished.environment``): not a failed rung, not a
history row, and ``kerneltui check`` exits with ``EXIT_ENVIRONMENT`` (3). The message says what
happened, where, and what to do.
"""

from __future__ import annotations

import errno

# errno → (what happened, what to do)
_KNOWN: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on device", "free space on that disk, then run again"),
    errno.EDQUOT: ("disk quota exceeded", "free space within your quota, then run again"),
    errno.EROFS: ("read-only file system", "check a copy of the task in a writable folder"),
    errno.EACCES: ("permission denied", "make the task folder and its .kerneltui folder writable for you, "
                                        "or check a copy of the task in a folder of your own"),
    errno.EPERM: ("operation not permitted", "make the task folder and its .kerneltui folder writable for you "
                                             "(an immutable file or folder: chattr -i), or check a copy of the task"),
}


class EnvironmentFault(Exception):
    """The machine, not the kernel, stopped the run; ``message`` says what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def from_os_error(exc: OSError, doing: str = "writing", under: str = "") -> EnvironmentFault | None:
    """The fault an OSError of the machine stands for, or None for any other OSError. ``under``: the
    folder being written, named when the error names no file (a write to a file already open)."""
    known = _KNOWN.get(exc.errno or 0)
    if known is None:
        return None
    what, remedy = known
    where = f" {doing} {exc.filename}" if exc.filename else f" {doing} under {under}" if under else ""
    return EnvironmentFault(f"{what}{where} — {remedy}")


def bad_setting(message: str) -> EnvironmentFault:
    """A setting kerneltui cannot use (``ConfigError``'s message names the file and the key)."""
    return EnvironmentFault(f"{message} — fix the setting (`kerneltui config --path` shows the file), then run again")
