"""Bytes that are not UTF-8 in a kernel, a task.toml or the config: an error naming the file, line and
column, exit 2 for a task error, never a traceback and never the engine's own failure; ``watch``
says so and keeps watching."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.usefixtures("commands_share_an_engine")


def _append_bad_byte(path: Path) -> int:
    """Append a comment whose last byte is Latin-1 (as ``printf '# caf\\xe9\\n' >>`` does); its line."""
    lines = path.read_bytes().count(b"\n")
    with open(path, "ab") as handle:
        handle.write(b"# caf\xe9\n")
    return lines + 1


def test_check_names_the_bad_byte_of_a_kernel(example_task) -> None:
    task = example_task("vector_add")
    line = _append_bad_byte(task / "kernel.py")
    out = run_cli("check", str(task), "--rungs", "compile", "--no-history")
    assert out.returncode == 2, out.stderr
    assert f"kernel.py:{line}: byte 0xe9 at column 6 is not UTF-8" in out.stderr
    assert "Traceback" not in out.stderr and "engine" not in out.stderr  # a task error, not the engine's


def test_check_names_a_binary_task_toml(example_task) -> None:
    task = example_task("vector_add")
    (task / "task.toml").write_bytes(b"name = 'x'\n\x89PNG\r\n\x1a\n\x00\x00")
    out = run_cli("check", str(task), "--rungs", "compile", "--no-history", "--json")
    assert out.returncode == 2, out.stderr
    assert "task.toml:2: byte 0x89 at column 1 is not UTF-8" in out.stderr
    assert '"kind": "task"' in out.stdout and "Traceback" not in out.stderr


def test_config_names_a_binary_config_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_bytes(bytes(range(128, 256)))
    out = run_cli("config", env={"KERNELTUI_CONFIG_DIR": str(tmp_path)})
    assert out.returncode == 2
    assert f"{tmp_path / 'config.toml'}:1: byte 0x80 at column 1 is not UTF-8" in out.stderr
    assert "Traceback" not in out.stderr


def _wait_for(proc_out: Path, text: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = proc_out.read_text(errors="replace")
        if text in seen:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} within {timeout:.0f} s; output:\n{proc_out.read_text(errors='replace')}")


def test_watch_says_so_and_keeps_watching(example_task, tmp_path: Path) -> None:
    task = example_task("vector_add")
    kernel = task / "kernel.py"
    good = kernel.read_text()
    out_file = tmp_path / "watch.out"
    with open(out_file, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "watch", str(task), "--rungs", "prechecks",
                                 "--no-session"], stdout=sink, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        _wait_for(out_file, "PASS", 120)
        line = _append_bad_byte(kernel)
        _wait_for(out_file, f"kernel.py:{line}: byte 0xe9 at column 6 is not UTF-8", 30)
        _wait_for(out_file, "still watching", 5)
        kernel.write_text(good.replace("BLOCK = 1024", "BLOCK = 512"))  # fixed: the next save runs
        deadline = time.monotonic() + 60
        while out_file.read_text(errors="replace").count("PASS") < 2:
            assert proc.poll() is None and time.monotonic() < deadline, out_file.read_text(errors="replace")
            time.sleep(0.2)
    finally:
        proc.send_signal(2)
        proc.wait(30)
    assert "Traceback" not in out_file.read_text(errors="replace")


def test_the_app_names_the_bad_byte_before_it_opens(example_task) -> None:
    task = example_task("vector_add")
    line = _append_bad_byte(task / "kernel.py")
    out = run_cli(str(task))
    assert out.returncode == 2
    assert f"kernel.py:{line}: byte 0xe9 at column 6 is not UTF-8" in out.stderr and "Traceback" not in out.stderr
