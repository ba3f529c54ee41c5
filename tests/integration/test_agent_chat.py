"""AgentChat end to end with the scripted provider and real CPU workers on the vector_add example."""

from __future__ import annotations

import json
import re

import pytest

from kerneltui.core.agent.proposals import ProposalError
from kerneltui.core.events import (
    AgentMessage,
    AgentTextDelta,
    FileChanged,
    ProposalEvent,
    RunStarted,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    UserMessage,
)
from kerneltui.core.history import HistoryStore
from kerneltui.core.task import source_hash
from tests.integration.agent_helpers import BLOCK_2048, BLOCK_4096, NO_DUMP, last_sent, make_chat, propose


def decision_json(text: str) -> dict:
    return json.loads(re.search(r"```json\n(.*?)\n```", text, re.S).group(1))


async def test_propose_trial_reject_with_reason_then_accept_then_undo(example_task, tmp_path):
    """The pilot flow on the core side: every step the TUI will wire to keys."""
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    original = kernel.read_text()
    turns = [
        {"text": "Proposing a bigger block.", "tool_calls": [propose("BLOCK 4096", diff=BLOCK_4096)],
         "usage": {"input_tokens": 1000, "output_tokens": 50}},
        {"text": "The trial passed; your call."},
        {"text": "Then 2048.", "expect": "keep BLOCK at most 2048", "tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]},
        {"text": "Passed too."},
        {"text": "Back to the start, understood.", "expect": "undone"},
    ]
    session, rec, provider = make_chat(task_dir, turns, tmp_path, trial_rungs=NO_DUMP)
    try:
        turn = await session.send("make it faster")
        assert turn.error is None and turn.proposals == ["p1"] and turn.requests == 2
        p1 = session.book.get("p1")
        assert p1.state == "trial_done" and p1.trial.correct is True and p1.trial.ok is True
        assert kernel.read_text() == original  # a trial never touches the file
        statuses = {r.name: r.status for r in p1.trial.rungs}
        assert [statuses[n] for n in ("prechecks", "compile", "run", "correctness")] == ["ok"] * 4
        assert statuses.get("benchmark", "skip") == "skip"  # no GPU here: no numbers, said so
        tool_result = provider.requests[1].messages[-1].tool_results[0].content
        assert "proposal p1" in tool_result and "[correctness] ok" in tool_result and "person decides" in tool_result

        await session.decide("p1", "reject", reason="keep BLOCK at most 2048")
        note = decision_json(provider.requests[2].messages[-1].text)
        assert note["decision"] == "rejected" and note["reason"] == "keep BLOCK at most 2048"
        assert note["rejected_hunks"] == [0] and note["trial"]["ok"] is True
        p2 = session.book.get("p2")
        assert p2.state == "trial_done" and p2.trial.correct

        await session.decide("p2", "accept")
        assert kernel.read_text() == original.replace("BLOCK = 1024", "BLOCK = 2048")
        assert session.checkpoints.peek().proposal_id == "p2"
        assert session.latest is session.trial_reports["p2"]  # the trial checked exactly this text
        history = HistoryStore.for_task(session.task).entries()
        # Only the accepted version is in the history (trials are not), with the trial's results.
        assert [(e.source_hash, e.origin, e.ok) for e in history] == [(session.book.get("p2").new_hash, "proposal", True)]

        await session.undo()
        assert kernel.read_text() == original
        assert session.book.get("p2").state == "undone"
        await session.send("what now?")
        sent = last_sent(provider)
        assert '"decision": "undone"' in sent and "changed since you last saw it" in sent
    finally:
        await session.close()

    assert rec.states("p1") == ["pending", "trial", "trial_done", "rejected"]
    assert rec.states("p2") == ["pending", "trial", "trial_done", "accepted", "undone"]
    assert [e.text for e in rec.of(UserMessage)] == ["make it faster", "what now?"]
    origins = {e.origin for e in rec.of(RunStarted)}
    assert origins == {"proposal"}
    deltas = "".join(e.text for e in rec.of(AgentTextDelta))
    messages = [e.text for e in rec.of(AgentMessage)]
    assert deltas == "".join(messages) and messages[0] == "(scripted) Proposing a bigger block."
    started, finished = rec.of(ToolCallStarted), rec.of(ToolCallFinished)
    assert [e.name for e in started] == ["propose_edit", "propose_edit"]
    assert finished[0].ok and finished[0].summary.startswith("p1 · 1 hunk(s) +1 −1 · trial: correct")
    usage = rec.of(TokenUsage)
    assert usage[0].input_tokens == 1000 and usage[-1].session_input_tokens == 1000
    assert usage[0].cost_usd == 0.0


async def test_per_hunk_accept_edit_then_accept_and_redirect(example_task, tmp_path):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    original = kernel.read_text()
    two_hunks = original.replace("pid = tl.program_id(0)", "pid = tl.program_id(axis=0)").replace(
        "BLOCK = 1024", "BLOCK = 2048")
    turns = [
        {"tool_calls": [propose("two changes", source=two_hunks)]},
        {"text": "Waiting."},
        {"tool_calls": [propose("again", source=two_hunks.replace(" 2048", " 4096"))]},
        {"text": "Waiting."},
        {"tool_calls": [propose("third", source=two_hunks)]},
        {"text": "Understood.", "expect": "use a launch grid helper"},
    ]
    session, rec, provider = make_chat(task_dir, turns, tmp_path, trial_rungs="prechecks")
    try:
        await session.send("tidy it")
        p1 = session.book.get("p1")
        assert len(p1.hunks) == 2
        await session.decide("p1", "reject", hunks=[1], reason="keep the block size")
        assert kernel.read_text() == original.replace("pid = tl.program_id(0)", "pid = tl.program_id(axis=0)")
        assert p1.state == "accepted" and p1.decision["decision"] == "partially_accepted"
        assert (p1.decision["applied_hunks"], p1.decision["rejected_hunks"]) == ([0], [1])
        assert p1.decision["verified_after_apply"]["ok"] is True  # the partial text was run through the loop

        await session.send("next")
        p2 = session.book.get("p2")
        with pytest.raises(ProposalError, match="no hunk 7"):
            await session.decide("p2", "accept", hunks=[7])
        # p2 was made on the partially applied file; the person edits it before accepting.
        edited = p2.new_source.replace("BLOCK = 4096", "BLOCK = 512")
        await session.decide("p2", "edit", edited_source=edited)
        assert kernel.read_text() == edited
        assert p2.decision["decision"] == "accepted_with_edits" and "BLOCK = 512" in p2.decision["person_edits"]

        await session.send("once more")
        await session.decide("p3", "redirect", reason="use a launch grid helper")
        assert session.book.get("p3").state == "redirected"
        note = decision_json(provider.requests[-1].messages[-1].text)
        assert note["decision"] == "redirected" and note["feedback"] == "use a launch grid helper"
        accepted = decision_json(provider.requests[-3].messages[-1].text)  # the note that went with "once more"
        assert accepted["decision"] == "accepted_with_edits"
    finally:
        await session.close()
    assert len(session.checkpoints.stack) == 2


async def test_stale_when_the_file_changes(example_task, tmp_path):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)]}, {"text": "ok"},
             {"tool_calls": [propose("b", diff=BLOCK_2048)]}, {"text": "ok"}]
    session, rec, _ = make_chat(task_dir, turns, tmp_path, trial_rungs="prechecks")
    try:
        await session.send("go")
        # The person saves another edit; the TUI forwards the watcher's event.
        edited = kernel.read_text().replace("mask = offs < n", "mask = offs < n  # bounds")
        kernel.write_text(edited)
        session.observe(FileChanged(path=str(kernel), source_hash=source_hash(edited)))
        assert session.book.get("p1").state == "stale"
        with pytest.raises(ProposalError, match="already stale"):
            await session.decide("p1", "accept")
        assert kernel.read_text() == edited

        # Without an event: the check at decision time.
        await session.send("again, on my version")
        kernel.write_text(edited + "\n# another save\n")
        p2 = await session.decide("p2", "accept")
        assert p2.state == "stale" and "changed after the proposal" in p2.decision["reason"]
        assert kernel.read_text() == edited + "\n# another save\n"
        assert any('"decision": "stale"' in n for n in session.pending_notes)
    finally:
        await session.close()


