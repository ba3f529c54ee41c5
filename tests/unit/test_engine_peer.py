"""Each fact by which the engine knows a sandboxed worker, alone, on real processes (#47)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kerneltui.core.engine.peer import boxed_peer
from kerneltui.core.sandbox import linux

NO_NEW_PRIVS = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0); print('ready', flush=True); "
                "time.sleep(60)")
PLAIN = "import time; print('ready', flush=True); time.sleep(60)"


@contextmanager
def process(argv: list[str]) -> Iterator[int]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_an_ordinary_client_is_no_boxed_peer() -> None:
    with process([sys.executable, "-c", PLAIN]) as pid:
        assert boxed_peer(pid) == ""
    assert boxed_peer(None) == ""


@pytest.mark.skipif(not linux.IS_LINUX, reason="no_new_privs is Linux's")
def test_no_new_privs_alone_marks_a_boxed_peer() -> None:
    with process([sys.executable, "-c", NO_NEW_PRIVS]) as pid:
        why = boxed_peer(pid)
    assert "no_new_privs" in why and "network namespace" not in why and "sandboxed worker" in why


def test_another_network_namespace_alone_marks_a_boxed_peer() -> None:
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this user cannot make a network namespace here")
    with process(["unshare", "-n", sys.executable, "-c", PLAIN]) as pid:
        deadline = time.monotonic() + 5
        while "network namespace" not in boxed_peer(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        why = boxed_peer(pid)
    assert "another network namespace" in why and "no_new_privs" not in why
