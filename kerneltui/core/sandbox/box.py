"""The parent's side of one boxed process: decide its policy, make its scratch folder, cgroup and
lifeline, and take them down again.

``open_box`` is what a runner calls before it starts a worker (or ncu, for the profile): it returns
a :class:`WorkerBox` whose ``argv``, ``env`` and ``pass_fds`` go to the process start, and whose
``kill`` and ``release`` end it. The same decision runs on a remote host inside the supervisor
(``launch --here``), so a worker started over SSH gets the rules of the machine it runs on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import itertools
import json
import os
import re
import shutil
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import kerneltui
from kerneltui import paths
from kerneltui.core.engine.settings import engine_folders
from kerneltui.core.sandbox import cgroup, linux, reaper
from kerneltui.core.sandbox.confine import DEFERRED_LANDLOCK_ENV
from kerneltui.core.sandbox.environment import (
    SharedCache,
    WorkerEnvironment,
    cache_write_paths,
    judge_caches,
    shared_caches,
    worker_environment,
)
from kerneltui.core.sandbox.filesystem import SHARED_MEMORY, FilesystemPlan, device_nodes, plan_hidden
from kerneltui.core.sandbox.policy import BoxPlan, LaunchPolicy, SandboxPart, SandboxState
from kerneltui.core.sandbox.settings import SandboxSettings, address_space_limit
from kerneltui.core.sandbox.support import SandboxSupport, probe_here

LAUNCH_MODULE = "kerneltui.core.sandbox.launch"
OFF = "the box is off ([sandbox] enabled = false, or KERNELTUI_SANDBOX_ENABLED=false)"
_names = itertools.count(1)


def package_root() -> str:
    return str(Path(kerneltui.__file__).resolve().parent.parent)


def python_paths(env: Mapping[str, str], python: str) -> list[str]:
    """What a worker must read even when it lies in a hidden folder (a Python under ``~/.pyenv``, a
    venv or a worktree in the home): the interpreter's installation, its import paths, the search
    paths of the environment, the CUDA toolkit."""
    found: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, package_root(),
                        str(Path(os.path.realpath(python)).parent.parent), *sysconfig.get_paths().values(),
                        *(p for p in sys.path if p)]
    with contextlib.suppress(AttributeError):
        found.append(site.getusersitepackages())
    for var in ("PYTHONPATH", "PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH"):
        found += [p for p in env.get(var, "").split(os.pathsep) if p]
    for var in ("CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "CONDA_PREFIX"):
        if env.get(var):
            found.append(env[var])
    root = package_root()
    # Never granted whole: the folder ``python -m`` was started from (the first import path, the
    # working folder: the home folder, when kerneltui runs from there, would open the person's keys
    # and config to every box), and the home folder or a folder above it wherever an import or search
    # path names one. What kerneltui itself needs is the package's own root, kept.
    too_wide = _home_and_above(env) | _launch_folder()
    paths = (os.path.abspath(p) for p in found)
    return list(dict.fromkeys(p for p in paths if p == root or p not in too_wide))


def _launch_folder() -> set[str]:
    """The working folder, where ``python -m`` put it first on the import path (not with ``-P``)."""
    if sys.flags.safe_path or not sys.path:
        return set()
    first = os.path.abspath(sys.path[0]) if sys.path[0] else ""
    return {first} if first and first == os.path.abspath(os.getcwd()) else set()


def _home_and_above(env: Mapping[str, str]) -> set[str]:
    home = Path(os.path.abspath(env.get("HOME") or os.path.expanduser("~")))
    return {str(home), *(str(parent) for parent in home.parents)}


def _prepare_caches(caches: list[SharedCache]) -> list[str]:
    """Make the cache folders of installed libraries, so a rule can grant them; returns their paths."""
    ready = []
    for cache, path in zip(caches, cache_write_paths(caches), strict=True):
        library = cache.cache.library
        if not os.path.isdir(path) and library is not None and importlib.util.find_spec(library) is None:
            continue
        with contextlib.suppress(OSError):
            os.makedirs(path, exist_ok=True)
            ready.append(path)
    return ready


def _limits_detail(settings: SandboxSettings, support: SandboxSupport, pids_max: bool, space: int, why: str) -> str:
    parts = [why or (f"address space {space} GiB" if space else "address space unlimited"),
             f"{settings.open_files} open files" if settings.open_files else "open files unlimited", "no core files"]
    if pids_max:
        parts.append(f"{settings.processes} processes (cgroup pids.max)")
    elif support.root:
        parts.append("processes not limited (RLIMIT_NPROC does not apply to root and the cgroup has no pids controller)")
    elif settings.processes:
        parts.append(f"{settings.processes} processes more than the user runs (RLIMIT_NPROC)")
    return ", ".join(parts)


def decide(settings: SandboxSettings, support: SandboxSupport, *, scratch: str, env: WorkerEnvironment,
           python: str, caches: Sequence[str] = (), writable: Sequence[str] = (), readable: Sequence[str] = (),
           cgroup_made: str = "", cgroup_why: str = "", pids_max: bool = False,
           keep_capabilities: str = "", sealed: Sequence[str] = ()) -> tuple[BoxPlan | None, SandboxState]:
    """The box for one process and what to say about it; ``keep_capabilities``: why this process keeps
    its capabilities (ncu, for the GPU's counters), "" to drop them; ``sealed``: folders no grant may
    make readable (the engine's)."""
    parts = [SandboxPart("environment", True, f"allow-list: {len(env.passed)} of "
                         f"{len(env.passed) + len(env.withheld)} variables passed, none of them a credential; "
                         "HOME and TMPDIR in the scratch folder")]
    if not linux.IS_LINUX:
        parts.append(SandboxPart("processes", True, "the process group only (no supervisor outside Linux)"))
    elif cgroup_made:
        parts.append(SandboxPart("processes", True, f"supervised; own cgroup {cgroup_made}, killed as one, and the "
                                 "process tree (fork, double fork, setsid) killed on every close"))
    else:
        parts.append(SandboxPart("processes", True, "supervised; the process tree (fork, double fork, setsid) killed on "
                                 f"every close; no cgroup: {cgroup_why or support.cgroup_why}"))
    if not settings.enabled:
        parts += [SandboxPart(name, False, OFF) for name in ("network", "filesystem", "limits", "capabilities")]
        return None, SandboxState(False, tuple(parts))
    abi = support.landlock_abi
    if support.network:
        tcp = "; TCP connect and bind denied by Landlock" if abi >= 4 else ""
        parts.append(SandboxPart("network", True, f"own network namespace, no interface up{tcp}"))
    elif abi >= 4:
        parts.append(SandboxPart("network", True, "TCP connect and bind denied by Landlock (no network namespace: "
                                 f"{support.network_why}; UDP is not covered)"))
    else:
        parts.append(SandboxPart("network", False, support.network_why))
    filesystem = None
    if abi:
        # kerneltui's cache folder is hidden whole wherever it lies (a worker writes, and so reads, only
        # its cuda/ builds: a grant of its own), as are the config and data folders.
        hidden = plan_hidden(str(Path.home()), tempfile.gettempdir(),
                             (str(paths.config_dir()), str(paths.data_dir()), str(paths.cache_dir()), *sealed))
        filesystem = FilesystemPlan(
            hidden=hidden, readable=tuple(python_paths(env.env, python)) + tuple(readable),
            writable=(scratch, *caches), devices=device_nodes(), unlisted=(SHARED_MEMORY, *writable),
            sealed=tuple(h for h in hidden if h in {os.path.realpath(s) for s in sealed}))
        extra = f", {', '.join(writable)}" if writable else ""
        parts.append(SandboxPart("filesystem", True, f"Landlock ABI {abi}: writes only to the scratch folder, the "
                                 f"compile caches, /dev/shm{extra} (those last by name: no listing); the home and temp "
                                 "folders and system credentials unreadable"))
    else:
        parts.append(SandboxPart("filesystem", False, support.landlock_why))
    # Landlock hides listings, not the names inotify and fanotify report: watching is denied apart.
    watches = ("; folder watches (inotify, fanotify) denied by seccomp" if not support.watches_why
               else f"; folder watches (inotify, fanotify) not denied: {support.watches_why}")
    parts[-1] = dataclasses.replace(parts[-1], detail=parts[-1].detail + watches)
    space, space_why = address_space_limit(settings, support.gpu)
    parts.append(SandboxPart("limits", True, _limits_detail(settings, support, pids_max, space, space_why)))
    drop = support.capabilities and not keep_capabilities
    if support.capabilities and keep_capabilities:
        parts.append(SandboxPart("capabilities", False, keep_capabilities))
    elif support.capabilities:
        parts.append(SandboxPart("capabilities", True, "all dropped (kerneltui runs as root)"))
    else:
        parts.append(SandboxPart("capabilities", True, "none held (not root)"))
    plan = BoxPlan(network=support.network, landlock_abi=abi, filesystem=filesystem,
                   address_space=space * 2**30, open_files=settings.open_files,
                   extra_tasks=0 if pids_max else settings.processes, drop_capabilities=drop,
                   deny_watches=not support.watches_why)
    return plan, SandboxState(True, tuple(parts))


def sealed_folders() -> list[str]:
    """The engine's folders, which no box may read, made (0700) where missing: Landlock names what
    exists when the box is made, and a folder made later beneath a granted one would be readable."""
    folders = list(engine_folders())
    for folder in folders:
        with contextlib.suppress(OSError):
            os.makedirs(folder, mode=0o700, exist_ok=True)
    return folders


@dataclass
class WorkerBox:
    """One boxed process, parent side: from before its start until its folder and cgroup are gone."""

    scratch: Path
    env: dict[str, str]
    state: SandboxState
    policy: LaunchPolicy
    python: str
    supervised: bool = True
    cgroup: Path | None = None
    _lifeline: list[int] = field(default_factory=list)  # [read end, write end] while open
    policy_file: Path | None = None

    def argv(self, command: Sequence[str]) -> list[str]:
        if not self.supervised:
            return list(command)
        return [self.python, "-m", LAUNCH_MODULE, str(self.policy_file), "--", *command]

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._lifeline[0],) if self._lifeline else ()

    def started(self) -> None:
        """The supervisor holds the lifeline's read end now; the parent keeps only the write end."""
        if self._lifeline and self._lifeline[0] >= 0:
            os.close(self._lifeline[0])
            self._lifeline[0] = -1

    def kill(self) -> None:
        """End the process and everything below it: the cgroup at once, and the lifeline closed, on
        which the supervisor kills the process tree. Idempotent; never blocks."""
        if self.cgroup is not None:
            cgroup.kill(self.cgroup)
        if self._lifeline:
            for fd in self._lifeline:
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._lifeline.clear()

    def release(self) -> None:
        """After the process exited: remove its cgroup and scratch folder (blocks up to ~2 s)."""
        self.kill()
        if self.cgroup is not None and cgroup.remove(self.cgroup):
            self.cgroup = None
        shutil.rmtree(self.scratch, ignore_errors=True)


def _make_cgroup(support: SandboxSupport, settings: SandboxSettings) -> tuple[Path | None, str, bool]:
    if not support.cgroup_base:
        return None, "", False
    global _cgroups_swept
    if not _cgroups_swept:
        _cgroups_swept = True
        sweep_orphaned_cgroups(Path(support.cgroup_base))
    path: Path | None = None
    held: list[str] = []
    for _ in range(CGROUP_NAME_TRIES):
        name = f"{CGROUP_PREFIX}{os.getpid()}-{next(_names)}"
        try:
            path = cgroup.create(Path(support.cgroup_base), name)
            break
        except FileExistsError:
            # An earlier process with this pid left it, with a process in it the sweep could not
            # remove: the next number.
            held.append(name)
            continue
        except OSError as exc:
            return None, f"cannot make a cgroup beneath {support.cgroup_base}: {exc.strerror}", False
    if path is None:
        return None, names_held_message(Path(support.cgroup_base), held), False
    _made_cgroups.add(path.name)
    pids = bool(settings.enabled and settings.processes and support.cgroup_pids
                and cgroup.limit_processes(path, settings.processes))
    return path, "", pids


# A worker cgroup's name carries the pid of the kerneltui process that made it. The supervisor and the
# parent each remove it once its last process is gone, waiting up to 2 s; a process that takes longer
# to die (a worker's large address space torn down on a loaded machine), or a parent and supervisor
# killed together, leave it behind, empty or soon empty, for good.
CGROUP_PREFIX = "kerneltui-"
_CGROUP_NAME = re.compile(re.escape(CGROUP_PREFIX) + r"(\d+)-\d+$")
_cgroups_swept = False  # this process has removed the orphans once
_made_cgroups: set[str] = set()  # the names this process made
CGROUP_NAME_TRIES = 8


def names_held_message(base: Path, held: list[str]) -> str:
    """Why a worker runs without a cgroup when every name tried was taken, and what to do about it."""
    shown = f"{held[0]} … {held[-1]}" if len(held) > 2 else " and ".join(held)
    return (f"cannot make a cgroup beneath {base}: the names {shown} are held by groups an earlier process with "
            f"this pid left, with processes still in them; the pids are in each group's cgroup.procs "
            f"(cat {base / held[0] / 'cgroup.procs'}): end those processes and the groups go with the next "
            "kerneltui start")


def sweep_orphaned_cgroups(base: Path) -> list[str]:
    """Remove the empty worker cgroups beneath ``base`` whose maker has died (and those bearing this
    process's pid that it did not make: an earlier process's with the same pid); their names. A
    group that still holds a process stays (``rmdir`` refuses it), and so does one whose pid now
    belongs to another live process (until that one ends)."""
    removed: list[str] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for entry in entries:
        made_by = _CGROUP_NAME.match(entry.name)
        if made_by is None or entry.name in _made_cgroups:
            continue
        pid = int(made_by.group(1))
        if pid != os.getpid() and reaper.pid_alive(pid):
            continue
        try:
            entry.rmdir()
        except OSError:
            continue
        removed.append(entry.name)
    return removed


# A scratch folder's name carries the pid of the kerneltui process that made it: the supervisor removes
# the folder when its process ends or that parent dies, but not when the supervisor dies with it (a
# process group killed at once) or when the parent dies before the supervisor starts.
SCRATCH_PREFIX = "kerneltui-worker-"
_SCRATCH_NAME = re.compile(re.escape(SCRATCH_PREFIX) + r"(\d+)-")
_swept = False  # this process has removed the orphans once


def sweep_orphaned_scratch() -> None:
    """Remove this user's scratch folders whose maker has died (nothing reads them any more): what a
    killed kerneltui left behind would otherwise pile up in the temp folder, hundreds of MB for a
    benchmark's inputs. A folder whose pid now belongs to another process stays (until that one ends)."""
    try:
        entries = list(Path(tempfile.gettempdir()).iterdir())
    except OSError:
        return
    for entry in entries:
        made_by = _SCRATCH_NAME.match(entry.name)
        if made_by is None:
            continue
        try:
            if not entry.is_dir() or entry.is_symlink() or entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if reaper.pid_alive(int(made_by.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)


def open_box(settings: SandboxSettings, support: SandboxSupport, *, python: str,
             extra_env: Mapping[str, str] | None = None, writable: Iterable[str] = (), readable: Iterable[str] = (),
             base_env: Mapping[str, str] | None = None, lifeline: bool = True,
             keep_capabilities: str = "", role: str = "candidate") -> WorkerBox:
    """Make the scratch folder, cgroup, lifeline and policy file for one process about to start. A
    ``judge`` may write its own compile caches (``judge_caches``), not the shared ones candidates write."""
    global _swept
    if not _swept:
        _swept = True
        sweep_orphaned_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    try:
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        env = worker_environment(os.environ if base_env is None else base_env, scratch=str(scratch),
                                 extra=extra_env, pass_env=settings.pass_env)
        group, group_why, pids = _make_cgroup(support, settings) if linux.IS_LINUX else (None, "", False)
        base = os.environ if base_env is None else base_env
        caches: list[str] = []
        if settings.enabled and support.landlock_abi:
            shared = shared_caches(base)
            caches = _prepare_caches(judge_caches(shared) if role == "judge" else shared)
        plan, state = decide(settings, support, scratch=str(scratch), env=env, python=python, caches=caches,
                             writable=[os.path.abspath(w) for w in writable], readable=list(readable),
                             cgroup_made=str(group or ""), cgroup_why=group_why, pids_max=pids,
                             keep_capabilities=keep_capabilities,
                             sealed=sealed_folders() if settings.enabled and support.landlock_abi else ())
        pipe = list(os.pipe()) if lifeline and linux.IS_LINUX else []
        policy = LaunchPolicy(parent_pid=os.getpid(), scratch=str(scratch), cgroup=str(group or ""),
                              lifeline_fd=pipe[0] if pipe else -1, box=plan)
        box = WorkerBox(scratch, env.env, state, policy, python, supervised=linux.IS_LINUX, cgroup=group,
                        _lifeline=pipe)
        if box.supervised:
            box.policy_file = scratch / "policy.json"
            box.policy_file.write_text(policy.to_json(), encoding="utf-8")
        return box
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def defer_filesystem_rules(box: WorkerBox, abi_cap: int = 5) -> None:
    """Leave Landlock to the program the boxed process starts (ncu's profiling target): Landlock's
    grant of ``/proc/<pid>/task`` (CUDA names its threads there) can only be made by the process that
    will init CUDA, and the target is a child of ncu with a pid of its own. The target applies the
    same filesystem rules to itself first thing (``confine.apply_deferred_landlock``), before any task
    code is imported; ncu itself runs with the rest of the box. ``abi_cap`` 5 leaves out Landlock's
    scopes for the target (abstract sockets, signals), which would cut it off from ncu outside its
    domain; a profile decides no verdict."""
    plan = box.policy.box
    if plan is None or not plan.landlock_abi or plan.filesystem is None:
        return
    rules = box.scratch / "deferred-landlock.json"
    rules.write_text(json.dumps({"abi": min(plan.landlock_abi, abi_cap), "filesystem": plan.filesystem.to_dict(),
                                 "deny_watches": plan.deny_watches}), encoding="utf-8")
    box.env[DEFERRED_LANDLOCK_ENV] = str(rules)
    box.policy = dataclasses.replace(box.policy, box=dataclasses.replace(plan, landlock_abi=0, filesystem=None,
                                                                         deny_watches=False))
    if box.policy_file is not None:
        box.policy_file.write_text(box.policy.to_json(), encoding="utf-8")


def policy_here(request_json: str) -> tuple[LaunchPolicy, dict[str, str], SandboxState]:
    """The supervisor's own decision on a host kerneltui reaches over SSH: same rules, this host's
    facts, no lifeline (the SSH channel is the parent's link; the parent kills the group over it).
    ``request_json``: ``{"settings": {…[sandbox]…}, "writable": [paths on this host], "role": …}``."""
    request = json.loads(request_json)
    settings = SandboxSettings.from_mapping(request.get("settings") or {})
    box = open_box(settings, probe_here(), python=sys.executable, lifeline=False,
                   writable=[str(p) for p in request.get("writable") or []],
                   role="judge" if request.get("role") == "judge" else "candidate")
    policy = LaunchPolicy(parent_pid=os.getppid(), scratch=box.policy.scratch, cgroup=box.policy.cgroup,
                          lifeline_fd=-1, box=box.policy.box)
    if box.policy_file is not None:
        box.policy_file.unlink()
    return policy, box.env, box.state


def forked(state: SandboxState, why_not: str = "") -> SandboxState:
    """``state`` of a worker forked from a zygote, or (``why_not``) of one that was to be and was
    started as a new Python instead: its processes part says which, and why."""
    note = (f"; not forked from a zygote ({why_not}): started as a new Python" if why_not
            else "; forked from a zygote that imported torch and the DSL once")
    parts = tuple(dataclasses.replace(p, detail=p.detail + note) if p.name == "processes" else p for p in state.parts)
    return dataclasses.replace(state, parts=parts)


def summary(state: SandboxState) -> str:
    """One line: every part, on or off."""
    return "; ".join(f"{p.name} {'on' if p.on else 'OFF'} ({p.detail})" for p in state.parts)