async def test_a_newer_proposal_supersedes_an_undecided_one(example_task, tmp_path):
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048), propose("b", diff=BLOCK_4096)]}, {"text": "two"}]
    session, rec, _ = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        turn = await session.send("go")
    finally:
        await session.close()
    assert turn.proposals == ["p1", "p2"]
    assert rec.states("p1")[-1] == "superseded" and rec.states("p2")[-1] == "trial_done"


async def test_a_failing_trial_goes_back_to_the_model(example_task, tmp_path):
    task_dir = example_task("vector_add")
    broken = (task_dir / "kernel.py").read_text().replace("x + y, mask=mask", "x - y, mask=mask")
    turns = [{"tool_calls": [propose("subtract", source=broken)]}, {"text": "It failed.", "expect": "FAILED"}]
    session, rec, provider = make_chat(task_dir, turns, tmp_path, trial_rungs=NO_DUMP)
    try:
        await session.send("go")
    finally:
        await session.close()
    p1 = session.book.get("p1")
    assert p1.trial.ok is False and p1.trial.correct is False
    assert "correctness" in p1.trial.headline
    result = provider.requests[1].messages[-1].tool_results[0]
    assert "[correctness] FAILED" in result.content and "failing cases:" in result.content


async def test_tools_read_search_results_and_refusals(example_task, tmp_path):
    task_dir = example_task("vector_add")
    (tmp_path / "context").mkdir()
    (tmp_path / "context" / "triton.md").write_text("# Triton\nUse tl.max_contiguous to hint vectorized loads.\n")
    (tmp_path / "outside.txt").write_text("secret")
    turns = [
        {"tool_calls": [
            {"name": "read_file", "arguments": {"path": "kernel.py", "start_line": 6, "end_line": 8}},
            {"name": "read_file", "arguments": {"path": "../outside.txt"}},
            {"name": "search_context", "arguments": {"query": "vectorized loads"}},
            {"name": "read_file", "arguments": {"path": "context/triton.md"}},
            {"name": "latest_results", "arguments": {}},
            {"name": "read_asm", "arguments": {"stage": "sass"}},
            {"name": "profile_brief", "arguments": {}},
            {"name": "run_candidate", "arguments": {"diff": BLOCK_2048, "rungs": ["prechecks"]}},
            {"name": "no_such_tool", "arguments": {}},
            {"name": "propose_edit", "arguments": {"rationale": "nothing", "diff": "@@\n-    BLOCK = 9999\n+    x\n"}},
        ]},
        {"text": "done"},
    ]
    session, rec, provider = make_chat(task_dir, turns, tmp_path)
    before = (task_dir / "kernel.py").read_text()
    try:
        await session.send("look around")
    finally:
        await session.close()
    finished = {e.call_id: e for e in rec.of(ToolCallFinished)}
    results = provider.requests[1].messages[-1].tool_results
    by_name = [(r.name, r.is_error, r.content) for r in results]
    assert by_name[0][2].splitlines()[1:] == ["6  @triton.jit", "7  def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):",
                                             "8      pid = tl.program_id(0)"]
    assert by_name[1][1] and "refused" in by_name[1][2]
    assert not by_name[2][1] and "context/triton.md:2" in by_name[2][2]
    assert "max_contiguous" in by_name[3][2]
    assert not by_name[4][1] and "[correctness] ok" in by_name[4][2]
    # The default loop includes the dump rung, so the checked version has SASS (Triton's nvdisasm).
    assert not by_name[5][1] and ("LDG" in by_name[5][2] or "STG" in by_name[5][2]), by_name[5][2][:400]
    assert by_name[6][1] and "no profile for this version" in by_name[6][2]
    assert not by_name[7][1] and "not changed" in by_name[7][2] and "[prechecks] ok" in by_name[7][2]
    assert by_name[8][1] and "no tool named 'no_such_tool'" in by_name[8][2]
    assert by_name[9][1] and "does not apply" in by_name[9][2]
    assert (task_dir / "kernel.py").read_text() == before
    assert len(finished) == 10 and not session.book.proposals
    assert {e.origin for e in rec.of(RunStarted)} == {"verify", "proposal"}


