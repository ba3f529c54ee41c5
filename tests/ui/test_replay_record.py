"""A replay is derived from the session alone: a recorded session with an edited and a partial accept,
opened while its task folder holds another text, shows each version's text at its step."""

from __future__ import annotations

from pathlib import Path

from kerneltui.config import load_config
from kerneltui.core import events as ev
from kerneltui.core.session import Timeline, load_session
from kerneltui.ui.launch import create_replay_app
from kerneltui.ui.options import AppOptions
from tests.integration.session_recording import TODAY, RecordedSession, record_session

SIZE = (160, 45)


def _replay(folder: Path):
    options = AppOptions(watch_themes=False, clock=lambda: 100.0, wall_time=lambda at: "12:00:00")
    return create_replay_app(folder, settings=load_config(env={}), options=options)


def _step_after(recorded: RecordedSession, pid: str, state: str) -> int:
    """The step just after the first ProposalEvent of ``pid`` in ``state``."""
    events = load_session(recorded.folder).events
    return next(
        i + 1
        for i, e in enumerate(events)
        if isinstance(e, ev.ProposalEvent) and e.proposal_id == pid and e.state == state
    )


def _card_text(card) -> str:
    from textual.widgets import Static

    out = []
    for static in card.query(Static):
        content = static.content
        out.append(content.code if hasattr(content, "code") else str(static.render()))
    return "\n".join(out)


async def test_the_replay_editor_shows_each_version_as_it_reached_the_disk(
    example_task, tmp_path: Path
) -> None:
    recorded = await record_session(example_task("vector_add"), tmp_path / "sessions", tmp_path)
    texts = recorded.texts
    assert (recorded.task_dir / "kernel.py").read_text() == TODAY  # the task folder is still there
    timeline = Timeline(load_session(recorded.folder))
    by_hash = {v.source_hash: v.number for v in timeline.versions}
    app = _replay(recorded.folder)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        driver = app.replay
        assert app.editor.text == texts["start"]
        # Every version: the editor shows the file as it was then (a trial's text is the card's, not the file's).
        for version in timeline.versions:
            driver.jump_to_version(version.number)
            await pilot.pause()
            expected = timeline.kernel_text_at(version.step)
            assert expected is not None and app.editor.text == expected, f"v{version.number}"
            assert TODAY not in app.editor.text
        # The versions by their text: a trial's version shows the file of its time, a decision's its own text.
        from kerneltui.core.task import source_hash

        for made, on_disk in (("p2", "p1"), ("edited", "edited"), ("p3", "edited"), ("partial", "partial")):
            assert driver.jump_to_version(by_hash[source_hash(texts[made])])
            await pilot.pause()
            assert app.editor.text == texts[on_disk], made
        # Steps: just after each decision, the editor shows the text that decision wrote.
        for pid, text in (("p1", "p1"), ("p2", "edited"), ("p3", "partial")):
            driver.go(_step_after(recorded, pid, "accepted"))
            await pilot.pause()
            assert app.editor.text == texts[text], pid
        # While p2's trial runs, the file is still p1's text.
        driver.go(_step_after(recorded, "p2", "trial"))
        await pilot.pause()
        assert app.editor.text == texts["p1"]
        # Stepping back one at a time from the end keeps the editor on the session's texts.
        driver.go(len(driver.timeline))
        await pilot.pause()
        assert app.editor.text == texts["partial"]
        for _ in range(3):
            await pilot.press("f7")
        assert app.editor.text in {texts["partial"], texts["edited"]}
        # The cards say what reached the disk, with its own verdict and the hunk left out.
        driver.go(len(driver.timeline))
        await pilot.pause()
        edited_card, partial_card = _card_text(app.chat.cards["p2"]), _card_text(app.chat.cards["p3"])
        # (The session's runs are prechecks only: nothing failed, correctness was not among them.)
        assert "✓ accepted with your edits · checked after writing: no failure" in edited_card
        assert "+    BLOCK = 4096" in edited_card and "BLOCK = 8192" not in edited_card
        assert "✓ accepted 1 of 2 hunks · checked after writing: no failure" in partial_card
        assert "hunk 2 LEFT OUT" in partial_card and "(not taken)     BLOCK = 512" in partial_card
        assert "accepted  [u]ndo" in _card_text(app.chat.cards["p1"])  # a whole accept: the trial's verdict stands
