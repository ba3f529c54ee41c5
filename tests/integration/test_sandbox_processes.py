"""Every process accounted for: a kernel that forks, double-forks and setsid-s sleepers leaves none of
them running, and no scratch folder or cgroup, after a passing run and after its parent is killed
with SIGKILL. With the box on and off: the supervisor is part of every worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.sandbox_helpers import (
    forking_kernel,
    kill_all,
    leftover_cgroups,
    marked_processes,
    new_marker,
    processes_in,
)

BOX = pytest.mark.parametrize("enabled", ["true", "false"], ids=["box-on", "box-off"])


def wait_until(check, timeout_s: float = 15.0):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if not value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def scratch_folders(tmp_path: Path) -> list[str]:
    # The shared compile caches (Inductor's, CuTe DSL's) live in the temp folder too, on purpose.
    return sorted(p.name for p in (tmp_path / "temp").glob("kerneltui-*"))


def cli_env(tmp_path: Path, enabled: str) -> dict[str, str]:
    temp = tmp_path / "temp"  # the CLI's temp folder: where its workers' scratch folders go
    temp.mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(temp), KERNELTUI_SANDBOX_ENABLED=enabled, PYTHONPATH=str(ROOT))


@BOX
def test_a_passing_run_leaves_no_process_folder_or_cgroup(example_task, tmp_path, enabled):
    marker = new_marker()
    task = example_task("vector_add", kernel_text=forking_kernel(marker), kernel_name="forks.py")
    env = cli_env(tmp_path, enabled)
    proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "check", str(task), "--kernel", str(task / "forks.py"),
                             "--rungs", "correctness", "--seeds", "1", "--no-history", "--no-session", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=400)
        assert proc.returncode == 0, err[-2000:]
        assert '"ok": true' in out
        left = wait_until(lambda: marked_processes(marker), 5.0)
        assert left == [], f"{len(left)} sleepers the kernel started are still running after a PASS"
        assert wait_until(lambda: processes_in(tmp_path / "temp"), 5.0) == []
        assert scratch_folders(tmp_path) == [], "scratch folders were left behind"
        # Each group is removed by its supervisor and by the parent once its last process is gone; a
        # worker torn down slowly on a loaded machine outlasts the parent's 2 s wait (seen once in a
        # full run), and its supervisor removes the group a moment after the check has exited.
        assert wait_until(lambda: leftover_cgroups(proc.pid)) == []
    finally:
        kill_all(marked_processes(marker) + processes_in(tmp_path / "temp"))


PARENT = """
import asyncio, sys
from kerneltui.core.loop_factory import check_once
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task

task = load_task(sys.argv[1])
asyncio.run(check_once(task, RunOptions(rungs=["correctness"], seeds=1, record=False,
                                        kernel_source=open(sys.argv[2]).read())))
"""


@BOX
def test_killing_the_parent_with_sigkill_ends_everything(example_task, tmp_path, enabled):
    marker = new_marker()
    task = example_task("vector_add", kernel_text=forking_kernel(marker, hang=True), kernel_name="hangs.py")
    env = cli_env(tmp_path, enabled)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(task), str(task / "hangs.py")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        # The kernel hangs in its import with its four sleepers started: the parent is mid-run.
        deadline = time.monotonic() + 300
        while len(marked_processes(marker)) < 4:
            assert parent.poll() is None, parent.stderr.read().decode()[-2000:] if parent.stderr else ""
            assert time.monotonic() < deadline, "the kernel's sleepers never started"
            time.sleep(0.2)
        assert processes_in(tmp_path / "temp"), "no worker runs in the parent's temp folder"
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        left = wait_until(lambda: marked_processes(marker))
        assert left == [], f"{len(left)} sleepers outlived their kerneltui"
        assert wait_until(lambda: processes_in(tmp_path / "temp")) == [], "a worker outlived its kerneltui"
        assert wait_until(lambda: scratch_folders(tmp_path)) == [], "scratch folders were left behind"
        assert wait_until(lambda: leftover_cgroups(parent.pid)) == []
    finally:
        kill_all(marked_processes(marker) + processes_in(tmp_path / "temp"))
        if parent.poll() is None:
            parent.kill()
