"""Which Landlock access CUDA needs: ``cuInit`` in forked children, each under a different ruleset.

The worker's box (bench/sandbox_cuda_probe.py) showed that on some GPU machines CUDA starts without
Landlock and fails with it (error 304). This script narrows it down without torch (libcuda through
ctypes, about a second per variant): the worker's rules with and without the scopes and TCP
handling, at lower ABI levels, with everything granted beneath ``/`` less one access right at a
time, and with the worker's rules plus everything beneath one top-level folder. Run it as the user
kerneltui runs as, on the GPU machine, then read the kernel's Landlock audit lines (``dmesg``) for
the access that was denied:

    python bench/landlock_cuda_matrix.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.core.sandbox import landlock, linux  # noqa: E402
from kerneltui.core.sandbox.filesystem import FilesystemPlan, device_nodes, plan_hidden, rules_here  # noqa: E402

ALL_FS = (1 << 16) - 1
RIGHT_NAMES = {getattr(landlock, n): n for n in (
    "EXECUTE", "WRITE_FILE", "READ_FILE", "READ_DIR", "REMOVE_DIR", "REMOVE_FILE", "MAKE_CHAR", "MAKE_DIR",
    "MAKE_REG", "MAKE_SOCK", "MAKE_FIFO", "MAKE_BLOCK", "MAKE_SYM", "REFER", "TRUNCATE", "IOCTL_DEV")}


@dataclass(frozen=True)
class Variant:
    name: str
    handled_fs: int
    handled_net: int
    scoped: int
    rules: tuple[landlock.Rule, ...]


def worker_rules() -> list[landlock.Rule]:
    plan = FilesystemPlan(hidden=plan_hidden(os.path.expanduser("~"), tempfile.gettempdir()), readable=(),
                          writable=(), devices=device_nodes(), unlisted=("/dev/shm",))
    return rules_here(plan)  # pid-specific rule: rebuilt in the child for its own pid


def apply(variant: Variant) -> None:
    attr = landlock._RulesetAttr(variant.handled_fs, variant.handled_net, variant.scoped)
    ruleset = linux.syscall(linux.SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr),
                            ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    # "<pid>" in a rule's path is the child's own pid (Landlock binds a rule to the inode it names).
    rules = [landlock.Rule(r.path.replace("<pid>", str(os.getpid())), r.access) for r in variant.rules]
    if variant.name.startswith("worker"):
        rules = worker_rules() + rules
    for rule in rules:
        try:
            fd = os.open(rule.path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        access = rule.access & variant.handled_fs
        if not os.path.isdir(rule.path):
            access &= landlock.FILE_RIGHTS
        if access:
            beneath = landlock._PathBeneathAttr(access, fd)
            linux.syscall(linux.SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1),
                          ctypes.byref(beneath), ctypes.c_uint32(0))
        os.close(fd)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.syscall(linux.SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))


def cuinit_in_child(variant: Variant | None) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 250
        try:
            if variant is not None:
                apply(variant)
            code = int(ctypes.CDLL("libcuda.so.1").cuInit(0)) & 0xFF
        except OSError as exc:
            print("  child:", exc, file=sys.stderr)
            code = 251
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def variants(abi: int) -> list[Variant]:
    net = landlock.NET_BIND_TCP | landlock.NET_CONNECT_TCP
    scopes = landlock.SCOPE_ABSTRACT_UNIX_SOCKET | landlock.SCOPE_SIGNAL
    fs5 = landlock.handled_fs(abi)
    out = [
        Variant("worker rules, as kerneltui applies them", fs5, net, scopes, ()),
        Variant("worker rules, no scopes", fs5, net, 0, ()),
        Variant("worker rules, no TCP handling", fs5, 0, scopes, ()),
        Variant("worker rules, scope: abstract sockets only", fs5, net, landlock.SCOPE_ABSTRACT_UNIX_SOCKET, ()),
        Variant("worker rules, scope: signals only", fs5, net, landlock.SCOPE_SIGNAL, ()),
        Variant("worker rules, ABI 4 filesystem (no IOCTL_DEV handled)", landlock.handled_fs(4), net, scopes, ()),
        Variant("worker rules, ABI 1 filesystem", landlock.handled_fs(1), net, scopes, ()),
        Variant("all granted beneath /, scopes and TCP handled", fs5, net, scopes, (landlock.Rule("/", ALL_FS),)),
        Variant("all granted beneath /, nothing else handled", fs5, 0, 0, (landlock.Rule("/", ALL_FS),)),
    ]
    for bit, name in sorted(RIGHT_NAMES.items()):
        if bit & fs5:
            out.append(Variant(f"all granted beneath / but {name}", fs5, 0, 0, (landlock.Rule("/", ALL_FS & ~bit),)))
    written = landlock.READ | landlock.WRITE_FILE | landlock.TRUNCATE
    for where in ("/proc/<pid>", "/proc/<pid>/task", "/proc/sys", "/proc/driver"):
        out.append(Variant(f"worker rules + read, write, truncate beneath {where}", fs5, net, scopes,
                           (landlock.Rule(where, written),)))
    for top in ("/dev", "/proc", "/sys", "/tmp", "/run", "/var", "/etc", "/usr", "/root", "/home", "/opt"):
        if os.path.exists(top):
            out.append(Variant(f"worker rules + all beneath {top}", fs5, net, scopes, (landlock.Rule(top, ALL_FS),)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    parser.add_argument("--only", default="", help="run only the variants whose name contains this")
    args = parser.parse_args()
    abi, why = landlock.abi_version()
    print(f"Landlock ABI {abi} {why}; uid {os.geteuid()}; GPU nodes {device_nodes()}")
    rows = [("no Landlock", cuinit_in_child(None))]
    print(f"{rows[0][0]}: cuInit -> {rows[0][1]}", flush=True)
    for variant in variants(abi):
        if args.only not in variant.name:
            continue
        rows.append((variant.name, cuinit_in_child(variant)))
        print(f"{variant.name}: cuInit -> {rows[-1][1]}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
