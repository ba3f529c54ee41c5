"""How the commands reach the engine: ``--no-engine``, the choice, and the fallback to their own workers.

A command builds its task and :class:`RunOptions` as before and hands them here; the run goes to the
engine (started on first use) when it may, else to a loop of the command's own, and the command's
printer receives the same events either way. What the engine could not do is said on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from kerneltui.core.events import Emit, Event, Notice


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-engine", action="store_true",
                        help="run the check in workers of this command instead of the background engine "
                             "(also [engine] enabled = false, or KERNELTUI_ENGINE_ENABLED=0)")


def engine_client(args: argparse.Namespace) -> Any:
    """The client of the engine this command should use, or None (``--no-engine``, the setting, a
    GPU host over SSH: the engine serves this machine's workers only)."""
    if getattr(args, "no_engine", False):
        return None
    from kerneltui.core.worker.parent.runner import LocalRunner, default_runner

    if not isinstance(default_runner(), LocalRunner):
        return None
    from kerneltui.core.engine.client import EngineClient
    from kerneltui.core.engine.settings import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"kerneltui: not using the engine: {exc}", file=sys.stderr)
        return None
    return EngineClient(settings) if settings.enabled else None


def saying_engine_notices(emit: Emit) -> Emit:
    """``emit`` with the engine's warnings (it could not serve, it died) printed on stderr instead."""

    def wrapped(event: Event) -> None:
        if isinstance(event, Notice) and event.source == "engine":
            if event.level in ("warning", "error"):
                print(f"kerneltui: {event.message}", file=sys.stderr, flush=True)
            return
        emit(event)

    return wrapped


def loop_for(task: Any, args: argparse.Namespace, emit: Emit, local: Callable[[], Any]) -> Any:
    """A loop for ``task``: the engine's (falling back to ``local()``) or ``local()`` itself."""
    client = engine_client(args)
    if client is None:
        return local()
    from kerneltui.core.engine.client import EngineLoop

    return EngineLoop(client, task, args.task, getattr(args, "kernel", None), saying_engine_notices(emit), local)


async def run_once(task: Any, args: argparse.Namespace, options: Any, emit: Emit,
                   observers: list[Any] | None = None) -> Any:
    """One run, as ``core.loop_factory.check_once`` does it, through the engine when it may.

    The engine records the run in the task's history itself; ``observers`` serve the run in this
    process only (``--no-engine`` or a fallback)."""
    from kerneltui.core.loop import Loop
    from kerneltui.core.loop_factory import PoolKind, open_loop

    def local() -> Loop:
        return open_loop(PoolKind.ONE_RUN, task, options.arch, emit, observers)

    loop = loop_for(task, args, emit, local)
    try:
        return await loop.run(options)
    finally:
        await loop.close()


def agent_loop(client: Any, task: Any, args: argparse.Namespace, local: Any) -> Any:
    """The agent's trials through the engine; ``local`` (the session's own loop) serves as the fallback."""
    from kerneltui.core.engine.client import EngineLoop

    return EngineLoop(client, task, args.task, getattr(args, "kernel", None), saying_engine_notices(local.emit),
                      lambda: local)
