"""The Linux calls the sandbox needs that Python's ``os`` module does not offer (Python 3.11 has no
``os.unshare``; no Python has ``prctl``, ``capset`` or the Landlock system calls), through ctypes.

Every function raises :class:`OSError` with the call's errno, so callers can say what failed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import cache

IS_LINUX = sys.platform.startswith("linux")

# prctl options (linux/prctl.h)
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

# unshare flags (linux/sched.h)
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000

# Landlock system calls: asm-generic numbers, the same on x86_64 and aarch64.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446

_CAP_VERSION_3 = 0x20080522


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    fn = _libc().prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return _check(fn(option, arg2, arg3, arg4, arg5), f"prctl({option})")


def unshare(flags: int) -> None:
    fn = _libc().unshare
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    _check(fn(flags), "unshare")


def syscall(number: int, *args: object) -> int:
    fn = _libc().syscall
    fn.restype = ctypes.c_long
    return _check(fn(ctypes.c_long(number), *args), f"syscall {number}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return 40  # CAP_CHECKPOINT_RESTORE, the last one of Linux 5.9+


def effective_capabilities() -> int:
    """This process's effective capability mask (``CapEff`` in /proc/self/status)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def drop_all_capabilities() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets, so that even a process
    running as uid 0 has no capability after the next exec (no ``setns`` back into the host network,
    no raw disk or kernel memory access, no mounting)."""
    for cap in range(last_capability() + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno != 22:  # EINVAL: a capability this kernel does not know
                raise
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as exc:
        if exc.errno != 22:  # kernels before 4.3 have no ambient set
            raise
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    fn = _libc().capset
    fn.argtypes = [ctypes.POINTER(_CapHeader), ctypes.POINTER(_CapData)]
    fn.restype = ctypes.c_int
    _check(fn(ctypes.byref(header), data), "capset")
