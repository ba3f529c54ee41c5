"""Engines started by tests in folders of their own, and how to end them with everything they started."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

from kerneltui.core.sandbox import reaper
from kerneltui.core.sandbox.reaper import pid_alive
from tests.conftest import run_cli


def descendants(pid: int) -> set[int]:
    """Every process whose parent chain leads to ``pid``, exited ones not yet reaped included (workers
    lead groups of their own)."""
    return set(reaper.descendants(pid, include_zombies=True))


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def alive(pids: set[int]) -> set[int]:
    return {p for p in pids if pid_alive(p)}


def end_engines_in(folder: Path, env: dict[str, str]) -> None:
    """Stop every engine started in ``folder`` (one per fingerprint), kill what is left of them and
    their workers, and remove the folder."""
    pids = {int(text) for lock in folder.glob("engine-*.lock") if (text := lock.read_text().strip()).isdigit()}
    pids = {pid for pid in pids if pid_alive(pid)}
    workers = set().union(*(descendants(pid) for pid in pids)) if pids else set()
    if pids:
        run_cli("engine", "stop", "--all", timeout=60, env=env)
    for pid in alive(pids):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not alive(workers), 10)
    shutil.rmtree(folder, ignore_errors=True)
