"""Sessions round trip: a real app run writes a session; the replay shows the same panes, steps and
jumps through it, and re-verifies it on the CPU; a session cut off by kill -9 still replays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerneltui.config import load_config
from kerneltui.core import events as ev
from kerneltui.core.session import SessionLog, Timeline, list_sessions, load_session
from kerneltui.core.session.verify import render_table, verify_session
from kerneltui.core.task_loaders.load import load_task
from kerneltui.ui.launch import create_app, create_replay_app
from kerneltui.ui.options import AppOptions
from tests.ui import fixed_data
from tests.ui.conftest import wait_for
from tests.ui.snapshot_compare import settle

SIZE = (160, 45)


def _replay(folder: Path):
    import kerneltui.settings.ui  # noqa: F401

    options = AppOptions(watch_themes=False, clock=lambda: 100.0, wall_time=lambda at: "12:00:00")
    return create_replay_app(folder, settings=load_config(env={}), options=options)


def _states(app) -> dict[str, str]:
    return {name: row.state for name, row in app.rungs.rows.items()}


def _chat_text(app) -> str:
    return " ".join(app.chat.reply_text.values())


def _rung_cells(app) -> list[list[str]]:
    """What the rung table shows, cell by cell (durations come from the results, not a clock)."""
    panel = app.rungs
    return [[cell.plain for cell in panel._cells(row)] for row in panel.rows.values()]


def _chat_lines(app) -> list[str]:
    """The chat log's widgets as text, in order."""
    from textual.widgets import Markdown, Static

    out = []
    for child in app.chat.log_widget.children:
        if isinstance(child, Markdown):
            out.append(child.source)
        elif isinstance(child, Static):
            out.append(str(child.render()))
        else:
            out.append(type(child).__name__)
    return out


@pytest.mark.slow
async def test_a_live_session_replays_to_the_same_panes_and_reverifies(example_task, settings) -> None:
    task = example_task("vector_add")
    options = AppOptions(watch=False, run_on_start=True, watch_themes=False, seeds=2,
                         rungs=["prechecks", "compile", "run", "correctness"])
    app = create_app(task, settings=settings, options=options,
                     parts=fixed_data.parts())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any(isinstance(e, ev.RunFinished) for e in app.bridge.log), 120, "the first run")
        app.chat.query_one("#chat-input").value = "make it faster"
        await pilot.press("f2", "i", "enter")
        await wait_for(pilot, lambda: app.chat.open_proposal() is not None, 30, "the scripted proposal")
        # The turn ends after the proposal's trial, with the agent's last words.
        await wait_for(pilot, lambda: any(isinstance(e, ev.AgentMessage) and "trial has run" in e.text
                                          for e in app.bridge.log), 180, "the end of the agent's turn")
        await pilot.pause(0.2)
        live_states, live_chat, live_text = _states(app), _chat_text(app), app.editor.text
        live_cells, live_lines = _rung_cells(app), _chat_lines(app)
        live_notices = [line for line in live_lines if "agent" in line.lower()]
        folder = app.recorder.log.folder
    sessions = list_sessions(settings)
    assert [s.folder for s in sessions] == [folder]
    loaded = load_session(folder)
    assert loaded.lost_bytes == 0 and any(isinstance(e, ev.UserMessage) for e in loaded.events)

    replay = _replay(folder)
    async with replay.run_test(size=SIZE) as pilot:
        await pilot.pause()
        driver = replay.replay
        assert driver.step == 0 and all(s == "idle" for s in _states(replay).values())
        assert replay.editor.read_only and replay.editor.text == live_text
        # Play at full speed to the end: the panes show what the live app showed.
        await pilot.press("f12", "f12", "f12", "f9")
        await wait_for(pilot, lambda: driver.step == len(driver.timeline), 60, "the replay to reach the end")
        await pilot.pause(0.2)
        assert _states(replay) == live_states and _rung_cells(replay) == live_cells
        assert _chat_text(replay) == live_chat and replay.chat.open_proposal() is not None
        assert _chat_lines(replay) == live_lines, (live_notices, _chat_lines(replay))
        # Back one step at a time, then jump to version 1: the run on screen is that version's.
        await pilot.press("f7", "f7")
        assert driver.step == len(driver.timeline) - 2
        await pilot.press("f10")
        replay.screen.query_one("Input").value = "1"
        await pilot.press("enter")
        await pilot.pause()
        assert driver.step == driver.timeline.versions[0].step
        assert _states(replay)["correctness"] == "ok"
        # Read-only: a save or a chat message runs nothing.
        before = len(replay.bridge.log)
        replay.runs.request("manual")
        app_input = replay.chat.query_one("#chat-input")
        app_input.value = "more"
        await pilot.press("f2", "i", "enter")
        await pilot.pause()
        assert not any(isinstance(e, ev.RunStarted) for e in replay.bridge.log[before:])
        assert any("read-only" in str(n.message) for n in replay._notifications)

    report = await verify_session(load_session(folder))
    assert [r.number for r in report.rows] == [1] and report.all_pass, render_table(report)
    assert report.rows[0].then_correct is True and report.rows[0].now_correct is True


