"""The sessions listing tells apart sessions of tasks with one name in different folders."""

from __future__ import annotations

from pathlib import Path

from kerneltui.core.session.store import SessionInfo, describe_session


def info(name: str, root: str, created_at: float = 1.0) -> SessionInfo:
    return SessionInfo(name=name, folder=Path("/s") / name, task="vector_add", task_root=root, origin="app",
                       created_at=created_at, size_bytes=2048)


def test_one_task_name_in_two_folders_lists_each_folder():
    found = [info("a", "/work/one/vector_add"), info("b", "/work/two/vector_add"), info("c", "/work/one/vector_add")]
    lines = [describe_session(s, found) for s in found]
    assert "vector_add (/work/one/vector_add)" in lines[0] and "vector_add (/work/two/vector_add)" in lines[1]
    assert lines[0].endswith("  a") and "2.0 KiB" in lines[0]


def test_a_name_used_by_one_folder_stays_short():
    found = [info("a", "/work/one/vector_add"), info("b", "/work/one/vector_add")]
    assert "(/work/one" not in describe_session(found[0], found)
