"""A seccomp filter that denies watching folders: ``inotify_init``, ``inotify_init1``,
``inotify_add_watch``, ``fanotify_init`` and ``fanotify_mark`` fail with EPERM in a boxed process.

Landlock hides a folder's listing but does not govern inotify or fanotify, whose events carry the
name of each new entry: a kernel watching the exchange root learned the 128-bit name of every run
folder made after it (``tests/cheats/test_watch_names.py``) and could then open files beneath it by
name. No worker needs to watch a folder, so the calls are denied outright, for every system-call
convention the machine's processor offers a process (x86_64, its x32 numbers and i386 on x86_64;
aarch64 and 32-bit ARM on aarch64). The filter survives fork and exec and cannot be removed; it needs
no_new_privs, which the box sets before it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from functools import cache

from kerneltui.core.sandbox import linux

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Classic BPF (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JEQ_K = 0x05 | 0x10 | 0x00
_RET_K = 0x06 | 0x00
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # struct seccomp_data
_X32_BIT = 0x40000000

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_ARM = 0x40000028

# The watch calls' numbers in each convention (inotify_init, inotify_add_watch, inotify_init1,
# fanotify_init, fanotify_mark; aarch64 has no inotify_init).
_X86_64 = (253, 254, 294, 300, 301)
WATCH_CALLS: dict[str, dict[int, tuple[int, ...]]] = {
    "x86_64": {AUDIT_ARCH_X86_64: _X86_64 + tuple(n | _X32_BIT for n in _X86_64),
               AUDIT_ARCH_I386: (291, 292, 332, 338, 339)},
    "aarch64": {AUDIT_ARCH_AARCH64: (26, 27, 262, 263), AUDIT_ARCH_ARM: (316, 317, 360, 367, 368)},
}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


@cache
def _libc() -> ctypes.CDLL:
    # A handle of its own: the argument types set here must not be those of ``linux.prctl``.
    return ctypes.CDLL(None, use_errno=True)


def machine() -> str:
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


def unsupported_why(arch: str | None = None) -> str:
    """Why the filter cannot be made here; "" where it can."""
    arch = arch or machine()
    if not linux.IS_LINUX:
        return "not Linux"
    if arch not in WATCH_CALLS:
        return f"no table of the watch calls' numbers for {arch}"
    return ""


def program(arch: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions: for each known convention, the listed calls
    return EPERM and every other call is allowed; a convention not listed is allowed (the processor
    offers no other)."""
    calls = WATCH_CALLS[arch or machine()]
    code: list[tuple[int, int, int, int]] = []
    deny_at: list[int] = []  # instructions whose true branch goes to the final EPERM
    for audit_arch, numbers in calls.items():
        code.append((_LD_W_ABS, 0, 0, _ARCH_OFFSET))
        code.append((_JEQ_K, 0, len(numbers) + 2, audit_arch))  # another convention: skip this block
        code.append((_LD_W_ABS, 0, 0, _NR_OFFSET))
        for number in numbers:
            deny_at.append(len(code))
            code.append((_JEQ_K, 0, 0, number))
        code.append((_RET_K, 0, 0, _RET_ALLOW))
    code.append((_RET_K, 0, 0, _RET_ALLOW))
    deny = len(code)
    code.append((_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    for at in deny_at:
        op, _, jf, k = code[at]
        code[at] = (op, deny - at - 1, jf, k)
    return code


def deny_watches() -> None:
    """Install the filter in this process (and so in everything it starts); raises :class:`OSError`."""
    why = unsupported_why()
    if why:
        raise OSError(errno.ENOSYS, f"seccomp: {why}")
    code = program()
    filters = (_SockFilter * len(code))(*(_SockFilter(*instruction) for instruction in code))
    prog = _SockFprog(len(code), ctypes.cast(filters, ctypes.POINTER(_SockFilter)))
    fn = _libc().prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    if fn(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {os.strerror(err)}")


def watches_refused_here() -> bool:
    """In a process that has the filter: does ``inotify_init1`` fail with EPERM?"""
    fn = _libc().inotify_init1
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    fd = fn(os.O_CLOEXEC)
    if fd >= 0:
        os.close(fd)
        return False
    return ctypes.get_errno() == errno.EPERM


def refuse_watches_here() -> None:
    """Install the filter in this process and confirm it refuses a watch; raises :class:`OSError` where
    it cannot or does not. For a forked child (``support``'s probe): a filter cannot be removed."""
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    deny_watches()
    if not watches_refused_here():
        raise OSError("inotify_init1 still works under the filter")
