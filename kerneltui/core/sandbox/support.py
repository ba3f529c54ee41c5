"""What this machine lets kerneltui build a box from, measured, with the reason for each part it
cannot have. Measured once per process, in a child (``python -m kerneltui.core.sandbox.support``):
trying a network namespace or a cgroup move cannot be undone in the process that tries it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from kerneltui.core.sandbox import cgroup, landlock, linux, seccomp
from kerneltui.core.sandbox.filesystem import (
    FilesystemPlan,
    device_nodes,
    plan_hidden,
    rules_here,
)

CAP_SYS_ADMIN = 21
CAP_SETPCAP = 8


@dataclass(frozen=True)
class SandboxSupport:
    landlock_abi: int = 0
    landlock_why: str = ""
    network: str = ""  # "namespace" (root), "user-namespace" (unprivileged), "": none
    network_why: str = ""
    cgroup_base: str = ""  # where per-worker cgroups go; "": none
    cgroup_why: str = ""
    cgroup_pids: bool = False  # the pids controller is delegated there (pids.max works)
    capabilities: bool = False  # this process holds capabilities it can drop (root)
    root: bool = False
    gpu: bool = False  # an NVIDIA driver's device nodes are here (CUDA maps device memory into the address space)
    watches_why: str = "not measured"  # why folder watches (inotify, fanotify) cannot be denied; "": they can

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SandboxSupport:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def _in_child(action: Callable[[], object]) -> str:
    """Run ``action`` in a forked child (what it changes stays there); "" if it worked, else the
    :class:`OSError` it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read)
        code = 0
        try:
            action()
        except OSError as exc:
            os.write(write, (exc.strerror or str(exc)).encode()[:400])
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        message = fh.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return ""
    return message or "failed"


def enter_user_network_namespace() -> None:
    """An unprivileged network namespace: a user namespace mapping this user to itself, then the
    network namespace inside it."""
    uid, gid = os.geteuid(), os.getegid()
    linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNET)
    with open("/proc/self/setgroups", "w") as fh:
        fh.write("deny")
    with open("/proc/self/uid_map", "w") as fh:
        fh.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as fh:
        fh.write(f"{gid} {gid} 1")


def _probe_cgroup() -> tuple[str, str, bool]:
    base, why = cgroup.base_folder()
    if base is None:
        return "", why, False
    trial = base / f"kerneltui-probe-{os.getpid()}"
    try:
        cgroup.create(base, trial.name)
    except OSError as exc:
        return "", f"cannot make a cgroup beneath {base}: {exc.strerror} (not root, and the subtree is not delegated)", False
    try:
        cgroup.join(trial)
        pids = "pids" in (trial / "cgroup.controllers").read_text().split()
        can_kill = (trial / "cgroup.kill").exists()
        cgroup.join(base)
    except OSError as exc:
        return "", f"cannot move a process into a cgroup beneath {base}: {exc.strerror}", False
    finally:
        cgroup.remove(trial)
    if not can_kill:
        return "", "the kernel has no cgroup.kill (Linux 5.14 or later)", False
    return str(base), "", pids


CUDA_DRIVER = "libcuda.so.1"
GPU_CONTROL_NODES = ("/dev/nvidiactl",)  # present where an NVIDIA driver is loaded


def gpu_driver_here(control_nodes: tuple[str, ...] = GPU_CONTROL_NODES) -> bool:
    return any(os.path.exists(p) for p in control_nodes)


def _cuda_init_status() -> int:
    """``cuInit(0)``'s result in this process (0: CUDA is up), or -1 when there is no CUDA driver."""
    import ctypes

    try:
        driver = ctypes.CDLL(CUDA_DRIVER)
    except OSError:
        return -1
    return int(driver.cuInit(0))


