"""Apply a :class:`BoxPlan` to the calling process, which then execs the worker.

Order: the network namespace first (it needs the capabilities dropped last), resource limits, then
Landlock (which sets no_new_privs), the seccomp filter that denies folder watches (it needs
no_new_privs), then the capabilities. Each step raises :class:`BoxError`
saying which part failed; nothing is skipped quietly, because the parent has already told the person
what the box holds.
"""

from __future__ import annotations

import json
import os
import resource

from kerneltui.core.sandbox import landlock, linux, seccomp
from kerneltui.core.sandbox.filesystem import FilesystemPlan, rules_here
from kerneltui.core.sandbox.policy import BoxPlan
from kerneltui.core.sandbox.support import enter_user_network_namespace

# Names the rules file of a Landlock left to the boxed program's child (``box.defer_filesystem_rules``).
DEFERRED_LANDLOCK_ENV = "KERNELTUI_DEFERRED_LANDLOCK"


class BoxError(Exception):
    pass


def user_task_count(uid: int) -> int:
    """Tasks (threads included) of ``uid``: what RLIMIT_NPROC counts."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="utf-8", errors="replace") as fh:
                real_uid, threads = -1, 1
                for line in fh:
                    if line.startswith("Uid:"):
                        real_uid = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
        if real_uid == uid:
            count += threads
    return count


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def apply_limits(plan: BoxPlan) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing kernel must not write gigabytes of core
    if plan.address_space:
        _limit(resource.RLIMIT_AS, plan.address_space)
    if plan.open_files:
        _limit(resource.RLIMIT_NOFILE, plan.open_files)
    if plan.extra_tasks and os.geteuid() != 0:
        _limit(resource.RLIMIT_NPROC, user_task_count(os.getuid()) + plan.extra_tasks)


def confine(plan: BoxPlan) -> None:
    try:
        if plan.network == "namespace":
            linux.unshare(linux.CLONE_NEWNET)
        elif plan.network == "user-namespace":
            enter_user_network_namespace()
    except OSError as exc:
        raise BoxError(f"network namespace: {exc.strerror or exc}") from exc
    try:
        apply_limits(plan)
    except (OSError, ValueError) as exc:
        raise BoxError(f"resource limits: {exc}") from exc
    try:
        if plan.landlock_abi and plan.filesystem is not None:
            landlock.restrict_self(plan.landlock_abi, rules_here(plan.filesystem))
        else:
            linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    except OSError as exc:
        raise BoxError(f"Landlock: {exc.strerror or exc}") from exc
    if plan.deny_watches:  # after no_new_privs, which an unprivileged filter needs
        try:
            seccomp.deny_watches()
        except OSError as exc:
            raise BoxError(f"denying folder watches: {exc.strerror or exc}") from exc
    if plan.drop_capabilities:
        try:
            linux.drop_all_capabilities()
        except OSError as exc:
            raise BoxError(f"dropping capabilities: {exc.strerror or exc}") from exc


def apply_deferred_landlock() -> bool:
    """In a program whose box left Landlock to it: apply it now, with the grant of this process's own
    threads. False when nothing was left to it; raises :class:`BoxError` when it cannot be applied
    (the caller must then not run task code)."""
    path = os.environ.pop(DEFERRED_LANDLOCK_ENV, "")
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        plan = FilesystemPlan.from_dict(data["filesystem"])
        landlock.restrict_self(int(data["abi"]), rules_here(plan))
        if data.get("deny_watches"):  # left to the target with Landlock: ncu itself may watch
            seccomp.deny_watches()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BoxError(f"Landlock or folder watches: {exc}") from exc
    return True
