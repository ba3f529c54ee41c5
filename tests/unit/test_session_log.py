"""The session log: records written and read back, a crash's partial line, no secrets, the timeline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerneltui.core import events as ev
from kerneltui.core.rungs.result import ok
from kerneltui.core.session import SCHEMA_VERSION, SessionError, SessionLog, Timeline, load_session
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task


def _run(log: SessionLog, run_id: str, digest: str, passed: bool = True, origin: str = "save") -> None:
    log.write(ev.RunStarted(run_id=run_id, task="vector_add", kernel_file="kernel.py", source_hash=digest,
                            rungs=["prechecks"], origin=origin))
    result = ok("prechecks", "fine") if passed else ok("prechecks", "fine")
    log.write(ev.RungFinished(run_id=run_id, result=result))
    log.write(ev.RunFinished(run_id=run_id, ok=passed, results=[result], duration_s=0.1))


def test_records_round_trip_with_sources_and_task_copy(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path / "sessions", task, "test")
    start = task.kernel_source()
    log.write(ev.UserMessage(text="make it faster"))
    new = start.replace("BLOCK = 1024", "BLOCK = 2048")
    log.write(ev.ProposalEvent(proposal_id="p1", state="pending", proposal={"new_source": new, "new_hash": source_hash(new)}))
    _run(log, "r1", source_hash(start))
    log.write_context('[{"role": "user", "content": "make it faster"}]')
    log.close()
    loaded = load_session(log.folder)
    assert loaded.header["schema"] == SCHEMA_VERSION and loaded.header["task"]["name"] == "vector_add"
    assert [type(e).__name__ for e in loaded.events] == ["UserMessage", "ProposalEvent", "RunStarted", "RungFinished",
                                                        "RunFinished"]
    assert loaded.source(source_hash(start)) == start and loaded.source(source_hash(new)) == new
    assert loaded.start_hash == source_hash(start)
    assert (loaded.task_dir / "reference.py").is_file() and (loaded.task_dir / "task.toml").is_file()
    assert loaded.contexts and loaded.lost_bytes == 0 and not loaded.problems


def test_every_record_is_flushed_as_written(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    log.write(ev.Notice(level="info", message="first"))
    # Read by another handle while the writer is still open: the line is already there.
    lines = (log.folder / "log.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["event"]["message"] == "first"
    log.close()


def test_partial_last_line_is_dropped_and_reported(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    for i in range(5):
        log.write(ev.Notice(level="info", message=f"n{i}"))
    log.close()
    path = log.folder / "log.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"r":"event","seq":5,"event":{"type":"Notice","lev')
    loaded = load_session(log.folder)
    assert len(loaded.events) == 5 and loaded.lost_bytes == len(b'{"r":"event","seq":5,"event":{"type":"Notice","lev')
    assert "partial line" in loaded.lost_note() and "5 events" in loaded.lost_note()
    # Resuming cuts the partial line off before appending.
    again = SessionLog.reopen(log.folder, task, "test")
    again.write(ev.Notice(level="info", message="after"))
    again.close()
    reloaded = load_session(log.folder)
    assert reloaded.lost_bytes == 0 and [e.message for e in reloaded.events][-2:] == ["n4", "after"]
    assert len(reloaded.resumed) == 1


def test_damaged_middle_line_is_skipped_with_its_number(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    log.write(ev.Notice(level="info", message="a"))
    log.close()
    path = log.folder / "log.jsonl"
    path.write_text(path.read_text() + "not json\n" + path.read_text().splitlines()[-1] + "\n")
    loaded = load_session(log.folder)
    assert len(loaded.events) == 2 and loaded.problems and ":4:" in loaded.problems[0]


def test_bad_logs_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="no such session"):
        load_session(tmp_path / "missing")
    (tmp_path / "log.jsonl").write_text('{"r": "session", "schema": 99}\n')
    with pytest.raises(SessionError, match="newer kerneltui"):
        load_session(tmp_path)
    (tmp_path / "log.jsonl").write_text('{"type": "Notice"}\n')
    with pytest.raises(SessionError, match="no session header"):
        load_session(tmp_path)


def test_no_api_key_reaches_the_log(example_task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    log.write(ev.AgentError(turn_id="t", kind="auth", message=f"401: bad key {key}"))
    log.close()
    text = (log.folder / "log.jsonl").read_text()
    assert key not in text and "[redacted]" in text


_WRITER = """
import sys, time
from kerneltui.core import events as ev
from kerneltui.core.session import SessionLog
from kerneltui.core.task_loaders.load import load_task
log = SessionLog.create(sys.argv[1], load_task(sys.argv[2]), "test", name="killed")
i = 0
while True:
    log.write(ev.AgentTextDelta(turn_id="t", text="x" * 2000 + str(i)))
    i += 1
