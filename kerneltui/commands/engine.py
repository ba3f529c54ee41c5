"""``kerneltui engine status|start|stop``: the background engine that keeps workers warm for commands."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("engine", help="the background engine that keeps workers warm (status, start, stop)")
    p.add_argument("action", choices=["status", "start", "stop"], help="what to do")
    p.add_argument("--json", action="store_true", help="status: print one JSON object")
    p.add_argument("--warm", metavar="BACKEND[:ARCH]", action="append", default=[],
                   help="start: warm workers for this backend now (repeatable), e.g. --warm triton "
                        "(ARCH: the task's arch, default sm_90a)")
    p.add_argument("--all", action="store_true",
                   help="stop: also the engines of other installations, or of this one before its code changed")
    p.add_argument("--wait", action="store_true",
                   help="start: return once every warmed pool has its spare workers ready")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.engine.client import EngineClient, EngineUnavailable
    from kerneltui.core.engine.settings import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"kerneltui engine: {exc}", file=sys.stderr)
        return EXIT_USAGE
    client = EngineClient(settings)
    try:
        if args.action == "status":
            return _status(client, asyncio.run(client.status()), args.json)
        if args.action == "stop":
            pid = asyncio.run(client.stop())
            print("no engine is running" if pid is None else f"engine (pid {pid}) stopped")
            for files in client.files.others() if args.all else []:
                try:
                    other = asyncio.run(EngineClient(settings, files).stop())
                except EngineUnavailable as exc:
                    print(f"kerneltui engine: {exc}", file=sys.stderr)
                    continue
                if other is not None:
                    print(f"engine (pid {other}) on {files.socket} stopped")
            return EXIT_OK
        return asyncio.run(_start(client, args))
    except EngineUnavailable as exc:
        print(f"kerneltui engine: {exc}", file=sys.stderr)
        return EXIT_FAIL


def _status(client: Any, status: dict[str, Any] | None, as_json: bool) -> int:
    if as_json:
        print_json({"running": status is not None, **(status or {}), "socket": str(client.files.socket)})
        return EXIT_OK
    others = [f.socket.name for f in client.files.others()]
    if others:
        print(f"other engines in {client.files.dir}: {', '.join(others)} (they stop when idle; "
              "`kerneltui engine stop --all` stops them now)")
    if status is None:
        print(f"no engine is running (it starts with the next check; socket {client.files.socket})")
        return EXIT_OK
    print(f"engine pid {status['pid']} · kerneltui {status['version']} · up {status['uptime_s']:.0f} s · "
          f"{status['runs_served']} run(s) served · idle {status['idle_s']:.0f} s of {status['idle_limit_s']:.0f} s")
    print(f"socket {status['socket']} · log {status['log']}")
    for pool in status.get("pools") or []:
        ready, wanted = pool["ready"], pool["wanted"]
        print(f"  {pool['backend']} ({pool['arch'] or 'device arch'}) on {pool['device']}: "
              f"{ready.get('candidate', 0)}/{wanted.get('candidate', 0)} candidate workers and "
              f"{ready.get('judge', 0)}/{wanted.get('judge', 0)} judges ready")
    for run in status.get("running") or []:
        # By name and folder: the problems of one KernelBench folder share the folder.
        print(f"  {run['state']}: {run.get('name') or '?'} in {run['task']} ({', '.join(run['rungs'])})")
    return EXIT_OK


async def _start(client: Any, args: argparse.Namespace) -> int:
    warm = [_backend_arch(text) for text in args.warm]
    answer = await client.request({"op": "warm", "pools": [{"backend": b, "arch": a} for b, a in warm]}, start=True)
    hello = answer[1]
    print(f"engine pid {hello.get('pid')} {'started' if client.started_engine else 'already running'} "
          f"(socket {client.files.socket})", flush=True)
    if args.wait and warm:
        return await _wait_warm(client, warm)
    return EXIT_OK


async def _wait_warm(client: Any, warm: list[tuple[str, str | None]], timeout_s: float = 600.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = await client.status() or {}
        pools = {(p["backend"], p["arch"]): p for p in status.get("pools") or []}
        if all(key in pools and all(pools[key]["ready"].get(role, 0) >= n for role, n in pools[key]["wanted"].items())
               for key in warm):
            print("spare workers ready", flush=True)
            return EXIT_OK
        await asyncio.sleep(0.2)
    print(f"kerneltui engine: the spare workers were not ready within {timeout_s:.0f} s", file=sys.stderr)
    return EXIT_FAIL


def _backend_arch(text: str) -> tuple[str, str | None]:
    """``triton`` or ``triton:sm_90a``; without an arch, a task's default (the pool its checks use)."""
    import dataclasses

    from kerneltui.core.task import Task

    backend, _, arch = text.partition(":")
    default = next(f.default for f in dataclasses.fields(Task) if f.name == "arch")
    return backend, arch or str(default)
