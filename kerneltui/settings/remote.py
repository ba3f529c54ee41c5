"""``[remote]``: the GPU host every worker pool starts its workers on over SSH (and how to reach it).

The flags ``--gpu-host``, ``--remote-python``, ``--ssh-port`` and ``--ssh-identity`` set the same
keys (``REMOTE_FLAGS``), merged by the config over the file and ``KERNELTUI_REMOTE_*``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

# (flag, attribute of the parsed arguments, key)
REMOTE_FLAGS = (("--gpu-host", "gpu_host", "gpu_host"), ("--remote-python", "remote_python", "python"),
                ("--ssh-port", "ssh_port", "port"), ("--ssh-identity", "ssh_identity", "identity"))


@dataclass(frozen=True)
class RemoteSettings:
    SECTION: ClassVar[str] = "remote"

    gpu_host: str = ""  # user@host or a Host alias of ~/.ssh/config; empty: workers run here
    python: str = "python3"  # a Python on the GPU host that has torch and triton
    port: int = field(default=0, metadata={"accepts": (lambda p: 0 <= p <= 65535,
                                                       "a port number (1 to 65535), or 0 for ssh's own")})
    identity: str = ""  # a private key (ssh -i)
    workdir: str = ".cache/kerneltui/remote"  # under the remote home: where the worker code goes
    ssh_options: tuple[str, ...] = field(default=(), metadata={"hint": "a list of \"Key=Value\" strings"})

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ssh_options": list(self.ssh_options)}
