"""Every command loads its task through one loader (``commands.common.load_or_report``): a broken task
gives the same message, at the same file:line, the same --json error object and the same exit status,
whichever command read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.cli import main
from kerneltui.commands.common import EXIT_USAGE

# Each command with a task argument, as a person would type it; "TASK" is the broken task's folder.
COMMANDS = {
    "check": ["check", "TASK"],
    "watch": ["watch", "TASK"],
    "compare": ["compare", "TASK"],
    "ask": ["ask", "TASK", "make it faster", "--provider", "scripted"],
    "history": ["history", "TASK"],
    "context": ["context", "--task", "TASK"],
}
WITH_JSON = ("check", "compare", "ask", "history", "context")  # watch prints lines as they come, no --json


@pytest.fixture
def broken_task(example_task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    """A task whose task.toml does not parse, and the line of the fault."""
    monkeypatch.setenv("KERNELTUI_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    task = example_task("vector_add")
    toml = task / "task.toml"
    lines = toml.read_text().splitlines()
    toml.write_text("\n".join([*lines, "[[tests]", "n = 3"]) + "\n")
    return task, len(lines) + 1


def _run(argv: list[str], task: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(task) if arg == "TASK" else arg for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_broken_task_is_said_the_same_way_by_every_command(command, broken_task, capsys):
    task, line = broken_task
    code, out, err = _run(COMMANDS[command], task, capsys)
    assert code == EXIT_USAGE
    assert err.startswith(f"kerneltui: task error: {task / 'task.toml'}:{line}: ")
    assert out == ""  # nothing but the error: no partial report, no progress line
    reference = _run(COMMANDS["check"], task, capsys)
    assert (code, err) == (reference[0], reference[2])


@pytest.mark.parametrize("command", WITH_JSON)
def test_with_json_every_command_prints_the_same_error_object(command, broken_task, capsys):
    task, line = broken_task
    code, out, _ = _run([*COMMANDS[command], "--json"], task, capsys)
    error = json.loads(out)
    assert code == EXIT_USAGE == error["exit_code"]
    assert error["ok"] is False
    assert (error["error"]["kind"], error["error"]["file"], error["error"]["line"]) == (
        "task", str(task / "task.toml"), line)
    assert error == json.loads(_run([*COMMANDS["check"], "--json"], task, capsys)[1])
