"""Pilot tests: the real app on vector_add, with real workers on the CPU (Triton interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.core import events as ev
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
from kerneltui.ui.screens.file_changed import FileChangedScreen
from tests.ui import fixed_data
from tests.ui.conftest import wait_for

pytestmark = pytest.mark.slow

SIZE = (160, 45)
BUG = "tl.store(out_ptr + offs, x * y, mask=mask)"
GOOD = "tl.store(out_ptr + offs, x + y, mask=mask)"


def _app(task: Path, settings, **options):
    opts = AppOptions(watch=options.pop("watch", True), run_on_start=options.pop("run_on_start", False),
                      watch_themes=False, seeds=options.pop("seeds", 2), **options)
    return create_app(task, settings=settings, options=opts, parts=fixed_data.parts())


def _runs(app, cls=ev.RunFinished):
    return [e for e in app.bridge.log if isinstance(e, cls)]


def _states(app) -> dict[str, str]:
    return {name: row.state for name, row in app.rungs.rows.items()}


def _assert_green(app) -> None:
    """The checking rungs passed; any other rung passed or was skipped (no GPU here)."""
    states = _states(app)
    assert all(states[name] == "ok" for name in ("prechecks", "compile", "run", "correctness")), states
    assert all(state in ("ok", "warn", "skip", "idle") for state in states.values()), states


async def _finished_runs(pilot, app, count: int, what: str, timeout: float = 180.0) -> ev.RunFinished:
    await wait_for(pilot, lambda: len([r for r in _runs(app) if not r.cancelled]) >= count, timeout, what)
    return [r for r in _runs(app) if not r.cancelled][count - 1]


async def test_edit_save_green_then_bug_fails_then_fix(example_task, settings) -> None:
    task = example_task("vector_add")
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        editor = app.editor
        assert editor.has_focus
        # Type a real edit at the top of the file and save with ctrl+s.
        editor.move_cursor((0, 0))
        await pilot.press(*"# tuned", "enter")
        assert editor.dirty and editor.text.startswith("# tuned\n")
        await pilot.press("ctrl+s")
        assert not editor.dirty
        assert (task / "kernel.py").read_text().startswith("# tuned\n")
        first = await _finished_runs(pilot, app, 1, "the first run after saving")
        assert first.ok, [r.line() for r in first.results]
        _assert_green(app)
        assert "PASS" in app.status.render_state().plain

        # Introduce a bug: correctness must fail and say what is wrong.
        line = editor.text.splitlines().index("    " + GOOD)
        editor.replace(BUG, (line, 4), (line, 4 + len(GOOD)))
        await pilot.press("ctrl+s")
        second = await _finished_runs(pilot, app, 2, "the run of the buggy kernel")
        assert not second.ok
        correctness = app.rungs.rows["correctness"].result
        assert correctness is not None and correctness.status == "fail"
        assert "checks passed" in correctness.summary and correctness.error
        status = app.status.render_state().plain
        assert "FAIL" in status and "correctness failed" in status

        # Undo the bug (ctrl+z in the editor) and save: green again.
        editor.focus()
        await pilot.press("ctrl+z")
        assert GOOD in editor.text
        await pilot.press("ctrl+s")
        third = await _finished_runs(pilot, app, 3, "the run of the fixed kernel")
        assert third.ok
        assert app.rungs.rows["correctness"].state == "ok"


async def test_save_during_a_run_cancels_it(example_task, settings) -> None:
    slow = (Path(__file__).parent.parent.parent / "kerneltui/examples/vector_add/kernel.py").read_text().replace(
        "    out = torch.empty_like(x)", "    import time\n    time.sleep(1.5)\n    out = torch.empty_like(x)")
    task = example_task("vector_add", kernel_text=slow)
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        app.action_run_loop()
        await wait_for(pilot, lambda: app.rungs.rows["run"].state == "running"
                       or app.rungs.rows["correctness"].state == "running", 120, "the slow run to be running")
        first_run = _runs(app, ev.RunStarted)[0].run_id
        # Save a fast version while the slow one runs.
        fast = app.editor.text.replace("    import time\n    time.sleep(1.5)\n", "")
        app.editor.load_text(fast)
        await pilot.press("ctrl+s")
        cancelled = await _wait_cancelled(pilot, app, first_run)
        assert cancelled.cancelled and not cancelled.ok
        assert cancelled.cancel_reason == "overtaken by a newer save"
        final = await _finished_runs(pilot, app, 1, "the run of the saved version")
        assert final.ok and final.run_id != first_run
        # The pane shows the newest run: a change event for the same save can start one more run of
        # the same text after this one finished (seen once in CI); it must end green too.
        await wait_for(pilot, lambda: not any(s in ("running", "queued") for s in _states(app).values()), 120,
                       "the rungs pane to settle")
        assert all(r.ok for r in _runs(app) if not r.cancelled), [(r.run_id, r.ok) for r in _runs(app)]
        _assert_green(app)


async def test_a_setting_the_box_cannot_use_is_shown_as_an_environment_error(example_task, settings, tmp_path,
                                                                             monkeypatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[sandbox]\nenabled = "false"\n')
    monkeypatch.setenv("KERNELTUI_CONFIG", str(config))  # what the workers' box is made from
    task = example_task("vector_add")
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        app.action_run_loop()
        await wait_for(pilot, lambda: bool(_runs(app)), 60, "the run to end")
        finished = _runs(app)[0]
        assert "[sandbox] enabled must be true or false" in finished.environment and not finished.ok
        await pilot.pause()
        status = app.status.render_state().plain
        assert "ERROR (environment): " in status and "fix the setting" in status, status
        assert "FAIL" not in status, status
    assert not (task / ".kerneltui" / "history.sqlite").exists()


async def _wait_cancelled(pilot, app, run_id: str) -> ev.RunFinished:
    await wait_for(pilot, lambda: any(r.run_id == run_id and r.cancelled for r in _runs(app)), 60,
                   "the run in flight to be cancelled")
    return next(r for r in _runs(app) if r.run_id == run_id)


async def test_hanging_kernel_times_out_while_the_ui_keeps_responding(example_task, settings) -> None:
    hang = (Path(__file__).parent.parent.parent / "kerneltui/examples/vector_add/kernel.py").read_text().replace(
        "    out = torch.empty_like(x)", "    while True:\n        pass\n    out = torch.empty_like(x)")
    task = example_task("vector_add", kernel_text=hang)
    app = _app(task, settings, run_timeout_s=15)  # long enough for the typing below on a loaded machine
    async with app.run_test(size=SIZE) as pilot:
        app.action_run_loop()
        await wait_for(pilot, lambda: any(r.state == "running" and r.name in ("compile", "run")
                                          for r in app.rungs.rows.values()), 120, "the hanging rung to start")
        # The kernel spins in its worker; the UI must keep taking keys meanwhile.
        editor = app.editor
        editor.move_cursor((0, 0))
        await pilot.press(*"# still typing", "enter")
        assert editor.text.startswith("# still typing\n")
        await pilot.press("alt+1", "i")  # the chat's history, then its input
        await pilot.press(*"hello")
        assert app.chat.query_one("#chat-input").value == "hello"
        assert app.status.state.running_since is not None
        final = await _finished_runs(pilot, app, 1, "the hanging run to time out", timeout=120)
        failed = next(r for r in final.results if r.status == "fail")
        assert "no answer after" in (failed.error or ""), failed.error
        assert app.rungs.rows[failed.name].state == "fail"


async def test_external_change_without_edits_reloads_and_reruns(example_task, settings) -> None:
    task = example_task("vector_add")
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)  # let the watcher start
        new = (task / "kernel.py").read_text().replace("BLOCK = 1024", "BLOCK = 512")
        (task / "kernel.py").write_text(new)
        await wait_for(pilot, lambda: "BLOCK = 512" in app.editor.text, 30, "the editor to reload")
        assert not app.editor.dirty
        run = await _finished_runs(pilot, app, 1, "the run started by the external save")
        assert run.ok
        assert _runs(app, ev.RunStarted)[0].origin == "save"


async def test_external_change_with_unsaved_edits_asks_and_keeps_them(example_task, settings) -> None:
    task = example_task("vector_add")
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        editor = app.editor
        editor.move_cursor((0, 0))
        await pilot.press(*"# mine", "enter")
        assert editor.dirty
        theirs = (task / "kernel.py").read_text().replace("BLOCK = 1024", "BLOCK = 256")
        (task / "kernel.py").write_text(theirs)
        await wait_for(pilot, lambda: isinstance(app.screen, FileChangedScreen), 30, "the file-changed prompt")
        # Keep mine: the edits stay, still unsaved.
        await pilot.press("k")
        assert editor.text.startswith("# mine\n") and editor.dirty
        # Another outside save; this time load the disk version: the edits must be kept in a backup.
        (task / "kernel.py").write_text(theirs.replace("BLOCK = 256", "BLOCK = 128"))
        await wait_for(pilot, lambda: isinstance(app.screen, FileChangedScreen), 30, "the second prompt")
        await pilot.press("l")
        assert "BLOCK = 128" in editor.text and not editor.dirty
        backups = list((task / ".kerneltui" / "unsaved").iterdir())
        assert len(backups) == 1 and backups[0].read_text().startswith("# mine\n")


async def test_failure_location_moves_the_cursor(example_task, settings) -> None:
    broken = (Path(__file__).parent.parent.parent / "kerneltui/examples/vector_add/kernel.py").read_text().replace(
        "    n = x.numel()", "    n = x.numel() + undefined_name")
    task = example_task("vector_add", kernel_text=broken)
    line = broken.splitlines().index("    n = x.numel() + undefined_name") + 1
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        app.action_run_loop()
        run = await _finished_runs(pilot, app, 1, "the broken run")
        failed = next(r for r in run.results if r.status == "fail")
        assert failed.location is not None and failed.location.line == line
        assert app.editor.cursor_location[0] == line - 1
        assert "undefined_name" in (failed.error or "")


async def test_scripted_agent_proposal_accepted_reruns_the_loop(example_task, settings) -> None:
    task = example_task("vector_add")
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        chat = app.chat
        assert "scripted agent · no API key configured" in str(chat.query_one("#chat-label").render())
        await pilot.press("alt+1", "i")
        await pilot.press(*"make it faster", "enter")
        await wait_for(pilot, lambda: chat.open_proposal() is not None, 30, "the scripted proposal")
        assert any(isinstance(e, ev.ToolCallFinished) and e.ok for e in app.bridge.log)
        assert any(isinstance(e, ev.AgentMessage) for e in app.bridge.log)
        # a/r/f are chat-history keys: typing "a" in the input must not accept anything.
        await pilot.press("a")
        assert chat.open_proposal() is not None
        # The proposal's trial runs the loop on a scratch copy; the person reads it, then accepts.
        await wait_for(pilot, lambda: any(isinstance(e, ev.ProposalEvent) and e.state == "trial_done"
                                          for e in app.bridge.log), 180, "the proposal's trial")
        trial = await _finished_runs(pilot, app, 1, "the trial's run")
        assert trial.ok and "BLOCK = 1024" in (task / "kernel.py").read_text()  # a trial never writes the file
        await pilot.press("escape")  # to the chat history
        await pilot.press("a")
        await wait_for(pilot, lambda: "BLOCK = 2048" in app.editor.text, 30, "the accepted proposal to load")
        assert "BLOCK = 2048" in (task / "kernel.py").read_text()
        run = await _finished_runs(pilot, app, 2, "the run of the accepted proposal")
        assert run.ok, [r.line() for r in run.results]
        started = next(e for e in app.bridge.log if isinstance(e, ev.RunStarted) and e.run_id == run.run_id)
        # The app reruns the loop on the file the accept wrote, as an accept (not a "save"); the
        # watcher's later echo of the same text starts nothing.
        assert started.origin == "accept"
