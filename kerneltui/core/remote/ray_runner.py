"""Verifying many candidates on a Ray cluster: each candidate's whole run is one Ray task.

The task asks for ``num_gpus=1`` (``num_cpus=1`` when the cluster has no GPU, where nothing is
benchmarked anyway), so Ray gives it a GPU of its own and sets ``CUDA_VISIBLE_DEVICES``: the
candidate's benchmark never shares a GPU with another benchmark. Inside the Ray task the ordinary
loop runs with local single-use workers, which are *child processes* of the Ray worker: a kernel
that segfaults or hangs kills its child, fails its rung, and the Ray worker lives on.

The task's source files travel with each Ray task (they are small) as published, with the options
the task was loaded with (``--backend``, ``--set``, ``--scale``): the node loads it as this machine
did, so a candidate's own copies of rewritten constants follow there too. kerneltui itself travels
as a ``py_modules`` entry of the runtime environment, so the nodes need Python, torch and Ray but
no kerneltui install. Results come back as the run's JSON report; dump folders stay on the node.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

import kerneltui
from kerneltui.core.batch import (
    Candidate,
    CandidateResult,
    Placement,
    failed_result,
    rank,
    result_from_report,
)
from kerneltui.core.loop import RunReportJson
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import LoadOptionsData, Task

LOCAL = "local"  # --ray local: start a one-machine cluster in this process


class RayUnavailable(Exception):
    """Ray is not installed or the cluster cannot be reached; the message says what to do."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("--ray needs the `ray` package: pip install 'kerneltui[remote]' (or pip install ray)") from exc
    return ray


def connect(address: str, **init: Any) -> Any:
    """Join the cluster at ``address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``) or start ``local``.

    kerneltui travels to the nodes as a ``py_modules`` entry (Ray uploads local folders only for
    the whole job, so it is given here). ``init`` adds ``ray.init`` arguments (a local cluster's
    ``num_cpus``/``num_gpus``).
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    package = str(Path(kerneltui.__file__).resolve().parent)
    runtime_env = dict(init.pop("runtime_env", None) or {})
    runtime_env.setdefault("py_modules", [package])
    kwargs: dict[str, Any] = {"logging_level": "warning", "log_to_driver": False, "runtime_env": runtime_env, **init}
    try:
        if address == LOCAL:
            ray.init(include_dashboard=False, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        hint = ("start one with `ray start --head` on the GPU machine" if address == "auto"
                else "check the address printed by `ray start --head` (HOST:6379 or ray://HOST:10001)")
        raise RayUnavailable(f"could not join the Ray cluster at {address!r}: {exc}; {hint}") from exc
    return ray


class TaskBundle(TypedDict):
    """What a node needs to rebuild the task as this machine loaded it."""

    files: dict[str, str]  # the task's source files as published, linked files in place
    path: str  # what to load, relative to the files' folder
    kernel_file: str
    name: str
    load: LoadOptionsData  # --backend, --set, --scale, applied on the node again


def task_bundle(task: Task) -> TaskBundle:
    """The task's published files and load options: loading them again, the node rewrites the
    module constants, and the candidate's own copies of them (whatever source it is given), as
    ``load_task`` did here."""
    path = task.reference_file if task.format == "kernelbench" else "."
    return {"files": task.published_sources(), "path": path, "kernel_file": task.kernel_file, "name": task.name,
            "load": task.load.to_dict()}


def cluster_gpus(ray: Any) -> int:
    return int(ray.cluster_resources().get("GPU", 0))


class NodeOutcome(TypedDict):
    """What one Ray task sends back: the run's report, where it ran and who held which GPU when."""

    report: RunReportJson
    where: str
    placement: Placement


