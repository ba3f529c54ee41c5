"""``kerneltui check TASK``: run the verification loop once, headless."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from typing import TYPE_CHECKING, Any, TypedDict

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    EXIT_ENVIRONMENT,
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    close_session_log,
    device_line,
    open_session_log,
    parse_rungs,
    print_json,
    rung_line,
    tee,
)
from kerneltui.core.rungs.rung_metrics import failure_of
from kerneltui.core.task import BACKENDS, LoadOptions, Task, TaskError, operator_name
from kerneltui.core.task_loaders.load import load_task

SET_ARG = re.compile(r"^([A-Za-z_]\w*)=(.+)$")

if TYPE_CHECKING:
    from kerneltui.core.loop import ReportError


def add_format_options(p: argparse.ArgumentParser, per_problem: bool = False) -> None:
    """--backend, --set and --scale: what the command line adds to a task's own settings.
    ``per_problem`` (the suite): --set and --scale may also name the one problem they apply to."""
    p.add_argument("--backend", choices=BACKENDS,
                   help="the DSL the kernel must be written in (KernelBench: default triton or the file's "
                        "`# kerneltui: backend = …` line; GPU MODE: detected from the submission)")
    p.add_argument("--allow-ops", metavar="OP[,OP…]",
                   help="torch operators the kernel may leave to torch (e.g. conv2d: the convolution stays in "
                        "cuDNN, the rest is the kernel's), added to the task's own allow_ops; every other torch "
                        "compute op on the output's path still fails")
    scale_help = ("KernelBench: multiply every size constant (integers ≥ 16) by F, keeping their power-of-two "
                  "factors up to 16 (e.g. --scale 0.01 for GB-scale problems on a small machine)")
    if per_problem:
        p.add_argument("--set", dest="constants", action="append", default=[], metavar="[PROBLEM:]NAME=VALUE",
                       help="KernelBench: rewrite module constant NAME (a size) in every problem that defines it, "
                            "or in PROBLEM alone (its file's stem, e.g. 30_SoftsignWide:dim=4096); repeatable")
        p.add_argument("--scale", dest="scales", action="append", default=[], metavar="[PROBLEM:]F",
                       help=scale_help.replace("by F,", "by F (in PROBLEM alone with PROBLEM:F, which wins over "
                                                        "the suite's F; repeatable),"))
        return
    p.add_argument("--set", dest="constants", action="append", default=[], metavar="NAME=VALUE",
                   help="KernelBench: rewrite the problem's module constant NAME (a size) for this run; repeatable")
    p.add_argument("--scale", type=float, metavar="F", help=scale_help)


def load_options(args: argparse.Namespace) -> LoadOptions:
    """The command line's LoadOptions; a malformed --set or --scale raises ValueError."""
    pairs = []
    for text in args.constants or []:
        m = SET_ARG.match(text)
        if not m:
            raise ValueError(f"--set {text}: write NAME=VALUE, e.g. --set batch_size=16")
        pairs.append((m.group(1), m.group(2)))
    if args.scale is not None and not args.scale > 0:
        raise ValueError(f"--scale must be a positive factor, not {args.scale}")
    ops = [op.strip() for op in (getattr(args, "allow_ops", None) or "").split(",") if op.strip()]
    bad = [op for op in ops if not operator_name(op)]
    if bad:
        raise ValueError(f"--allow-ops {bad[0]!r}: name torch operators, comma-separated, e.g. --allow-ops conv2d,linear")
    return LoadOptions(backend=args.backend, constants=tuple(pairs), scale=args.scale,
                       allow_ops=tuple(operator_name(op) for op in ops))


class ErrorJson(TypedDict):
    """What --json prints when the task, the machine or the command line stopped a check."""

    ok: bool
    exit_code: int
    error: ReportError


def error_json(kind: str, message: str, file: str | None = None, line: int | None = None,
               exit_code: int = EXIT_USAGE) -> ErrorJson:
    """What --json prints when there is no report: the error, where to fix it, and the exit status."""
    return {"ok": False, "exit_code": exit_code,
            "error": {"kind": kind, "message": message, "file": file, "line": line}}


def usage_error(args: argparse.Namespace, message: str) -> int:
    print(f"kerneltui: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print_json(error_json("usage", message))
    return EXIT_USAGE


def load_or_report(args: argparse.Namespace, path: str, kernel: str | None) -> Task | int:
    """The task, or the exit status after saying why it cannot be loaded (with --json, on stdout too)."""
    try:
        options = load_options(args)
    except ValueError as exc:
        return usage_error(args, str(exc))
    try:
        return load_task(path, kernel, options)
    except TaskError as exc:
        print(f"kerneltui: task error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            print_json(error_json("task", exc.message, exc.file, exc.line))
        return EXIT_USAGE


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
    except TaskError as exc:
        print(f"kerneltui: task error: {exc}", file=sys.stderr)
        if args.json:
            print_json(error_json("task", exc.message, exc.file, exc.line))
        return EXIT_USAGE
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
