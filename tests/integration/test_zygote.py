"""Workers forked from a zygote (``core/sandbox/zygote.py``): the worker a kernel runs in must be the
one an exec'd Python would have been (environment, folder, arguments, modules, box), each in a
box of its own, and nothing may outlive kerneltui. Zygotes are the default (tests/gpu has their GPU side);
``[sandbox] zygote = false`` execs every worker, which is what each property is compared with."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from kerneltui.core.sandbox import zygote_client
from kerneltui.core.sandbox.box import SCRATCH_PREFIX, sweep_orphaned_scratch
from kerneltui.core.sandbox.reaper import pid_alive
from kerneltui.core.sandbox.settings import SandboxSettings
from kerneltui.core.sandbox.support import support
from kerneltui.core.sandbox.zygote import cuda_driver_mapped, python_module_command
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess
from kerneltui.core.worker.parent.runner import LocalRunner
from tests.conftest import run_cli

pytestmark = pytest.mark.skipif(support().gpu or not sys.platform.startswith("linux"),
                                reason="forked against exec'd workers on Linux without a GPU (tests/gpu/test_sandbox_gpu.py: a GPU)")

# A kernel that reports the process it runs in and fails the compile rung with it.
WHERE = """
import json, os, signal, sys, tempfile
def _parent_of(pid):
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
_supervisor = os.getppid()
_above = _parent_of(_supervisor)
_where = {
    "env": dict(os.environ), "tmp": tempfile.gettempdir(), "cwd": os.getcwd(), "argv": sys.argv,
    "path": sys.path, "main": getattr(sys.modules["__main__"], "__spec__", None) and sys.modules["__main__"].__spec__.name,
    "modules": sorted(sys.modules), "above": open(f"/proc/{_above}/cmdline").read().split("\\0"),
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "signals": {name: repr(signal.getsignal(getattr(signal, name)))
                for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGCHLD", "SIGPIPE", "SIGXFSZ")},
}
raise RuntimeError("WHERE " + json.dumps(_where))
"""


def _where(task: Path, **env: str) -> dict:
    (task / "where.py").write_text(WHERE)
    proc = run_cli("check", str(task), "--kernel", str(task / "where.py"), "--rungs", "compile", "--json",
                   "--no-history", "--no-session", "--no-engine", env=env)
    error = next(r for r in json.loads(proc.stdout)["rungs"] if r["name"] == "compile")["error"]
    return json.loads(error[error.index("WHERE ") + 6:].splitlines()[0])


def _scratch_of(where: dict) -> str:
    return os.path.dirname(where["env"]["HOME"])


def _without_scratch(value: object, scratch: str) -> str:
    return json.dumps(value).replace(scratch, "SCRATCH")


def test_a_forked_worker_is_the_worker_an_exec_would_start(example_task):
    task = example_task("vector_add")
    forked = _where(task, KERNELTUI_SANDBOX_ZYGOTE="true")
    execd = _where(task, KERNELTUI_SANDBOX_ZYGOTE="false")
    assert any("kerneltui.core.sandbox.zygote" in part for part in forked["above"]), forked["above"]
    assert not any("kerneltui.core.sandbox.zygote" in part for part in execd["above"]), execd["above"]
    forked_scratch, execd_scratch = _scratch_of(forked), _scratch_of(execd)
    assert os.path.basename(forked_scratch).startswith(SCRATCH_PREFIX) and "zygote" not in forked_scratch
    # Its own folder, environment, arguments, import path and main module, as an exec'd one has them.
    forked["env"].pop("KERNELTUI_SANDBOX_ZYGOTE")
    execd["env"].pop("KERNELTUI_SANDBOX_ZYGOTE")
    for key in ("env", "tmp", "cwd", "argv", "path", "main", "nice", "signals"):
        assert _without_scratch(forked[key], forked_scratch) == _without_scratch(execd[key], execd_scratch), key
    # Nothing an exec'd worker imports is missing; what it has more is the zygote's own machinery.
    assert set(execd["modules"]) - set(forked["modules"]) == set()
    zygote_own = subprocess.run([sys.executable, "-c", "import sys, kerneltui.core.sandbox.zygote, kerneltui.core.sandbox.launch\n"
                                 "print(' '.join(sorted(sys.modules)))"], capture_output=True, text=True, check=True)
    extra = set(forked["modules"]) - set(execd["modules"]) - set(zygote_own.stdout.split())
    assert all(name.split(".")[0] in sys.stdlib_module_names for name in extra), sorted(extra)


def _runner(**env: str) -> LocalRunner:
    return LocalRunner(env=env or None, sandbox=SandboxSettings())


async def _ping(worker: WorkerProcess) -> int:
    return int((await worker.request("ping", {}))["pid"])


async def test_workers_of_one_kind_are_forked_from_one_zygote_each_in_a_box_of_its_own():
    runner = _runner(KERNELTUI_TEST_ZYGOTE_KIND="one")
    workers = [await WorkerProcess.start(runner, "triton") for _ in range(2)]
    try:
        for worker in workers:
            await worker.wait_ready(300)
        assert all(isinstance(w.proc, zygote_client.ForkedProcess) for w in workers)
        assert all("forked from a zygote" in w.sandbox.part("processes").detail for w in workers)
        boxes = [runner._boxes[w.pid] for w in workers]
        assert boxes[0].scratch != boxes[1].scratch and all(b.scratch.is_dir() for b in boxes)
        pids = [await _ping(w) for w in workers]
        zygotes = {_parent_of(w.pid) for w in workers}
        assert len(zygotes) == 1 and {_parent_of(pid) for pid in pids} == {w.pid for w in workers}
        running = next(z for z in zygote_client.running_zygotes() if z.proc.pid in zygotes)
        assert running.forks == 2
    finally:
        for worker in workers:
            await worker.close()
    assert not any(b.scratch.exists() for b in boxes), "a scratch folder outlived its worker"
    assert all(w.proc.returncode == 0 for w in workers)


async def test_a_start_cancelled_half_way_leaves_the_next_workers_their_pipes(monkeypatch):
    """A run cancelled while its worker starts (a save overtaking it) cancels the zygote's spawn between
    the streams it makes of the worker's pipes. Each of those ends must be closed once, and off the event
    loop: closed twice, or left watched by the loop, its number is taken by the next worker's pipe, whose
    replies the loop then never reads (the engine waited for workers that had long been ready)."""
    runner = _runner(KERNELTUI_TEST_ZYGOTE_KIND="cancelled")
    ready = await WorkerProcess.start(runner, "triton")  # the zygote is up: what follows is the fork alone
    await ready.wait_ready(300)
    await ready.close()

    async def cancelled_while_connecting(*args: object) -> None:
        raise asyncio.CancelledError("overtaken by a newer save")

    with monkeypatch.context() as patch:
        patch.setattr(zygote_client, "_write_stream", cancelled_while_connecting)
        for _ in range(3):
            with pytest.raises(asyncio.CancelledError):
                await WorkerProcess.start(runner, "triton")
    workers = [await WorkerProcess.start(runner, "triton") for _ in range(3)]
    try:
        for worker in workers:
            await worker.wait_ready(60)  # a fork of a zygote that is up: seconds on a loaded machine
            assert await asyncio.wait_for(_ping(worker), 60)
    finally:
        for worker in workers:
            await worker.close()


async def test_a_runs_judge_and_candidate_come_from_one_zygote():
    runner = _runner(KERNELTUI_TEST_ZYGOTE_KIND="roles")
    workers = [await WorkerProcess.start(runner, "triton", role=role) for role in ("candidate", "judge")]
    try:
        infos = [await w.wait_ready(300) for w in workers]
        assert [i["backend"] for i in infos] == ["triton", "judge"]
        assert _parent_of(workers[0].pid) == _parent_of(workers[1].pid)
    finally:
        for worker in workers:
            await worker.close()


async def test_an_environment_of_its_own_gets_a_zygote_of_its_own():
    first, second = _runner(KERNELTUI_TEST_ZYGOTE_KIND="a"), _runner(KERNELTUI_TEST_ZYGOTE_KIND="b")
    workers = [await WorkerProcess.start(r, "torch", role="judge") for r in (first, second)]
    try:
        for worker in workers:
            await worker.wait_ready(300)
        assert _parent_of(workers[0].pid) != _parent_of(workers[1].pid)
    finally:
        for worker in workers:
            await worker.close()


async def test_zygote_false_execs_every_worker():
    runner = LocalRunner(sandbox=SandboxSettings(zygote=False))
    worker = await WorkerProcess.start(runner, "torch", role="judge")
    try:
        await worker.wait_ready(300)
        assert isinstance(worker.proc, asyncio.subprocess.Process)
        assert _parent_of(worker.pid) == os.getpid()
    finally:
        await worker.close()


async def test_a_zygote_that_cannot_start_leaves_a_worker_started_as_a_new_python_saying_why(monkeypatch):
    from kerneltui.core.worker.contract.start import WarmImports
    from kerneltui.core.worker.parent import runner as runner_module

    monkeypatch.setattr(runner_module, "warm_imports",
                        lambda backend, gpu=False: WarmImports(defaults=(), modules=("torch", "no_such_module_for_a_zygote")))
    worker = await WorkerProcess.start(_runner(KERNELTUI_TEST_ZYGOTE_KIND="broken"), "torch", role="judge")
    try:
        await worker.wait_ready(300)
        assert isinstance(worker.proc, asyncio.subprocess.Process)
        detail = worker.sandbox.part("processes").detail
        assert "not forked from a zygote" in detail and "no_such_module_for_a_zygote" in detail, detail
    finally:
        await worker.close()


async def test_a_forked_worker_killed_by_a_signal_is_reported_by_that_signal():
    runner = _runner(KERNELTUI_TEST_ZYGOTE_KIND="signal")
    worker = await WorkerProcess.start(runner, "torch", role="judge")
    await worker.wait_ready(300)
    os.kill(await _ping(worker), signal.SIGSEGV)
    try:
        # The supervisor leaves as its worker did, and the zygote passes that on.
        assert await asyncio.wait_for(worker.proc.wait(), 30) == -signal.SIGSEGV
        with pytest.raises(WorkerFailure) as failure:
            await worker.request("ping", {})
        assert failure.value.kind == "crash"
    finally:
        await worker.close()


PARENT = """
import asyncio, os, sys, time
from kerneltui.core.worker.parent.process import WorkerProcess
from kerneltui.core.worker.parent.runner import LocalRunner

async def main():
    worker = await WorkerProcess.start(LocalRunner(), "torch", role="judge")
    await worker.wait_ready(300)
    inner = (await worker.request("ping", {}))["pid"]
    print(worker.pid, inner, flush=True)
    time.sleep(600)

asyncio.run(main())
"""


def test_killing_kerneltui_takes_its_zygote_and_workers(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        supervisor, worker = (int(p) for p in proc.stdout.readline().split())
        zygote = _parent_of(supervisor)
        scratch = list(Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}{proc.pid}-*"))
        assert scratch, "the worker and zygote folders are named after their maker"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 30
    while any(pid_alive(p) for p in (zygote, supervisor, worker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(pid_alive(p) for p in (zygote, supervisor, worker))
    sweep_orphaned_scratch()
    assert not any(p.exists() for p in scratch)


def test_only_python_dash_m_of_the_same_interpreter_runs_in_a_forked_worker():
    python = sys.executable
    assert python_module_command([python, "-m", "kerneltui.core.worker.child.serve", "--role", "judge"], python) == \
        ("kerneltui.core.worker.child.serve", ["--role", "judge"])
    assert python_module_command(["/other/python", "-m", "x"], python) is None
    assert python_module_command([python, "script.py"], python) is None


def _parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_the_zygote_refuses_imports_that_fail(tmp_path):
    code = textwrap.dedent("""
        import socket, sys, json, subprocess
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        proc = subprocess.Popen([sys.executable, "-m", "kerneltui.core.sandbox.zygote", str(b.fileno()),
                                 "--import", "no_such_module_here"], pass_fds=(b.fileno(),))
        b.close()
        print(a.recv(65536).decode())
        proc.wait()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    message = json.loads(out.stdout)
    assert message["ready"] is False and "no_such_module_here" in message["error"]


def _zygote_ready_message(tmp_path: Path, status: int) -> dict:
    """Start a zygote whose imports load a CUDA driver (a stand-in built here, named as the real one
    and answering cuCtxGetCurrent with ``status``) and return its first message."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the stand-in driver")
    source = tmp_path / "driver.c"
    source.write_text(f"int cuCtxGetCurrent(void **ctx) {{ *ctx = 0; return {status}; }}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), str(source)], check=True)
    (tmp_path / "loads_the_driver.py").write_text(
        f"import ctypes\nDRIVER = ctypes.CDLL({str(tmp_path / 'libcuda.so.1')!r})\n")
    code = textwrap.dedent("""
        import socket, sys, json, subprocess
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        proc = subprocess.Popen([sys.executable, "-m", "kerneltui.core.sandbox.zygote", str(b.fileno()),
                                 "--import", "loads_the_driver"], pass_fds=(b.fileno(),))
        b.close()
        print(a.recv(65536).decode(), flush=True)
        a.close()
        proc.wait()
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    return json.loads(out.stdout.splitlines()[0])


def test_the_zygote_refuses_when_its_imports_initialised_cuda(tmp_path):
    # A driver that answers as an initialised one: a forked worker could not use CUDA, so the zygote
    # must not serve (its workers are exec'd, saying why).
    message = _zygote_ready_message(tmp_path, status=0)
    assert message["ready"] is False, message
    assert "initialised CUDA" in message["error"] and "libcuda.so.1" in message["error"], message


def test_the_zygote_serves_when_the_driver_is_loaded_but_never_initialised(tmp_path):
    # Importing torch or Triton on a GPU machine maps libcuda without calling cuInit: forking is safe.
    message = _zygote_ready_message(tmp_path, status=3)  # CUDA_ERROR_NOT_INITIALIZED
    assert message["ready"] is True, message


def test_the_cuda_driver_is_found_in_a_maps_file_by_its_library_name_only():
    maps = ("7f0000000000-7f0000001000 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"
            "7f0000002000-7f0000003000 r--p 00000000 08:01 124 /opt/libcudart.so.13\n")
    assert cuda_driver_mapped(maps) == "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
    assert cuda_driver_mapped(maps.splitlines()[1] + "\n7f00-7f01 rw-p 00000000 00:00 0 \n") == ""
    assert cuda_driver_mapped("7f00-7f01 r--p 00000000 08:01 9 /home/me/libcuda.so-notes/x.py\n") == ""
