"""The agent's search_context tool in a real session: the folders a person expects, and no way out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kerneltui.core.agent.chat import AgentChat
from kerneltui.core.agent.providers.scripted import Script, ScriptedProvider
from kerneltui.core.agent.search import format_hits
from kerneltui.core.agent.settings import AgentSettings
from kerneltui.core.task_loaders.load import load_task


@pytest.fixture
def session_parts(example_task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    task_dir = example_task("vector_add")
    (task_dir / "context").mkdir()
    (task_dir / "context" / "mine.md").write_text("# Our notes\n\nThe zigzag swizzle we settled on.\n")
    configured = tmp_path / "clones"
    configured.mkdir()
    (configured / "library.md").write_text("# Library\n\nThe zigzag swizzle of the library.\n")
    secret = tmp_path / "outside" / "passwd.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:planted:/root:/bin/bash\n")
    os.symlink(secret, task_dir / "context" / "passwd.txt")
    os.symlink(secret, configured / "passwd.txt")
    return task_dir, configured


async def _search(task_dir: Path, configured: Path, query: str) -> str:
    provider = ScriptedProvider(Script.from_dict({"name": "t", "turns": [{"text": "ok"}]}))
    session = AgentChat(load_task(task_dir), provider, settings=AgentSettings(provider="scripted", model="scripted"),
                           context_root=configured)
    try:
        hits, _ = await session.search_context(query, 8, None)
    finally:
        await session.close()
    return format_hits(hits, query)


async def test_the_tasks_context_the_configured_folder_and_the_notes_are_searched(session_parts):
    task_dir, configured = session_parts
    output = await _search(task_dir, configured, "zigzag swizzle")
    assert "context/mine.md:3" in output and "context/library.md:3" in output
    notes = await _search(task_dir, configured, "HGMMA warpgroup")  # only kerneltui's shipped notes say this
    assert "context/ptx_sass.md" in notes


async def test_links_out_of_context_reach_neither_the_model_nor_the_index(session_parts, tmp_path: Path):
    task_dir, configured = session_parts
    output = await _search(task_dir, configured, "root bin bash")
    assert "planted" not in output and "root:x:0:0" not in output
    for index_file in (tmp_path / "cache").rglob("*.sqlite3*"):
        assert b"planted" not in index_file.read_bytes()
