"""A real OpenSSH server on a loopback port, for the SSH runner's tests.

Throwaway host and user keys, its own sshd_config (no PAM, no strict modes, key login only) and a
client config with a ``Host`` alias, so the runner is exercised the way a person's ~/.ssh/config
would drive it. Runs as the current user.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
ALIAS = "kerneltui-gpu-box"


def missing_reason() -> str | None:
    if SSHD is None:
        return "needs OpenSSH's sshd (apt install openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "needs the ssh client and ssh-keygen (apt install openssh-client)"
    return None


@dataclass
class SSHServer:
    proc: subprocess.Popen[bytes]
    port: int
    client_config: Path
    user_key: Path
    root: Path
    log: Path

    def session_processes(self) -> list[int]:
        """The per-connection sshd processes (children of the listener) and everything below them."""
        return descendants(self.proc.pid)

    def kill_sessions(self) -> list[int]:
        """Drop every connection, as a network failure would: SIGKILL the per-connection sshds."""
        killed = []
        for pid in descendants(self.proc.pid, depth=1):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        return killed

    def stop(self) -> None:
        for pid in descendants(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.kill()
        self.proc.wait(10)


def descendants(pid: int, depth: int | None = None) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    frontier = [(pid, 0)]
    while frontier:
        parent, level = frontier.pop()
        if depth is not None and level >= depth:
            continue
        for child in children.get(parent, []):
            found.append(child)
            frontier.append((child, level + 1))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sshd(root: Path) -> SSHServer:
    root.mkdir(parents=True, exist_ok=True)
    host_key, user_key = root / "host_ed25519", root / "user_ed25519"
    for key in (host_key, user_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (root / "authorized_keys").write_text((root / "user_ed25519.pub").read_text())
    port = free_port()
    host_pub = (root / "host_ed25519.pub").read_text().split()
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    config = root / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {root / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
        "MaxSessions 64\nMaxStartups 64\nLogLevel INFO\n")
    client = root / "ssh_config"
    client.write_text(
        f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {port}\n  User {getpass.getuser()}\n"
        f"  IdentityFile {user_key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {root / 'known_hosts'}\n"
        "  StrictHostKeyChecking yes\n")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation folder, needed as root
    log = root / "sshd.log"
    assert SSHD is not None
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError(f"sshd did not listen on port {port}: {log.read_text()}")
    return SSHServer(proc=proc, port=port, client_config=client, user_key=user_key, root=root, log=log)
