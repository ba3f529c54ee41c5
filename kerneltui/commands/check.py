"""``kerneltui check TASK``: run the verification loop once, headless."""

from __future__ import annotations

import argparse
import asyncio
import sys

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    close_session_log,
    device_line,
    load_task_or_exit,
    open_session_log,
    parse_rungs,
    print_json,
    rung_line,
    tee,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="run the loop once on a task and print each rung's result")
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("--kernel", help="check this kernel file instead of the task's own")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--rungs", help="comma-separated rungs to run (prerequisites are added)")
    p.add_argument("--timeout", type=float, help="seconds each rung may take (overrides the task's timeouts)")
    p.add_argument("--seeds", type=int, help="seeds per test case (a hidden seed is always added)")
    p.add_argument("--arch", help="target for ahead-of-time compiles without a GPU (default sm_90a)")
    p.add_argument("--no-history", action="store_true", help="do not record this version in the task's history")
    p.add_argument("--kernels", metavar="DIR_OR_GLOB",
                   help="verify many candidate kernel files (a folder, a glob or a file) and print them ranked")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="with --kernels: run each candidate as a Ray task on this cluster (auto, HOST:PORT, "
                        "ray://HOST:PORT, or local)")
    p.add_argument("-j", "--jobs", type=int,
                   help="with --kernels: candidates verified at once on this machine (default: one per GPU, "
                        "2 without a GPU)")

    p.add_argument("--override", help="a hand-edited PTX/TTGIR folder (.kerneltui/override/<version>) to build from")
    p.add_argument("--no-session", action="store_true", help="do not write a session log (see `kerneltui sessions`)")
    engine_use.add_option(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.events import Event, Notice, RungFinished
    from kerneltui.core.rungs import resolve
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import TaskError

    if args.kernels and args.kernel:
        print("kerneltui: give either --kernel FILE (one kernel) or --kernels DIR_OR_GLOB (many), not both",
              file=sys.stderr)
        return EXIT_USAGE
    task = load_task_or_exit(args.task, args.kernel)
    if args.kernels or args.ray or args.jobs is not None:
        from kerneltui.commands.batch_check import run_batch

        return run_batch(args, task)
    try:
        rungs = resolve(parse_rungs(args.rungs))
    except ValueError as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.seeds is not None and args.seeds < 1:
        print("kerneltui: --seeds must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    options = RunOptions(rungs=rungs, seeds=args.seeds, timeout_s=args.timeout, arch=args.arch,
                         record=not args.no_history, origin="check")
    if args.override:
        options.extra["override"] = args.override.rstrip("/")

    def emit(event: Event) -> None:
        if not args.json and isinstance(event, RungFinished):
            print(rung_line(event.result), flush=True)
        if isinstance(event, Notice) and event.level in ("warning", "error"):
            print(f"kerneltui: {event.message}", file=sys.stderr, flush=True)  # e.g. a lost connection, retried

    log = open_session_log(task, "check", getattr(args, "no_session", False))
    if not args.json:
        print(f"checking {task.name} ({task.backend}, {task.format}) · {task.kernel_file}", flush=True)
    try:
        report = asyncio.run(engine_use.run_once(task, args, options, emit=tee(emit, log),
                                                 observers=history_observers(task, options)))
    except TaskError as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        close_session_log(log)
    if args.json:
        print_json(report.to_json())
    else:
        print(device_line(report.device))
        verdict = "PASS" if report.ok else "FAIL"
        print(f"{verdict}  ({report.duration_s:.1f} s)")
    return EXIT_OK if report.ok else EXIT_FAIL


def history_observers(task, options):  # type: ignore[no-untyped-def]
    """Observers that record the run (the history store), when that part is installed."""
    try:
        from kerneltui.core.history import observer_for
    except ImportError:
        return []
    return [observer_for(task)] if options.record else []
