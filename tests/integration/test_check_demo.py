"""``kerneltui demo --check``: the bundled example copied and checked once, headless, as ``check`` does it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def test_demo_check_runs_the_loop_once_on_the_copied_example(tmp_path: Path):
    target = tmp_path / "demo"
    proc = run_cli("demo", "--check", "--dir", str(target))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"demo task copied to {target}" in proc.stdout
    assert "[correctness] ok" in proc.stdout
    assert "PASS" in proc.stdout
