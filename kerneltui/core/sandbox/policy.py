"""The two views of one worker's box: what the supervisor applies (:class:`LaunchPolicy`, written by
the parent, read by ``sandbox.launch``) and what the parent tells the person (:class:`SandboxState`:
each part on or off, and why).

The supervisor applies a policy exactly or refuses to start the worker (exit status
:data:`EXIT_BOX_FAILED`, the reason on stderr): the parent decided the policy from a measurement
of this machine (``support.py``), so what the parent states is what runs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltui.core.sandbox.filesystem import FilesystemPlan

EXIT_BOX_FAILED = 70  # EX_SOFTWARE: the box could not be applied; nothing was started
PARTS = ("environment", "processes", "network", "filesystem", "limits", "capabilities")


@dataclass(frozen=True)
class BoxPlan:
    """The confinement applied in the worker before it execs (all of it survives exec)."""

    network: str = ""  # "namespace", "user-namespace" or "": keep the host's
    landlock_abi: int = 0  # 0: no Landlock
    filesystem: FilesystemPlan | None = None
    address_space: int = 0  # bytes; 0: unlimited
    open_files: int = 0
    extra_tasks: int = 0  # RLIMIT_NPROC is this many above the user's task count at start; 0: none
    drop_capabilities: bool = False
    deny_watches: bool = False  # a seccomp filter refuses inotify and fanotify (``seccomp.py``)


@dataclass(frozen=True)
class LaunchPolicy:
    parent_pid: int  # the process that must be alive; the supervisor ends everything when it is not
    scratch: str  # the worker's scratch folder (HOME and TMPDIR inside); removed at the end
    cgroup: str = ""  # the worker's own cgroup, "" where none could be made
    lifeline_fd: int = -1  # read end of a pipe only the parent writes; its closing means "end it all"
    box: BoxPlan | None = None  # None: the box is off

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LaunchPolicy:
        data = json.loads(text)
        box = data.get("box")
        if box is not None:
            fs = box.get("filesystem")
            box = BoxPlan(**{**box, "filesystem": FilesystemPlan.from_dict(fs) if fs else None})
        return cls(**{**data, "box": box})


@dataclass(frozen=True)
class SandboxPart:
    name: str  # one of PARTS
    on: bool
    detail: str  # what it does when on, why it is off otherwise


@dataclass(frozen=True)
class SandboxState:
    """What the parent knows about one worker's box (and what ``kerneltui doctor`` prints)."""

    enabled: bool  # the [sandbox] enabled setting
    parts: tuple[SandboxPart, ...] = field(default=())
    where: str = "this machine"

    def part(self, name: str) -> SandboxPart | None:
        return next((p for p in self.parts if p.name == name), None)

    @property
    def missing(self) -> list[SandboxPart]:
        return [p for p in self.parts if not p.on]

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "where": self.where, "parts": [asdict(p) for p in self.parts]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxState:
        return cls(bool(data.get("enabled")), tuple(SandboxPart(**p) for p in data.get("parts") or []),
                   str(data.get("where") or "this machine"))


def sandbox_note(state: SandboxState | None) -> str:
    """A few words for the rung row when the box is off or partial; "" when every part is on."""
    if state is None:
        return ""
    if not state.enabled:
        return "sandbox off ([sandbox] enabled = false)"
    missing = state.missing
    if not missing:
        return ""
    return f"sandbox partial: no {', '.join(p.name for p in missing)} (kerneltui doctor says why)"


def sandbox_lines(state: SandboxState | None) -> list[str]:
    """Every part with what it does or why it is off (rung details, ``kerneltui doctor``)."""
    if state is None:
        return []
    head = f"sandbox on {state.where}: " + ("on" if state.enabled else "off ([sandbox] enabled = false)")
    return [head, *(f"  {p.name:<13} {'on ' if p.on else 'OFF'}  {p.detail}" for p in state.parts)]
