"""``kerneltui history TASK``: the versions checked so far, with their benchmark numbers."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, load_or_report, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="list the versions of a task's kernel checked so far, with their timings")
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("--kernel", help="the kernel file, when the task needs one named")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--limit", type=int, help="only the last N versions")
    p.add_argument("--case", help="the benchmark case the chart series follows (default: the first)")
    p.add_argument("--source", type=int, metavar="N", help="print the kernel source checked in version N")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.history import HistoryError, HistoryStore

    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    store = HistoryStore.for_task(task)
    if args.limit is not None and args.limit < 1:
        print("kerneltui history: --limit must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.source is not None:
            text = store.source(args.source)
            if text is None:
                print(f"kerneltui history: no version {args.source} in {store.path}", file=sys.stderr)
                return EXIT_FAIL
            sys.stdout.write(text)
            return EXIT_OK
        entries = store.entries(limit=args.limit)
        series = store.series(case=args.case)
    except HistoryError as exc:
        print(f"kerneltui history: {exc}", file=sys.stderr)
        return EXIT_FAIL
    if args.json:
        print_json({"task": task.name, "path": str(store.path), "entries": [e.to_dict() for e in entries],
                    "series": series.to_dict()})
        return EXIT_OK
    if not entries:
        print(f"no versions recorded for {task.name} yet ({store.path}): run `kerneltui check {args.task}`")
        return EXIT_OK
    for line in table(task.name, str(store.path), entries, series):
        print(line)
    return EXIT_OK


def table(name: str, path: str, entries: list[Any], series: Any) -> list[str]:
    """The listing as text lines (a pure function of the store's answers)."""
    from kerneltui.core.bench.stats import format_ms

    lines = [f"history of {name}: {len(entries)} checked version{'s' if len(entries) != 1 else ''} ({path})"]
    by = max([len("by"), *(len(e.author) for e in entries)])  # who made the text (core.history)
    header = f"{'#':>4}  {'when':<16}  {'version':<16}  {'result':<6}  {'by':<{by}}  {'median':>10}  {'IQR':>6}  {'vs ref':>7}  {'vs compile':>10}  {'roofline':>8}  device"
    lines.append(header)
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created_at))
        result = "PASS" if e.ok else "FAIL"
        device = e.device_name if e.gpu else "no GPU"
        if e.median_ms is not None:
            iqr = (f"{100 * (e.q3_ms - e.q1_ms) / e.median_ms:.1f}%"
                   if e.q1_ms is not None and e.q3_ms is not None and e.median_ms else "")
            ref = f"{e.speedup_vs_reference:.2f}×" if e.speedup_vs_reference else "—"
            comp = f"{e.speedup_vs_compile:.2f}×" if e.speedup_vs_compile else "—"
            roof = f"{e.pct_roofline:.0f}%" if e.pct_roofline is not None else "—"
            tail = device + (f" · {e.note}" if e.note else "")
            lines.append(f"{e.number:>4}  {when:<16}  {e.source_hash:<16}  {result:<6}  {e.author:<{by}}  "
                         f"{format_ms(e.median_ms):>10}  "
                         f"{iqr:>6}  {ref:>7}  {comp:>10}  {roof:>8}  {tail}")
        else:
            lines.append(f"{e.number:>4}  {when:<16}  {e.source_hash:<16}  {result:<6}  {e.author:<{by}}  {'—':>10}  "
                         f"{'':>6}  {'':>7}  "
                         f"{'':>10}  {'':>8}  {device} · {e.note}")
    valid = [p for p in series.points if p.valid]
    if valid:
        base = []
        if series.reference_ms:
            base.append(f"reference {format_ms(series.reference_ms)}")
        if series.compile_ms:
            base.append(f"torch.compile {format_ms(series.compile_ms)}")
        if series.floor_ms:
            base.append(f"roofline floor {format_ms(series.floor_ms)}")
        best = min(valid, key=lambda p: p.median_ms)
        lines.append(f"case {series.case_label} on {series.device_name}: best #{best.number} {format_ms(best.median_ms)}"
                     + (f" · {' · '.join(base)}" if base else ""))
    return lines
