"""The rung pane and the status line say where a run stands: the detail follows the first failed
rung, the verdict shows as soon as the loop announces it (the dump still running), and neither a
maximised pane nor a run that ended while the pane was hidden costs the rung table its layout."""

from __future__ import annotations

from kerneltui.core import events as ev
from kerneltui.core.rungs.result import RungResult
from tests.ui import fixed_data
from tests.ui.test_panes import _fed, make_app

SIZE = (160, 48)
RUN = "run000000002"


def _run(results: list[RungResult], rungs: list[str], *, finish: bool) -> list[ev.Event]:
    at = fixed_data.AT
    events: list[ev.Event] = [ev.RunStarted(run_id=RUN, task="vector_add", kernel_file="kernel.py",
                                            source_hash="def5678", rungs=rungs, at=at)]
    for r in results:
        events += [ev.RungStarted(run_id=RUN, rung=r.name, at=at), ev.RungFinished(run_id=RUN, result=r, at=at)]
    if finish:
        events.append(ev.RunFinished(run_id=RUN, ok=all(r.status != "fail" for r in results), results=results,
                                     duration_s=1.0, at=at, device={"gpu": False, "interpreter": True}))
    return events


PASSING = [RungResult("prechecks", "ok", "clean"), RungResult("compile", "ok", "add_kernel"),
           RungResult("run", "ok", "out (1,)"), RungResult("correctness", "ok", "24 checks")]


async def test_the_rung_detail_follows_the_first_failed_rung(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        failing = PASSING[:3] + [RungResult("correctness", "fail", "max_abs 3.1 > 1e-05",
                                            error="n=1000 seed=3: max_abs 3.1 > 1e-05")]
        for event in _run(failing, [r.name for r in failing], finish=True):
            app.bridge.emit(event)
        await pilot.pause()
        assert app.rungs._selected().name == "correctness"
        from rich.console import Console

        console = Console(width=80, record=True)
        console.print(app.rungs.detail.content)
        assert "seed=3: max_abs 3.1" in console.export_text()


async def test_pass_shows_once_the_verdict_rungs_end_while_the_dump_runs(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rungs = [r.name for r in PASSING] + ["dump"]
        for event in _run(PASSING, rungs, finish=False):
            app.bridge.emit(event)
        await pilot.pause()
        assert "PASS" not in app.status.render_state().plain  # the rungs are done; the loop has not said so yet
        app.bridge.emit(ev.VerdictReached(run_id=RUN, ok=True, pending=["dump"], after_s=0.8, at=fixed_data.AT))
        app.bridge.emit(ev.RungStarted(run_id=RUN, rung="dump", at=fixed_data.AT))
        await pilot.pause()
        line = app.status.render_state().plain
        assert "PASS" in line and "so far" not in line and "dump" in line, line
        # A failed verdict rung says FAIL at once, naming it.
        failing = PASSING[:3] + [RungResult("correctness", "fail", "wrong")]
        for event in _run(failing, rungs, finish=False):
            app.bridge.emit(event)
        app.bridge.emit(ev.VerdictReached(run_id=RUN, ok=False, failed_rung="correctness", pending=["dump"],
                                          at=fixed_data.AT))
        await pilot.pause()
        line = app.status.render_state().plain
        assert "FAIL" in line and "correctness failed" in line, line


async def test_on_a_gpu_the_checks_give_a_pass_so_far_until_the_benchmark_ends(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rungs = [r.name for r in PASSING] + ["benchmark", "dump"]
        for event in _run(PASSING, rungs, finish=False):
            app.bridge.emit(event)
        app.bridge.emit(ev.VerdictReached(run_id=RUN, ok=True, undecided=["benchmark"], pending=["benchmark", "dump"],
                                          at=fixed_data.AT))
        app.bridge.emit(ev.RungStarted(run_id=RUN, rung="benchmark", at=fixed_data.AT))
        await pilot.pause()
        line = app.status.render_state().plain
        assert "PASS so far" in line and "benchmark" in line, line
        app.bridge.emit(ev.RungFinished(run_id=RUN, result=RungResult("benchmark", "fail", "side work"), at=fixed_data.AT))
        app.bridge.emit(ev.VerdictReached(run_id=RUN, ok=False, failed_rung="benchmark", pending=["dump"],
                                          at=fixed_data.AT))
        app.bridge.emit(ev.RungStarted(run_id=RUN, rung="dump", at=fixed_data.AT))
        await pilot.pause()
        line = app.status.render_state().plain
        assert "FAIL" in line and "so far" not in line and "benchmark failed" in line, line


async def test_a_maximised_pane_keeps_the_status_line(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=SIZE) as pilot:
        await _fed(pilot)
        await pilot.press("f2", "ctrl+o")
        await pilot.pause()
        assert app.main.maximized is not None
        region = app.status.region
        assert region.height == 1 and region.width > 100 and region.y < SIZE[1]
        assert "PASS" in app.status.render_state().plain


async def test_the_rung_table_keeps_its_width_after_a_run_ends_while_another_pane_is_maximised(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=SIZE) as pilot:
        await _fed(pilot)
        widths = [c.width for c in app.rungs.table.columns.values()]
        await pilot.press("f2", "ctrl+o")
        await pilot.pause()
        for event in _run(PASSING, [r.name for r in PASSING], finish=True):
            app.bridge.emit(event)
        await pilot.pause()
        await pilot.press("ctrl+o")
        await pilot.pause()
        await pilot.pause()
        assert [c.width for c in app.rungs.table.columns.values()] == widths


async def test_the_tool_line_of_a_proposal_whose_trial_failed_shows_a_cross(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        trial = {"ok": False, "correct": False, "headline": "correctness failed",
                 "rungs": [{"name": "correctness", "status": "fail", "summary": "max_abs 3.1", "error": "max_abs 3.1"}]}
        proposal = {"id": "p9", "file": "kernel.py", "rationale": "fuse", "call_id": "c9", "diff": "", "hunks": [],
                    "trial": trial}
        for event in (ev.ToolCallStarted(turn_id="t", call_id="c9", name="propose_edit", summary="propose_edit"),
                      ev.ProposalEvent(proposal_id="p9", state="trial_done", proposal=proposal),
                      ev.ToolCallFinished(turn_id="t", call_id="c9", name="propose_edit", ok=True,
                                          summary="p9 · trial: correctness failed")):
            app.bridge.emit(event)
        await pilot.pause()
        entry = app.chat.tools["c9"]
        assert str(entry.title).startswith("✗") and entry.has_class("-failed")
