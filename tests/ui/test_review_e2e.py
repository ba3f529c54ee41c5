"""Issue 20's "done when": the app, driven by keys, with the real ``openai`` and ``anthropic`` SDKs talking
to a server on loopback (``tests/llm_server.py``), real CPU workers for every trial and run:

streamed reply → good proposal accepted (one ``a``) → bad proposal refused on the first ``a`` → undo
(``u``) → interrupted turn (ctrl+c) → redirect whose text reaches the server → quit → resume → export.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.cli import build_parser
from kerneltui.commands import tui
from kerneltui.core import events as ev
from kerneltui.core.session import load_session
from kerneltui.core.session.export import render_markdown
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
from kerneltui.ui.proposal_view import FAILED, PASSED
from tests.integration.agent_helpers import BLOCK_2048
from tests.llm_server import SSE, LLMServer, anthropic_stream, openai_chat_stream
from tests.ui.conftest import wait_for

SIZE = (160, 48)
RUNGS = ["prechecks", "compile", "run", "correctness"]
BAD = ("@@ -13,1 +13,1 @@\n-    tl.store(out_ptr + offs, x + y, mask=mask)\n"
       "+    tl.store(out_ptr + offs, x * y, mask=mask)\n")
REDIRECT = "try vectorised loads instead"


def reply(provider: str, text: list[str], proposal: tuple[str, str] | None = None, pause_s: float = 0.0) -> SSE:
    """One streamed reply in the provider's wire format, with a propose_edit call when given."""
    calls = []
    if proposal is not None:
        arguments = json.dumps({"rationale": proposal[0], "diff": proposal[1]})
        calls = [(f"call_{abs(hash(proposal[0])) % 10**6}", "propose_edit", [arguments[:20], arguments[20:]])]
    stream = (openai_chat_stream(text=text, tool_calls=calls) if provider == "openai"
              else anthropic_stream(text=text, tool_uses=calls))
    stream.pause_s = pause_s
    return stream


def _options(**more: object) -> AppOptions:
    return AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False, rungs=RUNGS,
                      seeds=1, **more)  # type: ignore[arg-type]


def _events(app, kind: type, since: int = 0) -> list:
    return [e for e in app.bridge.log[since:] if isinstance(e, kind)]


def _run_of(app, origin: str, since: int) -> ev.RunFinished | None:
    """The finished run of the file that the app started with ``origin`` after ``since``."""
    started = {e.run_id for e in _events(app, ev.RunStarted, since) if e.origin == origin}
    return next((e for e in _events(app, ev.RunFinished, since) if e.run_id in started), None)


