"""``kerneltui compare TASK [A] [B]``: is B faster than A, or is it noise? (docs/compare.md)

Exit codes: 0 the comparison was made (whatever it found), 1 a version fails its checks or a case
could not be compared (a wrong output while timed, side work, a worker's failure), 2 usage (an
unknown version, no history to take the default A from, a bad option), 3 no GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, load_or_report, print_json

EXIT_NO_GPU = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="is version B of the kernel faster than version A? (interleaved, with a 95%% interval)")
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("a", nargs="?", help="version A: a number from `kerneltui history`, a source hash prefix or a "
                                        "file (default: the last version that passed)")
    p.add_argument("b", nargs="?", help="version B, named the same way (default: the kernel file on disk)")
    p.add_argument("--kernel", help="the kernel file, when the task needs one named")
    p.add_argument("--target", type=float, default=0.5, metavar="PERCENT",
                   help="stop a case once the ratio's interval is narrower than ±PERCENT (default 0.5)")
    p.add_argument("--max-seconds", type=float, default=10.0, metavar="S",
                   help="time cap of each case's timed calls, in seconds (default 10)")
    p.add_argument("--level", type=float, default=95.0, metavar="PERCENT",
                   help="the intervals' confidence level (default 95; 99 says \"faster\" less often by chance)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=main)


def _usage(args: argparse.Namespace, message: str, code: int = EXIT_USAGE, kind: str = "usage") -> int:
    if args.json:
        print_json({"ok": False, "exit_code": code, "error": {"kind": kind, "message": message}})
    print(f"kerneltui compare: {message}", file=sys.stderr)
    return code


def main(args: argparse.Namespace) -> int:
    from kerneltui.config import ConfigError, benchmark_settings
    from kerneltui.core.compare_run import CompareError, run_compare
    from kerneltui.core.compare_versions import VersionError, pick
    from kerneltui.core.history import HistoryError, HistoryStore
    from kerneltui.core.rungs.compare_series import CompareSettings

    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    try:
        settings = CompareSettings(target=args.target / 100, max_seconds=args.max_seconds, bench=benchmark_settings(),
                                   level=args.level / 100)
    except (ValueError, ConfigError) as exc:
        return _usage(args, str(exc))
    try:
        a, b = pick(task, HistoryStore.for_task(task), args.a, args.b)
    except (VersionError, HistoryError) as exc:
        return _usage(args, str(exc))
    progress = None if args.json else _progress
    try:
        report = asyncio.run(run_compare(task, a, b, settings, progress=progress))
    except CompareError as exc:
        code = {"no_gpu": EXIT_NO_GPU}.get(exc.kind, EXIT_FAIL)
        return _usage(args, exc.message, code, exc.kind)
    compared = all(c.verdict.direction != "unknown" for c in report.cases)
    code = EXIT_OK if compared else EXIT_FAIL
    if args.json:
        print_json({"ok": compared, "exit_code": code, **report.to_dict()})
        return code
    for line in lines(report.to_dict()):
        print(line)
    return code


PROGRESS_EVERY_S = 1.0
_last_progress = [0.0]


def _progress(message: str, fraction: float | None = None) -> None:
    """A line on stderr, at most one a second while a case runs (a case's verdict always shows)."""
    now = time.monotonic()
    if now - _last_progress[0] < PROGRESS_EVERY_S and fraction is not None:
        return
    _last_progress[0] = now
    print(f"  … {message}", file=sys.stderr, flush=True)


def lines(data: dict[str, Any]) -> list[str]:
    """The text report from ``CompareReport.to_dict()`` (a pure function of it)."""
    out = [f"A: {data['a']['name']}", f"B: {data['b']['name']}"]
    for case in data["cases"]:
        out.append(f"  {case['label']}: {case['text']}")
    mean = data.get("geometric_mean")
    if mean and len(data["cases"]) > 1:
        out.append(f"geometric mean over {len(data['cases'])} cases: {mean['text']}")
    return out