def _status_in_child(boxed: bool, abi: int, check: Callable[[], int]) -> int:
    """``check()`` in a forked child, under a Landlock like a worker's when ``boxed``."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 255
        try:
            if boxed:
                plan = FilesystemPlan(hidden=plan_hidden(os.path.expanduser("~"), tempfile.gettempdir()),
                                      readable=(), writable=("/dev/shm",), devices=device_nodes())
                landlock.restrict_self(abi, rules_here(plan))
            code = check() & 0xFF
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def gpu_under_landlock(abi: int, check: Callable[[], int] = _cuda_init_status,
                       control_nodes: tuple[str, ...] = GPU_CONTROL_NODES) -> str:
    """Why Landlock must stay off here, or "" when it may be on: on some GPU machines CUDA's
    ``cuInit`` fails inside Landlock (error 304, measured on an H200 VM with every rule kerneltui
    knows to grant), and a box in which CUDA cannot start fails every kernel. Decided by trying:
    ``check`` (``cuInit``) outside any box, then under a worker's rules; only a failure that the box
    alone causes turns Landlock off."""
    if not abi or not gpu_driver_here(control_nodes):
        return ""
    outside = _status_in_child(False, abi, check)
    if outside != 0:
        return ""  # CUDA does not start here at all (no driver, or broken): the box changes nothing
    inside = _status_in_child(True, abi, check)
    if inside == 0:
        return ""
    return (f"CUDA cannot start under Landlock on this machine (cuInit returned {inside} in a box, 0 outside): "
            "the filesystem part is off so kernels can run on the GPU; the network namespace, limits, "
            "capabilities and the scrubbed environment stay on (see docs/integrity.md)")


def probe_here() -> SandboxSupport:
    """Measure in this process (it forks for the parts that cannot be undone); single-threaded callers only."""
    if not linux.IS_LINUX:
        why = f"not Linux ({sys.platform})"
        return SandboxSupport(0, why, "", why, "", why, watches_why=why)
    abi, landlock_why = landlock.abi_version()
    gpu_why = gpu_under_landlock(abi)
    if gpu_why:
        abi, landlock_why = 0, gpu_why
    root = os.geteuid() == 0
    caps = linux.effective_capabilities()
    network, network_why = "", ""
    if caps & (1 << CAP_SYS_ADMIN):
        error = _in_child(lambda: linux.unshare(linux.CLONE_NEWNET))
        if not error:
            network = "namespace"
        else:
            network_why = f"unshare(CLONE_NEWNET) failed: {error}"
    if not network:
        error = _in_child(enter_user_network_namespace)
        if not error:
            network, network_why = "user-namespace", ""
        else:
            network_why = (network_why + "; " if network_why else "") + (
                f"no user namespaces for this user ({error}): run as root or allow unprivileged user namespaces "
                "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)")
    base, cgroup_why, pids = _probe_cgroup()
    return SandboxSupport(abi, landlock_why, network, network_why, base, cgroup_why, pids,
                          bool(caps & (1 << CAP_SETPCAP)), root, gpu_driver_here(), watches_why())


def watches_why() -> str:
    """"" where the seccomp filter denies folder watches (tried in a forked child), else why not."""
    return seccomp.unsupported_why() or _in_child(seccomp.refuse_watches_here)


@cache
def support() -> SandboxSupport:
    """What this machine offers, measured once per process in a child process."""
    if not linux.IS_LINUX:
        return probe_here()
    try:
        out = subprocess.run([sys.executable, "-m", "kerneltui.core.sandbox.support"], capture_output=True,
                             text=True, timeout=60, env=_probe_env())
        return SandboxSupport.from_dict(json.loads(out.stdout))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        why = f"the sandbox probe did not run ({exc})"
        return SandboxSupport(0, why, "", why, "", why, watches_why=why)


def _probe_env() -> dict[str, str]:
    import kerneltui

    root = os.path.dirname(os.path.dirname(os.path.abspath(kerneltui.__file__)))
    return {"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": root}


if __name__ == "__main__":
    print(json.dumps(probe_here().to_dict()))
