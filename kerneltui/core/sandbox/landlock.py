"""Landlock: an unprivileged Linux security module that lets a process give up access for itself and
every process it starts (it survives exec and cannot be undone).

A ruleset names the kinds of access it *handles*; everything handled is denied except what a rule
grants beneath a path. ABI levels add what can be handled: 2 renames across folders, 3 truncate,
4 TCP bind/connect, 5 device ioctls, 6 scopes (signals to, and abstract UNIX sockets of, processes
outside the sandbox). kerneltui handles everything the running kernel knows and grants nothing for
TCP, so a boxed process can neither connect nor listen, whatever network namespace it is in.
"""

from __future__ import annotations

import ctypes
import os
import stat
from dataclasses import dataclass

from kerneltui.core.sandbox import linux

# Filesystem access rights (linux/landlock.h) and the ABI that introduced each.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1 << 0
# What a rule on a file (not a folder) may grant; anything else is refused with EINVAL.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

READ = EXECUTE | READ_FILE | READ_DIR
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
# Writable folders: everything but creating device nodes.
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_SYM
         | REFER | TRUNCATE | IOCTL_DEV)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Rule:
    """Grant ``access`` (bits above) beneath ``path`` (or on the file ``path``)."""

    path: str
    access: int


def abi_version() -> tuple[int, str]:
    """(ABI level, why it is 0): 0 when Landlock is missing, disabled or blocked."""
    if not linux.IS_LINUX:
        return 0, "not Linux"
    try:
        return linux.syscall(linux.SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                             ctypes.c_uint32(_CREATE_RULESET_VERSION)), ""
    except OSError as exc:
        if exc.errno == 38:  # ENOSYS
            return 0, "the kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK)"
        if exc.errno == 95:  # EOPNOTSUPP
            return 0, "Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
        return 0, f"Landlock is not usable here: {exc.strerror}"


def handled_fs(abi: int) -> int:
    return _FS_BY_ABI.get(abi, _FS_BY_ABI[5]) if abi >= 1 else 0


def restrict_self(abi: int, rules: list[Rule]) -> int:
    """Apply the rules to this thread (call it in a single-threaded process before exec); returns how
    many rules were added. Paths that do not exist are skipped: there is nothing to grant there."""
    handled = handled_fs(abi)
    attr = _RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = linux.syscall(linux.SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                            ctypes.c_uint32(0))
    added = 0
    try:
        for rule in rules:
            try:
                fd = os.open(rule.path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                access = rule.access & handled
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    access &= FILE_RIGHTS
                if not access:
                    continue
                beneath = _PathBeneathAttr(access, fd)
                try:
                    linux.syscall(linux.SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                  ctypes.byref(beneath), ctypes.c_uint32(0))
                except OSError as exc:
                    raise OSError(exc.errno, f"Landlock rule for {rule.path}: {exc.strerror}") from exc
                added += 1
            finally:
                os.close(fd)
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        linux.syscall(linux.SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return added
