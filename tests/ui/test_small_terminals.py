"""An SSH window (80x24, 100x30): the panes are tabs (F2 agent and history, F3 kernel and asm, F4
rungs), so the editor shows at least 60 columns of code and an open card's verdict and keys are on
screen without scrolling; at 160 columns the chat's header and the status line's hints are whole."""

from __future__ import annotations

import pytest

from tests.ui.test_snapshots import _feed, snapshot_app

SMALL = [(80, 24), (100, 30)]


def _code_columns(app) -> int:
    editor = app.editor
    return editor.content_region.width - editor.gutter_width


def _on_screen(widget, within) -> bool:
    region = widget.region
    return region.height > 0 and within.region.contains_region(region)


@pytest.mark.parametrize("size", SMALL, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_editor_and_an_open_card_fit_a_small_terminal(example_task, size) -> None:
    app = snapshot_app(example_task("vector_add"))
    async with app.run_test(size=size) as pilot:
        await _feed(pilot)
        assert _code_columns(app) >= 60, _code_columns(app)
        # The card waits in the agent's tab: the person in the kernel's tab is told.
        assert any("p2: trial FAILED" in str(n.message) and "F2" in str(n.message) for n in app._notifications)
        await pilot.press("f2")
        await pilot.pause()
        card = app.chat.open_proposal()
        assert card is not None and card.proposal_id == "p2"
        log = app.chat.log_widget
        keys = card.query_one(".proposal-keys")
        assert _on_screen(keys, log), (keys.region, log.region)
        assert "failed" in str(keys.render()) and "[a]ccept" in str(keys.render()).replace("[/]", "")
        assert _on_screen(card.query_one(".proposal-verdict"), log)
        # Back to the kernel: the editor has its width again.
        await pilot.press("f3")
        await pilot.pause()
        assert _code_columns(app) >= 60


async def test_the_chat_header_and_status_hints_are_whole_at_160_columns(example_task) -> None:
    import math

    from kerneltui.core import events as ev

    app = snapshot_app(example_task("vector_add"))
    # What a real provider's label looks like: provider, model, server and where its key comes from.
    label = ("openai · gpt-test-2026-long-model-name · http://127.0.0.1:43210/v1 · "
             "key from env REVIEW_TEST_KEY (not OPENAI_API_KEY: the server is not OpenAI's)")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.chat.set_label(label)
        app.status.state.agent = label
        app.status.show_notice(ev.Notice(level="info", source="engine", message="engine started (pid 4242)"))
        await pilot.pause()
        header = app.chat.label_widget
        # Wrapped at words, the whole label is on screen (a line more than the bare division at most).
        assert math.ceil(len(label) / header.content_region.width) + 1 >= header.content_region.height
        assert header.content_region.height >= math.ceil(len(label) / header.content_region.width)
        shown = "".join(strip.text for strip in header.render_lines(header.content_region.reset_offset))
        assert "the server is not OpenAI's)" in shown.replace("  ", " ") or "OpenAI's)" in shown
        status = app.status.render_state().plain
        assert len(status) <= app.status.content_region.width, status
        assert "save the kernel or press ctrl+r to run" in status and "engine started (pid 4242)" in status
