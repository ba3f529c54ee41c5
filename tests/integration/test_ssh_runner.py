"""The SSH runner against a real OpenSSH server on loopback (started here, throwaway keys).

The worker runs under sshd as a remote process would: kerneltui is copied over (tar over ssh when
rsync is absent), the task travels in the protocol, the dump comes back, a remote segfault reads as
a segfault, and a connection dropped mid-run is reported and the run retried on a new connection.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

import pytest

from kerneltui.core.events import Notice, RungProgress
from kerneltui.core.loop_factory import check_once
from kerneltui.core.remote.ssh import SSHRunner, SSHTarget
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from tests.integration.sshd_server import ALIAS, SSHServer, missing_reason, start_sshd

pytestmark = pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")

SLOW_IMPORT_KERNEL = '''
import time
import torch
import triton
import triton.language as tl

time.sleep(3.0)  # long enough for the connection to be cut while this import runs


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''

SEGFAULT_KERNEL = '''
import ctypes
import torch


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    ctypes.string_at(0)  # a null read: SIGSEGV in the worker on the remote host
    return x + y
'''


HANGING_KERNEL = '''
def custom_kernel(x, y):
    while True:  # never returns: the rung's timeout must kill the worker on the remote host
        pass
'''


def remote_workers(workdir: Path) -> list[int]:
    """Live processes started with this work folder's package on their path (the remote workers)."""
    marker = f"PYTHONPATH={workdir}/pkg".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def make_runner(server: SSHServer) -> SSHRunner:
    return SSHRunner(SSHTarget(host=ALIAS, config_file=str(server.client_config), python=sys.executable,
                               workdir=str(server.root / "remote-work")))


async def run_check(task_dir: Path, runner: SSHRunner, rungs: list[str], emit=None):  # type: ignore[no-untyped-def]
    task = load_task(task_dir)
    pool = WorkerPool(task.backend, arch=task.arch, runner=runner, spares=1, replenish=False)
    try:
        return await check_once(task, RunOptions(rungs=rungs, record=False, seeds=1), emit=emit, pool=pool)
    finally:
        await pool.close()
        await runner.close()


async def test_cpu_task_end_to_end_over_ssh(sshd: SSHServer, example_task) -> None:
    task_dir = example_task("vector_add")
    runner = make_runner(sshd)
    report = await run_check(task_dir, runner, ["correctness", "dump"])
    assert report.ok, [r.line() for r in report.results]
    assert report.result("correctness").passed
    assert report.device.get("interpreter") is True  # the remote worker chose the Triton interpreter
    # kerneltui was copied to the remote work folder, stamped with its content hash.
    pkg = sshd.root / "remote-work" / "pkg"
    assert (pkg / "kerneltui" / "core" / "worker" / "child" / "serve.py").exists()
    assert list(pkg.glob(".stamp-*"))
    # The dump came back over the protocol and was written beside the version on this side.
    dump_dir = Path(report.result("dump").metrics["dump_dir"])
    assert dump_dir.is_dir() and any(dump_dir.rglob("*.sass"))
    assert runner.connections == 1
    assert "Accepted publickey" in sshd.log.read_text()


async def test_remote_segfault_reads_as_a_segfault(sshd: SSHServer, example_task) -> None:
    task_dir = example_task("vector_add", SEGFAULT_KERNEL)
    report = await run_check(task_dir, make_runner(sshd), ["correctness"])
    failed = [r for r in report.results if r.status == "fail"]
    assert failed, [r.line() for r in report.results]
    assert "SIGSEGV" in failed[0].summary
    assert failed[0].metrics.get("failure") == "crash"  # not mistaken for a lost connection
    assert "connection_retry" not in report.data


async def test_remote_hang_times_out_and_is_killed_there(sshd: SSHServer, example_task) -> None:
    task_dir = example_task("vector_add", HANGING_KERNEL)
    task = load_task(task_dir)
    runner = make_runner(sshd)
    pool = WorkerPool(task.backend, arch=task.arch, runner=runner, spares=1, replenish=False)
    try:
        report = await check_once(task, RunOptions(rungs=["correctness"], record=False, seeds=1, timeout_s=6),
                                  pool=pool)
    finally:
        await pool.close()
        await runner.close()
    failed = [r for r in report.results if r.status == "fail"]
    assert failed and failed[0].metrics.get("failure") == "timeout", [r.line() for r in report.results]
    assert "no answer after 6 s" in failed[0].summary
    assert remote_workers(sshd.root / "remote-work") == []  # the spinning worker was killed on the host


async def test_connection_killed_mid_run_is_reported_and_retried(sshd: SSHServer, example_task) -> None:
    task_dir = example_task("vector_add", SLOW_IMPORT_KERNEL)
    runner = make_runner(sshd)
    events: list[object] = []
    cut: list[int] = []

    def emit(event: object) -> None:
        events.append(event)
        if (not cut and isinstance(event, RungProgress) and event.rung == "compile"
                and event.message == "importing the kernel"):
            cut.extend(sshd.kill_sessions())  # the link drops while the remote worker imports the kernel

    report = await run_check(task_dir, runner, ["correctness"], emit=emit)
    assert cut, "the test never saw the compile rung start on the remote worker"
    notices = [e for e in events if isinstance(e, Notice)]
    assert any("lost the SSH connection" in n.message and "again on a fresh connection" in n.message
               for n in notices), notices
    assert "lost the SSH connection" in report.data["connection_retry"]
    assert report.ok, [r.line() for r in report.results]
    assert runner.connections == 2  # a new master connection for the retry
    # The worker orphaned on the host by the cut was killed through the new connection.
    assert remote_workers(sshd.root / "remote-work") == []


def test_cli_batch_with_gpu_host(sshd: SSHServer, example_task, tmp_path: Path) -> None:
    """`kerneltui --gpu-host ALIAS check TASK --kernels DIR`, the ssh settings from the config file."""
    import json

    from tests.conftest import run_cli

    config = tmp_path / "config.toml"
    options = ["HostName=127.0.0.1", f"Port={sshd.port}", f"User={getpass.getuser()}", f"IdentityFile={sshd.user_key}",
               "IdentitiesOnly=yes", f"UserKnownHostsFile={sshd.root / 'known_hosts'}", "StrictHostKeyChecking=yes"]
    config.write_text("[remote]\n" + f"python = {json.dumps(sys.executable)}\n"
                      + f"workdir = {json.dumps(str(sshd.root / 'cli-work'))}\n"
                      + "ssh_options = [" + ", ".join(json.dumps(o) for o in options) + "]\n")
    task_dir = example_task("vector_add")
    kernels = tmp_path / "candidates"
    kernels.mkdir()
    (kernels / "good.py").write_text((task_dir / "kernel.py").read_text())
    (kernels / "wrong.py").write_text("import torch\n\n\ndef custom_kernel(x, y):\n    return x * y\n")
    accepted = sshd.log.read_text().count("Accepted publickey")
    proc = run_cli("--gpu-host", ALIAS, "check", str(task_dir), "--kernels", str(kernels), "--rungs", "correctness",
                   "--seeds", "1", "--no-history", "--json", env={"KERNELTUI_CONFIG": str(config)}, timeout=240)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["runner"] == "ssh"
    assert [Path(r["name"]).name for r in out["results"]] == ["good.py", "wrong.py"]
    assert out["results"][0]["correct"] and not out["results"][1]["correct"]
    assert (sshd.root / "cli-work" / "pkg" / "kerneltui").is_dir()
    assert sshd.log.read_text().count("Accepted publickey") > accepted
