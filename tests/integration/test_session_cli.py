"""The session commands end to end: check records a session; sessions, replay --headless, export;
bad names and broken logs give messages a person can act on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from kerneltui.core.session import Timeline, load_session
from kerneltui.core.session.export import export_session, render_markdown, text_chart
from tests.conftest import ROOT, run_cli


def _sessions() -> Path:
    return Path(os.environ["KERNELTUI_SESSIONS_DIR"])


def test_check_records_a_session_that_replays_and_exports(example_task, tmp_path: Path) -> None:
    task = example_task("vector_add")
    out = run_cli("check", str(task), "--rungs", "prechecks")
    assert out.returncode == 0, out.stderr
    (folder,) = list(_sessions().iterdir())
    loaded = load_session(folder)
    assert loaded.header["origin"] == "check" and loaded.lost_bytes == 0
    timeline = Timeline(loaded)
    assert len(timeline.versions) == 1 and timeline.versions[0].accepted
    assert loaded.source(timeline.versions[0].source_hash) == (task / "kernel.py").read_text()

    listed = run_cli("sessions", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["name"] == folder.name
    shown = run_cli("replay", "latest", "--headless")
    assert shown.returncode == 0 and "1 versions" in shown.stdout and "PASS" in shown.stdout
    exported = run_cli("export", folder.name, "--out", str(tmp_path / "report"))
    assert exported.returncode == 0, exported.stderr
    md = (tmp_path / "report" / f"{folder.name}.md").read_text()
    assert "# Session" in md and "| v1 |" in md and "## Final kernel" in md and "def custom_kernel" in md

    skipped = run_cli("check", str(task), "--rungs", "prechecks", "--no-session")
    assert skipped.returncode == 0 and len(list(_sessions().iterdir())) == 1


def test_bad_session_names_and_logs_say_what_to_do(tmp_path: Path) -> None:
    missing = run_cli("replay", "no-such-session")
    assert missing.returncode == 2 and "kerneltui sessions" in missing.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "log.jsonl").write_text('{"r": "session", "schema": 7}\n')
    newer = run_cli("export", str(broken))
    assert newer.returncode == 2 and "newer kerneltui" in newer.stderr
    resume = run_cli("--resume", "no-such-session")
    assert resume.returncode == 2 and "no session" in resume.stderr


def test_example_session_ships_small_and_whole() -> None:
    folder = ROOT / "sessions" / "vector_add_demo"
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size < 300_000
    loaded = load_session(folder)
    assert loaded.lost_bytes == 0 and not loaded.problems and loaded.contexts
    timeline = Timeline(loaded)
    assert [v.accepted for v in timeline.versions] == [True, True]
    assert "BLOCK = 4096" in (timeline.kernel_text_at(len(timeline)) or "")
    text = (folder / "log.jsonl").read_text()
    assert "API_KEY" not in text and "sk-" not in text


def _timed_session(tmp_path: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from bench.session_replay import write_session

    folder, _ = write_session(tmp_path, 6)
    return folder


def test_export_chart_as_text_and_png(tmp_path: Path) -> None:
    loaded = load_session(_timed_session(tmp_path))
    timeline = Timeline(loaded)
    chart = text_chart(timeline.versions)
    assert len(chart.splitlines()) == 6 and "µs" in chart and "█" in chart
    md = render_markdown(loaded)
    assert "scripted · scripted: 6000 input tokens, 600 output tokens" in md
    pytest.importorskip("matplotlib")
    result = export_session(loaded, tmp_path / "out")
    assert result.png is not None and result.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"![median per version]({result.png.name})" in result.markdown.read_text()


def test_export_without_matplotlib_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_session(_timed_session(tmp_path))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    result = export_session(loaded, tmp_path / "out")
    assert result.png is None and "matplotlib is not installed" in result.png_note
    assert "matplotlib is not installed" in result.markdown.read_text()


@pytest.mark.slow
def test_ask_records_the_conversation_and_its_context(example_task) -> None:
    task = example_task("vector_add")
    script = ROOT / "kerneltui" / "data" / "agent" / "vector_add_demo.toml"
    out = run_cli("ask", str(task), "make it faster", "--provider", "scripted", "--script", str(script),
                  env={"OPENAI_API_KEY": "sk-never-written-0123456789"})
    assert out.returncode == 0, out.stderr
    (folder,) = list(_sessions().iterdir())
    loaded = load_session(folder)
    kinds = {type(e).__name__ for e in loaded.events}
    assert {"UserMessage", "AgentMessage", "ToolCallStarted", "ToolCallFinished", "ProposalEvent", "TokenUsage",
            "RunStarted", "RunFinished"} <= kinds
    assert loaded.header["origin"] == "ask" and loaded.contexts
    proposed = next(e for e in loaded.events if type(e).__name__ == "ProposalEvent")
    assert loaded.source(proposed.proposal["new_hash"]) == proposed.proposal["new_source"]
    assert "sk-never-written" not in (folder / "log.jsonl").read_text()


def test_export_carries_the_chat_proposals_and_decisions_with_their_author(example_task, tmp_path: Path) -> None:
    """Issue 20, defect 8: the report had versions only, and an accepted agent edit showed as `save`
    (the watcher's run of the file the accept wrote)."""
    from kerneltui.core import events as ev
    from kerneltui.core.rungs.result import ok
    from kerneltui.core.session import SessionLog
    from kerneltui.core.task_loaders.load import load_task

    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "tui", name="reviewed")
    original = task.kernel_source()
    edited = original.replace("BLOCK = 1024", "BLOCK = 2048")
    results = [ok(n, "fine") for n in ("prechecks", "compile", "run", "correctness")]
    first, second = log.store_source(original, "checked"), log.store_source(edited, "checked")
    log.write(ev.RunStarted(run_id="r1", task=task.name, kernel_file="kernel.py", source_hash=first,
                            rungs=[r.name for r in results], origin="start"))
    log.write(ev.RunFinished(run_id="r1", ok=True, results=results, duration_s=1.0))
    log.write(ev.UserMessage(text="make it faster"))
    log.write(ev.AgentMessage(turn_id="t1", text="A bigger block halves the programs.", provider="openai", model="m"))
    trial = {"ok": True, "correct": True, "headline": "correct · no benchmark"}
    proposal = {"id": "p1", "rationale": "BLOCK 2048", "added": 1, "removed": 1, "new_hash": second, "trial": trial}
    log.write(ev.ProposalEvent(proposal_id="p1", state="trial_done", proposal=proposal))
    log.write(ev.ProposalEvent(proposal_id="p2", state="rejected", proposal={
        "id": "p2", "rationale": "x * y", "added": 1, "removed": 1, "trial": {"ok": False, "headline": "not correct"},
        "decision": {"decision": "rejected", "by": "person", "reason": "wrong operator"},
        "decision_reason": "wrong operator"}))
    log.write(ev.ProposalEvent(proposal_id="p1", state="accepted", proposal={
        **proposal, "decision": {"decision": "accepted", "by": "person", "applied_hash": second}}))
    log.write(ev.AgentMessage(turn_id="t2", text="half a reply [interrupted]", provider="openai", model="m"))
    log.write(ev.RunStarted(run_id="r2", task=task.name, kernel_file="kernel.py", source_hash=second,
                            rungs=[r.name for r in results], origin="save"))
    log.write(ev.RunFinished(run_id="r2", ok=True, results=results, duration_s=1.0))
    log.close()
    md = render_markdown(load_session(log.folder))
    (v2,) = [line for line in md.splitlines() if line.startswith("| v2 |")]
    assert "| agent p1 (accepted) |" in v2 and "save" not in v2
    assert "## Proposals" in md and "| p2 | x * y" in md and "FAIL: not correct | rejected | person | wrong operator |" in md
    assert "| p1 | BLOCK 2048" in md and "| accepted |" in md
    assert "## Conversation" in md and "**you:** make it faster" in md
    assert "**agent:** half a reply [interrupted]" in md


def test_the_run_on_screen_after_a_jump_is_the_files_not_a_trials(example_task, tmp_path: Path) -> None:
    from kerneltui.core import events as ev
    from kerneltui.core.rungs.result import fail, ok
    from kerneltui.core.session import SessionLog
    from kerneltui.core.task_loaders.load import load_task

    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "tui", name="trial-last")
    digest = log.store_source(task.kernel_source(), "checked")
    log.write(ev.RunStarted(run_id="file", task=task.name, kernel_file="kernel.py", source_hash=digest,
                            rungs=["correctness"], origin="save"))
    log.write(ev.RunFinished(run_id="file", ok=True, results=[ok("correctness", "fine")], duration_s=1.0))
    log.write(ev.RunStarted(run_id="trial", task=task.name, kernel_file="kernel.py", source_hash="other",
                            rungs=["correctness"], origin="proposal"))
    log.write(ev.RunFinished(run_id="trial", ok=False, results=[fail("correctness", "wrong")], duration_s=1.0))
    log.close()
    timeline = Timeline(load_session(log.folder))
    plan = timeline.plan(len(timeline))
    assert isinstance(plan[0], ev.RunStarted) and plan[0].run_id == "file"
