"""``kerneltui watch TASK``: rerun the loop on every save, cancelling a run in flight."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    add_format_options,
    close_session_log,
    device_line,
    load_or_report,
    open_session_log,
    parse_rungs,
    rung_line,
    tee,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="rerun the loop on every save of the task's files")
    p.add_argument("task")
    p.add_argument("--kernel")
    p.add_argument("--rungs", help="comma-separated rungs to run on each save")
    p.add_argument("--timeout", type=float)
    p.add_argument("--seeds", type=int)
    p.add_argument("--arch")
    p.add_argument("--no-session", action="store_true", help="do not write a session log")
    add_format_options(p)
    engine_use.add_option(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    try:
        asyncio.run(_watch(task, args))
    except KeyboardInterrupt:
        pass
    return 0


def unreadable(paths: Iterable[Path]) -> str:
    """Why a saved file cannot be read as text (bytes that are not UTF-8: file:line and column), or ""."""
    from kerneltui.core.task_error import TaskError, task_text

    for path in paths:
        try:
            task_text(path)
        except TaskError as exc:
            return str(exc)
        except OSError:
            continue  # gone or mid-rename: the next event brings the new file
    return ""


async def _watch(task, args) -> None:
    from kerneltui.core.events import (
        Event,
        FileChanged,
        RunFinished,
        RungFinished,
        RunStarted,
        VerdictReached,
    )
    from kerneltui.core.history import observer_for
    from kerneltui.core.loop import Loop
    from kerneltui.core.loop_factory import PoolKind, new_loop, new_pool
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.scheduler import OVERTAKEN, RunScheduler
    from kerneltui.core.watcher import watch_task

    options = RunOptions(rungs=parse_rungs(args.rungs), seeds=args.seeds, timeout_s=args.timeout,
                         arch=args.arch, origin="save")
    saved_at: dict[str, float] = {}
    stopping = False  # Ctrl+C (or SIGTERM): a run cancelled now was not replaced by a newer save

    def emit(event: Event) -> None:
        if isinstance(event, RunStarted):
            print(f"\n── run {event.run_id} · {time.strftime('%H:%M:%S')} · {event.source_hash}", flush=True)
        elif isinstance(event, RungFinished):
            extra = ""
            if event.result.name == "correctness" and "save" in saved_at:
                extra = f"  (verdict {time.perf_counter() - saved_at['save']:.2f} s after the save)"
            print(rung_line(event.result) + extra, flush=True)
        elif isinstance(event, VerdictReached):
            since = f"  ({time.perf_counter() - saved_at['save']:.2f} s after the save)" if "save" in saved_at else ""
            print(f"verdict: {event.describe()}{since}", flush=True)
        elif isinstance(event, RunFinished):
            if event.environment:
                print(f"ERROR (environment): {event.environment}", flush=True)
            elif event.cancelled:
                print("cancelled: " + ("watch stopped" if stopping else event.cancel_reason or OVERTAKEN), flush=True)
            else:
                print(("PASS" if event.ok else "FAIL") + f"  ({event.duration_s:.2f} s) · {device_line(event.device)}", flush=True)

    log = open_session_log(task, "watch", getattr(args, "no_session", False))
    def local() -> Loop:
        pool = new_pool(PoolKind.INTERACTIVE, task.backend, args.arch or task.arch)
        pool.prestart()
        return new_loop(task, pool, tee(emit, log), [observer_for(task)])

    loop = engine_use.loop_for(task, args, tee(emit, log), local)
    scheduler = RunScheduler(loop)
    print(f"watching {task.root} ({task.backend}); save {task.kernel_file} to rerun · Ctrl+C to stop", flush=True)
    scheduler.request(options)
    try:
        async for batch in watch_task(task):
            names = ", ".join(p.name for p, _ in batch)
            saved_at["save"] = time.perf_counter()
            print(f"\nsaved: {names}", flush=True)
            if log is not None:
                for path, digest in batch:
                    log.write(FileChanged(path=str(path), source_hash=digest))
            problem = unreadable(path for path, _ in batch)
            if problem:  # nothing to run until the file is fixed; the watch goes on
                print(f"kerneltui: task error: {problem}\nfix it and save again (still watching)", file=sys.stderr,
                      flush=True)
                continue
            scheduler.request(options)
    finally:
        stopping = True
        await scheduler.cancel()
        await loop.close()
        close_session_log(log)
