"""The trace view from a recorded trace rung result, and the asm view's "edit this stage" (e)."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import DataTable, Static

from kerneltui.core.rungs.result import RungResult
from tests.ui.fixed_data import PTX
from tests.ui.test_panes import _fed, make_app

DATA = Path(__file__).resolve().parent.parent / "data" / "trace"


def _trace_result(tmp_path: Path, name: str) -> RungResult:
    recorded = tmp_path / "trace" / "buffers.json"
    recorded.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA / name, recorded)
    return RungResult("trace", "ok", "matmul_pipelined: load 40% compute 57% store 3% · overhead +5.7%",
                      metrics={"buffers": str(recorded), "untraced_ms": 0.070, "traced_ms": 0.074,
                               "chrome_trace": str(tmp_path / "trace" / "trace.json")})


def _text(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_trace_view_region_table_and_timeline(example_task, tmp_path: Path) -> None:
    from kerneltui.ui.screens.trace import TraceScreen

    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        app.rungs.rung_finished(_trace_result(tmp_path, "two_kernels.json"))
        app.rungs.select("trace")
        await pilot.press("f4", "t")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TraceScreen)
        table = screen.query_one("#trace-regions", DataTable)
        assert table.row_count == 3
        assert [str(c) for c in table.get_row_at(1)][:3] == ["compute", "256", "32×"]
        assert "traced median 74.0 µs vs untraced 70.0 µs" in _text(screen, "#trace-overhead")
        assert "load∩compute 99%" in _text(screen, "#trace-overlap")
        timeline = _text(screen, "#trace-timeline")
        assert "SM 0 │" in timeline and "SM 131 │" in timeline and "l load" in timeline
        await pilot.press("c")
        await pilot.pause()
        assert "CTA 255 │" in _text(screen, "#trace-timeline")
        await pilot.press("tab")
        await pilot.pause()
        assert table.row_count == 1 and str(table.get_row_at(0)[0]) == "row"
        assert "softmax_kernel" in str(screen.query_one("Vertical").border_title)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TraceScreen)


async def test_trace_view_says_why_there_is_nothing(example_task) -> None:
    app = make_app(example_task("vector_add"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.rungs.rung_finished(RungResult("trace", "skip", "no GPU: the region markers read the GPU's own timers"))
        app.action_trace()
        await pilot.pause()
        assert any("no GPU" in str(n.message) for n in app._notifications)


async def test_edit_stage_writes_the_override(example_task) -> None:
    task = example_task("vector_add")
    app = make_app(task)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await _fed(pilot)  # a finished run (source hash abc1234) with PTX and SASS in the asm view
        assert app.runs.last_report_dir == task / ".kerneltui" / "versions" / "abc1234"
        await pilot.press("f6", "e")  # the view opens on SASS, which cannot be overridden: say what can
        await pilot.pause()
        assert any("can override PTX or TTGIR, not SASS" in str(n.message) for n in app._notifications)
        await pilot.press("left_square_bracket", "e")
        await pilot.pause()
        edited = task / ".kerneltui" / "override" / "abc1234" / "add_kernel.ptx"
        assert edited.read_text() == PTX
        assert app.stage_edits.folder == ".kerneltui/override/abc1234"
        assert any("Run the hand-edited override" in str(n.message) for n in app._notifications)
        manifest = (edited.parent / "override.json").read_text()
        assert '"stage": "PTX"' in manifest and '"kernel": "add_kernel"' in manifest
