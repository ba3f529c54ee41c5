"""Workers on another machine, over the system ``ssh`` client.

The worker speaks the same framed protocol over ssh's stdin/stdout as over a local pipe, and the
task's sources travel inside the ``load`` request while compiler outputs come back inside the
``dump`` reply, so a run needs nothing on the remote side but Python with torch (and the DSLs).
kerneltui itself is copied to ``<workdir>/pkg`` once per connection when its files changed (rsync
when both ends have it, else tar over ssh) so that parent and worker always speak the same
protocol version; the remote needs no kerneltui install and no TUI.

One master connection (``ControlMaster``/``ControlPersist``) carries every worker, so starting a
worker costs a channel, not a handshake. ``~/.ssh/config``, agents and keys work as in a shell;
``BatchMode`` makes a missing key fail at once instead of prompting inside the TUI.

The worker runs under the sandbox's supervisor there (``python -m kerneltui.core.sandbox.launch --here``),
which applies the same environment allow-list and box as on this machine, decided from the GPU host's
own facts, and kills everything the worker started when it ends.

Failures: ssh exits 255 when the connection is lost, which becomes a ``WorkerFailure`` of kind
``connection`` (the loop retries that run once on a fresh connection). The remote command is a
small ``sh`` that records its process group and turns a signal death of the worker into exit status
128+N, so a segfault on the remote host reads as a segfault, not as a lost connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import kerneltui
from kerneltui.core.sandbox.policy import SandboxState
from kerneltui.core.sandbox.settings import SandboxSettings, load_settings
from kerneltui.core.worker.contract.protocol import MAX_MESSAGE
from kerneltui.core.worker.contract.start import SERVE_MODULE
from kerneltui.core.worker.parent.process import WorkerFailure
from kerneltui.core.worker.parent.runner import WorkerHandle

SSH_LOST = 255
DEFAULT_WORKDIR = ".cache/kerneltui/remote"  # relative to the remote home


@dataclass
class SSHTarget:
    """Where and how to reach the GPU host. ``host`` is ``user@box`` or a ``~/.ssh/config`` alias."""

    host: str
    port: int | None = None
    identity: str | None = None  # -i KEY
    config_file: str | None = None  # -F FILE (default: ssh's own, ~/.ssh/config)
    options: list[str] = field(default_factory=list)  # extra -o Key=Value
    python: str = "python3"  # the remote interpreter (with torch/triton installed)
    workdir: str = DEFAULT_WORKDIR
    env: dict[str, str] = field(default_factory=dict)  # extra environment for the remote worker
    connect_timeout: int = 15
    persist_s: int = 600

    def __post_init__(self) -> None:
        if not self.host or self.host.startswith("-") or any(c.isspace() for c in self.host):
            raise ValueError(f"--gpu-host {self.host!r} is not a host: give user@host or a Host alias from ~/.ssh/config")


class SSHRunner:
    """A :class:`~kerneltui.core.worker.parent.runner.Runner` whose workers run on ``target.host``."""

    name = "ssh"

    def __init__(self, target: SSHTarget) -> None:
        if shutil.which("ssh") is None:
            raise ValueError("the `ssh` client is not installed on this machine (apt install openssh-client)")
        self.target = target
        # Socket paths are limited to ~104 bytes, so the control directory lives under /tmp.
        self._control_dir = f"/tmp/ktui-ssh-{uuid.uuid4().hex[:10]}"  # made when the master starts
        self._control_path = os.path.join(self._control_dir, "%C")
        self._prepared = False
        self._lock: asyncio.Lock | None = None
        self._remote_root = ""  # absolute remote workdir, known after prepare()
        self._tokens: dict[int, str] = {}  # local ssh pid -> remote pidfile token
        self._killers: list[subprocess.Popen[bytes]] = []
        self.connections = 0  # master connections opened (a reconnect after a loss adds one)
        self.sandbox_settings: SandboxSettings = load_settings()

    # -- ssh command lines ------------------------------------------------------------------------

    def base_args(self, master: str = "no") -> list[str]:
        t = self.target
        args = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={t.connect_timeout}",
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                "-o", f"ControlPath={self._control_path}", "-o", f"ControlMaster={master}"]
        if t.config_file:
            args += ["-F", t.config_file]
        if t.port:
            args += ["-p", str(t.port)]
        if t.identity:
            args += ["-i", t.identity]
        for opt in t.options:
            args += ["-o", opt]
        return args

    def command(self, remote: str, master: str = "no") -> list[str]:
        return [*self.base_args(master), self.target.host, remote]

    # -- connection -------------------------------------------------------------------------------

    async def prepare(self) -> None:
        """Open the master connection and bring the package over (once; again after a loss)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._prepared and await self._master_alive():
                return
            await self._start_master()
            if not self._prepared:
                work = shlex.quote(self.target.workdir)
                rc, out, err = await self._run(f"mkdir -p {work}/run {work}/pkg && cd {work} && pwd")
                if rc != 0:
                    raise self._connection_failure("could not create the remote work folder", err)
                self._remote_root = out.strip().splitlines()[-1]
                await self._sync_package()
                self._prepared = True

    async def _start_master(self) -> None:
        # ssh -f backgrounds the master after authentication; its stdio go to a file so that no
        # pipe of ours stays open for the master's lifetime.
        os.makedirs(self._control_dir, mode=0o700, exist_ok=True)
        log = os.path.join(self._control_dir, "master.log")
        with open(log, "wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *self.base_args("yes"), "-o", f"ControlPersist={self.target.persist_s}", "-f", "-N", self.target.host,
                stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True)
            rc = await proc.wait()
        if rc != 0:
            err = Path(log).read_text(errors="replace")
            # Never connected: a setup problem (no retry helps). Connected before: the link was lost.
            raise self._connection_failure("could not connect", err,
                                           kind="connection" if self.connections else "start")
        self.connections += 1

    async def _master_alive(self) -> bool:
        proc = await asyncio.create_subprocess_exec(
            *self.base_args(), "-O", "check", self.target.host,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return await proc.wait() == 0

    async def _run(self, remote: str, stdin: bytes | None = None, timeout: float = 120.0) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            *self.command(remote), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except TimeoutError as exc:
            proc.kill()
            raise WorkerFailure("connection", f"{self.target.host} did not answer within {timeout:.0f} s") from exc
        return int(proc.returncode or 0), out.decode(errors="replace"), err.decode(errors="replace")

    def _connection_failure(self, what: str, stderr: str, kind: str = "start") -> WorkerFailure:
        last = [line.strip() for line in stderr.splitlines() if line.strip()][-2:]
        why = ": " + " | ".join(last) if last else ""
        return WorkerFailure(
            kind,
            f"{what} to {self.target.host} over SSH{why}. Check that `ssh {self._hint_args()}{self.target.host} true` "
            "works without a password prompt (a key in ssh-agent or -i KEY, the host in ~/.ssh/known_hosts)",
            stderr=stderr)

    def _hint_args(self) -> str:
        t = self.target
        parts = ([f"-F {t.config_file}"] if t.config_file else []) + ([f"-p {t.port}"] if t.port else []) \
            + ([f"-i {t.identity}"] if t.identity else [])
        return " ".join(parts) + (" " if parts else "")

    # -- the package --------------------------------------------------------------------------------

    async def _sync_package(self) -> None:
        package = Path(kerneltui.__file__).resolve().parent
        digest = package_digest(package)
        raw_pkg = f"{self._remote_root}/pkg"
        pkg = shlex.quote(raw_pkg)
        rc, _, _ = await self._run(f"test -f {pkg}/.stamp-{digest}")
        if rc == 0:
            return
        if shutil.which("rsync") and (await self._run("command -v rsync"))[0] == 0:
            ssh = " ".join(shlex.quote(a) for a in self.base_args())
            proc = await asyncio.create_subprocess_exec(
                "rsync", "-a", "--delete", "--exclude", "__pycache__", "-e", ssh,
                f"{package}/", f"{self.target.host}:{raw_pkg}/kerneltui/",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, err_b = await proc.communicate()
            if proc.returncode != 0:
                raise self._connection_failure("could not copy kerneltui (rsync)", err_b.decode(errors="replace"))
        else:
            archive = await asyncio.to_thread(tar_package, package)
            rc, _, err = await self._run(
                f"rm -rf {pkg}/kerneltui {pkg}/.stamp-* && mkdir -p {pkg} && tar -xzf - -C {pkg}", stdin=archive)
            if rc != 0:
                raise self._connection_failure("could not copy kerneltui (tar over ssh)", err)
        await self._run(f"rm -f {pkg}/.stamp-* && touch {pkg}/.stamp-{digest}")

    # -- Runner -----------------------------------------------------------------------------------

    def _here_policy(self, writable: Sequence[str], role: str = "candidate") -> str:
        """What the remote supervisor is told: the [sandbox] settings, plus the names of the
        variables the target adds, and the exchange folders (paths on the GPU host)."""
        settings = self.sandbox_settings.to_dict()
        settings["pass_env"] = [*settings["pass_env"], *self.target.env]
        return json.dumps({"settings": settings, "writable": list(writable), "role": role})

    async def spawn(self, backend: str, arch: str | None, role: str = "candidate",
                    writable: Sequence[str] = ()) -> asyncio.subprocess.Process:
        await self.prepare()
        token = uuid.uuid4().hex[:16]
        root = self._remote_root
        env = {"PYTHONPATH": f"{root}/pkg", "PYTHONUNBUFFERED": "1", **self.target.env}
        # The supervisor runs there and decides the box from that host's facts (launch --here); it
        # scrubs the remote environment (the login shell's exports included) the way LocalRunner does.
        child = ["env", *(f"{k}={v}" for k, v in env.items()), self.target.python,
                 "-m", "kerneltui.core.sandbox.launch", "--here", self._here_policy(writable, role), "--",
                 self.target.python, "-m", SERVE_MODULE, "--backend", backend, "--role", role]
        if arch:
            child += ["--arch", arch]
        # `exec sh` keeps the login shell's pid, which sshd made a session (and group) leader, so
        # the pid written here names the group holding the worker and anything it started.
        script = (f"cd {shlex.quote(root)} && echo $$ > run/{token}.pid && "
                  f"{' '.join(shlex.quote(c) for c in child)}; rc=$?; rm -f run/{token}.pid; exit $rc")
        proc = await asyncio.create_subprocess_exec(
            *self.command(f"exec sh -c {shlex.quote(script)}"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, limit=MAX_MESSAGE)
        self._tokens[proc.pid] = token
        return proc

    def kill(self, proc: WorkerHandle) -> None:
        token = self._tokens.pop(proc.pid, None)
        # Only a worker that may still run there needs killing on the host: one whose ssh is still
        # up, or whose connection was lost (the remote side then runs on as an orphan).
        orphan_possible = proc.returncode is None or proc.returncode == SSH_LOST
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if token is None or not self._remote_root or not orphan_possible:
            return
        # The remote worker may be stuck in a kernel and never see its stdin close: end its group
        # there too, SIGTERM first so that the supervisor kills what left the group (setsid) and
        # removes its scratch folder. Fire and forget (kill() must not block the event loop); reaped
        # in close().
        remote = (f"p=$(cat {shlex.quote(self._remote_root)}/run/{token}.pid 2>/dev/null) && "
                  f"{{ kill -TERM -- -$p; sleep 1; kill -KILL -- -$p; }} 2>/dev/null; "
                  f"rm -f {shlex.quote(self._remote_root)}/run/{token}.pid")
        self._reap()
        self._killers.append(subprocess.Popen(
            [*self.base_args("auto"), self.target.host, remote], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))

    def _reap(self) -> None:
        self._killers = [p for p in self._killers if p.poll() is None]

    def lost_connection(self, returncode: int | None) -> str | None:
        """What the exit status of a worker's ssh says about the connection (None: it was fine)."""
        if returncode == SSH_LOST:
            return f"lost the SSH connection to {self.target.host}"
        return None

    def exit_signal(self, returncode: int | None) -> int | None:
        """The signal that ended the remote worker, from the wrapper's 128+N exit status."""
        if returncode is not None and 128 < returncode < SSH_LOST:
            return returncode - 128
        return None

    async def release(self, proc: WorkerHandle) -> None:
        """Nothing is left here: the remote supervisor removes its scratch folder and cgroup."""

    def sandbox_of(self, proc: WorkerHandle) -> SandboxState | None:
        settings = self.sandbox_settings
        return SandboxState(settings.enabled, (), where=f"{self.target.host} (decided there by the supervisor; "
                            "the worker's first stderr line says what it applied)")

    def describe(self) -> str:
        return f"{self.target.host} over SSH"

    async def close(self) -> None:
        for proc in self._killers:
            try:
                await asyncio.to_thread(proc.wait, 10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._killers.clear()
        if not os.path.isdir(self._control_dir):
            return  # never connected
        exit_master = await asyncio.create_subprocess_exec(
            *self.base_args(), "-O", "exit", self.target.host,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await exit_master.wait()
        shutil.rmtree(self._control_dir, ignore_errors=True)


def package_files(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))


def package_digest(package: Path) -> str:
    h = hashlib.sha256()
    for path in package_files(package):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def tar_package(package: Path) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in package_files(package):
            tar.add(path, arcname=f"kerneltui/{path.relative_to(package).as_posix()}", recursive=False)
    return buf.getvalue()
