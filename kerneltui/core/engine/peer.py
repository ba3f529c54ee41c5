"""Whether the process at the other end of the engine's socket is a sandboxed worker.

The engine runs outside the box, so a worker that reached it could run anything outside the box.
Its key is sealed from every box (``core.sandbox.filesystem``); behind that lock the engine also
refuses a peer that is itself boxed, by facts of the peer's process that code inside a box cannot
change, read by the engine from ``/proc/<pid>`` of the pid the kernel gives for the connection
(``SO_PEERCRED``, recorded at ``connect()``):

* **no_new_privs** (``/proc/PID/status`` ``NoNewPrivs: 1``) while the engine's own is 0. Every box
  sets it (Landlock requires it; with Landlock off the supervisor sets it), and it can never be
  cleared again, by the process or any child. A kerneltui run entirely under no_new_privs (a
  container started with it) has it in the engine too, and this fact then says nothing: skipped.
* **another network namespace** than the engine's (``/proc/PID/ns/net``), where the box has one of
  its own; leaving it takes ``setns`` with a capability no boxed process holds.
* **a kerneltui worker cgroup** (``/proc/PID/cgroup`` ending in ``kerneltui-<pid>-<n>``), where one
  could be made; moving out takes writing ``cgroup.procs`` of another cgroup, which Landlock denies.

Any one of them refuses the peer. A fact that cannot be read (a peer gone already, ``/proc``
mounted with ``hidepid``) is no evidence either way; the key still has to be proven.
"""

from __future__ import annotations

import os
import re

WORKER_CGROUP = re.compile(r"/kerneltui-\d+-\d+$")


def _status_field(pid: int | str, name: str) -> str | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _net_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _cgroups(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
            return [line.rstrip("\n").split(":", 2)[-1] for line in fh if line.strip()]
    except OSError:
        return []


def boxed_peer(pid: int | None) -> str:
    """Why the process ``pid`` is a sandboxed worker ("" when nothing says it is)."""
    if not pid or pid == os.getpid():
        return ""
    signs = []
    if _status_field(pid, "NoNewPrivs") == "1" and _status_field("self", "NoNewPrivs") == "0":
        signs.append("it runs with no_new_privs, which every box sets and the engine does not have")
    theirs, ours = _net_namespace(pid), _net_namespace("self")
    if theirs and ours and theirs != ours:
        signs.append(f"it is in another network namespace ({theirs}) than the engine ({ours})")
    group = next((g for g in _cgroups(pid) if WORKER_CGROUP.search(g)), "")
    if group:
        signs.append(f"it is in a kerneltui worker's cgroup ({group})")
    if not signs:
        return ""
    return (
        f"process {pid} is a sandboxed worker ({'; '.join(signs)}): code in the box may not drive the "
        "engine, which runs outside it"
    )