async def test_interrupt_keeps_the_conversation_valid(example_task, tmp_path):
    import asyncio

    turns = [{"text": "x" * 2000}, {"text": "after the interrupt", "expect": "still there?"}]
    session, rec, provider = make_chat(example_task("vector_add"), turns, tmp_path, chunk_delay_s=0.01)
    try:
        task = asyncio.create_task(session.send("write a lot"))
        while not rec.of(AgentTextDelta):
            await asyncio.sleep(0.01)
        assert session.busy and session.interrupt()
        result = await task
        assert result.interrupted and not session.busy
        assert rec.of(AgentMessage)[-1].text.endswith("[interrupted]")
        # The interrupted request is counted (an estimate: the server sent no usage), not dropped.
        counted = rec.of(TokenUsage)[-1]
        assert counted.output_tokens > 0 and counted.input_tokens > 0 and counted.reported is False
        assert session.meter.requests == 1 and session.meter.output_tokens == counted.output_tokens
        second = await session.send("still there?")
        assert second.text.endswith("after the interrupt")
        roles = [m.role for m in session.messages]
        assert roles == ["user", "assistant", "user", "assistant"]
    finally:
        await session.close()


async def test_undo_keeps_a_later_hand_edit(example_task, tmp_path):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    original = kernel.read_text()
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)]}, {"text": "ok"}]
    session, rec, _ = make_chat(task_dir, turns, tmp_path, trial_rungs="prechecks")
    try:
        await session.send("go")
        await session.decide("p1", "accept")
        kernel.write_text(kernel.read_text() + "# my note\n")
        await session.undo()
        assert kernel.read_text() == original
        kept = [p for p in (task_dir / ".kerneltui" / "agent" / "texts").iterdir()
                if p.read_text().endswith("# my note\n")]
        assert len(kept) == 1
        assert await session.undo() is None  # nothing left
    finally:
        await session.close()
    assert "your edits made after it are saved" in " ".join(
        e.message for e in rec.events if type(e).__name__ == "Notice")


