"""The app in a real pseudo-terminal: quitting names the session and how to resume it; a launch in
which nothing happened leaves no session behind. The list shows each session's verdict, versions
and proposals."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerneltui.core import events as ev
from kerneltui.core.session import SessionLog, list_sessions
from kerneltui.core.session.store import describe_session as describe
from kerneltui.core.task_loaders.load import load_task
from tests.ui import fixed_data

CTRL_Q = "\x11"
CTRL_R = "\x12"


def _app_in_a_terminal(task: Path, sessions: Path, keys: list[tuple[str, str]]) -> str:
    """Run ``kerneltui TASK`` in a pty 120x40; for each (text, key) wait until ``text`` is on screen,
    then type ``key``; return all it wrote."""
    import fcntl
    import re
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", KERNELTUI_SESSIONS_DIR=str(sessions),
               KERNELTUI_UI_RUN_ON_START="false", KERNELTUI_UI_WATCH="false")
    proc = subprocess.Popen([sys.executable, "-m", "kerneltui", str(task)], stdin=slave, stdout=slave, stderr=slave,
                            env=env, start_new_session=True)
    os.close(slave)
    out = bytearray()

    def read_until(text: str, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            shown = re.sub(r"\x1b\[[0-9;?<>]*[a-zA-Z]", "", out.decode("utf-8", "replace"))
            if text and text in shown:
                return
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                out.extend(chunk)
        assert not text, f"{text!r} never appeared on the screen"

    try:
        for text, key in keys:
            read_until(text, 120)  # two test processes share two cores in CI: a cold start can take long
            time.sleep(0.3)  # the frame that shows it is drawn before the app reads the next key
            os.write(master, key.encode())
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            read_until("", 0.2)
        read_until("", 0.3)
        assert proc.poll() is not None, "the app did not quit"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return out.decode("utf-8", "replace")


@pytest.mark.slow
def test_quitting_names_the_session_and_an_idle_launch_keeps_none(example_task, tmp_path: Path) -> None:
    task = example_task("vector_add")
    sessions = tmp_path / "sessions"
    idle = _app_in_a_terminal(task, sessions, [("kernel.py", CTRL_Q)])
    assert "saved in" not in idle
    assert not sessions.exists() or not any(sessions.iterdir()), "a launch in which nothing happened kept a session"

    # A run asked for by hand (ctrl+r) is something that happened; quit once its verdict is on screen.
    ran = _app_in_a_terminal(task, sessions, [("kernel.py", CTRL_R), ("PASS", CTRL_Q)])
    (folder,) = list(sessions.iterdir())
    tail = ran[ran.rfind("kerneltui: session"):]
    assert f"kerneltui: session {folder.name} saved in {sessions}" in tail
    assert f"kerneltui --resume {folder.name}" in tail and f"kerneltui replay {folder.name}" in tail


def test_the_list_shows_each_sessions_verdict_versions_and_proposals(example_task, tmp_path: Path) -> None:
    from kerneltui.config import load_config

    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path / "sessions", task, "tui", name="listed")
    for event in fixed_data.finished_run() + fixed_data.agent_turn():
        log.write(event)
    log.close()
    (info,) = list_sessions(load_config(env={"KERNELTUI_SESSIONS_DIR": str(tmp_path / "sessions")}))
    assert info.summary is not None
    assert (info.summary.verdict, info.summary.versions, info.summary.proposals) == ("PASS", 1, 1)
    line = describe(info)
    assert "PASS" in line and "1 version " in line and "1 proposal" in line and line.endswith("listed")


def test_a_session_of_only_the_launch_run_is_not_eventful(example_task, tmp_path: Path) -> None:
    task = load_task(str(example_task("vector_add")))
    log = SessionLog.create(tmp_path / "sessions", task, "tui", name="idle")
    for event in fixed_data.finished_run():
        log.write(ev.RunStarted(**{**event.__dict__, "origin": "start"}) if isinstance(event, ev.RunStarted) else event)
    assert not log.eventful
    log.write(ev.UserMessage(text="hi"))
    assert log.eventful
    log.close()