async def _say(pilot, text: str) -> None:
    await pilot.press("f2", "i", *text, "enter")


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_review_flow_end_to_end_with_real_sdks(provider: str, example_task, monkeypatch, tmp_path: Path) -> None:
    task = example_task("vector_add")
    kernel = task / "kernel.py"
    original = kernel.read_text()
    server = LLMServer().start()
    base_url = server.url + ("/v1" if provider == "openai" else "")
    monkeypatch.setenv("REVIEW_TEST_KEY", "sk-test-review-0123456789")
    monkeypatch.setenv("KERNELTUI_AGENT_API_KEY_ENV", "REVIEW_TEST_KEY")
    monkeypatch.setenv("KERNELTUI_AGENT_TRIAL_RUNGS", ",".join(RUNGS))
    monkeypatch.setenv("KERNELTUI_AGENT_TRIAL_SEEDS", "1")
    # The settings as `kerneltui TASK --provider … --model … --base-url …` reads them.
    args = build_parser().parse_args(["tui", str(task), "--provider", provider, "--model", f"{provider}-test",
                                      "--base-url", base_url])
    settings = tui.load_settings(args)
    server.push(reply(provider, ["Reading ", "the kernel: ", "a bigger block halves the programs."],
                      ("BLOCK 2048", BLOCK_2048)),
                reply(provider, ["The trial passed; your call."]),
                reply(provider, ["Fusing ", "the add."], ("fused multiply", BAD)),
                reply(provider, ["The trial failed correctness."]),
                reply(provider, ["Roofline: "] + [f"part {n} of a long answer. " for n in range(400)], pause_s=0.05),
                reply(provider, ["Understood: vectorised loads next."]),
                reply(provider, ["Yes, still here."]))
    try:
        app = create_app(task, settings=settings, options=_options())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert provider in app.agent.label and "env REVIEW_TEST_KEY" in app.agent.label
            # 1. A streamed reply with a good proposal; its trial passes; one a accepts it.
            await _say(pilot, "make it faster")
            await wait_for(pilot, lambda: "p1" in app.chat.cards and app.chat.cards["p1"].verdict.outcome == PASSED
                           and not app.agent.busy, 180, "the first proposal's trial")
            assert len(_events(app, ev.AgentTextDelta)) >= 3
            assert "a bigger block" in " ".join(app.chat.reply_text.values())
            mark = len(app.bridge.log)
            await pilot.press("f2", "a")
            await wait_for(pilot, lambda: _run_of(app, "accept", mark) is not None, 180, "the accepted file's run")
            assert "BLOCK = 2048" in kernel.read_text() and app.editor.text == kernel.read_text()
            assert _run_of(app, "accept", mark).ok and app.status.state.last_ok is True
            # 2. A proposal whose trial fails: the panes keep the file's verdict; the first a explains.
            await _say(pilot, "now fuse the add")
            await wait_for(pilot, lambda: "p2" in app.chat.cards and app.chat.cards["p2"].verdict.outcome == FAILED
                           and not app.agent.busy, 180, "the second proposal's trial")
            assert app.rungs.rows["correctness"].state == "ok" and app.status.state.last_ok is True
            await pilot.press("f2", "a")
            await pilot.pause(0.5)
            card = app.chat.cards["p2"]
            assert card.is_open and "Press a again" in card.armed and "x * y" not in kernel.read_text()
            # 3. Undo: the kernel goes back to before p1, and the loop reruns on it.
            mark = len(app.bridge.log)
            await pilot.press("u")
            await wait_for(pilot, lambda: _run_of(app, "undo", mark) is not None, 180, "the run after the undo")
            assert kernel.read_text() == original and app.editor.text == original
            assert app.chat.cards["p1"].state == "undone"
            # 4. A slow reply, interrupted with ctrl+c: the partial text is kept and marked, its cost counted.
            mark = len(app.bridge.log)
            await _say(pilot, "explain the roofline")
            await wait_for(pilot, lambda: len(_events(app, ev.AgentTextDelta, mark)) >= 3, 60, "the slow reply")
            await pilot.press("ctrl+c")
            await wait_for(pilot, lambda: not app.agent.busy, 30, "the interrupt")
            assert _events(app, ev.AgentMessage, mark)[-1].text.endswith("[interrupted]")
            assert any(not u.reported and u.output_tokens > 0 for u in _events(app, ev.TokenUsage, mark))
            # 5. Redirect the open proposal: the feedback reaches the server in the next request.
            requests_before = len(server.requests)
            await pilot.press("f2", "f", *REDIRECT, "enter")
            await wait_for(pilot, lambda: any("vectorised loads next" in e.text
                                              for e in _events(app, ev.AgentMessage)), 60, "the answer to the redirect")
            assert len(server.requests) == requests_before + 1
            assert REDIRECT in json.dumps(server.requests[-1].body)
            assert app.chat.cards["p2"].state == "redirected"
            folder = app.recorder.log.folder
            await pilot.press("ctrl+q")
        # 6. Resume: the chat, the cards and the agent's conversation come back; the model sees it all.
        resumed = create_app(task, settings=settings, options=_options(resume=folder))
        async with resumed.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: resumed.recorder.log is not None, 60, "the resumed session")
            await pilot.pause(0.3)
            assert {"p1", "p2"} <= set(resumed.chat.cards) and resumed.chat.cards["p2"].state == "redirected"
            assert resumed.editor.text == original
            await _say(pilot, "still there?")
            await wait_for(pilot, lambda: any("still here" in e.text for e in _events(resumed, ev.AgentMessage)), 60,
                           "the resumed agent's answer")
            sent = json.dumps(server.requests[-1].body)
            assert "make it faster" in sent and REDIRECT in sent and "[interrupted" in sent
            await pilot.press("ctrl+q")
    finally:
        server.stop()
    # 7. Export: the conversation, the proposals and decisions, and who made each version.
    md = render_markdown(load_session(folder))
    assert "| agent p1 (accepted) |" in md
    assert "| p2 |" in md and "redirected" in md and REDIRECT in md and "FAIL" in md
    assert "**you:** make it faster" in md and "[interrupted]" in md and "still here" in md


