"""``kerneltui profile TASK``: check the kernel, profile one benchmark case with Nsight Compute, print
the summary (a table for people, ``--brief`` for an agent, ``--json`` for scripts)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    add_format_options,
    load_or_report,
    print_json,
    rung_line,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="profile the kernel with Nsight Compute (ncu) and summarise why it is slow")
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("--kernel", help="profile this kernel file instead of the task's own")
    p.add_argument("--json", action="store_true", help="print one JSON object (the run, the summary, hot spots)")
    p.add_argument("--brief", action="store_true", help="print the plain-text brief written for the agent")
    p.add_argument("--case", type=int, help="which [[benchmarks]] case to profile (0-based; default 0)")
    p.add_argument("--kernel-name", help="only kernels whose name matches this regular expression")
    p.add_argument("--launch-count", type=int, help="profile at most this many kernel launches (default 20)")
    p.add_argument("--timeout", type=float, help="seconds the profile may take (default: the task's [timeouts] profile)")
    p.add_argument("--seeds", type=int, help="seeds per test case for the correctness check that runs first")
    add_format_options(p)
    engine_use.add_option(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.events import Event, RungFinished
    from kerneltui.core.profile.errors import no_ncu
    from kerneltui.core.profile.locate import NcuNotFound, find_ncu
    from kerneltui.core.rungs.context import ProfileOptions, RunOptions

    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    for name in ("case", "launch_count", "seeds", "timeout"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "case" else 1):
            print(f"kerneltui: --{name.replace('_', '-')} must be {'≥ 0' if name == 'case' else '≥ 1'}", file=sys.stderr)
            return EXIT_USAGE
    found = find_ncu()
    if isinstance(found, NcuNotFound):
        # Say it before spending a minute on the checks: without ncu there will be no profile.
        problem = no_ncu(found)
        if args.json:
            print_json({"ok": False, "problem": {"kind": problem.kind, "message": problem.message, "fix": problem.fix,
                                                 "evidence": problem.evidence}})
        else:
            print(f"kerneltui: {problem.message}.\nFix: {problem.fix}.\n({problem.evidence})", file=sys.stderr)
        return EXIT_FAIL
    asked = ProfileOptions(case=args.case, kernel_name=args.kernel_name, launch_count=args.launch_count,
                           timeout_s=args.timeout)
    options = RunOptions(rungs=["prechecks", "profile"], seeds=args.seeds, profile=asked, origin="profile")

    def emit(event: Event) -> None:
        if not args.json and isinstance(event, RungFinished) and event.result.name != "profile":
            print(rung_line(event.result), file=sys.stderr, flush=True)

    if not args.json:
        print(f"profiling {task.name} ({task.backend}) · {task.kernel_file} · checks first", file=sys.stderr, flush=True)
    report = asyncio.run(engine_use.run_once(task, args, options, emit=emit))
    result = report.result("profile")
    profile = report.data.get("profile") or {}
    if args.json:
        print_json({"ok": bool(result and result.status == "ok"), "run": report.to_json(), "profile": profile})
        return EXIT_OK if result and result.status == "ok" else EXIT_FAIL
    if result is None or result.status != "ok":
        if result is None:
            print("kerneltui: the profile did not run", file=sys.stderr)
        else:
            print(rung_line(result), file=sys.stderr)
            if result.status == "fail" and result.details:
                print(result.details, file=sys.stderr)
        return EXIT_FAIL
    print(_text(profile, brief=args.brief))
    return EXIT_OK


def _text(profile: dict[str, Any], brief: bool) -> str:
    from kerneltui.core.profile.hotspots import KernelHotSpots
    from kerneltui.core.profile.render import render_brief, render_table
    from kerneltui.core.profile.summary import ProfileResult

    result = ProfileResult.from_dict(profile["result"])
    summary = result.summary
    out = [render_brief(summary) if brief else render_table(summary)]
    hot = [KernelHotSpots.from_dict(h) for h in profile.get("hotspots") or []]
    for spots in hot:
        if spots.kernel != summary.kernel or not spots.source:
            continue
        lines = [f"  {s.file}:{s.line:<5} {100 * spots.heat(s.samples):5.1f}%  {s.text.strip()[:70]}"
                 for s in spots.top_source(5)]
        out.append(f"\nhot source lines of {spots.kernel} (share of {spots.total_samples} warp samples):\n"
                   + "\n".join(lines))
    out.append(f"\nreport: {profile.get('report')}  (open it in the Nsight Compute GUI)")
    return "\n".join(out)
