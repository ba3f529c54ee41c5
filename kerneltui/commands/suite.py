"""``kerneltui suite DIR``: check every problem of a suite and print KernelBench's and GPU MODE's numbers.

DIR is a KernelBench level folder, a GPU MODE problems folder or a folder of task folders; the
candidates are found by each format's conventions (see ``core.suite.discover``). Here: one item at
a time per visible GPU (``-j`` at once without one: correctness only). ``--ray ADDRESS`` (or
``--ray local`` for a one-node cluster started by this command): one Ray task per item.

Sizes (KernelBench): ``--set NAME=VALUE`` and ``--scale F`` apply to every problem that defines the
constant; ``--set PROBLEM:NAME=VALUE`` and ``--scale PROBLEM:F`` to that problem alone, on top.

Every finished item is appended to ``DIR/.kerneltui/suite-results.jsonl`` (``--results FILE``);
a second run with the same sources and options, on the same GPU, driver and kerneltui/torch/DSL
versions, takes those verdicts instead of running again, so an interrupted suite resumes; it says
which items it verifies again and why (``--restart`` runs everything again).

Exit status: 0 every candidate correct, 1 some failed or are missing, 2 a usage error or a task
error in some problem (with ``--json``, a JSON error object when the suite cannot start), 3 a fault of
the machine (no space left, a folder kerneltui may not write, a bad setting) stopped some item's run
(whatever the others came to: those items have no verdict, are marked ``ERROR (environment)`` with
what to do, are left out of fast_p and are verified again by the next run), 130 interrupted (Ctrl-C:
the table of the verdicts so far is printed; the same command resumes).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    EXIT_ENVIRONMENT,
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    add_format_options,
    colour,
    load_options,
    parse_rungs,
    print_json,
    usage_error,
)

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it

if TYPE_CHECKING:
    from kerneltui.core.engine.client import EngineClient
    from kerneltui.core.suite.discover import Suite
    from kerneltui.core.suite.prepare import ProblemSizes
    from kerneltui.core.task import LoadOptions

# A problem's own --set and --scale: PROBLEM:NAME=VALUE and PROBLEM:F (a problem's name has no ':').
PROBLEM_SET = re.compile(r"^([^:=\s]+):([A-Za-z_]\w*=.+)$")
PROBLEM_SCALE = re.compile(r"^([^:=\s]+):(.+)$")

EPILOG = """candidates (without --candidates, beside the problems):
  KernelBench  <stem>_new.py or <stem>_kernel.py next to <id>_<Name>.py
  GPU MODE     <problem>/submission.py (or the @SUBMISSION@ name in task.yml's files:)
  native       <task>/<kernel> as task.toml names it
with --candidates DIR:
  KernelBench  DIR/level_<L>_problem_<id>_sample_<s>_kernel.py (KernelBench's run layout, every sample),
               DIR/<stem>_new.py or DIR/<stem>.py
  GPU MODE, native  every kernel file in DIR/<problem>/ (ranked per problem), or DIR/<problem>.py
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suite", help="check every problem of a KernelBench, GPU MODE or task folder; fast_p, "
                                     "geomean speedup, ranking", description=__doc__,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="a KernelBench level folder, a GPU MODE problems folder or a folder of task folders")
    p.add_argument("--candidates", metavar="DIR", help="take the candidates from this folder (layouts below)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--rungs", help="comma-separated rungs (default: prechecks through benchmark and roofline)")
    p.add_argument("--seeds", type=int, help="seeds per test case (a hidden seed is always added)")
    p.add_argument("--timeout", type=float, help="seconds each rung may take (overrides the tasks' timeouts)")
    p.add_argument("--arch", help="target for ahead-of-time compiles without a GPU (default sm_90a)")
    p.add_argument("-j", "--jobs", type=int, help="items verified at once here (default: one per GPU, 2 without)")
    p.add_argument("--ray", metavar="ADDRESS", help="run each item as a Ray task on this cluster (auto, HOST:PORT, "
                                                    "ray://HOST:PORT), or `local` to start a one-node cluster here")
    p.add_argument("--results", metavar="FILE", help="the results file (default DIR/.kerneltui/suite-results.jsonl)")
    p.add_argument("--restart", action="store_true", help="forget earlier results and verify every item again")
    p.add_argument("--sample", choices=["first", "best"], default="first",
                   help="which of a problem's samples counts for fast_p (per problem, as KernelBench counts): the "
                        "first (default) or the best correct one")
    add_format_options(p, per_problem=True)
    engine_use.add_option(p)
    p.set_defaults(func=main)


def sizes_from(args: argparse.Namespace, suite: Suite) -> tuple[LoadOptions, dict[str, ProblemSizes]]:
    """The suite's load options and each named problem's own sizes; a malformed value, a suite-wide
    --scale given twice or a problem the suite lacks raises ValueError saying which."""
    from kerneltui.core.suite.prepare import ProblemSizes

    common_sets: list[str] = []
    own_sets: dict[str, list[str]] = {}
    for text in args.constants or []:
        m = PROBLEM_SET.match(text)
        if m:
            own_sets.setdefault(_problem(m.group(1), f"--set {text}", suite), []).append(m.group(2))
        else:
            common_sets.append(text)
    scale: float | None = None
    own_scales: dict[str, float] = {}
    for text in args.scales or []:
        m = PROBLEM_SCALE.match(text)
        if m:
            own_scales[_problem(m.group(1), f"--scale {text}", suite)] = _factor(m.group(2), text)
        elif scale is not None:
            raise ValueError(f"--scale {text}: the suite's factor is already {scale:g}; name a problem to scale "
                             "it alone (--scale PROBLEM:F)")
        else:
            scale = _factor(text, text)
    load = load_options(argparse.Namespace(backend=args.backend, constants=common_sets, scale=scale,
                                           allow_ops=args.allow_ops))
    sizes = {}
    for problem in dict.fromkeys([*own_sets, *own_scales]):
        own = load_options(argparse.Namespace(backend=None, constants=own_sets.get(problem, []), scale=None))
        sizes[problem] = ProblemSizes(constants=own.constants, scale=own_scales.get(problem))
    return load, sizes


def _problem(name: str, flag: str, suite: Suite) -> str:
    if name in suite.problems:
        return name
    close = difflib.get_close_matches(name, suite.problems, n=3)
    hint = f"did you mean {' or '.join(close)}?" if close else f"its problems: {', '.join(suite.problems[:8])}" + (
        " …" if len(suite.problems) > 8 else "")
    raise ValueError(f"{flag}: {suite.root} has no problem {name!r} (a problem is named by its file's stem or "
                     f"folder); {hint}")


def _factor(text: str, flag_value: str) -> float:
    try:
        factor = float(text)
    except ValueError:
        raise ValueError(f"--scale {flag_value}: write a factor F or PROBLEM:F, e.g. --scale 0.01") from None
    if not 0 < factor < float("inf"):
        raise ValueError(f"--scale {flag_value}: the factor must be positive")
    return factor


def main(args: argparse.Namespace) -> int:
    from kerneltui.core import rungs as rung_registry
    from kerneltui.core.batch import local_slots
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.suite import prepare as suite_prepare
    from kerneltui.core.suite import run as suite_run
    from kerneltui.core.suite.discover import SuiteError, discover
    from kerneltui.core.suite.record import RESULTS_NAME, ItemResult, ResultsFile
    from kerneltui.core.suite.score import summarise
    from kerneltui.core.suite.table import format_summary, format_table, progress_line

    try:
        suite = discover(Path(args.dir), Path(args.candidates) if args.candidates else None)
        load, sizes = sizes_from(args, suite)
        rungs = rung_registry.resolve(parse_rungs(args.rungs) or suite_run.SUITE_RUNGS)
    except (ValueError, SuiteError) as exc:
        return usage_error(args, str(exc))
    if args.seeds is not None and args.seeds < 1:
        return usage_error(args, "--seeds must be at least 1")
    if args.jobs is not None and args.jobs < 1:
        return usage_error(args, "-j must be at least 1")

    info: dict[str, Any] = {}
    engine: EngineClient | None = None  # the background engine's client, for a run on this machine
    if args.ray:
        from kerneltui.core.remote.ray_runner import RayUnavailable, cluster_gpus, connect

        try:
            gpus = cluster_gpus(connect(args.ray))
        except RayUnavailable as exc:
            return usage_error(args, str(exc))
        where = f"Ray cluster {args.ray} ({gpus} GPU{'s' if gpus != 1 else ''})"
    else:
        slots = local_slots(args.jobs)
        gpus = sum(1 for s in slots if s.gpu is not None)
        where = ", ".join(s.label for s in slots)
        info["slots"] = [s.label for s in slots]
        # The engine's workers see every GPU of this machine; with several, each slot's workers are
        # pinned to its own GPU instead, so two benchmarks never share one.
        engine = engine_use.engine_client(args) if gpus <= 1 else None
        if engine is not None:
            where += " through the engine"
    info["engine"] = engine is not None  # a Ray suite's runs are the cluster's: never the engine's
    timed = gpus > 0
    if not timed:
        rungs = [r for r in rungs if not rung_registry.spec(r).needs_gpu]
    options = RunOptions(rungs=rungs, seeds=args.seeds, timeout_s=args.timeout, arch=args.arch, record=False,
                         origin="suite")
    settings = {"rungs": rungs, "seeds": args.seeds, "timeout": args.timeout, "arch": args.arch, "gpu": timed}

    results = ResultsFile(Path(args.results) if args.results else suite.root / ".kerneltui" / RESULTS_NAME)
    if args.restart:
        results.clear()
    from kerneltui.core.suite.environment import ray_cluster, this_machine

    environment = ray_cluster(args.ray) if args.ray else this_machine()
    prepared = suite_prepare.prepare(suite, load, settings, sizes)
    known = {p.item.key for p in prepared if p.done is not None}  # task errors, no candidate: no run needed
    resumed = suite_prepare.reuse(prepared, results, environment)
    reused = resumed.reused
    for p in prepared:
        if p.item.key in known and p.done is not None:
            p.done.environment = dict(environment)
            results.append(p.done)

    if not args.json:
        todo = sum(1 for p in prepared if p.done is None)
        print(f"suite {suite.root} ({suite.format}): {len(suite.problems)} problems, {len(suite.items)} items; "
              f"{todo} to verify on {where}", flush=True)
        if reused:
            print(f"resuming: {reused} verdicts from {results.path} (--restart to verify them again)", flush=True)
        for why, count in Counter(why for _, why in resumed.reverify).items():
            print(f"verifying {count} again: {why}", flush=True)
        if not timed:
            print("no GPU: correctness only (no benchmark, no speedups, no fast_p)", flush=True)

    def progress(result: ItemResult) -> None:
        if not args.json:
            print(progress_line(result, colour), flush=True)

    started = time.perf_counter()
    interrupted = False
    try:
        if args.ray:
            final, ray_info = suite_run.run_ray(prepared, args.ray, options, results, on_result=progress,
                                                environment=environment)
            info.update(ray_info)
        else:
            final = suite_run.run_local(prepared, slots, options, results, on_result=progress, engine=engine,
                                        say=lambda message: print(f"kerneltui suite: {message}", file=sys.stderr),
                                        environment=environment)
    except KeyboardInterrupt:
        # Ctrl-C: what landed is in the results file already; show it, and how to go on.
        interrupted = True
        final = [p.done for p in prepared if p.done is not None]
    wall = time.perf_counter() - started
    summary = summarise(final, timed, args.sample)
    if interrupted:
        note = (f"interrupted: {len(final)} of {len(prepared)} items verified; run the same command again to "
                f"resume from {results.path}")
        if args.json:
            print_json({"suite": str(suite.root), "interrupted": True, "note": note, "summary": summary.to_json(),
                        "results": [r.to_json() for r in final]})
        else:
            print()
            print(format_table(final))
            print()
            print(format_summary(summary, wall))
            print(note, flush=True)
        return EXIT_INTERRUPTED
    if args.json:
        print_json({"suite": str(suite.root), "format": suite.format, "runner": "ray" if args.ray else "local",
                    "gpu": timed, "wall_s": round(wall, 3), "results_file": str(results.path), "reused": reused,
                    "reverified": [{"key": key, "why": why} for key, why in resumed.reverify],
                    "environment": environment,
                    **info, "summary": summary.to_json(), "results": [r.to_json() for r in final]})
    else:
        print()
        print(format_table(final))
        print()
        print(format_summary(summary, wall))
    fault = next((r.failure for r in final if r.status == "environment"), None)
    if fault is not None:
        print(f"kerneltui suite: ERROR (environment): {fault}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    if summary.task_errors:
        return EXIT_USAGE
    return EXIT_OK if summary.correct == summary.items else EXIT_FAIL

