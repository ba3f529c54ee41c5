"""Faults of the machine are not failures of the kernel (issue 48 item 5): a full disk, a read-only task
folder, a setting kerneltui cannot use. Each is ``ERROR (environment)`` with what to do, exit 3, and no
history row. The full disk and the read-only folder are real mounts (a small tmpfs; root only)."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli, small_tmpfs

EXIT_ENVIRONMENT = 3


def _history_rows(task: Path) -> int:
    path = task / ".kerneltui" / "history.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _fill(folder: Path) -> None:
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as out:
        while True:
            out.write(b"\0" * 65536)
            out.flush()


def test_a_setting_the_box_cannot_use_is_an_environment_error(example_task, tmp_path):
    task = example_task("vector_add")
    config = tmp_path / "config.toml"
    config.write_text('[sandbox]\nenabled = "false"\n')
    proc = run_cli("check", str(task), "--no-engine", "--no-session", "--rungs", "compile",
                   env={"KERNELTUI_CONFIG": str(config)})
    assert proc.returncode == EXIT_ENVIRONMENT, proc.stdout + proc.stderr
    assert "ERROR (environment)" in proc.stderr and f"{config}" in proc.stderr, proc.stderr
    assert "[sandbox] enabled must be true or false, not 'false'" in proc.stderr, proc.stderr
    assert "fix the setting" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "FAIL" not in proc.stdout and "the reference could not be loaded" not in proc.stdout, proc.stdout
    assert _history_rows(task) == 0


def test_watch_says_a_setting_the_box_cannot_use_is_an_environment_error(example_task, tmp_path):
    import os
    import sys

    from tests.conftest import ROOT

    task = example_task("vector_add")
    config = tmp_path / "config.toml"
    config.write_text('[sandbox]\nenabled = "false"\n')
    watch = subprocess.Popen([sys.executable, "-m", "kerneltui", "watch", str(task), "--no-engine", "--no-session",
                              "--rungs", "compile"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT, env={**os.environ, "KERNELTUI_CONFIG": str(config)})
    lines: list[str] = []
    try:
        assert watch.stdout is not None
        for line in watch.stdout:  # the first run starts at once and ends at its first worker
            lines.append(line)
            if line.startswith(("ERROR", "PASS", "FAIL", "cancelled")):
                break
    finally:
        watch.terminate()
        watch.wait(timeout=60)
    assert lines and lines[-1].startswith("ERROR (environment): "), "".join(lines)
    assert "[sandbox] enabled must be true or false" in lines[-1] and "fix the setting" in lines[-1]
    assert _history_rows(task) == 0


@pytest.mark.slow
def test_a_full_disk_is_an_environment_error_and_no_history_row(example_task):
    task = example_task("vector_add")
    with small_tmpfs(task / ".kerneltui" / "versions", "64k") as versions:
        _fill(versions)
        proc = run_cli("check", str(task), "--no-engine", "--no-session", "--rungs", "dump", "--json")
    assert proc.returncode == EXIT_ENVIRONMENT, proc.stdout + proc.stderr
    assert "ERROR (environment): no space left on device writing" in proc.stderr, proc.stderr
    assert str(task / ".kerneltui" / "versions") in proc.stderr and "free space" in proc.stderr, proc.stderr
    assert '"kind": "environment"' in proc.stdout and '"exit_code": 3' in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    assert (task / ".kerneltui" / "history.sqlite").parent.exists()  # the history could have been written
    assert _history_rows(task) == 0


@pytest.mark.slow
def test_a_read_only_task_folder_is_an_environment_error(example_task, tmp_path):
    source = example_task("vector_add")
    with small_tmpfs(tmp_path / "ro", "4m") as mount:
        task = mount / "vector_add"
        shutil.copytree(source, task)
        remount = subprocess.run(["mount", "-o", "remount,ro", str(mount)], capture_output=True, text=True)
        assert remount.returncode == 0, remount.stderr
        proc = run_cli("check", str(task), "--no-engine", "--no-session", "--rungs", "dump")
        assert proc.returncode == EXIT_ENVIRONMENT, proc.stdout + proc.stderr
        assert "ERROR (environment): read-only file system" in proc.stderr, proc.stderr
        assert str(task) in proc.stderr and "writable folder" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        assert not (task / ".kerneltui").exists()


@pytest.mark.slow
def test_the_engine_follows_an_edited_sandbox_setting(example_task, tmp_path):
    """An engine started with one ``[sandbox]`` does not serve a command whose file now says another."""
    import tempfile

    from tests.engine_helpers import end_engines_in

    task = example_task("vector_add")
    config = tmp_path / "config.toml"
    config.write_text("[sandbox]\nenabled = true\n")
    folder = Path(tempfile.mkdtemp(prefix="kte-", dir="/tmp"))  # a Unix socket path must stay short
    env = {"KERNELTUI_CONFIG": str(config), "KERNELTUI_ENGINE_ENABLED": "1", "KERNELTUI_ENGINE_DIR": str(folder),
           "KERNELTUI_ENGINE_IDLE_S": "60"}
    try:
        first = run_cli("check", str(task), "--no-session", "--rungs", "compile", env=env)
        assert first.returncode == 0 and "engine" not in first.stderr, first.stdout + first.stderr
        config.write_text('[sandbox]\nenabled = "false"\n')
        bad = run_cli("check", str(task), "--no-session", "--rungs", "compile", env=env)
        assert bad.returncode == EXIT_ENVIRONMENT, bad.stdout + bad.stderr
        assert "ERROR (environment)" in bad.stderr and "[sandbox] enabled must be true or false" in bad.stderr
        assert _history_rows(task) == 1  # the first run's
    finally:
        end_engines_in(folder, env)


@pytest.mark.slow
def test_an_immutable_task_folder_is_an_environment_error(example_task):
    task = example_task("vector_add")
    made = subprocess.run(["chattr", "+i", str(task)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not possible here (needs root and a file system that has it): {made.stderr}")
    try:
        proc = run_cli("check", str(task), "--no-engine", "--no-session", "--rungs", "dump")
    finally:
        subprocess.run(["chattr", "-i", str(task)], capture_output=True)
    assert proc.returncode == EXIT_ENVIRONMENT, proc.stdout + proc.stderr
    assert "ERROR (environment): operation not permitted" in proc.stderr, proc.stderr
    assert str(task / ".kerneltui") in proc.stderr and "chattr -i" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (task / ".kerneltui").exists(), proc.stderr


@pytest.mark.slow
def test_a_full_disk_in_a_batch_is_an_environment_error_not_a_failed_candidate(example_task, tmp_path):
    """``check --kernels``: a candidate whose run the full disk stopped has no verdict (exit 3), while
    a candidate that fails on its own still reads FAILED."""
    import json

    task = example_task("vector_add")
    kernels = tmp_path / "candidates"
    kernels.mkdir()
    (kernels / "a_good.py").write_text((task / "kernel.py").read_text())
    (kernels / "b_broken.py").write_text("def custom_kernel(x, y):\n    return (\n")
    with small_tmpfs(task / ".kerneltui" / "versions", "64k") as versions:
        _fill(versions)
        text = run_cli("check", str(task), "--kernels", str(kernels), "--rungs", "dump", "-j", "1", timeout=300)
        proc = run_cli("check", str(task), "--kernels", str(kernels), "--rungs", "dump", "-j", "1", "--json",
                       timeout=300)
    assert text.returncode == EXIT_ENVIRONMENT, text.stdout + text.stderr
    rows = {line.split()[1]: line for line in text.stdout.splitlines() if line[:1].isdigit()}
    assert "ERROR (environment)" in rows[str(kernels / "a_good.py")], text.stdout
    assert "no space left on device" in rows[str(kernels / "a_good.py")], text.stdout
    assert "FAILED" in rows[str(kernels / "b_broken.py")], text.stdout
    assert "0/2 correct · 1 stopped by the machine" in text.stdout, text.stdout
    assert "ERROR (environment): no space left on device" in text.stderr and "free space" in text.stderr
    assert "Traceback" not in text.stderr, text.stderr
    assert proc.returncode == EXIT_ENVIRONMENT, proc.stdout + proc.stderr
    results = {Path(r["name"]).name: r for r in json.loads(proc.stdout)["results"]}
    assert results["a_good.py"]["correct"] is False and "no space left" in results["a_good.py"]["environment"]
    assert results["b_broken.py"]["environment"] is None
    assert _history_rows(task) == 2  # the broken candidate's verdict, once per command; none for the stopped one


@pytest.mark.slow
@pytest.mark.usefixtures("commands_share_an_engine")
def test_a_full_disk_in_a_suite_is_an_environment_error_not_a_failed_item(example_task, tmp_path):
    """``suite``: the item the full disk stopped is ``ERROR (environment)``, out of the verdicts'
    counts, verified again on the next run, and the suite exits 3."""
    import json

    root = tmp_path / "tasks"
    root.mkdir()
    source = example_task("vector_add")
    for name in ("full", "roomy"):
        shutil.copytree(source, root / name)
    with small_tmpfs(root / "full" / ".kerneltui" / "versions", "64k") as versions:
        _fill(versions)
        proc = run_cli("suite", str(root), "--rungs", "dump", "--seeds", "1", "--json", timeout=600)
        again = run_cli("suite", str(root), "--rungs", "dump", "--seeds", "1", timeout=600)
    assert proc.returncode == EXIT_ENVIRONMENT, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    status = {r["problem"]: r for r in report["results"]}
    assert status["full"]["status"] == "environment" and "no space left on device" in status["full"]["failure"]
    assert status["roomy"]["status"] == "correct"
    summary = report["summary"]
    assert (summary["correct"], summary["failed"], summary["environment_errors"]) == (1, 0, 1), summary
    assert summary["correct_rate"] == 1.0, summary
    assert "ERROR (environment): no space left on device" in proc.stderr and "Traceback" not in proc.stderr
    assert again.returncode == EXIT_ENVIRONMENT, again.stdout + again.stderr
    assert "verifying 1 again: the machine stopped its run last time" in again.stdout, again.stdout
    row = next(line for line in again.stdout.splitlines() if line.startswith("full "))
    assert "ERROR (environment)" in row, again.stdout
    assert "1 stopped by the machine (no verdict; not counted in fast_p)" in again.stdout, again.stdout
