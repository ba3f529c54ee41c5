"""A replay is read-only: no key in any pane, screen or version writes a file of the task.

Issue 20, defect 1: in a replay, jumping to a version and pressing ctrl+s in the editor overwrote the
live kernel with the replayed text, without a backup. Here every pane gets ctrl+s (and typing) at
every version, and the task folder must be byte-identical afterwards, with nothing added.
"""

from __future__ import annotations

from pathlib import Path

from kerneltui.config import load_config
from kerneltui.core import events as ev
from kerneltui.core.rungs.result import ok
from kerneltui.core.session import SessionLog
from kerneltui.core.task_loaders.load import load_task
from kerneltui.ui.launch import create_replay_app
from kerneltui.ui.messages import EditStage
from kerneltui.ui.options import AppOptions

SIZE = (160, 45)
PANE_KEYS = ("f2", "f3", "f4", "f5", "f6")


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the task folder, its .kerneltui state included), by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _session_with_versions(tmp_path: Path, task_dir: Path) -> Path:
    """A saved session with three checked versions, each a different kernel text."""
    task = load_task(str(task_dir))
    log = SessionLog.create(tmp_path / "sessions", task, "test", name="three-versions")
    original = task.kernel_source()
    texts = [original, original.replace("BLOCK = 1024", "BLOCK = 2048"), original.replace("BLOCK = 1024", "BLOCK = 4096")]
    for number, text in enumerate(texts, 1):
        digest = log.store_source(text, "checked")
        results = [ok(n, f"version {number}") for n in ("prechecks", "compile", "run", "correctness")]
        log.write(ev.RunStarted(run_id=f"r{number}", task=task.name, kernel_file=task.kernel_file, source_hash=digest,
                                rungs=[r.name for r in results], origin="save"))
        log.write(ev.RunFinished(run_id=f"r{number}", ok=True, results=results, duration_s=1.0))
    log.close()
    return log.folder


async def test_no_key_in_a_replay_writes_a_task_file(example_task, tmp_path: Path) -> None:
    import kerneltui.settings.ui  # noqa: F401

    task_dir = example_task("vector_add")
    folder = _session_with_versions(tmp_path, task_dir)
    before = _tree(task_dir)
    options = AppOptions(watch_themes=False, clock=lambda: 100.0, wall_time=lambda at: "12:00:00")
    app = create_replay_app(folder, settings=load_config(env={}), options=options)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for number in (3, 2, 1, 3):
            assert app.replay.jump_to_version(number)
            await pilot.pause()
            if number != 1:
                assert "BLOCK = 1024" not in app.editor.text  # the replayed text, not the file's
            for pane in PANE_KEYS:
                await pilot.press(pane, "ctrl+s")
            await pilot.press("f3", "x", "y", "ctrl+s", "enter", "ctrl+s")
            await pilot.press("f1", "ctrl+s", "f1")
            await pilot.pause()
            app.editor.action_save()  # the editor's own save, as any binding or command would call it
            await pilot.pause()
        # What would write elsewhere: the palette's task switch and resume, a hand-edited stage.
        app.stage_edits.run()
        app.action_switch_task()
        app.sessions.pick_to_resume()
        app.runs.last_report_dir = tmp_path  # as if a version had been checked
        app.post_message(EditStage("PTX", "// edited"))
        await pilot.pause()
        assert app.screen is app.main
        assert any("read-only" in str(n.message) for n in app._notifications)
    assert _tree(task_dir) == before
