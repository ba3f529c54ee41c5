"""``kerneltui context``: the folders searched, their counts and skips, and a search from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.cli import main


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    configured = tmp_path / "clones"
    (configured / "triton").mkdir(parents=True)
    (configured / "triton" / "reduce.md").write_text("# Reductions\n\nA warp shuffle reduction, step by step.\n")
    (configured / "triton" / "logo.png").write_bytes(b"\x89PNG")
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELTUI_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("KERNELTUI_AGENT_CONTEXT_DIR", str(configured))
    return configured


def test_shows_every_folder_with_counts_and_skips(env: Path, example_task, capsys):
    task = example_task("vector_add")
    (task / "context").mkdir()
    (task / "context" / "mine.md").write_text("# Mine\n\nOur own warp shuffle trick.\n")
    assert main(["context", "--task", str(task)]) == 0
    out = capsys.readouterr().out
    assert f"the task's context/ ({(task / 'context').resolve()}): 1 files" in out
    assert f"the context folder ({env.resolve()}): 1 files" in out
    assert "kerneltui's notes (" in out and "4 files" in out
    assert "not a text kind that is indexed (.png)" in out


def test_a_query_prints_the_hits_the_agent_would_get(env: Path, example_task, capsys, monkeypatch):
    monkeypatch.setenv("KERNELTUI_AGENT_SEARCH_INSTALLED", "0")  # the installed DSLs' warp reductions would come first
    task = example_task("vector_add")
    (task / "context").mkdir()
    (task / "context" / "mine.md").write_text("# Mine\n\nOur own warp shuffle trick.\n")
    assert main(["context", "--task", str(task), "warp", "shuffle", "reduction"]) == 0
    out = capsys.readouterr().out
    assert "context/triton/reduce.md:3" in out and "context/mine.md:3" in out
    assert main(["context", "warp shuffle", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # kerneltui's own note on SASS (SHFL) answers too; what matters is that each hit names its folder
    reduce = next(h for h in data["hits"] if h["path"] == "context/triton/reduce.md")
    assert reduce["folder"] == "configured"


def test_json_listing(env: Path, capsys):
    assert main(["context", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["origin"] for f in data["folders"]][:2] == ["configured", "notes"]
    assert {f["origin"] for f in data["folders"][2:]} <= {"installed"}  # the DSL packages installed here
    assert data["folders"][0]["files"] == 1 and data["folders"][1]["files"] >= 4


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # a task that does not load exits from the loader
        return int(exc.code or 0)


@pytest.mark.parametrize("argv,message", [(["context", "--limit", "0"], "--limit must be at least 1"),
                                          (["context", "--task", "/no/such/task"], "task error"),
                                          (["context", "--context", "/no/such/folder"], "is not a folder")])
def test_usage_errors_exit_2(env: Path, capsys, argv: list[str], message: str):
    assert _exit_code(argv) == 2
    assert message in capsys.readouterr().err