async def test_verify_flags_a_version_that_no_longer_passes(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    broken = task.kernel_source().replace("x + y, mask=mask", "x * y, mask=mask")
    digest = log.store_source(broken, "checked")
    from kerneltui.core.rungs.result import ok

    results = [ok(n, "recorded as passing") for n in ("prechecks", "compile", "run", "correctness")]
    log.write(ev.RunStarted(run_id="r1", task="vector_add", kernel_file="kernel.py", source_hash=digest,
                            rungs=[r.name for r in results], origin="save"))
    log.write(ev.RunFinished(run_id="r1", ok=True, results=results, duration_s=1.0))
    log.close()
    report = await verify_session(load_session(log.folder), timeout_s=60)
    assert not report.all_pass and report.rows[0].flags == ["no longer passes"]
    table = render_table(report)
    assert "no longer passes" in table and "correctness" in table


def _fixed_session(tmp_path: Path, task_dir: Path) -> Path:
    import dataclasses

    task = load_task(str(task_dir))
    log = SessionLog.create(tmp_path / "sessions", task, "test", name="fixed")
    start = log.store_source(task.kernel_source(), "start")
    for event in fixed_data.finished_run() + fixed_data.agent_turn():
        # The fixed run checked the kernel the session started with (the replay shows only the session's texts).
        log.write(dataclasses.replace(event, source_hash=start) if isinstance(event, ev.RunStarted) else event)
    log.close()
    return log.folder


async def test_replay_steps_rebuild_the_chat_and_rungs(example_task, tmp_path: Path) -> None:
    folder = _fixed_session(tmp_path, example_task("vector_add"))
    app = _replay(folder)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        driver = app.replay
        total = len(driver.timeline)
        for _ in range(total):
            await pilot.press("f8")
        await pilot.pause()
        end_states, end_chat = _states(app), _chat_text(app)
        assert end_states["correctness"] == "ok" and end_chat
        driver.go(0)
        await pilot.pause()
        assert all(s == "idle" for s in _states(app).values()) and not app.chat.cards
        driver.go(total)
        await pilot.pause()
        assert _states(app) == end_states and _chat_text(app) == end_chat
        await pilot.press("f9")
        assert driver.playing
        await pilot.press("f9")
        assert not driver.playing


def test_replay_screen_snapshot(screen_matches, example_task, tmp_path: Path) -> None:
    folder = _fixed_session(tmp_path, example_task("vector_add"))

    async def run_before(pilot) -> None:
        app = pilot.app
        await pilot.pause()
        app.editor.cursor_blink = False
        app.chat.query_one("#chat-input").cursor_blink = False
        app.replay.go(len(app.replay.timeline))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await settle(pilot)

    assert screen_matches(_replay(folder), terminal_size=(160, 45), run_before=run_before)


@pytest.mark.slow
async def test_a_session_killed_mid_run_loads_and_replays(example_task, tmp_path: Path) -> None:
    task = example_task("vector_add")
    sessions = Path(os.environ["KERNELTUI_SESSIONS_DIR"])
    proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "check", str(task), "--seeds", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    logs: list[Path] = []
    while True:
        assert time.monotonic() < deadline and proc.poll() is None, "check ended before it was killed"
        logs = list(sessions.glob("*/log.jsonl"))
        if logs and b'"RungFinished"' in logs[0].read_bytes():
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    loaded = load_session(logs[0].parent)
    assert not loaded.problems and any(isinstance(e, ev.RunStarted) for e in loaded.events)
    assert not any(isinstance(e, ev.RunFinished) for e in loaded.events)  # it died mid-run
    assert len(Timeline(loaded)) == len(loaded.events)
    app = _replay(logs[0].parent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.replay.go(len(app.replay.timeline))
        await pilot.pause()
        assert _states(app)["prechecks"] == "ok"


def _example_copy(tmp_path: Path, task_dir: Path) -> Path:
    """The shipped example session, pointed at a live copy of its task (as if recorded here)."""
    import json
    import shutil

    from kerneltui.core.session.store import example_sessions_dir

    folder = tmp_path / "sessions" / "resumable"
    shutil.copytree(example_sessions_dir() / "vector_add_demo", folder)
    log = folder / "log.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["task"]["root"] = str(task_dir.resolve())
    lines[0] = json.dumps(header) + "\n"
    log.write_text("".join(lines))
    return folder


async def test_resume_restores_kernel_chat_rungs_and_agent_context(example_task, settings, tmp_path: Path) -> None:
    from kerneltui.core.agent.conversation import conversation_from_json

    task = example_task("vector_add")
    folder = _example_copy(tmp_path, task)
    saved = load_session(folder)
    final = Timeline(saved).kernel_text_at(len(saved.events))
    assert final is not None and "BLOCK = 4096" in final and "BLOCK = 4096" not in (task / "kernel.py").read_text()
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False, resume=folder)
    app = create_app(task, settings=settings, options=options)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.recorder.log is not None, 30, "the resumed session")
        await pilot.pause(0.2)
        assert (task / "kernel.py").read_text() == final and app.editor.text == final
        assert any((task / ".kerneltui" / "unsaved").iterdir())  # the file it replaced is kept
        assert app.chat.cards and "4096" in " ".join(app.chat.reply_text.values())
        assert _states(app)["correctness"] == "ok"
        session = app.agent.chat
        assert len(session.messages) == len(conversation_from_json(saved.contexts[-1])) > 0
        assert app.recorder.log.folder == folder
        app.recorder.log.write(ev.Notice(level="info", message="after resuming"))
    again = load_session(folder)
    assert len(again.resumed) == 1 and again.events[-1].message == "after resuming"
    assert len(again.events) > len(saved.events)


