"""``kerneltui trace TASK``: check the kernel, trace its named regions (the ``trace`` rung), print the
region table, the tracing overhead and a timeline; ``kerneltui trace --show FILE`` prints a saved
trace (``<version>/trace/buffers.json``) without running anything; ``--chrome OUT`` writes a
Perfetto / chrome://tracing JSON of it."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from kerneltui.commands.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    add_format_options,
    load_or_report,
    print_json,
    rung_line,
)
from kerneltui.core.rungs.rung_metrics import trace_metrics


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help="time the named regions inside the kernel (needs a GPU), or show a saved trace")
    p.add_argument("task", nargs="?", help="a task directory (its kernel marks regions with kerneltui.ktrace)")
    p.add_argument("--show", type=Path, help="print a saved trace (buffers.json) instead of running one")
    p.add_argument("--chrome", type=Path, help="also write the trace as Chrome / Perfetto JSON to this file")
    p.add_argument("--by", choices=("sm", "cta"), default="sm", help="timeline rows: one per SM (default) or per CTA")
    p.add_argument("--width", type=int, help="timeline columns (default: the terminal's width)")
    p.add_argument("--rows", type=int, default=40, help="at most this many timeline rows (default 40)")
    p.add_argument("--case", type=int, help="which [[benchmarks]] case to trace (0-based; default 0)")
    p.add_argument("--json", action="store_true", help="print the trace rung's result as JSON")
    add_format_options(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.trace import buffer as trace_buffer

    if args.show is None and not args.task:
        print("kerneltui trace: give a task to trace, or --show FILE to print a saved trace", file=sys.stderr)
        return EXIT_USAGE
    if args.show is not None:
        try:
            traces = trace_buffer.load(args.show)
        except trace_buffer.TraceFormatError as exc:
            print(f"kerneltui: {exc}", file=sys.stderr)
            return EXIT_USAGE
        _print(traces, args)
        return EXIT_OK
    return _run(args)


def _print(traces: list, args: argparse.Namespace) -> None:
    from kerneltui.core.trace import chrome, summary, timeline
    from kerneltui.core.trace.stats import analyse

    width = args.width or max(20, shutil.get_terminal_size((100, 24)).columns - 14)
    for buf in traces:
        print(summary.region_table(analyse(buf)))
        print()
        print(timeline.build(buf, width=width, by=args.by, max_rows=args.rows).text())
        print()
    if args.chrome is not None:
        print(f"Perfetto / chrome://tracing: {chrome.write(args.chrome, traces)}")


def _run(args: argparse.Namespace) -> int:
    from kerneltui.core.events import Event, RungFinished
    from kerneltui.core.loop_factory import check_once
    from kerneltui.core.rungs.context import RunOptions, TraceOptions
    from kerneltui.core.trace import buffer as trace_buffer
    from kerneltui.core.trace import summary

    task = load_or_report(args, args.task, None)
    if isinstance(task, int):
        return task
    if args.case is not None and args.case < 0:
        print("kerneltui: --case must be ≥ 0", file=sys.stderr)
        return EXIT_USAGE
    options = RunOptions(rungs=["trace"], origin="trace", trace=TraceOptions(case=args.case))

    def emit(event: Event) -> None:
        if not args.json and isinstance(event, RungFinished):
            print(rung_line(event.result), flush=True)

    report = asyncio.run(check_once(task, options, emit=emit))
    result = report.result("trace")
    if args.json:
        print_json(report.to_json())
        return EXIT_OK if result is not None and result.passed else EXIT_FAIL
    if result is None or not result.passed:
        return EXIT_FAIL
    print()
    metrics = trace_metrics(result)
    print(summary.overhead_of(metrics))
    print()
    _print(trace_buffer.load(Path(metrics["buffers"])), args)
    return EXIT_OK
