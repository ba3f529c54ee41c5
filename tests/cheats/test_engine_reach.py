"""The engine runs outside the box: a kernel must not reach it (#47).

A real engine (its own folder, as tests/integration/test_engine.py starts one) runs the check of a
kernel that, from inside its sandboxed worker, reads the engine's key and log and connects to the
engine's socket to submit a run of another task with a kernel of its own. What the kernel found is
written to ``/dev/shm`` (which the box may write) and read back here.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kerneltui.core.engine.channel import read_key
from kerneltui.core.engine.messages import RunRequest
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import LoadOptions
from tests.cheats.gallery import HONEST_ADD, engine_probe
from tests.conftest import EXAMPLES, copy_tree
from tests.integration.test_engine import engine  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow

RUNGS = "prechecks,compile,run,correctness"
SMUGGLED = HONEST_ADD + "\n# smuggled into another task's history\n"


def _probe_check(engine: Any, tmp_path: Path, leaked_key: str = "") -> tuple[dict[str, str], Path, Any]:  # noqa: F811
    started = engine.cli("engine", "start")
    assert started.returncode == 0, started.stderr
    files = engine.files
    other = copy_tree(EXAMPLES / "vector_add", tmp_path / "other")
    request = RunRequest.make(
        other,
        None,
        LoadOptions(),
        RunOptions(rungs=["prechecks", "correctness"], seeds=1, kernel_source=SMUGGLED, origin="check"),
    )
    out = Path(f"/dev/shm/kerneltui-test-probe-{uuid.uuid4().hex}.json")
    task = copy_tree(EXAMPLES / "vector_add", tmp_path / "probe")
    (task / "kernel.py").write_text(
        engine_probe(
            key=str(files.key),
            log=str(files.log),
            socket=str(files.socket),
            request=request.to_dict(),
            out=str(out),
            leaked_key=leaked_key,
        )
    )
    try:
        proc = engine.cli("check", str(task), "--rungs", RUNGS, "--seeds", "1", timeout=400)
        assert out.exists(), proc.stdout + proc.stderr
        found = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    assert "running without the engine" not in proc.stderr, "the engine ran the kernel"
    return found, other, proc


def test_a_kernel_cannot_read_the_engines_key_or_log(engine, tmp_path):  # noqa: F811
    found, other, proc = _probe_check(engine, tmp_path)
    assert found["key"].startswith("denied"), found
    assert found["log"].startswith("denied"), found
    # Without the key its request is a forged one: refused.
    assert found["run"].startswith("refused"), found
    assert not (other / ".kerneltui").exists(), "the engine ran a request from inside the box"
    assert engine.status()["runs_served"] == 1  # the kernel's own check only
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_kernel_holding_the_key_is_refused_as_a_boxed_peer(engine, tmp_path):  # noqa: F811
    """Behind the key: a key that got out anyway (a box turned off once, a backup) still does not let
    a worker drive the engine: the engine refuses a peer that is a sandboxed worker."""
    assert engine.cli("engine", "start").returncode == 0
    leaked = read_key(engine.files.key).hex()
    found, other, _ = _probe_check(engine, tmp_path, leaked_key=leaked)
    assert found["run"].startswith("refused"), found
    assert "sandboxed worker" in found["run"], found
    assert not (other / ".kerneltui").exists(), "the engine ran a request from inside the box"
    log = engine.files.log.read_text()
    assert "refused a client: " in log and "sandboxed worker" in log, log[-2000:]
    assert engine.status()["runs_served"] == 1