async def test_resume_picker_lists_sessions(example_task, settings, tmp_path: Path) -> None:
    from kerneltui.ui.screens.sessions import SessionPicker

    task = example_task("vector_add")
    _example_copy(tmp_path, task)
    import kerneltui.settings.ui  # noqa: F401

    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False)
    app = create_app(task, settings=load_config(env={"KERNELTUI_SESSIONS_DIR": str(tmp_path / "sessions")}),
                     options=options, parts=fixed_data.parts())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p", *"Resume session")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SessionPicker)
        assert [s.name for s in app.screen.sessions][0] == "resumable"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.recorder.log is not None, 30, "the picked session to resume")
        assert "BLOCK = 4096" in app.editor.text


async def test_resume_of_another_task_switches_to_it_without_a_stray_session(example_task, settings,
                                                                            tmp_path: Path) -> None:
    other = example_task("vector_add")
    folder = _example_copy(tmp_path, other)
    first = tmp_path / "first"
    import shutil

    shutil.copytree(other, first)
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False)
    app = create_app(first, settings=settings, options=options,
                     parts=fixed_data.parts())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.recorder.log is not None, 30, "the first task's session")
        own = app.recorder.log.folder
        await app.sessions.resume(folder)
        await pilot.pause()
        assert app.kernel_task.root.resolve() == other.resolve()
        assert app.recorder.log.folder == folder and "BLOCK = 4096" in app.editor.text
    from kerneltui.core.session.store import sessions_dir

    # The resumed session and nothing else: the first task's own one had nothing in it, so it is not kept.
    assert not (sessions_dir(settings) / own.name).exists()
    assert sorted(p.name for p in sessions_dir(settings).iterdir()) == []
