"""The review flow on fixed events: a trial stays on its proposal's card (never in the rung pane or the
status line, which describe the file on disk), the card leads with the verdict, a failed proposal takes
a second ``a``, hunks can be left out, a rejection takes a reason, F2 lands in the history."""

from __future__ import annotations

from pathlib import Path

from textual import events

from kerneltui.core import events as ev
from kerneltui.ui.launch import create_app
from kerneltui.ui.messages import ProposalDecision
from kerneltui.ui.options import AppOptions
from kerneltui.ui.widgets.chat import CONFIRM_AFTER_S
from tests.ui import fixed_data
from tests.ui.snapshot_compare import settle

SIZE = (160, 45)


class SteppedClock:
    """The app's clock, moved only by the test: whether a second ``a`` came before the warning could
    be read is decided by the keys, never by how busy the machine running the test is."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _app(task: Path, settings):
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False, clock=SteppedClock(), wall_time=lambda at: "12:00:00")
    return create_app(task, settings=settings, options=options, parts=fixed_data.parts())


def _proposal_with_trial(app, proposal_id: str, passed: bool, hunks: int = 1) -> None:
    """A proposal arrives, its trial runs (events of origin "proposal"), it ends with the verdict."""
    proposal = fixed_data.proposal(proposal_id, hunks)
    emit = app.bridge.emit
    emit(ev.ProposalEvent(proposal_id=proposal_id, state="trial", proposal={**proposal, "trial": {"running": True}}))
    events, summary = fixed_data.trial(proposal_id, passed, run_id=f"trial-{proposal_id}")
    for event in events:
        emit(event)
    emit(ev.ProposalEvent(proposal_id=proposal_id, state="trial_done", proposal={**proposal, "trial": summary}))


def _states(app) -> dict[str, str]:
    return {name: row.state for name, row in app.rungs.rows.items() if row.state != "idle"}


async def test_a_message_typed_into_the_history_by_mistake_does_not_accept_a_failed_proposal(example_task,
                                                                                             settings) -> None:
    """F2 lands in the history, where a is accept: "again" typed there (a, g, a) used to arm the failed
    proposal with the first a and write it with the second."""
    app = _app(example_task("vector_add"), settings)
    decisions: list[ProposalDecision] = []

    def hook(message) -> None:
        if isinstance(message, ProposalDecision) and all(message is not d for d in decisions):
            decisions.append(message)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await pilot.pause()
        _proposal_with_trial(app, "p2", passed=False)
        await pilot.pause()
        await pilot.press("f2", *"again")
        await pilot.pause()
        assert decisions == []
        card = app.chat.cards["p2"]
        assert card.is_open and not card.armed  # a, g (disarms), a (arms), i (to the input), n
        # The same word arriving in one read from the terminal (over a slow SSH link): the keys are
        # queued before the first one's action runs.
        await pilot.press("escape", "f2")
        for key in "ag":
            app.post_message(events.Key(key, key))
        await pilot.pause(0.3)
        assert decisions == [] and not card.armed  # the g came after the a, however they arrived
        # Two a at once: the second comes before the warning could be read, and does not confirm it.
        await pilot.press("f2", "a", "a")
        await pilot.pause()
        assert decisions == [] and card.armed
        # Reading between the two keys keeps the confirmation: the warning, the diff.
        await pilot.press("down", "up")
        app.options.clock.advance(CONFIRM_AFTER_S)
        await pilot.press("a")
        await pilot.pause()
        assert [(d.proposal_id, d.decision) for d in decisions] == [("p2", "accept")]


async def test_a_failed_trial_never_replaces_the_status_of_the_file_on_disk(example_task, settings) -> None:
    app = _app(example_task("vector_add"), settings)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for event in fixed_data.finished_run():
            app.bridge.emit(event)
        await pilot.pause()
        on_disk = _states(app)
        assert on_disk["correctness"] == "ok" and app.status.state.last_ok is True
        _proposal_with_trial(app, "p2", passed=False)
        await pilot.pause()
        assert _states(app) == on_disk
        assert app.status.state.last_ok is True and app.status.state.failed_rung == ""
        assert "FAIL" not in app.status.render_state().plain
        # The trial is the card's: its own rows, the failing rung first.
        card = app.chat.cards["p2"]
        verdict = card.query_one(".proposal-verdict").render()
        assert str(verdict).startswith("✗ trial FAILED · correctness: n=1000 seed=1: max_abs=2.0e+00")
        assert "✗ correctness" in str(card.query_one(".proposal-rows").render())
        app.bridge.emit(ev.ProposalEvent(proposal_id="p2", state="rejected", proposal={"decision_reason": "wrong"}))
        await pilot.pause()
        assert _states(app) == on_disk and app.status.state.last_ok is True


async def test_a_failed_proposal_takes_a_second_key_and_a_passing_one_does_not(example_task, settings) -> None:
    app = _app(example_task("vector_add"), settings)
    decisions: list[ProposalDecision] = []

    def hook(message) -> None:
        if isinstance(message, ProposalDecision) and all(message is not d for d in decisions):  # seen once per node it bubbles through
            decisions.append(message)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await pilot.pause()
        _proposal_with_trial(app, "p2", passed=False)
        await pilot.pause()
        await pilot.press("f2")
        assert app.focused is app.chat.log_widget  # the history, where a/r/f/u live: nothing is typed
        await pilot.press("a")
        await pilot.pause()
        assert decisions == []
        keys = str(app.chat.cards["p2"].query_one(".proposal-keys").render())
        assert "trial failed" in keys and "Press a again" in keys
        app.options.clock.advance(CONFIRM_AFTER_S)  # the warning is read
        await pilot.press("a")
        await pilot.pause()
        assert [(d.proposal_id, d.decision) for d in decisions] == [("p2", "accept")]
        # A passing trial: one key; hunk 2 of 3 left out of it.
        decisions.clear()
        _proposal_with_trial(app, "p3", passed=True, hunks=3)
        await pilot.pause()
        assert str(app.chat.cards["p3"].query_one(".proposal-verdict").render()).startswith("✓ trial passed")
        await pilot.press("2", "a")
        await pilot.pause()
        assert [(d.proposal_id, d.decision, d.hunks) for d in decisions] == [("p3", "accept", [0, 2])]
        # A rejection with its reason, typed after r.
        decisions.clear()
        _proposal_with_trial(app, "p4", passed=True)
        await pilot.pause()
        await pilot.press("f2", "r", *"keep BLOCK a power of two", "enter")
        await pilot.pause()
        assert [(d.proposal_id, d.decision, d.feedback) for d in decisions] == [
            ("p4", "reject", "keep BLOCK a power of two")]
        assert app.chat.input_widget.value == ""


def _slow_agent_parts(turns: list[dict]):
    from dataclasses import replace

    from kerneltui.core.agent.providers.scripted import Script
    from kerneltui.ui.adapters.agent_chat import scripted_agent

    script = Script.from_dict({"name": "slow", "turns": turns, "chunk_delay_s": 0.02})
    return replace(fixed_data.parts(), agent=lambda task, pool: scripted_agent(task, pool, script, "test script"))


async def test_ctrl_c_and_esc_interrupt_a_turn_and_keep_its_partial_reply(example_task, settings) -> None:
    from tests.ui.conftest import wait_for

    # Both replies stream for far longer than a loaded machine takes to press the key (a 920-character one
    # once ended before ctrl+c arrived).
    turns = [{"text": "a long streamed answer " * 400}, {"text": "second " * 2000},
             {"text": "after the interrupts", "expect": "still there?"}]
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False)
    app = create_app(example_task("vector_add"), settings=settings, options=options, parts=_slow_agent_parts(turns))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for stop_key in ("ctrl+c", "escape"):
            seen = len(app.bridge.log)
            await pilot.press("f2", "i", *"write a lot", "enter")
            await wait_for(pilot, lambda seen=seen: any(isinstance(e, ev.AgentTextDelta) for e in app.bridge.log[seen:]), 30,
                           "the reply to stream")
            assert app.agent.busy
            if stop_key == "escape":
                await pilot.press("f2")  # esc in the history (and in the input) stops a turn in flight
            await pilot.press(stop_key)
            await wait_for(pilot, lambda: not app.agent.busy, 10, f"{stop_key} to stop the turn")
            after = app.bridge.log[seen:]
            final = [e for e in after if isinstance(e, ev.AgentMessage)]
            assert final and final[-1].text.endswith("[interrupted]"), (stop_key, [str(n.message) for n in app._notifications], len(final[-1].text))
            assert any(isinstance(e, ev.TokenUsage) and e.output_tokens > 0 for e in after), stop_key
        # The palette has it too; with nothing running it says so instead of quitting.
        app.agent_control.interrupt()
        await pilot.pause()
        assert any("not working on anything" in str(n.message) for n in app._notifications)
        await pilot.press("f2", "i", *"still there?", "enter")
        await wait_for(pilot, lambda: any(isinstance(e, ev.AgentMessage) and "after the interrupts" in e.text
                                          for e in app.bridge.log), 30, "the next turn")


async def test_the_chat_follows_new_output_after_a_decision_and_says_when_more_is_below(example_task,
                                                                                       settings) -> None:
    app = _app(example_task("vector_add"), settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("f2")  # at 100 columns the panes are tabs: the agent's on screen
        for n in range(30):
            app.bridge.emit(ev.Notice(level="info", source="agent", message=f"earlier line {n}"))
        _proposal_with_trial(app, "p2", passed=True)
        await pilot.pause(0.2)
        log = app.chat.log_widget
        assert log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y  # following the newest
        await pilot.press("f2", "home")  # the person reads further up
        await pilot.pause()
        app.bridge.emit(ev.Notice(level="info", source="agent", message="arrived while reading"))
        await pilot.pause(0.2)
        assert log.scroll_y < log.max_scroll_y
        assert "new below" in str(app.chat.label_widget.render())
        await pilot.press("a")  # a decision: back to the newest, and following again
        await pilot.pause(0.2)
        _proposal_with_trial(app, "p3", passed=True)
        await pilot.pause(0.3)
        assert log.scroll_y == log.max_scroll_y
        assert "new below" not in str(app.chat.label_widget.render())


async def test_a_theme_picked_in_the_palette_is_kept_for_the_next_start(example_task, settings) -> None:
    task = example_task("vector_add")
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme != "kerneltui-light"
        await pilot.press("ctrl+p", *"Theme: kerneltui-light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "kerneltui-light"
    again = _app(task, settings)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "kerneltui-light"


def _snapshot_app(task: Path):
    from kerneltui.config import load_config

    settings = load_config(file=Path("/home/you/.config/kerneltui/config.toml"), env={})
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False, clock=lambda: 100.0, wall_time=lambda at: "12:00:00")
    return create_app(task, settings=settings, options=options,
                      parts=fixed_data.parts(history=fixed_data.history(), asm=fixed_data.listing()))


async def _review_state(pilot, passed: bool, press_accept: bool) -> None:
    from tests.ui.conftest import wait_for

    app = pilot.app
    # The agent attaches after the first frame and greets in the chat then; on a loaded machine one pause
    # can end before that, and the greeting would land below the proposal instead of above it.
    await wait_for(pilot, lambda: app.agent_attached, 30, "the agent to attach")
    app.editor.cursor_blink = False
    app.chat.query_one("#chat-input").cursor_blink = False
    for event in fixed_data.finished_run():
        app.bridge.emit(event)
    _proposal_with_trial(app, "p2", passed=passed, hunks=2)
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.press("f2")
    if press_accept:
        await pilot.press("a")
    await settle(pilot)


def test_snapshot_a_failed_proposal_after_the_first_a(screen_matches, example_task) -> None:
    async def run_before(pilot) -> None:
        await _review_state(pilot, passed=False, press_accept=True)

    assert screen_matches(_snapshot_app(example_task("vector_add")), terminal_size=(100, 30), run_before=run_before)


def test_snapshot_a_passing_proposal_with_two_hunks(screen_matches, example_task) -> None:
    async def run_before(pilot) -> None:
        await _review_state(pilot, passed=True, press_accept=False)

    assert screen_matches(_snapshot_app(example_task("vector_add")), terminal_size=(160, 48), run_before=run_before)


async def test_edit_a_proposal_then_accept_it_with_ctrl_s(example_task) -> None:
    from dataclasses import replace

    from kerneltui.config import load_config
    from kerneltui.core.agent.providers.scripted import Script
    from kerneltui.ui.adapters.agent_chat import scripted_agent
    from tests.integration.agent_helpers import BLOCK_2048, propose
    from tests.ui.conftest import wait_for

    task = example_task("vector_add")
    kernel = task / "kernel.py"
    original = kernel.read_text()
    settings = load_config(env={"KERNELTUI_AGENT_TRIAL_RUNGS": "prechecks"})
    script = Script.from_dict({"name": "edit", "turns": [{"tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]},
                                                        {"text": "Your call."}]})
    parts = replace(fixed_data.parts(), agent=lambda t, pool: scripted_agent(t, pool, script, "test", settings))
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         record_session=False, rungs=["prechecks"])
    app = create_app(task, settings=settings, options=options, parts=parts)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("f2", "i", *"go", "enter")
        await wait_for(pilot, lambda: "p1" in app.chat.cards and app.chat.cards["p1"].state == "trial_done"
                       and not app.agent.busy, 120, "the proposal's trial")
        await pilot.press("f2", "e")
        await pilot.pause()
        assert app.editor.editing_proposal == "p1" and "BLOCK = 2048" in app.editor.text
        assert "editing p1" in str(app.main.panes["editor"].border_title)
        assert kernel.read_text() == original  # nothing written until the edit is accepted
        await pilot.press("f2", "e")  # again: back out, the editor shows the file
        await pilot.pause()
        assert not app.editor.editing_proposal and app.editor.text == original
        await pilot.press("f2", "e")
        await pilot.pause()
        app.editor.insert("# tuned by hand\n", location=app.editor.document.end)
        edited = app.editor.text
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.chat.cards["p1"].state == "accepted", 60, "the edited accept")
        await wait_for(pilot, lambda: any(isinstance(e, ev.RunStarted) and e.origin == "accept"
                                          for e in app.bridge.log), 30, "the run of the accepted edit")
        assert kernel.read_text() == edited and "BLOCK = 2048" in edited
        assert not app.editor.editing_proposal and not app.editor.dirty and app.editor.text == edited
        decision = app.chat.cards["p1"].proposal["decision"]
        assert decision["decision"] == "accepted_with_edits" and "tuned by hand" in decision["person_edits"]
