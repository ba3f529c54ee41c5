"""A run cancelled through the engine is recorded as what happened: a run a front end saw start always
ends there (even when the engine does not confirm the cancel in time), and a run the engine finished
before the cancel reached it is a finished run for the scheduler too, as the front end showed it."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kerneltui.core import events as ev
from kerneltui.core.engine import client as engine_client
from kerneltui.core.engine.client import EngineClient, EngineLoop
from kerneltui.core.engine.messages import RunRequest
from kerneltui.core.engine.settings import load_settings
from kerneltui.core.history import HistoryStore
from kerneltui.core.loop import Loop, RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.scheduler import RunScheduler
from kerneltui.core.task_loaders.load import load_task
from tests.engine_helpers import end_engines_in

RUNGS = ["compile"]


@pytest.fixture
def engine_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="kte-", dir="/tmp"))  # a Unix socket path must stay short
    env = {"KERNELTUI_ENGINE_ENABLED": "1", "KERNELTUI_ENGINE_DIR": str(folder), "KERNELTUI_ENGINE_IDLE_S": "300"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield folder
    end_engines_in(folder, env)


def _no_engine() -> Loop:
    raise AssertionError("the engine could not serve the run")


async def test_a_cancel_the_engine_does_not_confirm_in_time_still_ends_the_run(example_task, engine_dir, monkeypatch):
    """The grace runs out before the engine's ``RunFinished``: the client ends the run it passed on as
    started (cancelled, saying why), and nothing after that is passed on as that run's."""
    monkeypatch.setattr(engine_client, "CANCEL_GRACE_S", 0.001)  # no engine confirms a cancel this fast
    folder = example_task("vector_add")
    task = load_task(str(folder))
    hanging = "import time\ntime.sleep(600)\n" + (folder / "kernel.py").read_text()  # its compile never ends
    request = RunRequest.make(folder, None, task.load, RunOptions(rungs=RUNGS, kernel_source=hanging, origin="save",
                                                                  record=False, timeout_s=600))
    events: list[ev.Event] = []
    run = asyncio.create_task(EngineClient(load_settings()).run(request, events.append))
    deadline = time.monotonic() + 180
    while not any(isinstance(e, ev.RungStarted) for e in events):
        assert time.monotonic() < deadline and not run.done(), events
        await asyncio.sleep(0.05)
    run.cancel("overtaken by a newer save")
    await asyncio.wait({run})
    assert run.cancelled()
    (started,) = [e for e in events if isinstance(e, ev.RunStarted)]
    (finished,) = [e for e in events if isinstance(e, ev.RunFinished)]
    assert finished.run_id == started.run_id and finished.cancelled and not finished.ok, finished
    assert finished.cancel_reason == ("overtaken by a newer save (the engine did not confirm the cancel "
                                      "within 0.001 s)"), finished.cancel_reason
    assert events[-1] is finished
    await asyncio.sleep(2)  # whatever the engine still sends of that run is not passed on
    assert events[-1] is finished, events


async def test_a_cancel_that_reaches_the_engine_after_the_run_finished_is_a_finished_run(example_task, engine_dir):
    """The person saves again just as the engine finishes the run (its ``RunFinished``, a PASS, has
    reached the front end): the scheduler's cancel comes too late, and the run is what the front end
    showed, a finished run: its caller gets its report, it is the last completed run, recorded once."""
    folder = example_task("vector_add")
    task = load_task(str(folder))
    kernel = folder / "kernel.py"
    original = kernel.read_text()
    events: list[ev.Event] = []
    reports: list[RunReport] = []
    later: list[asyncio.Future[RunReport | None]] = []

    def emit(event: ev.Event) -> None:
        events.append(event)
        if isinstance(event, ev.RunFinished) and not later:
            kernel.write_text(original + "\n# saved again\n")
            later.append(scheduler.request(RunOptions(rungs=RUNGS, origin="save")))  # cancels the run in flight

    loop = EngineLoop(EngineClient(load_settings()), task, folder, None, emit, _no_engine)
    scheduler = RunScheduler(loop, on_report=reports.append)
    try:
        first = await asyncio.wait_for(scheduler.request(RunOptions(rungs=RUNGS, origin="save")), 300)
        assert first is not None, [e for e in events if isinstance(e, (ev.RunStarted, ev.RunFinished))]
        assert first.ok and not first.cancelled
        second = await asyncio.wait_for(later[0], 300)
        assert second is not None and second.ok and second.run_id != first.run_id
    finally:
        await scheduler.cancel()
        await loop.close()
    ends = [e for e in events if isinstance(e, ev.RunFinished) and e.run_id == first.run_id]
    assert [(e.ok, e.cancelled) for e in ends] == [(True, False)]  # the PASS the front end showed, once
    assert [r.run_id for r in reports] == [first.run_id, second.run_id]
    with sqlite3.connect(HistoryStore.for_task(task).path) as conn:
        rows = [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY id")]
    assert rows == [first.run_id, second.run_id]
