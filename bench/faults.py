"""Faults a person's machine throws at kerneltui, and what each one costs: lost edits, tracebacks, stray
processes. Every count should be 0.

Method
  * Each scenario runs the real command line (``python -m kerneltui``) from this checkout on a scratch
    copy of the vector_add example, on the CPU, with a config of its own (no run on start, no engine:
    the stray count is then about the command's own workers) and its own data and session folders.
  * The app runs in a pseudo-terminal of 120x40; keys are typed into it as a person types them.
  * Lost edits: text typed into the editor that is neither in kernel.py nor in a kept copy
    (``.kerneltui/unsaved/`` or the data folder's ``unsaved/``) afterwards, or a kernel.py that is
    neither the old nor the new text (a truncated save). A kill -9 of a command that holds no edits
    can lose none; the kernel file must stay whole.
  * Tracebacks: "Traceback" in anything the command printed (terminal, stdout, stderr).
  * Strays: processes still alive 15 s after the scenario whose environment carries the scenario's tag
    (``KERNELTUI_FAULT_TAG``: the command and every worker it starts inherit it); any alive at 5 s
    is named on stderr (slow to end, or left behind).
  * A full disk is a 64 KiB tmpfs (needs root: mount); without root that scenario uses a file-size
    limit (RLIMIT_FSIZE) on the app instead, which fails the write with EFBIG the same way.

Run:  python bench/faults.py [--only NAME]
Prints one table (scenario, lost edits, tracebacks, strays, what was seen).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "kerneltui" / "examples" / "vector_add"
TYPED = "# typed by hand, never saved"


@dataclass
class Outcome:
    lost_edits: int = 0
    tracebacks: int = 0
    strays: int = 0
    seen: str = ""


class Scratch:
    """A scenario's folders, environment and tag; ``tagged()`` lists its live processes."""

    def __init__(self, name: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"ktfault-{name}-"))
        self.tag = uuid.uuid4().hex
        config = self.dir / "config"
        config.mkdir()
        (config / "config.toml").write_text("[ui]\nrun_on_start = false\nwatch = true\n[engine]\nenabled = false\n")
        self.env = {**os.environ, "KERNELTUI_CONFIG_DIR": str(config), "KERNELTUI_DATA_DIR": str(self.dir / "data"),
                    "KERNELTUI_CACHE_DIR": str(self.dir / "cache"), "KERNELTUI_SESSIONS_DIR": str(self.dir / "sessions"),
                    "KERNELTUI_FAULT_TAG": self.tag, "TERM": "xterm-256color",
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.env.pop("KERNELTUI_CONFIG", None)

    def task(self, where: Path | None = None) -> Path:
        return Path(shutil.copytree(EXAMPLE, (where or self.dir) / "vector_add"))

    def tagged(self) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if f"KERNELTUI_FAULT_TAG={self.tag}".encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
        return found

    def strays(self, grace_s: float = 15.0) -> int:
        """Tagged processes alive ``grace_s`` after the scenario (a worker ends within a second or two of
        its parent's death: its lifeline closes); those still alive at 5 s are named on stderr."""
        started = time.monotonic()
        while self.tagged() and time.monotonic() < started + 5:
            time.sleep(0.2)
        slow = self.tagged()
        while self.tagged() and time.monotonic() < started + grace_s:
            time.sleep(0.2)
        left = self.tagged()
        for pid in slow:
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = "(gone)"
            state = "still alive" if pid in left else "ended"
            print(f"  alive at 5 s, {state} at {grace_s:.0f} s: {pid} {cmd[:160]}", file=sys.stderr)
        for pid in left:  # counted, then ended so that the next scenario starts clean
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return len(left)

    def kept_copies(self, task: Path) -> list[Path]:
        places = [task / ".kerneltui" / "unsaved", self.dir / "data" / "unsaved"]
        return [p for place in places if place.is_dir() for p in place.rglob("*") if p.is_file()]

    def run(self, *args: str, stdout: int | None = subprocess.PIPE, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kerneltui", *args], env=self.env, text=True,
                              stdout=stdout, stderr=subprocess.PIPE, timeout=timeout, cwd=self.dir)


class AppInTerminal:
    """``python -m kerneltui TASK`` on a pseudo-terminal; everything it draws is kept."""

    def __init__(self, scratch: Scratch, task: Path, preexec: Callable[[], None] | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-m", "kerneltui", str(task)], stdin=slave, stdout=slave,
                                     stderr=slave, env=scratch.env, start_new_session=True, preexec_fn=preexec)
        os.close(slave)
        self.output = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output.extend(chunk)

    def wait_for(self, text: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def end(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)
        finally:
            time.sleep(0.3)
            os.close(self.master)


def _typed_into(app: AppInTerminal) -> bool:
    if not app.wait_for(b"kernel.py", 90):
        return False
    time.sleep(2.0)
    app.type(TYPED)
    return app.wait_for(b"never saved", 20)


def _edits_kept(scratch: Scratch, task: Path) -> bool:
    if TYPED in (task / "kernel.py").read_text(errors="replace"):
        return True
    return any(TYPED in p.read_text(errors="replace") for p in scratch.kept_copies(task))


def _kernel_whole(task: Path, new_text: str | None = None) -> bool:
    text = (task / "kernel.py").read_bytes()
    return text == (EXAMPLE / "kernel.py").read_bytes() or (new_text is not None and text == new_text.encode())


# -- scenarios -------------------------------------------------------------------------------------


def signal_to_app(sig: int, terminal_gone: bool = False) -> Callable[[Scratch], Outcome]:
    def scenario(scratch: Scratch) -> Outcome:
        task = scratch.task()
        app = AppInTerminal(scratch, task)
        typed = _typed_into(app)
        time.sleep(0.5)
        if terminal_gone:  # as when an SSH link drops: nothing reads the terminal any more
            os.close(app.master)
            app.master = os.open(os.devnull, os.O_RDONLY)  # for end() to close
        code = app.end(sig)
        restored = "n/a" if terminal_gone else b"\x1b[?1049l" in app.output[-4000:]
        return Outcome(lost_edits=0 if typed and _edits_kept(scratch, task) else 1,
                       tracebacks=app.output.count(b"Traceback"), strays=scratch.strays(),
                       seen=f"exit {code}, terminal restored: {restored}")
    return scenario


def save_on_full_disk(scratch: Scratch) -> Outcome:
    disk = scratch.dir / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True)
    preexec: Callable[[], None] | None = None
    try:
        task = scratch.task(disk if mounted.returncode == 0 else None)
        if mounted.returncode == 0:
            with open(disk / "filler", "wb", buffering=0) as handle:
                while True:
                    try:
                        handle.write(b"\0" * 1024)
                    except OSError:
                        break
            how = "64 KiB tmpfs, full"
        else:
            def preexec() -> None:  # no root: the app may write no file over 640 bytes (EFBIG)
                import resource

                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (640, 640))
            how = "RLIMIT_FSIZE 640 bytes"
        app = AppInTerminal(scratch, task, preexec)
        typed = _typed_into(app)
        app.type("\n" + "# more than 640 bytes in all\n" * 3)  # typed keys are slow: a few lines
        time.sleep(1.0)
        app.type("\x13")  # ctrl+s
        said = app.wait_for(b"could not save", 15)
        alive = app.proc.poll() is None
        code = app.end(signal.SIGTERM)
        if os.environ.get("KERNELTUI_FAULTS_DEBUG"):
            Path(os.environ["KERNELTUI_FAULTS_DEBUG"]).write_bytes(bytes(app.output))
        lost = 0 if typed and _kernel_whole(task) and _edits_kept(scratch, task) and alive else 1
        return Outcome(lost_edits=lost, tracebacks=app.output.count(b"Traceback"), strays=scratch.strays(),
                       seen=f"{how}; said why: {said}; running after the save: {alive}; exit {code}")
    finally:
        if mounted.returncode == 0:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def save_read_only_kernel(scratch: Scratch) -> Outcome:
    task = scratch.task()
    kernel = task / "kernel.py"
    immutable = subprocess.run(["chattr", "+i", str(kernel)], capture_output=True).returncode == 0
    if not immutable:
        kernel.chmod(0o444)
    try:
        app = AppInTerminal(scratch, task)
        typed = _typed_into(app)
        app.type("\x13")
        said = app.wait_for(b"could not save", 15)
        alive = app.proc.poll() is None
        code = app.end(signal.SIGTERM)
    finally:
        subprocess.run(["chattr", "-i", str(kernel)], capture_output=True)
    lost = 0 if typed and _kernel_whole(task) and _edits_kept(scratch, task) and alive else 1
    return Outcome(lost_edits=lost, tracebacks=app.output.count(b"Traceback"), strays=scratch.strays(),
                   seen=f"{'chattr +i' if immutable else 'chmod 444'}; said why: {said}; running: {alive}; exit {code}")


