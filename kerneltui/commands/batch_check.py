"""``kerneltui check TASK --kernels DIR_OR_GLOB``: verify many candidates and print them ranked.

Here (default): one candidate at a time per visible GPU, or ``-j`` at once without a GPU. With
``--gpu-host``: on that machine over SSH (``-j N`` pins N candidates to its GPUs 0..N-1). With
``--ray ADDRESS``: one Ray task per candidate, each holding a GPU of the cluster.
Exit status: 3 when a fault of the machine (a full disk, a folder kerneltui may not write, a bad
setting) stopped any candidate's run: those candidates have no verdict, so the ranking is not whole
(the table marks them ``ERROR (environment)`` and says what to do); else 0 when at least one candidate
is correct, 1 when none is; 2 for usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import replace
from typing import Any

from kerneltui.commands.common import (
    EXIT_ENVIRONMENT,
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    colour,
    parse_rungs,
    print_json,
)
from kerneltui.core.task import Task


def _usage(message: str) -> int:
    print(f"kerneltui: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_batch(args: argparse.Namespace, task: Task) -> int:
    from kerneltui.core.batch import BatchError, CandidateResult, find_candidates, format_table
    from kerneltui.core.rungs import resolve
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.worker.parent.runner import default_runner

    if not args.kernels:
        return _usage("--ray and -j go with --kernels DIR_OR_GLOB (the candidate kernels to verify)")
    if args.jobs is not None and args.jobs < 1:
        return _usage("-j must be at least 1")
    remote = default_runner()
    if args.ray and getattr(remote, "name", "local") != "local":
        return _usage("--ray and --gpu-host are two ways to reach GPUs: give one of them")
    if args.seeds is not None and args.seeds < 1:
        return _usage("--seeds must be at least 1")
    try:
        rungs = resolve(parse_rungs(args.rungs))
        candidates = find_candidates(args.kernels, task)
    except (ValueError, BatchError) as exc:
        return _usage(str(exc))
    options = RunOptions(rungs=rungs, seeds=args.seeds, timeout_s=args.timeout, arch=args.arch,
                         record=not args.no_history, origin="batch")

    def progress(result: CandidateResult) -> None:
        if not args.json:
            mark = (colour("ok  ", "32") if result.correct else colour("ERROR (environment)", "33")
                    if result.environment else colour("FAIL", "31"))
            print(f"  {mark} {result.name}  ({result.where}, {result.duration_s:.1f} s)"
                  + (f"  {result.failure}" if result.failure else ""), flush=True)

    if not args.json:
        where = f"Ray cluster {args.ray}" if args.ray else remote.describe()
        print(f"checking {len(candidates)} candidates for {task.name} ({task.backend}) on {where}", flush=True)
    started = time.perf_counter()
    info: dict[str, Any] = {}
    if args.ray:
        from kerneltui.core.remote.ray_runner import RayUnavailable, verify_ray

        try:
            results, info = verify_ray(task, candidates, args.ray, replace(options, record=False), on_result=progress)
        except RayUnavailable as exc:
            return _usage(str(exc))
        runner_name = "ray"
    else:
        from kerneltui.core.batch import verify_local
        from kerneltui.core.history import observer_for

        slots = _slots(remote, args.jobs)
        info = {"slots": [s.label for s in slots]}
        results = asyncio.run(verify_local(task, candidates, slots, options,
                                           observers=[observer_for(task)], on_result=progress))
        runner_name = getattr(remote, "name", "local")
    wall = time.perf_counter() - started
    if args.json:
        print_json({"task": task.name, "runner": runner_name, "wall_s": round(wall, 3), **info,
                    "results": [r.to_json() for r in results]})
    else:
        print()
        print(format_table(results))
        correct = sum(r.correct for r in results)
        stopped = sum(r.environment is not None for r in results)
        print(f"\n{correct}/{len(results)} correct" + (f" · {stopped} stopped by the machine, no verdict"
                                                       if stopped else "") + f" · {wall:.1f} s wall")
    fault = next((r.environment for r in results if r.environment), None)
    if fault is not None:
        print(f"kerneltui: ERROR (environment): {fault}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return EXIT_OK if any(r.correct for r in results) else EXIT_FAIL


def _slots(remote: Any, jobs: int | None) -> list[Any]:
    from kerneltui.core.batch import Slot, local_slots

    if getattr(remote, "name", "local") == "ssh":
        from kerneltui.core.remote.ssh import SSHRunner

        target = remote.target

        def over_ssh(env: dict[str, str]) -> Any:
            return SSHRunner(replace(target, env={**target.env, **env}))

        if not jobs or jobs == 1:
            return [Slot(label=target.host, make_runner=over_ssh)]
        return [Slot(label=f"{target.host} gpu {i}", gpu=str(i), make_runner=over_ssh) for i in range(jobs)]
    return local_slots(jobs)
