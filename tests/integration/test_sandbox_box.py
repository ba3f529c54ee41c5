"""The box around candidate code, through the real CLI: no network, no writes outside the worker's
scratch folder, and its state said where a person looks (``kerneltui doctor``, ``device``, the compile
rung). Each refusal is checked against a run with the box off, which must let the same kernel through:
that proves the test can see an escape on this machine."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from kerneltui.core.sandbox.support import support
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess
from kerneltui.core.worker.parent.runner import LocalRunner
from tests.conftest import EXAMPLES, copy_tree, run_cli
from tests.integration.sandbox_helpers import escaping_kernel

MEASURED = support()


class Listener:
    """A TCP listener on loopback that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def run_escaping_kernel(tmp_path: Path, enabled: str) -> tuple[int, list[Path], dict]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    listener = Listener()
    task = tmp_path / f"box-{enabled}" / "vector_add"
    copy_tree(EXAMPLES / "vector_add", task)
    targets = [task.parent / f"escaped-{enabled}.txt", home / f"escaped-{enabled}.txt"]
    (task / "escapes.py").write_text(escaping_kernel(listener.port, targets))
    try:
        proc = run_cli("check", str(task), "--kernel", str(task / "escapes.py"), "--rungs", "correctness",
                       "--seeds", "1", "--json", "--no-history", "--no-session",
                       env={"HOME": str(home), "KERNELTUI_SANDBOX_ENABLED": enabled})
    finally:
        listener.close()
    report = json.loads(proc.stdout)
    assert report["ok"], proc.stderr[-2000:]
    return listener.accepted, [t for t in targets if t.exists()], report


@pytest.mark.skipif(not MEASURED.network and MEASURED.landlock_abi < 4,
                    reason=f"no network isolation here: {MEASURED.network_why}")
def test_candidate_code_cannot_connect_to_a_loopback_listener(tmp_path):
    accepted, _, _ = run_escaping_kernel(tmp_path, "true")
    assert accepted == 0, "the kernel reached a listener on loopback from inside the box"
    accepted, _, _ = run_escaping_kernel(tmp_path, "false")
    assert accepted == 1, "control: with the box off the same kernel must connect"


@pytest.mark.skipif(not MEASURED.landlock_abi, reason=f"no Landlock here: {MEASURED.landlock_why}")
def test_candidate_code_cannot_write_beside_the_task_or_in_home(tmp_path):
    _, written, report = run_escaping_kernel(tmp_path, "true")
    assert written == [], f"the kernel wrote {written} from inside the box"
    compile_rung = next(r for r in report["rungs"] if r["name"] == "compile")
    parts = {p["name"]: p["on"] for p in compile_rung["metrics"]["sandbox"]["parts"]}
    assert parts["filesystem"] and parts["processes"] and parts["environment"]
    _, written, report = run_escaping_kernel(tmp_path, "false")
    assert len(written) == 2, "control: with the box off the same kernel must write both files"
    compile_rung = next(r for r in report["rungs"] if r["name"] == "compile")
    assert "sandbox off ([sandbox] enabled = false)" in compile_rung["summary"]