TWO_HUNKS = ("@@ -8,1 +8,1 @@\n-    pid = tl.program_id(0)\n+    pid = tl.program_id(axis=0)\n"
             "@@ -19,1 +19,1 @@\n-    BLOCK = 1024\n+    BLOCK = 2048\n")


@pytest.mark.slow
async def test_edited_and_partial_accepts_end_to_end(example_task, monkeypatch, tmp_path: Path) -> None:
    """Keys only, the real openai SDK on loopback: a two-hunk proposal accepted in part (hunk 1 left
    out), then a proposal edited (e, change, ctrl+s); each card, the file and the export say what
    reached the disk and its own verdict."""
    from kerneltui.core.session.export import render_markdown

    task = example_task("vector_add")
    kernel = task / "kernel.py"
    original = kernel.read_text()
    server = LLMServer().start()
    monkeypatch.setenv("REVIEW_TEST_KEY", "sk-test-review-0123456789")
    monkeypatch.setenv("KERNELTUI_AGENT_API_KEY_ENV", "REVIEW_TEST_KEY")
    monkeypatch.setenv("KERNELTUI_AGENT_TRIAL_RUNGS", ",".join(RUNGS))
    monkeypatch.setenv("KERNELTUI_AGENT_TRIAL_SEEDS", "1")
    args = build_parser().parse_args(["tui", str(task), "--provider", "openai", "--model", "openai-test",
                                      "--base-url", server.url + "/v1"])
    settings = tui.load_settings(args)
    server.push(reply("openai", ["Two changes."], ("axis and block", TWO_HUNKS)),
                reply("openai", ["Your call."]),
                reply("openai", ["A bigger block again."], ("block 4096", "@@ -19,1 +19,1 @@\n-    BLOCK = 2048\n"
                                                                          "+    BLOCK = 4096\n")),
                reply("openai", ["Your call."]))
    partial = original.replace("BLOCK = 1024", "BLOCK = 2048")
    try:
        app = create_app(task, settings=settings, options=_options())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await _say(pilot, "tidy it")
            await wait_for(pilot, lambda: "p1" in app.chat.cards and app.chat.cards["p1"].verdict.outcome == PASSED
                           and not app.agent.busy, 180, "the two-hunk proposal's trial")
            await pilot.press("f2", "1", "a")  # hunk 1 left out
            await wait_for(pilot, lambda: (app.chat.cards["p1"].written is not None
                                           and app.chat.cards["p1"].written.verdict_ok is not None), 180,
                           "the partial text's check after writing")
            assert kernel.read_text() == partial
            card = app.chat.cards["p1"]
            assert "accepted 1 of 2 hunks · checked after writing: passed" in str(card._verdict_text())
            assert "hunk 1 LEFT OUT" in card._diff() and "(not taken)     pid = tl.program_id(axis=0)" in card._diff()
            await wait_for(pilot, lambda: not app.agent.busy, 60, "the agent to be free")
            await _say(pilot, "bigger")
            await wait_for(pilot, lambda: "p2" in app.chat.cards and app.chat.cards["p2"].verdict.outcome == PASSED
                           and not app.agent.busy, 180, "the second proposal's trial")
            await pilot.press("f2", "e")
            await pilot.pause()
            assert app.editor.editing_proposal == "p2"
            app.editor.text = app.editor.text.replace("BLOCK = 4096", "BLOCK = 512")
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: (app.chat.cards["p2"].written is not None
                                           and app.chat.cards["p2"].written.verdict_ok is not None), 180,
                           "the edited text's check after writing")
            assert "BLOCK = 512" in kernel.read_text()
            card = app.chat.cards["p2"]
            assert "accepted with your edits · checked after writing: passed" in str(card._verdict_text())
            assert "+    BLOCK = 512" in card._diff() and "4096" not in card._diff()
            folder = app.recorder.log.folder
            await pilot.press("ctrl+q")
    finally:
        server.stop()
    md = render_markdown(load_session(folder))
    assert "agent p1, 1 of 2 hunks" in md and "agent p2, edited by you" in md
    assert "accepted 1 of 2 hunks (hunks 2 of 2)" in md and "accepted with your edits" in md
