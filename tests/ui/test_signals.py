"""SIGHUP and SIGTERM to the real app in a pseudo-terminal: the unsaved text is kept where a resume finds
it, the session log is closed whole, the terminal is restored, and the exit status is the signal's."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from kerneltui.core import events as ev
from kerneltui.core.session import load_session
from tests.conftest import EXAMPLES, copy_tree

pytestmark = pytest.mark.slow

LEAVE_ALT_SCREEN = b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"


class AppInTerminal:
    """``python -m kerneltui TASK`` on the slave side of a pty of 120x40; everything it draws is kept."""

    def __init__(self, task: Path, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-m", "kerneltui", str(task)], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output.extend(chunk)

    def wait_for(self, text: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} on the screen (exit {self.proc.poll()}); "
                                     f"tail: {bytes(self.output[-2000:])!r}")
            time.sleep(0.1)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
        os.close(self.master)


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_signal_keeps_unsaved_text_and_restores_the_terminal(sig: int, tmp_path: Path) -> None:
    task = copy_tree(EXAMPLES / "vector_add", tmp_path / "vector_add")
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[ui]\nrun_on_start = false\nwatch = false\n")
    env = {**os.environ, "KERNELTUI_CONFIG_DIR": str(config), "KERNELTUI_DATA_DIR": str(tmp_path / "data"),
           "KERNELTUI_CACHE_DIR": str(tmp_path / "cache"), "KERNELTUI_ENGINE_ENABLED": "0", "TERM": "xterm-256color"}
    app = AppInTerminal(task, env)
    try:
        app.wait_for(b"kernel.py", 60)
        time.sleep(2.0)  # the first frame is up; the editor has the focus
        app.type("# typed, never saved")
        app.wait_for(b"never saved", 20)
        time.sleep(0.5)
        app.proc.send_signal(sig)
        code = app.proc.wait(30)
    finally:
        app.close()
    assert code == -sig  # died of the signal after cleaning up: a shell shows 128 + its number
    tail = bytes(app.output[-4000:])
    assert LEAVE_ALT_SCREEN in tail and MOUSE_OFF in tail, tail
    assert b"Traceback" not in app.output
    kept = list((task / ".kerneltui" / "unsaved").iterdir())
    assert len(kept) == 1 and kept[0].read_text().startswith("# typed, never saved")
    assert (task / "kernel.py").read_text() == (EXAMPLES / "vector_add" / "kernel.py").read_text()
    # The session log is whole (no cut line) and its last word is where the edits are: what --resume reads.
    sessions = [p.parent for p in (tmp_path / "sessions").rglob("*.jsonl")]
    assert len(sessions) == 1, sessions
    loaded = load_session(sessions[0])
    assert loaded.lost_bytes == 0
    last = loaded.events[len(loaded.events) - 1]
    assert isinstance(last, ev.EditsKept) and last.path == str(kept[0]) and last.reason == signal.Signals(sig).name


async def test_resume_puts_the_kept_edits_back_unsaved(tmp_path: Path, settings) -> None:
    from kerneltui.core.session.store import open_log_for
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.ui.launch import create_app
    from kerneltui.ui.options import AppOptions
    from tests.ui import fixed_data
    from tests.ui.conftest import wait_for

    root = copy_tree(EXAMPLES / "vector_add", tmp_path / "vector_add")
    task = load_task(str(root))
    kept = root / ".kerneltui" / "unsaved" / "kernel.py.20261207-120000"
    kept.parent.mkdir(parents=True)
    kept.write_text("# typed, never saved\n" + (root / "kernel.py").read_text())
    log = open_log_for(task, "tui", settings)
    log.write(ev.EditsKept(file="kernel.py", path=str(kept), reason="SIGHUP"))
    log.close()
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False,
                         resume=log.path.parent)
    app = create_app(root, settings=settings, options=options, parts=fixed_data.parts())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.editor.text.startswith("# typed, never saved"), 30, "the kept edits")
        assert app.editor.dirty
        assert (root / "kernel.py").read_text() == (EXAMPLES / "vector_add" / "kernel.py").read_text()
