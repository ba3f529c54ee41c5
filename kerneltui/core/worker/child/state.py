"""What a worker process holds between requests: device facts, the task copy, loaded modules."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kerneltui.core.task import TaskData
from kerneltui.core.worker.contract.replies import DeviceInfo, WorkerError


def share_the_cores(torch: Any, has_gpu: bool) -> None:
    """With no GPU, give torch's intra-op threads half of this process's cores.

    A run's judge and kernel worker compute side by side (the correctness checks are a pipeline:
    the judge makes the next inputs and judges the last output while the kernel runs), beside the
    parent. With torch's default, every core for each process, their OpenMP threads spun waiting
    for cores the other process held: on 2 cores vector_add's save → correctness verdict took
    0.38 s, against 0.28 s with one thread each. With a GPU the two processes' tensor work runs on
    it; what is left on the CPU (a reference making its inputs there, which wants every core) has
    not been measured with fewer threads, so torch's default stays. A count the person set
    (``OMP_NUM_THREADS``) stands; it is set here too, as a worker forked from a zygote has the
    thread count torch chose when the zygote imported it."""
    wanted = os.environ.get("OMP_NUM_THREADS", "").strip()
    if wanted.isdigit() and int(wanted) > 0:
        torch.set_num_threads(int(wanted))
    elif not has_gpu:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        torch.set_num_threads(max(1, cores // 2))


@dataclass
class LaunchRecord:
    """One kernel launch seen by a backend hook while candidate code ran."""

    backend: str
    kernel: str
    detail: dict[str, Any] = field(default_factory=dict)


class WorkerState:
    def __init__(self, backend_name: str, arch: str | None = None, role: str = "candidate",
                 workdir: Path | None = None) -> None:
        self.role = role  # "candidate" (imports the kernel) or "judge" (imports the reference, never the kernel)
        self.backend_name = backend_name
        self.arch = arch or "sm_90a"  # target for ahead-of-time compiles when there is no GPU
        self.backend: Any = None  # kerneltui.core.backends.<name>.Backend instance
        self.torch: Any = None
        self.device: str = "cpu"
        self.has_gpu = False
        self.info: DeviceInfo = {}
        # The folder of the task copy: the caller's, else the box's scratch folder (the box removes it
        # when the process has exited), else one of our own, which discard() removes.
        boxed = os.environ.get("KERNELTUI_WORKER_SCRATCH")
        self.owns_workdir = workdir is None and not boxed
        self.workdir = workdir or Path(boxed or tempfile.mkdtemp(prefix="kerneltui-worker-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.task_dir = self.workdir / "task"
        self.task: TaskData = {}
        self.runtime: Any = None  # kerneltui.core.worker.child.runtime.TaskRuntime
        self.launches: list[LaunchRecord] = []
        self.recording = False
        self.poisoned = False
        self.integrity: Any = None  # kerneltui.core.worker.child.integrity.IdentitySnapshot
        self.artifacts: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.first_call_error: WorkerError | None = None
        self.compile_launches: list[LaunchRecord] = []
        self.dump_notes: list[str] = []  # what a backend's collect_artifacts could not do, for the dump rung
        self.exchange: Any = None  # kerneltui.core.worker.contract.wire.Exchange, once the task is installed
        self.recorder: Any = None  # kerneltui.core.worker.child.evidence.Recorder (candidate side)
        self.dispatch_table: dict[str, str] | None = None  # evidence.dispatch_table, taken at warm-up
        self.known_code: Any = None  # known_code.KnownCode, taken at warm-up
        self.case_inputs: dict[int, Any] = {}  # test-case inputs the judge made, for the dump
        self.interpreter_hooks: tuple[Any, Any] = (None, None)  # sys profile/trace hooks before candidate code
        # Set by the ops as a run goes on (None until the op that sets them has run):
        self.threads_at_load: set[int | None] | None = None  # thread ids before the kernel's import (ops_candidate)
        self.previous_output: tuple[Any, Any] | None = None  # the last call's output and its tree.contents at return
        self.judge: Any = None  # ops_judge.Judge, once the judge has loaded the reference
        self.bench_case: Any = None  # ops_bench.KernelBench: the benchmark case open in the candidate's worker
        self.bench_pool: tuple[int, Any, Any] | None = None  # the judge's (case, timing.InputPool, OutputCheck)
        self.compare_runtimes: dict[str, Any] | None = None  # ops_compare: kernel A's and B's TaskRuntime

    def discard(self) -> None:
        """Remove the task copy's folder if this state made it (a worker run outside a box)."""
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- start-up ---------------------------------------------------------------------------

    def warm_up(self) -> DeviceInfo:
        """Import torch (and, for the candidate's worker, the backend's DSL): the "warm" part."""
        import torch

        from kerneltui.core.worker.child.device_info import describe_device

        self.torch = torch
        self.has_gpu = bool(torch.cuda.is_available())
        share_the_cores(torch, self.has_gpu)
        if self.has_gpu:
            self.device = "cuda"
            torch.cuda.init()
        else:
            # The interpreter is chosen when triton.jit decorates (triton's own library functions
            # too), so it must be set before anything imports triton — torch._dynamo does (and a
            # zygote, before it imports what contract.start.warm_imports names).
            os.environ.setdefault("TRITON_INTERPRET", "1")
        if self.role == "judge":
            # The judge runs no kernel: torch, and Triton on a GPU (the benchmark's recheck kernel).
            if self.has_gpu:
                import triton  # noqa: F401
            # Not torch._inductor: the poisoned allocations of every case the judge makes set the
            # deterministic mode without it (ops_candidate.set_deterministic_algorithms).
            self.info = describe_device(self)
            self.info["backend"] = "judge"
            return self.info
        # torch._dynamo rewraps torch.manual_seed when it is first imported, which the identity checks
        # would take for a patch; and it is imported anyway at the first op of the candidate's first
        # call (torch wraps every dispatch mode's handler, the operator recorder's too, in
        # torch._disable_dynamo): here, before any snapshot and off a warm spare's critical path.
        import torch._dynamo  # noqa: F401

        from kerneltui.core.backends import backend_for

        self.backend = backend_for(self.backend_name)
        self.backend.warm(self)
        if not self.backend.spec.torch_is_the_kernel:  # its record is not judged: nothing to compare with
            # Before any candidate code: torch's operators as torch registered them, and the code
            # loaded so far (the operator record compares with both). Worked out once per process:
            # a zygote does it before it forks (~0.25 s), an exec'd worker here, off a spare's
            # critical path.
            from kerneltui.core.worker.child.evidence import dispatch_table
            from kerneltui.core.worker.child.known_code import known_code

            self.dispatch_table = dispatch_table(torch)
            self.known_code = known_code(os.path.join(os.path.dirname(torch.__file__), ""))
        self.info = describe_device(self)
        self.info["backend"] = self.backend_name
        return self.info

    # -- the task ---------------------------------------------------------------------------

    def install_task(self, task: TaskData, files: dict[str, str]) -> None:
        if self.task_dir.exists():
            shutil.rmtree(self.task_dir)
        self.task_dir.mkdir(parents=True)
        for name, text in files.items():
            target = (self.task_dir / name).resolve()
            if self.task_dir.resolve() not in target.parents:
                raise ValueError(f"refusing to write {name} outside the task copy")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        self.task = task
        sys.path.insert(0, str(self.task_dir))
        os.chdir(self.task_dir)

    def import_file(self, rel: str, module_name: str) -> ModuleType:
        path = self.task_dir / rel
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {rel}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module

    def case_input(self, index: int) -> Any:
        """The inputs of test case ``index`` (the benchmark case after the tests), as the judge made
        them for the dump (``args["cases"]`` of the dump op)."""
        if index not in self.case_inputs:
            raise KeyError(f"no inputs for case {index} were sent with the request")
        wire = self.case_inputs[index]
        assert self.exchange is not None
        return self.exchange.load(wire, f"case{index}")

    def record_launch(self, backend: str, kernel: str, tensors: list[Any] | None = None, **detail: Any) -> None:
        """A launch the backend's hook saw (its tensor arguments where the hook can see them)."""
        with self.launching(backend, kernel, tensors, **detail):
            pass

    @contextlib.contextmanager
    def launching(self, backend: str, kernel: str, tensors: list[Any] | None = None, **detail: Any) -> Iterator[None]:
        """Around one launch of the backend: counted, and its arguments recorded as written by it."""
        if not self.recording:
            yield
            return
        self.launches.append(LaunchRecord(backend, kernel, detail))
        recorder = self.recorder
        if recorder is None:
            yield
            return
        recorder.launch_begins(kernel, tensors)
        try:
            yield
        finally:
            recorder.launch_ends()
            if tensors is None:
                recorder.launch_without_arguments(kernel, recorder.allocated_in_call)

    def original_path(self, path: str) -> str | None:
        """Map a path inside the worker's task copy back to the task-relative name."""
        try:
            rel = Path(path).resolve().relative_to(self.task_dir.resolve())
        except (ValueError, OSError):
            return None
        return rel.as_posix()

    def sync(self) -> None:
        if self.has_gpu:
            self.torch.cuda.synchronize()
