"""The agent reads only the task folder and the context folders (seen as one context/)."""

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
    return Workspace(task, (ctx,))


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


def test_context_is_the_folders_in_order_first_name_wins(tmp_path: Path):
    task = tmp_path / "task"
    (task / "context").mkdir(parents=True)
    configured, notes = tmp_path / "clones", tmp_path / "notes"
    (configured / "cutlass").mkdir(parents=True)
    notes.mkdir()
    (task / "context" / "mine.md").write_text("our notes\n")
    (configured / "cutlass" / "README.md").write_text("cutlass readme\n")
    (configured / "triton.md").write_text("the configured triton notes\n")
    (notes / "triton.md").write_text("the shipped triton notes\n")
    (notes / "cute_dsl.md").write_text("the shipped cute notes\n")
    ws = Workspace(task, (task / "context", configured, notes))
    assert "our notes" in ws.read("context/mine.md")[0]
    assert "cutlass readme" in ws.read("context/cutlass/README.md")[0]
    assert "the configured triton notes" in ws.read("context/triton.md")[0]
    assert "the shipped cute notes" in ws.read("context/cute_dsl.md")[0]
    shipped = notes.resolve() / "triton.md"
    text, _ = ws.read(str(shipped))  # the hidden one is still readable by its real path
    assert "the shipped triton notes" in text and text.startswith(str(shipped))
    listing, _ = ws.list("context")
    assert {"mine.md", "cutlass/", "triton.md", "cute_dsl.md"} <= {line.split()[0] for line in listing.splitlines()[1:]}
    with pytest.raises(WorkspaceError, match="does not exist"):
        ws.read("context/nothing.md")


def test_links_out_of_a_context_folder_are_refused(tmp_path: Path):
    task, ctx = tmp_path / "task", tmp_path / "ctx"
    task.mkdir()
    ctx.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "passwd.txt").write_text("root:x:0:0:planted\n")
    os.symlink(tmp_path / "outside" / "passwd.txt", ctx / "passwd.txt")
    os.symlink(tmp_path / "outside", ctx / "linked")
    ws = Workspace(task, (ctx,))
    for path in ("context/passwd.txt", "context/linked/passwd.txt", str(ctx / "passwd.txt")):
        with pytest.raises(WorkspaceError, match="refused"):
            ws.read(path)
    with pytest.raises(WorkspaceError, match="refused"):
        ws.list("context/linked")