"""


def test_kill_9_mid_write_loses_at_most_the_partial_line(example_task, tmp_path: Path) -> None:
    task_dir = example_task("vector_add")
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(task_dir)])
    log = tmp_path / "killed" / "log.jsonl"
    deadline = time.monotonic() + 60
    while not (log.exists() and log.stat().st_size > 400_000):
        assert time.monotonic() < deadline and proc.poll() is None, "the writer did not start"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    data = log.read_bytes()
    complete = data.count(b"\n")
    loaded = load_session(log.parent)
    assert not loaded.problems
    # Every complete line is loaded: the header, the start snapshot's record, the events.
    assert len(loaded.events) == complete - 2
    assert loaded.lost_bytes == len(data) - (data.rfind(b"\n") + 1)
    texts = [e.text for e in loaded.events]
    assert [int(t[2000:]) for t in texts] == list(range(len(texts)))
    timeline = Timeline(loaded)
    assert len(timeline.plan(len(timeline))) == len(texts)  # the reply never completed: its pieces are the chat


def test_timeline_versions_kernel_and_plan(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    start = task.kernel_source()
    v2 = start.replace("BLOCK = 1024", "BLOCK = 512")
    log.write(ev.UserMessage(text="hi"))
    log.write(ev.AgentTextDelta(turn_id="t1", text="he"))
    log.write(ev.AgentMessage(turn_id="t1", text="hello"))
    _run(log, "r1", source_hash(start))
    log.store_source(v2, "saved")
    log.write(ev.FileChanged(path=str(task.kernel_path), source_hash=source_hash(v2)))
    _run(log, "r2", source_hash(v2))
    _run(log, "r3", source_hash(v2), origin="proposal")
    log.close()
    tl = Timeline(load_session(log.folder))
    assert [v.source_hash for v in tl.versions] == [source_hash(start), source_hash(v2)]
    assert all(v.accepted for v in tl.versions) and tl.versions[1].origin == "save"
    assert tl.kernel_hash_at(0) == source_hash(start) and tl.kernel_text_at(len(tl)) == v2
    assert tl.version_at(6).number == 1 and tl.versions_until(5) == []
    plan = tl.plan(len(tl))
    # The chat (the delta dropped for its complete reply) and only the file's last run: r3 is a
    # proposal's trial on a scratch copy, which its card shows, never the panes that describe the file.
    assert [type(e).__name__ for e in plan] == ["UserMessage", "AgentMessage", "RunStarted", "RungFinished", "RunFinished"]
    assert {e.run_id for e in plan[2:]} == {"r2"}
    assert tl.plan(2) == tl.events[:2]  # mid-reply: the pieces so far


def test_an_event_that_cannot_be_written_is_counted_and_said(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path, task, "test")
    log.write(ev.Notice(level="info", message="kept"))
    looped: dict = {}
    looped["self"] = looped  # no JSON can hold it
    log.write(ev.ProposalEvent(proposal_id="p", state="pending", proposal=looped))
    log.close()
    assert log.lost_events == 1 and "1 events not recorded" in log.problem() and "Recursion" in log.problem()
    assert [e.message for e in load_session(log.folder).events] == ["kept"]
