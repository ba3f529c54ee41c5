"""The record says what reached the disk: an edited accept is the agent's and the person's, checked
after it was written; a partial accept names the hunks taken and left, and the proposal's whole text
(the trial's) is never called kept. Export and ``replay --headless`` say the same."""

from __future__ import annotations

from pathlib import Path

from kerneltui.core import events as ev
from kerneltui.core.agent.written import marked_diff, written_of
from kerneltui.core.session import Timeline, load_session
from kerneltui.core.session.export import render_markdown
from kerneltui.core.task import source_hash
from tests.conftest import run_cli
from tests.integration.session_recording import record_session


def _last(events, pid: str) -> ev.ProposalEvent:
    return [e for e in events if isinstance(e, ev.ProposalEvent) and e.proposal_id == pid][-1]


def _version_line(out: str, text: str) -> str:
    digest = source_hash(text)[:10]
    return next(line for line in out.splitlines() if digest in line)


async def test_edited_and_partial_accepts_are_recorded_as_written(example_task, tmp_path: Path) -> None:
    recorded = await record_session(example_task("vector_add"), tmp_path / "sessions", tmp_path)
    texts = recorded.texts
    loaded = load_session(recorded.folder)

    # The edited accept: the diff written is the person's 4096, checked after writing, by agent and person.
    p2 = _last(loaded.events, "p2").proposal
    decision = p2["decision"]
    assert decision["applied_hash"] == source_hash(texts["edited"]) and p2["applied_source"] == texts["edited"]
    assert "+    BLOCK = 4096" in decision["written_diff"] and "8192" not in decision["written_diff"]
    assert decision["verified_after_apply"]["ok"] is True
    written = written_of(p2, "p2")
    assert written is not None and written.author == "agent p2, edited by you"
    # The session's runs are prechecks only: nothing failed, and it says correctness was not checked.
    assert written.verdict.startswith("checked after writing: no failure, correctness not checked")
    assert "BLOCK = 4096" in marked_diff(p2) and "8192" not in marked_diff(p2)

    # The partial accept: 1 of 2 hunks, the left-out one marked; its own text checked after writing.
    p3 = _last(loaded.events, "p3").proposal
    written = written_of(p3, "p3")
    assert written is not None and written.label == "accepted 1 of 2 hunks"
    assert (written.applied_hunks, written.rejected_hunks) == ([0], [1])
    assert p3["decision"]["verified_after_apply"]["ok"] is True
    shown = marked_diff(p3)
    assert "hunk 2 LEFT OUT" in shown and "(not taken)     BLOCK = 512" in shown and "+    BLOCK = 512" not in shown
    assert "hunk 1 accepted" in shown and "+    pid = tl.program_id(axis=0)" in shown

    # The timeline: the proposal's whole text (only its trial ran it) is not kept; the written texts are.
    timeline = Timeline(loaded)
    by_hash = {v.source_hash: v for v in timeline.versions}
    assert by_hash[source_hash(texts["p3"])].accepted is False
    assert by_hash[source_hash(texts["p2"])].accepted is False
    assert by_hash[source_hash(texts["partial"])].accepted and by_hash[source_hash(texts["partial"])].ok
    assert by_hash[source_hash(texts["edited"])].accepted

    # The export names who made each version and keeps only what reached the disk.
    md = render_markdown(loaded)
    edited_row = _version_line(md, texts["edited"])
    assert "agent p2, edited by you" in edited_row and "| PASS | yes |" in edited_row
    assert "agent p3, 1 of 2 hunks" in _version_line(md, texts["partial"])
    assert "| yes |" not in _version_line(md, texts["p3"])
    assert "agent p1 (accepted)" in _version_line(md, texts["p1"])
    p3_row = next(line for line in md.splitlines() if line.startswith("| p3 |"))
    assert "accepted 1 of 2 hunks (hunks 1 of 2)" in p3_row and "checked after writing: no failure" in p3_row
    assert "of the proposal's text, not the one written" in p3_row
    p2_row = next(line for line in md.splitlines() if line.startswith("| p2 |"))
    assert "accepted with your edits" in p2_row

    # replay --headless: the same versions, their authors, and no "accepted" on the trial-only text.
    done = run_cli("replay", "--headless", str(recorded.folder), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "agent p2, edited by you" in _version_line(done.stdout, texts["edited"])
    assert "accepted" in _version_line(done.stdout, texts["partial"])
    assert "agent p3, 1 of 2 hunks" in _version_line(done.stdout, texts["partial"])
    assert "accepted" not in _version_line(done.stdout, texts["p3"])