def test_doctor_says_which_parts_are_on_and_why_any_is_off(tmp_path):
    proc = run_cli("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    parts = {p["name"]: p for p in data["sandbox"]["parts"]}
    assert list(parts) == ["environment", "processes", "network", "filesystem", "limits", "capabilities"]
    assert parts["network"]["on"] == bool(MEASURED.network or MEASURED.landlock_abi >= 4)
    assert parts["filesystem"]["on"] == bool(MEASURED.landlock_abi)
    for part in parts.values():
        assert part["detail"], f"{part['name']} says nothing"
    assert not any(name.endswith(("_KEY", "_TOKEN")) for name in data["environment"])
    assert data["enabled_from"] == "default"

    proc = run_cli("doctor", env={"KERNELTUI_SANDBOX_ENABLED": "false"})
    assert proc.returncode == 0, proc.stderr
    assert "off ([sandbox] enabled = false)" in proc.stdout and "env KERNELTUI_SANDBOX_ENABLED" in proc.stdout
    assert "network       OFF" in proc.stdout and "filesystem    OFF" in proc.stdout
    assert "processes     on" in proc.stdout  # the supervisor stays, box or not


def test_a_bad_sandbox_setting_is_a_usage_error(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[sandbox]\nenabled = \"maybe\"\n")
    proc = run_cli("doctor", env={"KERNELTUI_CONFIG": str(config)})
    assert proc.returncode == 2
    assert "[sandbox] enabled must be true or false" in proc.stderr


def test_device_states_the_sandbox(tmp_path):
    proc = run_cli("device", "--json", env={"KERNELTUI_SANDBOX_ENABLED": "false"})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["sandbox"]["enabled"] is False
    proc = run_cli("device")
    assert proc.returncode == 0, proc.stderr
    assert "sandbox: " in proc.stdout


def test_config_lists_the_sandbox_section():
    proc = run_cli("config", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["settings"]["sandbox"]["enabled"] == {"value": True, "source": "default"}


def test_worker_scratch_is_home_and_tmp(example_task, tmp_path):
    """HOME and TMPDIR of candidate code point into its scratch folder, not at the person's."""
    task = example_task("vector_add")
    (task / "where.py").write_text(
        "import os, json, tempfile\n"
        "_where = {'home': os.environ['HOME'], 'tmp': tempfile.gettempdir(), 'cwd': os.getcwd()}\n"
        "print('WHERE', json.dumps(_where))\n"
        "raise RuntimeError('WHERE ' + json.dumps(_where))\n")
    proc = run_cli("check", str(task), "--kernel", str(task / "where.py"), "--rungs", "compile", "--json",
                   "--no-history", "--no-session", env={"HOME": str(tmp_path)})
    error = next(r for r in json.loads(proc.stdout)["rungs"] if r["name"] == "compile")["error"]
    where = json.loads(error[error.index("WHERE ") + 6:].splitlines()[0])
    scratch = os.path.dirname(where["home"])
    assert os.path.basename(scratch).startswith("kerneltui-worker-")
    # The working folder is the task copy inside the scratch folder, which error messages show as ".".
    assert where["tmp"] == os.path.join(scratch, "tmp") and where["cwd"] == "."
    assert not os.path.exists(scratch), "the scratch folder outlived its worker"


async def test_a_box_that_cannot_be_applied_stops_the_worker_with_a_reason(tmp_path):
    # A stand-in interpreter that fails the way the supervisor does when a part cannot be applied.
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'kerneltui sandbox: the worker was not started: Landlock: "
                    "Operation not permitted' >&2\nexit 70\n")
    fake.chmod(0o755)
    runner = LocalRunner(python=str(fake))
    worker = await WorkerProcess.start(runner, "torch")
    with pytest.raises(WorkerFailure) as failure:
        await worker.wait_ready(60)
    await worker.close()
    assert failure.value.kind == "start"
    assert "the sandbox could not be applied (the worker was not started: Landlock: Operation not permitted)" \
        in failure.value.message
    assert "kerneltui doctor" in failure.value.message and "KERNELTUI_SANDBOX_ENABLED=false" in failure.value.message


THREAD_NAMES = """
import os, threading
def name_it():
    tid = threading.get_native_id()
    # What glibc's pthread_setname_np does for another thread, and CUDA for its threads in cuInit:
    # CUDA opens the file as fopen(..., "w") does, with O_TRUNC, so truncating is needed too.
    fd = os.open(f"/proc/self/task/{tid}/comm", os.O_RDWR)
    os.write(fd, b"named-by-me")
    os.close(fd)
    fd = os.open(f"/proc/self/task/{tid}/comm", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, b"named-by-me")
    os.close(fd)
    with open(f"/proc/self/task/{tid}/comm") as fh:
        print("own thread:", fh.read().strip())
t = threading.Thread(target=name_it); t.start(); t.join()
try:
    fd = os.open(f"/proc/{os.getppid()}/comm", os.O_RDWR)  # another process: the supervisor
    os.write(fd, b"renamed")
    os.close(fd)
    print("other process: written")
except OSError as exc:
    print("other process: refused", exc.errno)
"""


@pytest.mark.skipif(not MEASURED.landlock_abi, reason="Landlock is not available here")
def test_boxed_process_names_its_own_threads_and_no_other_process(tmp_path):
    """CUDA's cuInit writes /proc/self/task/<tid>/comm for the threads it starts and fails with
    error 304 when it cannot (seen on the H200 with the box on): the box lets a process name its own
    threads, and still not touch another process's files in /proc."""
    import subprocess
    import sys

    from kerneltui.core.sandbox.box import open_box
    from kerneltui.core.sandbox.settings import SandboxSettings

    box = open_box(SandboxSettings(), MEASURED, python=sys.executable, lifeline=False)
    try:
        assert box.policy.box is not None and box.policy.box.landlock_abi
        proc = subprocess.run(box.argv([sys.executable, "-c", THREAD_NAMES]), env=box.env, capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
    finally:
        box.release()
    assert proc.returncode == 0, proc.stderr
    assert "own thread: named-by-me" in proc.stdout
    assert "other process: refused" in proc.stdout


DEFERRED = """
import os, sys, threading
from kerneltui.core.sandbox.confine import apply_deferred_landlock
outside = sys.argv[1]
open(outside + ".before", "w").write("the box is not on yet")  # the program's own start, before task code
print("applied:", apply_deferred_landlock())
try:
    open(outside + ".after", "w").write("escaped")
    print("write outside: done")
except OSError as exc:
    print("write outside: refused", exc.errno)
fd = os.open(f"/proc/self/task/{threading.get_native_id()}/comm", os.O_RDWR)
os.write(fd, b"named")
os.close(fd)
print("own thread named")
"""


@pytest.mark.skipif(not MEASURED.landlock_abi, reason="Landlock is not available here")
def test_landlock_left_to_the_profiled_program_is_applied_by_it(tmp_path):
    """ncu's target inits CUDA under a pid of its own, so the profile box leaves Landlock to it: the
    supervisor's process runs without it, the target applies the same rules (and its own threads'
    grant) before any task code."""
    import subprocess
    import sys

    from kerneltui.core.sandbox.box import defer_filesystem_rules, open_box
    from kerneltui.core.sandbox.settings import SandboxSettings

    box = open_box(SandboxSettings(), MEASURED, python=sys.executable, lifeline=False)
    try:
        defer_filesystem_rules(box)
        assert box.policy.box is not None and box.policy.box.landlock_abi == 0
        proc = subprocess.run(box.argv([sys.executable, "-c", DEFERRED, str(tmp_path / "x")]), env=box.env,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
    finally:
        box.release()
    assert proc.returncode == 0, proc.stderr
    assert "applied: True" in proc.stdout and "write outside: refused" in proc.stdout, proc.stdout
    assert "own thread named" in proc.stdout
    assert (tmp_path / "x.before").exists() and not (tmp_path / "x.after").exists()


@pytest.mark.skipif(not MEASURED.landlock_abi, reason="Landlock is not available here")
def test_landlock_is_turned_off_where_the_gpu_cannot_start_inside_it(tmp_path):
    """On the H200 VM CUDA's cuInit fails in the box (error 304) and works outside it: there the
    filesystem part must be off, with the reason, rather than every kernel failing. The decision is
    made by trying; here a check that the box does break (reading a file in the temp folder, which the
    box hides) stands for cuInit, and one that it does not break leaves Landlock on."""
    import tempfile

    from kerneltui.core.sandbox.support import gpu_under_landlock

    hidden = tmp_path / "in-the-temp-folder"
    hidden.write_text("x")
    if not str(hidden.resolve()).startswith(os.path.realpath(tempfile.gettempdir()) + "/"):
        pytest.skip("pytest's folders are not in the temp folder the box hides")

    def reads_hidden() -> int:
        try:
            hidden.read_text()
            return 0
        except OSError:
            return 13

    why = gpu_under_landlock(MEASURED.landlock_abi, reads_hidden, control_nodes=(str(hidden),))
    assert why.startswith("CUDA cannot start under Landlock on this machine (cuInit returned 13")
    assert gpu_under_landlock(MEASURED.landlock_abi, lambda: 0, control_nodes=(str(hidden),)) == ""
    assert gpu_under_landlock(MEASURED.landlock_abi, lambda: 3, control_nodes=(str(hidden),)) == ""  # broken outside too
    assert gpu_under_landlock(MEASURED.landlock_abi, reads_hidden, control_nodes=("/nonexistent/nvidiactl",)) == ""


OPEN_A_BOX = """
import os, signal, sys
from kerneltui.core.sandbox.box import open_box
from kerneltui.core.sandbox.settings import SandboxSettings
from kerneltui.core.sandbox.support import support

box = open_box(SandboxSettings(), support(), python=sys.executable)
print(box.scratch, flush=True)
if sys.argv[1] == "die":
    os.kill(os.getpid(), signal.SIGKILL)  # before any process was started in it: nobody removes it
box.release()
"""


def test_scratch_folders_of_a_killed_kerneltui_are_removed_by_the_next_one(tmp_path):
    import subprocess
    import sys

    env = dict(os.environ, TMPDIR=str(tmp_path))

    def open_a_box(how: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", OPEN_A_BOX, how], env=env, capture_output=True, text=True,
                              timeout=120)

    killed = open_a_box("die")
    assert killed.returncode == -9, killed.stderr[-2000:]
    orphan = Path(killed.stdout.strip())
    assert orphan.parent == tmp_path and orphan.is_dir()
    # Neither a folder of a running process (this one) nor one without a maker's pid is touched.
    live = tmp_path / f"kerneltui-worker-{os.getpid()}-live"
    unnamed = tmp_path / "kerneltui-worker-abc123"
    live.mkdir()
    unnamed.mkdir()
    after = open_a_box("release")
    assert after.returncode == 0, after.stderr[-2000:]
    assert not orphan.exists(), "the killed process's scratch folder was left in the temp folder"
    assert not Path(after.stdout.strip()).exists()
    assert live.is_dir() and unnamed.is_dir()
