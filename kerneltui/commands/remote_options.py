"""Global options that send every worker to another machine: ``kerneltui --gpu-host user@box …``.

``--gpu-host`` (or ``[remote] gpu_host`` in the config file, or ``KERNELTUI_REMOTE_GPU_HOST``)
makes every worker pool start its workers there over SSH, for ``check``, ``watch`` and the TUI alike.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from kerneltui.config import ConfigError, flags_from_args, load_config
from kerneltui.settings.remote import REMOTE_FLAGS, RemoteSettings

# Options taking a value that may stand before the subcommand.
VALUE_OPTIONS = ("--gpu-host", "--remote-python", "--ssh-port", "--ssh-identity")


def add_global_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("GPU elsewhere")
    group.add_argument("--gpu-host", metavar="USER@HOST",
                       help="start workers on this machine over SSH (a Host alias from ~/.ssh/config works)")
    group.add_argument("--remote-python", metavar="PATH",
                       help="Python on the GPU host that has torch and triton (default python3)")
    group.add_argument("--ssh-port", type=int, metavar="PORT", help="SSH port of the GPU host")
    group.add_argument("--ssh-identity", metavar="KEY", help="private key for the GPU host (ssh -i)")


def split_leading(argv: list[str]) -> tuple[list[str], list[str]]:
    """The global options at the front of ``argv`` and the rest (so `kerneltui --gpu-host h TASK` opens the TUI)."""
    lead: list[str] = []
    rest = list(argv)
    while rest:
        head = rest[0]
        if head in VALUE_OPTIONS and len(rest) >= 2:
            lead += rest[:2]
            rest = rest[2:]
        elif any(head.startswith(opt + "=") for opt in VALUE_OPTIONS):
            lead.append(head)
            rest = rest[1:]
        else:
            break
    return lead, rest


def remote_target(args: argparse.Namespace) -> Any:
    """The SSH target the options and the config name, or None for this machine.

    Raises ValueError with a message for a bad host or an unreadable config file.
    """
    flags = flags_from_args(args, "remote", REMOTE_FLAGS)
    try:
        remote = load_config(flags=flags).read(RemoteSettings)
    except ConfigError as exc:
        raise ValueError(str(exc)) from exc
    if not remote.gpu_host:
        for flag in flags[1:]:
            if flag.value:
                raise ValueError(f"{flag.name} needs --gpu-host (or [remote] gpu_host in the config)")
        return None
    from kerneltui.core.remote.ssh import SSHTarget

    return SSHTarget(host=remote.gpu_host, port=remote.port or None, identity=remote.identity or None,
                     python=remote.python or "python3", workdir=remote.workdir or RemoteSettings.workdir,
                     options=list(remote.ssh_options))


def configure(args: argparse.Namespace) -> Any:
    """Point every worker pool at the GPU host, if one is named; returns the runner (or None)."""
    target = remote_target(args)
    if target is None:
        return None
    from kerneltui.core.remote.ssh import SSHRunner
    from kerneltui.core.worker.parent.runner import set_default_runner

    runner = SSHRunner(target)
    set_default_runner(runner)
    return runner


def close(runner: Any) -> None:
    if runner is not None:
        asyncio.run(runner.close())
