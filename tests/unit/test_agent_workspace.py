"""The agent reads only the task folder and context/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kerneltui.core.agent.workspace import Workspace, WorkspaceError


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    task = tmp_path / "task"
    ctx = tmp_path / "ctx"
    (task / "sub").mkdir(parents=True)
    (ctx / "notes").mkdir(parents=True)
    (task / "kernel.py").write_text("".join(f"row {i}\n" for i in range(1, 1001)))
    (ctx / "notes" / "triton.md").write_text("# Triton\nuse tl.dot\n")
    (tmp_path / "secret.txt").write_text("top secret\n")
    (task / "blob.bin").write_bytes(b"\x00\x01\x02")
    return Workspace(task, ctx)


def test_reads_task_files_with_line_numbers(ws: Workspace):
    text, summary = ws.read("kernel.py", 10, 12)
    assert text.splitlines()[1:] == ["10  row 10", "11  row 11", "12  row 12"]
    assert summary == "kernel.py:10-12 of 1000 lines"


def test_long_files_are_paged(ws: Workspace):
    text, _ = ws.read("kernel.py")
    assert "lines 1-400 of 1000" in text and "start_line=401" in text


def test_reads_context_by_prefix(ws: Workspace):
    text, _ = ws.read("context/notes/triton.md")
    assert "use tl.dot" in text and text.startswith("context/notes/triton.md")


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "context/../secret.txt", "sub/../../secret.txt"])
def test_paths_outside_are_refused(ws: Workspace, path: str):
    with pytest.raises(WorkspaceError, match="refused: .* is outside the task folder"):
        ws.read(path)


def test_symlink_out_is_refused(ws: Workspace, tmp_path: Path):
    os.symlink(tmp_path / "secret.txt", ws.task_root / "link.txt")
    with pytest.raises(WorkspaceError, match="refused"):
        ws.read("link.txt")


def test_binary_and_missing_files(ws: Workspace):
    with pytest.raises(WorkspaceError, match="binary"):
        ws.read("blob.bin")
    with pytest.raises(WorkspaceError, match="does not exist"):
        ws.read("nope.py")
    with pytest.raises(WorkspaceError, match="past the end"):
        ws.read("kernel.py", 2000)


def test_listing(ws: Workspace):
    text, _ = ws.list("context")
    assert "notes/" in text
    text, _ = ws.list(".")
    assert "kernel.py" in text and "sub/" in text
