"""``kerneltui check TASK``: run the verification loop once, headless."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    EXIT_ENVIRONMENT,
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    add_format_options,
    close_session_log,
    device_line,
    error_json,
    load_or_report,
    open_session_log,
    parse_rungs,
    print_json,
    rung_line,
    task_error,
    tee,
    usage_error,
)
from kerneltui.core.rungs.rung_metrics import failure_of
from kerneltui.core.task import Task, TaskError


def task_error_rung(report: Any) -> Any:
    """The rung that failed because the task cannot run here (its reference needs a GPU…), if any."""
    return next((r for r in report.results if r.status == "fail" and failure_of(r) == "task"), None)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="run the loop once on a task and print each rung's result",
                       description="Run the loop once on a task. Exit status: 0 passed, 1 the kernel failed, "
                                   "2 usage or task error, 3 environment error: the machine stopped the run (no "
                                   "space left, a folder kerneltui may not write, a bad setting; not recorded in "
                                   "the history) (with --json, a JSON error object on stdout).")
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("--kernel", help="check this kernel file instead of the task's own (KernelBench: default "
                                    "<stem>_new.py, <stem>_kernel.py or model_new.py beside the problem; "
                                    "GPU MODE: submission.py)")
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

    add_format_options(p)
    p.add_argument("--override", help="a hand-edited PTX/TTGIR folder (.kerneltui/override/<version>) to build from")
    p.add_argument("--no-session", action="store_true", help="do not write a session log (see `kerneltui sessions`)")
    engine_use.add_option(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.events import BenchmarkProvisional, Event, Notice, RungFinished, VerdictReached
    from kerneltui.core.history import observer_for
    from kerneltui.core.rungs import resolve
    from kerneltui.core.rungs.context import RunOptions
    if args.kernels and args.kernel:
        return usage_error(args, "give either --kernel FILE (one kernel) or --kernels DIR_OR_GLOB (many), not both")
    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    if args.kernels or args.ray or args.jobs is not None:
        from kerneltui.commands.batch_check import run_batch

        return run_batch(args, task)
    try:
        rungs = resolve(parse_rungs(args.rungs))
    except ValueError as exc:
        return usage_error(args, str(exc))
    if args.seeds is not None and args.seeds < 1:
        return usage_error(args, "--seeds must be at least 1")
    options = RunOptions(rungs=rungs, seeds=args.seeds, timeout_s=args.timeout, arch=args.arch,
                         record=not args.no_history, origin="check",
                         override_folder=args.override.rstrip("/") if args.override else None)

    def emit(event: Event) -> None:
        if not args.json and isinstance(event, RungFinished):
            print(rung_line(event.result), flush=True)
        if not args.json and isinstance(event, VerdictReached):
            print(f"verdict: {event.describe()}", flush=True)  # before the rungs that only describe
        if not args.json and isinstance(event, BenchmarkProvisional):
            print(f"[benchmark] {event.describe()}", flush=True)  # the rung's own line replaces it
        if isinstance(event, Notice) and event.level in ("warning", "error"):
            print(f"kerneltui: {event.message}", file=sys.stderr, flush=True)  # e.g. a lost connection, retried

    log = open_session_log(task, "check", getattr(args, "no_session", False))
    if not args.json:
        print(f"checking {task.name} ({task.backend}, {task.format}) · {task.kernel_file}"
              + (f" · {_constants_line(task)}" if task.constants else ""), flush=True)
    try:
        report = asyncio.run(engine_use.run_once(task, args, options, emit=tee(emit, log),
                                                 observers=[observer_for(task)] if options.record else []))
    except TaskError as exc:  # the engine loads the task again, and may find it broken
        return task_error(args, exc)
    finally:
        close_session_log(log)
    broken = task_error_rung(report)
    if args.json:
        data = report.to_json()
        if broken is not None:
            loc = broken.location
            data.update(error_json("task", broken.error or broken.summary, loc.file if loc else None,
                                   loc.line if loc else None))
        if report.environment:
            data.update(error_json("environment", report.environment, exit_code=EXIT_ENVIRONMENT))
        print_json(data)
    else:
        print(device_line(report.device))
        verdict = "ERROR (environment)" if report.environment else "PASS" if report.ok else "FAIL"
        print(f"{verdict}  ({report.duration_s:.1f} s)")
    if report.environment:
        print(f"kerneltui: ERROR (environment): {report.environment}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    if broken is not None:
        print(f"kerneltui: task error: {broken.error or broken.summary}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if report.ok else EXIT_FAIL


def _constants_line(task: Task) -> str:
    line = "constants " + ", ".join(f"{k}={v!r}" for k, v in task.constants.items())
    followed = task.constants_in_kernel()
    if followed:
        line += f" (and {task.kernel_file}'s own {', '.join(followed)})"
    return line
