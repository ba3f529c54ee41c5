"""A damaged line in the middle of a session log (bytes that are not UTF-8, half a record) does not hide
the session from `kerneltui sessions`, and `export` says how many records it skipped and where."""

from __future__ import annotations

from pathlib import Path

from kerneltui.config import load_config
from kerneltui.core import events as ev
from kerneltui.core.session.store import open_log_for
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import EXAMPLES, copy_tree, run_cli


def _session_with_a_damaged_line(tmp_path: Path) -> tuple[Path, int]:
    task = load_task(str(copy_tree(EXAMPLES / "vector_add", tmp_path / "vector_add")))
    log = open_log_for(task, "check", load_config())  # KERNELTUI_SESSIONS_DIR: the test's folder
    for n in range(4):
        log.write(ev.Notice(level="info", message=f"note {n}"))
    log.close()
    lines = log.path.read_bytes().split(b"\n")
    damaged = next(i for i, line in enumerate(lines) if b"note 1" in line)
    lines[damaged] = b'{"r": "event", "event": {"type": "Notice", "message": "caf\xe9'  # cut, and Latin-1
    log.path.write_bytes(b"\n".join(lines))
    return log.path.parent, damaged + 1


def test_sessions_lists_it_and_export_counts_what_it_skipped(tmp_path: Path) -> None:
    folder, line = _session_with_a_damaged_line(tmp_path)
    listed = run_cli("sessions")
    assert listed.returncode == 0, listed.stderr
    assert folder.name in listed.stdout
    exported = run_cli("export", str(folder), "--stdout")
    assert exported.returncode == 0, exported.stderr
    assert f"skipped 1 damaged record (log.jsonl:{line})" in exported.stderr
    assert f"skipped 1 damaged record (log.jsonl:{line})" in exported.stdout  # the report says so too
    assert "note 3" in exported.stdout or "3 events" in exported.stdout
