"""The app's parts per task: after a task switch every part (the agent above all) works on the new task."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from kerneltui.config import load_config
from kerneltui.core import events as ev
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
from kerneltui.ui.widgets.chat import CONFIRM_AFTER_S
from tests.ui.conftest import wait_for

SIZE = (160, 45)

# One model request: a proposal on the kernel file, whatever task the session is on.
SCRIPT = '''name = "one proposal"
[[turns]]
text = "A larger block."
[[turns.tool_calls]]
name = "propose_edit"
[turns.tool_calls.arguments]
rationale = "BLOCK 1024 -> 2048"
diff = """
@@ -19,1 +19,1 @@
-    BLOCK = 1024
+    BLOCK = 2048
"""
'''


@pytest.mark.slow
async def test_after_a_task_switch_the_agent_edits_the_new_task(example_task, tmp_path: Path) -> None:
    first = example_task("vector_add")
    other = tmp_path / "other"
    shutil.copytree(first, other)
    original = (first / "kernel.py").read_text()
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    config = tmp_path / "config.toml"
    config.write_text(f'[agent]\nprovider = "scripted"\nscript = "{script}"\ntrial_rungs = "prechecks"\n')
    import kerneltui.settings.ui  # noqa: F401

    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False)
    app = create_app(first, settings=load_config(file=config, env={}), options=options)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.switch_task(str(other))
        await wait_for(pilot, lambda: app.ready, 30, "the panes of the other task")
        await pilot.press("f2", "i", *"make it faster", "enter")
        await wait_for(pilot, lambda: app.chat.open_proposal() is not None
                       and app.chat.open_proposal().verdict.outcome == "not checked", 60, "the proposal's trial")
        await pilot.press("escape", "a")  # a trial without the correctness rung is not a verified one
        await pilot.pause(CONFIRM_AFTER_S)  # its warning read: the second a confirms
        await pilot.press("a")
        await wait_for(pilot, lambda: any(isinstance(e, ev.ProposalEvent) and e.state in ("accepted", "stale")
                                          for e in app.bridge.log), 60, "the decision")
        assert "BLOCK = 2048" in (other / "kernel.py").read_text()
        assert (first / "kernel.py").read_text() == original  # the task left behind is not edited


@pytest.mark.slow
async def test_the_agent_shares_the_pool_and_sees_the_apps_runs(example_task, settings) -> None:
    task = example_task("vector_add")
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False, seeds=2, rungs=["prechecks", "compile", "run", "correctness"])
    app = create_app(task, settings=settings, options=options)  # no key: the engine's scripted demo session
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        session = app.agent.chat
        assert session.pool is app.bench.pool  # one pool: the agent's trials wait in the benchmark's quiet() too
        app.action_run_loop()  # attached or not yet: the agent sees the run either way
        await wait_for(pilot, lambda: any(isinstance(e, ev.RunFinished) for e in app.bridge.log), 180, "the run")
        run = next(e for e in app.bridge.log if isinstance(e, ev.RunFinished))
        assert run.ok and session.latest is not None and session.latest.run_id == run.run_id


async def test_a_run_pressed_before_the_agent_attaches_is_among_its_results(example_task, settings) -> None:
    """The agent attaches just after the first frame; a run pressed before then (ctrl+r at once) must still
    reach it. The window is widened here: the work after the first frame waits until the run is under way."""
    task = example_task("vector_add")
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False, seeds=1, rungs=["prechecks", "compile", "run"])
    app = create_app(task, settings=settings, options=options)
    go_on = asyncio.Event()
    start_work = app._start_work

    def start_work_later(new_log: bool) -> None:
        async def later() -> None:
            await go_on.wait()
            start_work(new_log)

        app.run_worker(later(), group="test-start-later")

    app._start_work = start_work_later  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.ready, 30, "the panes")
        assert not app.agent_attached
        app.action_run_loop()
        await wait_for(pilot, lambda: any(isinstance(e, ev.RunStarted) for e in app.bridge.log), 60, "the run to start")
        go_on.set()
        await wait_for(pilot, lambda: app.agent_attached, 30, "the agent attached")
        await wait_for(pilot, lambda: any(isinstance(e, ev.RunFinished) for e in app.bridge.log), 180, "the run")
        run = next(e for e in app.bridge.log if isinstance(e, ev.RunFinished))
        latest = app.agent.chat.latest
        assert run.ok and latest is not None and latest.run_id == run.run_id


async def test_the_context_index_is_built_in_the_background_when_the_agent_attaches(example_task,
                                                                                     tmp_path: Path) -> None:
    """The model's first search must not wait for a cold index build: the TUI starts it when the agent
    attaches, before anyone asks (it was built only on the first search)."""
    task = example_task("vector_add")
    (task / "context").mkdir()
    (task / "context" / "notes.md").write_text("# Coalescing\n\nLoads of 128 bits per thread reach peak bandwidth.\n")
    config = tmp_path / "config.toml"
    config.write_text('[agent]\nprovider = "scripted"\n')
    import kerneltui.settings.ui  # noqa: F401

    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False)
    app = create_app(task, settings=load_config(file=config, env={}), options=options)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.ready, 30, "the panes")
        index = app.agent.chat.index
        await wait_for(pilot, lambda: index.refreshed_at() is not None, 60, "the context index, without a search")
        assert any(hit.path.endswith("notes.md") for hit in index.search("coalescing bandwidth", 5))