def kill9_during_a_run(command: str) -> Callable[[Scratch], Outcome]:
    def scenario(scratch: Scratch) -> Outcome:
        task = scratch.task()
        out = scratch.dir / "out.txt"
        args = [command, str(task), "--no-engine", "--rungs", "correctness"]
        if command == "check":
            args.append("--no-history")
        with open(out, "wb") as sink:
            proc = subprocess.Popen([sys.executable, "-m", "kerneltui", *args], env=scratch.env, stdout=sink,
                                    stderr=subprocess.STDOUT, cwd=scratch.dir)
        deadline = time.monotonic() + 120
        while b"[compile]" not in out.read_bytes() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # killed mid-run: after the compile rung, during correctness
        proc.kill()
        proc.wait(10)
        text = out.read_bytes()
        return Outcome(lost_edits=0 if _kernel_whole(task) else 1, tracebacks=text.count(b"Traceback"),
                       strays=scratch.strays(), seen=f"killed after {b'[compile]' in text and 'compile' or 'start'}")
    return scenario


def corrupt_file(which: str) -> Callable[[Scratch], Outcome]:
    def scenario(scratch: Scratch) -> Outcome:
        task = scratch.task()
        if which == "kernel.py":
            with open(task / "kernel.py", "ab") as handle:
                handle.write(b"# caf\xe9\n")
            done = scratch.run("check", str(task), "--no-engine", "--no-history", "--rungs", "compile")
        elif which == "task.toml":
            (task / "task.toml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
            done = scratch.run("check", str(task), "--no-engine", "--no-history", "--rungs", "compile")
        else:
            (Path(scratch.env["KERNELTUI_CONFIG_DIR"]) / "config.toml").write_bytes(bytes(range(128, 256)))
            done = scratch.run("config")
        text = (done.stdout or "") + done.stderr
        first = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        return Outcome(tracebacks=text.count("Traceback"), strays=scratch.strays(),
                       seen=f"exit {done.returncode}: {first[:90]}")
    return scenario


def watch_survives_a_bad_byte(scratch: Scratch) -> Outcome:
    task = scratch.task()
    out = scratch.dir / "watch.txt"
    with open(out, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "watch", str(task), "--no-engine", "--rungs",
                                 "prechecks", "--no-session"], env=scratch.env, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while b"PASS" not in out.read_bytes() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    with open(task / "kernel.py", "ab") as handle:
        handle.write(b"# caf\xe9\n")
    deadline = time.monotonic() + 20
    while b"not UTF-8" not in out.read_bytes() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = proc.poll() is None
    proc.send_signal(signal.SIGINT)
    code = proc.wait(30)
    text = out.read_bytes()
    return Outcome(tracebacks=text.count(b"Traceback"), strays=scratch.strays(),
                   seen=f"said so: {b'not UTF-8' in text}; still watching: {alive}; exit {code}")


def damaged_session_line(scratch: Scratch) -> Outcome:
    task = scratch.task()
    scratch.run("check", str(task), "--no-engine", "--no-history", "--rungs", "prechecks")
    logs = list((scratch.dir / "sessions").rglob("log.jsonl"))
    if not logs:
        return Outcome(seen="no session was recorded")
    lines = logs[0].read_bytes().split(b"\n")
    lines[2] = b'{"r": "event", "event": {"type": "Notice", "message": "caf\xe9'
    logs[0].write_bytes(b"\n".join(lines))
    listed = scratch.run("sessions")
    exported = scratch.run("export", str(logs[0].parent), "--stdout")
    text = listed.stdout + listed.stderr + exported.stdout + exported.stderr
    return Outcome(tracebacks=text.count("Traceback"), strays=scratch.strays(),
                   seen=f"listed: {logs[0].parent.name in listed.stdout}; export: {exported.stderr.strip()[:70]}")


def closed_pipe(scratch: Scratch) -> Outcome:
    task = scratch.task()
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = scratch.run("history", str(task), "--json", stdout=write_end)
    finally:
        os.close(write_end)
    return Outcome(tracebacks=done.stderr.count("Traceback"), strays=scratch.strays(),
                   seen=f"exit {done.returncode}")


SCENARIOS: dict[str, Callable[[Scratch], Outcome]] = {
    "app: SIGHUP with unsaved text": signal_to_app(signal.SIGHUP),
    "app: SIGTERM with unsaved text": signal_to_app(signal.SIGTERM),
    "app: terminal closed, then SIGHUP": signal_to_app(signal.SIGHUP, terminal_gone=True),
    "app: ctrl+s on a full disk": save_on_full_disk,
    "app: ctrl+s on a read-only kernel": save_read_only_kernel,
    "check: kill -9 mid-run": kill9_during_a_run("check"),
    "watch: kill -9 mid-run": kill9_during_a_run("watch"),
    "check: non-UTF-8 byte in kernel.py": corrupt_file("kernel.py"),
    "check: binary task.toml": corrupt_file("task.toml"),
    "config: binary config.toml": corrupt_file("config.toml"),
    "watch: non-UTF-8 byte appended": watch_survives_a_bad_byte,
    "sessions/export: damaged line": damaged_session_line,
    "history --json into a closed pipe": closed_pipe,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the scenarios whose name contains this")
    args = parser.parse_args()
    rows = []
    for name, scenario in SCENARIOS.items():
        if args.only and args.only not in name:
            continue
        scratch = Scratch("".join(c if c.isalnum() else "_" for c in name.split(":")[0]))
        started = time.monotonic()
        try:
            outcome = scenario(scratch)
        except Exception as exc:  # the scenario itself broke: say so in the table, go on
            outcome = Outcome(lost_edits=-1, seen=f"scenario error: {type(exc).__name__}: {exc}"[:100])
        finally:
            shutil.rmtree(scratch.dir, ignore_errors=True)
        rows.append((name, outcome, time.monotonic() - started))
        print(f"  {name}: {outcome.seen} ({rows[-1][2]:.0f} s)", file=sys.stderr, flush=True)
    print("| scenario | lost edits | tracebacks | strays | seen |")
    print("|---|---|---|---|---|")
    for name, o, _ in rows:
        print(f"| {name} | {o.lost_edits} | {o.tracebacks} | {o.strays} | {o.seen} |")
    bad = sum(1 for _, o, _ in rows if o.lost_edits or o.tracebacks or o.strays)
    print(f"\n{len(rows)} scenarios, {bad} with a lost edit, a traceback or a stray process")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
