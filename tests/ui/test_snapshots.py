"""SVG snapshots of the main screen, the asm viewer and the help screen (fixed data, no clocks).

Update after a deliberate visual change with ``pytest tests/ui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.config import load_config
from kerneltui.core import events as ev
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
from tests.ui import fixed_data
from tests.ui.snapshot_compare import settle

SIZES = [(120, 40), (200, 50)]
# The layout degrades by design: an SSH window (80x24, 100x30) to a wide screen (160x48, 240x60).
LAYOUT_SIZES = [(80, 24), (100, 30), (160, 48), (240, 60)]


def snapshot_app(task: Path):
    import kerneltui.settings.ui  # noqa: F401

    settings = load_config(file=Path("/home/you/.config/kerneltui/config.toml"), env={})
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         clock=lambda: 100.0, wall_time=lambda at: "12:00:00")
    return create_app(task, settings=settings, options=options,
                      parts=fixed_data.parts(history=fixed_data.history(), asm=fixed_data.listing()))


async def _feed(pilot) -> None:
    app = pilot.app
    await pilot.pause()
    app.editor.cursor_blink = False
    app.chat.query_one("#chat-input").cursor_blink = False
    events, failed = fixed_data.trial("p2", passed=False)
    proposal = fixed_data.proposal("p2")
    for event in fixed_data.finished_run() + fixed_data.agent_turn() + events:
        app.bridge.emit(event)
    app.bridge.emit(ev.ProposalEvent(proposal_id="p2", state="trial_done", proposal={**proposal, "trial": failed},
                                     at=fixed_data.AT))
    await pilot.pause()
    await app.workers.wait_for_complete()
    # The asm and history views arrive as messages from thread workers: wait until both are shown.
    for _ in range(100):
        if app.asm_pane.stage_name == "SASS" and app.chart.series.points:
            break
        await pilot.pause(0.05)
    await pilot.pause()
    app.editor.goto_line(13)
    await settle(pilot)


@pytest.mark.parametrize("size", LAYOUT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_main_screen(screen_matches, example_task, size) -> None:
    assert screen_matches(snapshot_app(example_task("vector_add")), terminal_size=size, run_before=_feed)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_asm_viewer(screen_matches, example_task, size) -> None:
    async def run_before(pilot) -> None:
        await _feed(pilot)
        await pilot.press("alt+5", "ctrl+o")
        for _ in range(6):
            await pilot.press("down")
        await settle(pilot)

    assert screen_matches(snapshot_app(example_task("vector_add")), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help_screen(screen_matches, example_task, size) -> None:
    async def run_before(pilot) -> None:
        await _feed(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert screen_matches(snapshot_app(example_task("vector_add")), terminal_size=size, run_before=run_before)