async def test_proposal_events_carry_the_card(example_task, tmp_path):
    turns = [{"tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]}, {"text": "ok"}]
    session, rec, _ = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        await session.send("go")
    finally:
        await session.close()
    card = [e for e in rec.of(ProposalEvent) if e.state == "trial_done"][0].proposal
    assert card["rationale"] == "BLOCK 2048" and card["kind"] == "diff" and card["file"] == "kernel.py"
    assert card["hunks"][0]["lines"][3:5] == ["-    BLOCK = 1024", "+    BLOCK = 2048"]
    assert card["trial"]["rungs"][0]["name"] == "prechecks" and card["submitted_diff"] == BLOCK_2048


async def test_front_end_attach_and_label(example_task, tmp_path):
    from kerneltui.core.events import Notice

    turns = [{"tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]}, {"text": "ok"}]
    session, rec, _ = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    seen: list = []
    try:
        session.attach(seen.append)  # what the UI does once, with its bridge's emit
        assert "scripted replay" in session.label
        await session.send("go")
        await session.decide("p1", "redirect", "try 4096 instead")  # the UI's positional (id, decision, feedback)
    finally:
        await session.close()
    assert not rec.events and any(isinstance(e, Notice) and "scripted replay" in e.message for e in seen)
    card = [e for e in seen if isinstance(e, ProposalEvent) and e.state == "redirected"][0].proposal
    assert card["decision_reason"] == "try 4096 instead"


async def test_a_decision_note_not_yet_sent_survives_a_resume(example_task, tmp_path):
    """Issue 20, defect 8: an accept's note waits for the next turn; the saved conversation must carry
    it, so that the resumed session's next request still tells the model what was decided."""
    task_dir = example_task("vector_add")
    turns = [{"text": "Proposing.", "tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]}, {"text": "Your call."}]
    session, _, _ = make_chat(task_dir, turns, tmp_path, trial_rungs="prechecks")
    try:
        await session.send("make it faster")
        await session.decide("p1", "accept", reason="looks right")
        saved = session.conversation_json()
    finally:
        await session.close()
    resumed, _, provider = make_chat(task_dir, [{"text": "Noted.", "expect": "looks right"}], tmp_path)
    try:
        resumed.restore_conversation(saved)
        turn = await resumed.send("what next?")
        assert turn.error is None, turn.error
        note = decision_json(last_sent(provider))
        assert note["decision"] == "accepted" and note["proposal"] == "p1" and note["reason"] == "looks right"
    finally:
        await resumed.close()


async def test_a_decided_proposals_text_leaves_the_conversation_for_its_hash_and_verdict(example_task, tmp_path):
    """Each later request would carry every decided proposal's whole file; it carries its version instead."""
    task_dir = example_task("vector_add")
    original = (task_dir / "kernel.py").read_text()
    rewritten = original.replace("BLOCK = 1024", "BLOCK = 4096") + "\n# a whole-file rewrite\n"
    turns = [{"text": "Rewriting.", "tool_calls": [propose("bigger block", source=rewritten)]},
             {"text": "Your call."},
             {"text": "Understood."}]
    session, _, provider = make_chat(task_dir, turns, tmp_path, trial_rungs="prechecks")
    try:
        await session.send("make it faster")
        await session.decide("p1", "reject", reason="not now")
    finally:
        await session.close()
    before, after = provider.requests[1], provider.requests[2]
    sent_then = [c.arguments for m in before.messages for c in m.tool_calls]
    sent_now = [c.arguments for m in after.messages for c in m.tool_calls]
    assert sent_then[0]["source"] == rewritten  # the open proposal: its text, as the model wrote it
    digest = session.book.get("p1").new_hash[:12]
    assert sent_now[0]["rationale"] == "bigger block" and "# a whole-file rewrite" not in sent_now[0]["source"]
    assert f"version {digest}, rejected" in sent_now[0]["source"] and "read_version" in sent_now[0]["source"]


async def test_an_edited_accept_is_recorded_as_the_agent_and_the_person(example_task, tmp_path):
    """The history row of an edited accept says who made the text written: the agent's proposal,
    edited by the person; a whole accept's row says the agent's."""
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    turns = [{"tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]}, {"text": "Your call."},
             {"tool_calls": [propose("BLOCK 4096", diff="@@ -19,1 +19,1 @@\n-    BLOCK = 512\n+    BLOCK = 4096\n")]},
             {"text": "Your call."}]
    session, _, _ = make_chat(task_dir, turns, tmp_path, trial_rungs="prechecks,compile,run,correctness")
    try:
        await session.send("make it faster")
        p1 = session.book.get("p1")
        edited = p1.new_source.replace("BLOCK = 2048", "BLOCK = 512")
        assert edited != p1.new_source
        await session.decide("p1", "edit", edited_source=edited)
        assert kernel.read_text() == edited
        await session.send("more")
        await session.decide("p2", "accept")
    finally:
        await session.close()
    rows = HistoryStore.for_task(session.task).entries()
    by_hash = {e.source_hash: e for e in rows}
    assert by_hash[source_hash(edited)].author == "agent p1, edited by you", [(e.origin, e.author) for e in rows]
    assert by_hash[source_hash(edited)].origin == "proposal"
    assert by_hash[source_hash(kernel.read_text())].author == "agent p2", [(e.origin, e.author) for e in rows]