def verify_on_node(bundle: TaskBundle, source: str, options: dict[str, Any]) -> NodeOutcome:
    """The body of one Ray task: rebuild the task in a temp folder and run the loop on the candidate.

    The loop's workers are local child processes of this Ray worker (LocalRunner), so candidate
    code never runs in the Ray worker itself, and they run in the node's sandbox with the same
    environment allow-list as on a workstation: nothing of the Ray worker's environment but the
    allowed names reaches them.
    """
    from kerneltui.core.loop_factory import check_once
    from kerneltui.core.task import LoadOptions
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.core.worker.parent.runner import LocalRunner, set_default_runner

    started_at = time.time()
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES") or None  # set by Ray for a task holding a GPU
    where = f"{socket.gethostname()} " + (f"gpu {gpu}" if gpu else "cpu") + f" (pid {os.getpid()})"
    # The worker children import kerneltui from wherever this Ray worker got it (py_modules).
    package_parent = str(Path(kerneltui.__file__).resolve().parent.parent)
    inherited = os.environ.get("PYTHONPATH")
    set_default_runner(LocalRunner(env={"PYTHONPATH": package_parent + (os.pathsep + inherited if inherited else "")}))
    with tempfile.TemporaryDirectory(prefix="kerneltui-ray-") as tmp:
        root = Path(tmp) / bundle["name"]
        for rel, text in bundle["files"].items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        task = load_task(root / bundle["path"], root / bundle["kernel_file"], LoadOptions.from_dict(bundle["load"]))
        run_options = replace(RunOptions.from_dict(options), kernel_source=source, record=False, origin="batch")
        report = asyncio.run(check_once(task, run_options))
    placement: Placement = {"host": socket.gethostname(), "gpu": gpu, "pid": os.getpid(), "started_at": started_at,
                            "finished_at": time.time()}
    return {"report": report.to_json(), "where": where, "placement": placement}


def verify_ray(task: Task, candidates: list[Candidate], address: str, options: RunOptions,
               on_result: Callable[[CandidateResult], None] | None = None,
               use_gpus: bool | None = None) -> tuple[list[CandidateResult], dict[str, Any]]:
    """Run every candidate as a Ray task; ranked results and a note on what the cluster offered."""
    bundle = task_bundle(task)
    results, info = verify_bundles([(c.name, bundle, c.source) for c in candidates], address, options,
                                   on_result, use_gpus)
    return rank(results), info


def node_options(options: RunOptions) -> dict[str, Any]:
    """The options every Ray task gets: without a kernel text (each task has its own) and with this
    command's ``[benchmark]`` settings, not the node's configuration."""
    return replace(options, kernel_source=None).with_configured_benchmark().to_dict()


def verify_bundles(jobs: list[tuple[str, TaskBundle, str]], address: str, options: RunOptions,
                   on_result: Callable[[CandidateResult], None] | None = None,
                   use_gpus: bool | None = None) -> tuple[list[CandidateResult], dict[str, Any]]:
    """One Ray task per (name, task bundle, candidate source); results in finishing order (a suite
    sends a bundle per problem, a batch one bundle for all)."""
    ray = connect(address)
    gpus = cluster_gpus(ray)
    with_gpu = gpus > 0 if use_gpus is None else use_gpus
    resources = {"num_gpus": 1, "num_cpus": 0} if with_gpu else {"num_cpus": 1}
    remote = ray.remote(verify_on_node).options(**resources, max_retries=0)
    plain = node_options(options)
    # One copy of each bundle in the object store, however many candidates share it.
    stored: dict[int, Any] = {}
    pending = {}
    for name, bundle, source in jobs:
        ref = stored.setdefault(id(bundle), ray.put(bundle))
        pending[remote.remote(ref, source, plain)] = name
    results: list[CandidateResult] = []
    started = time.perf_counter()
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        ref = done[0]
        name = pending.pop(ref)
        try:
            out = ray.get(ref)
            result = result_from_report(name, out["report"], out["where"], out["placement"])
        except Exception as exc:  # the Ray task itself died (node lost, out of memory): say so, go on
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            result = failed_result(name, f"the Ray task failed: {first}", "ray", time.perf_counter() - started)
        results.append(result)
        if on_result is not None:
            on_result(result)
    info = {"cluster_gpus": gpus, "per_task": resources, "cluster": address}
    return results, info
