"""Hostile kernels for the sandbox tests (each a correct vector add that misbehaves on import), and
the checks that look for what they leave behind: processes, folders, cgroups, secrets in files."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

from tests.conftest import EXAMPLES

VECTOR_ADD = (EXAMPLES / "vector_add" / "kernel.py").read_text()

# Planted secrets: every one holds PLANTED, so a grep for that word finds any piece that got out.
PLANTED_ENV = {
    "OPENAI_API_KEY": "sk-proj-PLANTEDopenai0123456789abcdefXYZ",
    "ANTHROPIC_API_KEY": "sk-ant-PLANTEDanthropic9876543210zyxwv",
    "HF_TOKEN": "hf_PLANTEDhuggingface0123456789abcdefgh",
    "KERNELTUI_AGENT_API_KEY": "PLANTEDkerneltuiagent0123456789",
    "MY_SERVICE_PASSWORD": "PLANTEDpassw0rd-4242-horse",
}
PLANTED_KEY_FILE = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBPLANTEDsshprivatekeybody0123456789abcdefghijklmnopAAAAJgQ\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def plant_home(home: Path) -> Path:
    """A home folder with an SSH private key in it; returns the key's path."""
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    key = ssh / "id_ed25519"
    key.write_text(PLANTED_KEY_FILE)
    key.chmod(0o600)
    return key


def leaky_kernel(key_path: Path, raise_it: bool) -> str:
    """Reads its environment, the key file and its ancestors' environments; prints all of it (and, with
    ``raise_it``, fails its import with all of it in the message)."""
    head = f'''
import os, sys
_seen = {{"environ": dict(os.environ)}}
try:
    _seen["key"] = open({str(key_path)!r}).read()
except OSError as exc:
    _seen["key"] = f"unreadable: {{exc}}"
_pid = os.getpid()
for _ in range(3):  # the supervisor, kerneltui, its caller
    try:
        _pid = int(open(f"/proc/{{_pid}}/stat").read().rsplit(")", 1)[1].split()[1])
        _seen[f"environ of {{_pid}}"] = open(f"/proc/{{_pid}}/environ").read()
    except (OSError, ValueError) as exc:
        _seen[f"environ of {{_pid}}"] = f"unreadable: {{exc}}"
print("LEAK", _seen, flush=True)
print("LEAK", _seen, file=sys.stderr, flush=True)
'''
    if raise_it:
        head += 'raise RuntimeError(f"LEAK {_seen}")\n'
    return head + VECTOR_ADD


def escaping_kernel(port: int, targets: list[Path]) -> str:
    """Connects to a loopback listener and writes files outside the task, then works as usual."""
    return f'''
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
except OSError:
    pass
for _path in {[str(t) for t in targets]!r}:
    try:
        with open(_path, "w") as _fh:
            _fh.write("escaped")
    except OSError:
        pass
''' + VECTOR_ADD


def new_marker() -> str:
    """A ``sleep`` duration no other process uses (~55 minutes): it names the run's processes."""
    return f"{random.randint(3000, 3600)}.{random.randint(100000, 999999)}"


def forking_kernel(marker: str, hang: bool = False) -> str:
    """Leaves sleepers behind in every way a process can: a plain fork, a double fork (orphaned), a
    setsid child (out of the process group) and a setsid double fork (a daemon)."""
    body = f'''
import os, time

def _sleeper():
    os.execvp("sleep", ["sleep", {marker!r}])

if os.fork() == 0:
    _sleeper()
_pid = os.fork()
if _pid == 0:
    if os.fork() == 0:
        _sleeper()
    os._exit(0)
os.waitpid(_pid, 0)
if os.fork() == 0:
    os.setsid()
    _sleeper()
_pid = os.fork()
if _pid == 0:
    os.setsid()
    if os.fork() == 0:
        _sleeper()
    os._exit(0)
os.waitpid(_pid, 0)
'''
    if hang:
        body += "while True:\n    time.sleep(0.1)\n"
    return body + VECTOR_ADD


def marked_processes(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", marker.encode()] and state != "Z":
            found.append(int(name))
    return found


def processes_in(folder: Path) -> list[int]:
    """Live processes whose working directory is inside ``folder`` (workers run in their scratch folder)."""
    found = []
    prefix = str(folder.resolve())
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cwd.startswith(prefix) and state != "Z":
            found.append(int(name))
    return found


def kill_all(pids: list[int]) -> None:
    """Clean up after a failing test: strays must not outlive it either."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def leftover_cgroups(parent_pid: int) -> list[Path]:
    """Worker cgroups kerneltui (process ``parent_pid``) made and did not remove, wherever cgroup v2 is."""
    found: list[Path] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.startswith("cgroup2 "):
            found += Path(left.split()[4]).rglob(f"kerneltui-{parent_pid}-*")
    return sorted(found)


def files_holding(folders: list[Path], needle: bytes) -> list[str]:
    """Every file below ``folders`` whose bytes contain ``needle``."""
    hits = []
    for folder in folders:
        if not folder.exists():
            continue
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    if needle in path.read_bytes():
                        hits.append(str(path))
                except OSError:
                    continue
    return hits
