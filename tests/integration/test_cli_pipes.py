"""A command whose reader went away (``kerneltui history | head``) stops quietly with 141 (128 +
SIGPIPE, as coreutils do): no BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, copy_tree


def _closed_pipe_run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails with EPIPE
    try:
        return subprocess.run([sys.executable, "-m", "kerneltui", *args], stdout=write_end, stderr=subprocess.PIPE,
                              env=env, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [("sessions",), ("history", "{task}"), ("history", "{task}", "--json"),
                                  ("config",), ("config", "--json"), ("engine", "status", "--json"),
                                  ("check", "{task}", "--rungs", "prechecks", "--no-engine", "--no-history")])
def test_a_closed_pipe_is_a_quiet_stop(args: tuple[str, ...], tmp_path: Path) -> None:
    task = copy_tree(EXAMPLES / "vector_add", tmp_path / "vector_add")
    env = {**os.environ, "KERNELTUI_CONFIG_DIR": str(tmp_path / "config"), "KERNELTUI_ENGINE_DIR": str(tmp_path / "e")}
    out = _closed_pipe_run(*(a.format(task=task) for a in args), env=env)
    assert b"BrokenPipe" not in out.stderr and b"Traceback" not in out.stderr, out.stderr.decode()
    assert out.returncode == 141, (out.returncode, out.stderr.decode())
