"""Worker cgroups left behind are removed: the supervisor and the parent each give a cgroup 2 s to
empty, and a worker that takes longer to die (or a parent killed with its supervisor) used to leave
its group for good (188 of them on one test machine after a day of runs). The first worker a
kerneltui process starts sweeps the empty groups of processes that are gone. Real cgroup v2 folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.core.sandbox import box
from kerneltui.core.sandbox.cgroup import base_folder
from kerneltui.core.sandbox.settings import SandboxSettings
from kerneltui.core.sandbox.support import SandboxSupport


def writable_base() -> Path:
    base, why = base_folder()
    if base is None:
        pytest.skip(f"no cgroup v2 here: {why}")
    probe = base / f"kerneltui-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make cgroups beneath {base}: {exc.strerror}")
    probe.rmdir()
    return base


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_empty_groups_of_ended_processes_are_removed_and_a_live_ones_stay():
    base = writable_base()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone, mine = f"kerneltui-{dead_pid()}-1", f"kerneltui-{os.getpid()}-4242"
    live = f"kerneltui-{alive.pid}-1"
    made = [base / name for name in (gone, mine, live)]
    try:
        for path in made:
            path.mkdir()
        removed = box.sweep_orphaned_cgroups(base)
        # This process's own pid on a group it did not make: an earlier process's with the same pid.
        assert gone in removed and mine in removed
        assert live not in removed and (base / live).is_dir()
        assert not (base / gone).exists() and not (base / mine).exists()
    finally:
        alive.kill()
        alive.wait()
        for path in made:
            if path.exists():
                path.rmdir()


def test_a_group_with_a_process_in_it_stays():
    base = writable_base()
    path = base / f"kerneltui-{dead_pid()}-1"
    path.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (path / "cgroup.procs").write_text(str(sleeper.pid))
        assert path.name not in box.sweep_orphaned_cgroups(base)
        assert path.is_dir()
    finally:
        sleeper.kill()
        sleeper.wait()
        box.sweep_orphaned_cgroups(base)  # empty now: removed
    assert not path.exists()


def test_every_name_held_is_reported_with_where_to_look(monkeypatch):
    """Groups an earlier process with this pid left, with processes still in them, take every name a
    worker tries: it runs without a cgroup, and the reason names the groups and the file that lists
    the processes holding them (it used to say only "eight names in use")."""
    base = writable_base()
    monkeypatch.setattr(box, "_cgroups_swept", True)  # the sweep could not remove them: held
    numbers = range(900001, 900009)  # eight, as many as a worker tries
    monkeypatch.setattr(box, "_names", iter(numbers))
    held = [base / f"kerneltui-{os.getpid()}-{n}" for n in numbers]
    try:
        for path in held:
            path.mkdir()
        support = SandboxSupport(cgroup_base=str(base))
        group, why, pids = box._make_cgroup(support, SandboxSettings())
        assert group is None and not pids
        assert f"{held[0].name} … {held[-1].name}" in why
        assert str(held[0] / "cgroup.procs") in why and "end those processes" in why
    finally:
        for path in held:
            if path.exists():
                path.rmdir()
