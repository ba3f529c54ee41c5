"""The engine's key file deleted while the engine runs (as a message once advised): the engine writes
it again at the next connection, so status and stop still work."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tests.conftest import run_cli
from tests.engine_helpers import end_engines_in, wait_until


def test_a_deleted_key_is_written_again_and_stop_works() -> None:
    folder = Path(tempfile.mkdtemp(prefix="kte-", dir="/tmp"))  # a Unix socket path must stay short
    env = {"KERNELTUI_ENGINE_DIR": str(folder), "KERNELTUI_ENGINE_IDLE_S": "120",
           "KERNELTUI_ENGINE_CANDIDATE_SPARES": "0", "KERNELTUI_ENGINE_JUDGE_SPARES": "0"}
    try:
        started = run_cli("engine", "start", timeout=120, env=env)
        assert started.returncode == 0, started.stderr
        key = folder / "engine.key"
        before = key.read_text()
        key.unlink()
        status = run_cli("engine", "status", "--json", timeout=60, env=env)
        assert status.returncode == 0, status.stderr
        pid = json.loads(status.stdout)["pid"]
        assert key.read_text() == before and (key.stat().st_mode & 0o777) == 0o600
        stopped = run_cli("engine", "stop", timeout=60, env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 30)
    finally:
        end_engines_in(folder, env)
