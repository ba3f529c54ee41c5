"""The agent visibly works from the moment a message is sent: "waiting for the model · N s", ticking,
until its reply streams; then the line goes. The model here is the real openai SDK on loopback, with a
server that takes its time before the first byte, as a model thinking for a while does."""

from __future__ import annotations

import time

from kerneltui.cli import build_parser
from kerneltui.commands import tui
from kerneltui.core import events as ev
from kerneltui.ui.agent_activity import AgentActivity
from kerneltui.ui.launch import create_app
from tests.llm_server import LLMServer, openai_chat_stream
from tests.ui.conftest import wait_for
from tests.ui.test_review_e2e import _options, _say

SIZE = (160, 48)


async def test_waiting_for_the_model_ticks_until_the_reply_streams(example_task, monkeypatch) -> None:
    task = example_task("vector_add")
    server = LLMServer().start()
    monkeypatch.setenv("ACTIVITY_TEST_KEY", "sk-test-activity-0123456789")
    monkeypatch.setenv("KERNELTUI_AGENT_API_KEY_ENV", "ACTIVITY_TEST_KEY")
    args = build_parser().parse_args(["tui", str(task), "--provider", "openai", "--model", "openai-test",
                                      "--base-url", server.url + "/v1"])
    settings = tui.load_settings(args)
    stream = openai_chat_stream(text=["Here ", "it is."])

    def slow_first_byte(request):
        time.sleep(3.0)  # the model "thinks" before its first token
        return stream

    server.push(slow_first_byte)
    try:
        app = create_app(task, settings=settings, options=_options())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.chat.activity == ""
            await _say(pilot, "hello")
            await wait_for(pilot, lambda: "waiting for the model" in app.chat.activity, 10, "the activity line")
            first = app.chat.activity
            await wait_for(pilot, lambda: app.chat.activity != first and "waiting" in app.chat.activity, 5,
                           "the elapsed seconds to tick")
            assert app.chat.query_one("#chat-activity").display
            seconds = [int(line.split(" · ")[1].removesuffix(" s")) for line in (first, app.chat.activity)]
            assert seconds[1] > seconds[0]
            await wait_for(pilot, lambda: any(isinstance(e, ev.AgentMessage) for e in app.bridge.log), 30, "the reply")
            await wait_for(pilot, lambda: app.chat.activity == "", 5, "the line to go")
            assert not app.chat.query_one("#chat-activity").display
            await pilot.press("ctrl+q")
    finally:
        server.stop()


def test_activity_follows_the_agents_events() -> None:
    activity = AgentActivity()
    activity.observe(ev.UserMessage(text="hi"), 10.0)
    assert activity.line(13.2, busy=True) == "● waiting for the model · 3 s · ctrl+c stops it"
    activity.observe(ev.AgentTextDelta(turn_id="t", text="a"), 14.0)
    activity.observe(ev.AgentTextDelta(turn_id="t", text="b"), 15.0)
    assert activity.line(16.0, busy=True).startswith("● writing its reply · 2 s")
    activity.observe(ev.ToolCallStarted(turn_id="t", call_id="c", name="propose_edit", summary="p"), 16.0)
    assert "running propose_edit: making a proposal · 0 s" in activity.line(16.0, busy=True)
    activity.observe(ev.ProposalEvent(proposal_id="p1", state="trial"), 17.0)
    assert "trial of p1 running on a scratch copy · 4 s" in activity.line(21.0, busy=True)
    assert activity.line(22.0, busy=False) == ""
    # A turn started by a decision (a redirect) has no message of its own: waiting since it was seen busy.
    assert activity.line(30.0, busy=True).startswith("● waiting for the model · 0 s")
