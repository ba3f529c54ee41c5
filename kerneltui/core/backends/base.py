"""The interface every backend implements (worker side)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from kerneltui.core.backends.spec import BackendSpec


class BaseBackend:
    spec: ClassVar[BackendSpec]  # the backend's description (its module's SPEC)

    @property
    def label(self) -> str:
        return self.spec.label

    def warm(self, state: Any) -> None:
        """Import the DSL so that a rerun does not pay for it."""

    def use_override(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Point the DSL at a hand-edited compiler output (``core.override``; the worker's ``load``
        does it before the candidate imports). A backend that reads the override from the
        environment (``kerneltui.cuda.load``: ``KERNELTUI_PTX_OVERRIDE_DIR``) has nothing to add."""

    def install_hooks(self, state: Any) -> None:
        """Patch the DSL's launch path so launches are counted (``state.record_launch``)."""

    # Without a GPU, backends that compile ahead of time build their kernels and run nothing.
    compile_only = False

    def can_run(self, state: Any) -> tuple[bool, str]:
        """Whether kernels can execute here; otherwise the reason (compile-only)."""
        if self.compile_only:
            return False, f"no GPU: {self.label} kernels compile here but run only on a GPU"
        return True, ""

    def first_call_owner(self) -> Callable[[BaseException], bool]:
        """Which errors of the first call fail the compile rung: compile errors, and with no GPU every
        error (no run rung follows to report a failing first call)."""
        return (lambda exc: True) if self.compile_only else self.is_compile_error

    def compile(self, state: Any, first_case_inputs: Callable[[], Any]) -> dict[str, Any]:
        """Compile the candidate's kernels; by default the first call does it (JIT)."""
        return first_call(state, first_case_inputs, self.is_compile_error)

    def is_compile_error(self, exc: BaseException) -> bool:
        return False

    def locate_error(self, exc: BaseException, state: Any) -> tuple[str, int] | None:
        """Task-relative file and line for an error in kernel code, when the DSL knows better
        than the Python traceback."""
        return None

    def kernels(self, state: Any) -> list[str]:
        """Names of the kernels the candidate defines or launched."""
        return sorted({rec.kernel for rec in state.launches})

    def collect_artifacts(self, state: Any, arch: str, progress: Callable[..., None]) -> list[dict[str, Any]]:
        """Compiler outputs per kernel for the dump rung (see core.asm)."""
        return []


class LocatedCompileError(Exception):
    """A DSL could not build a kernel; ``file``/``line`` (task-relative) say where, when known."""

    harness_message = True

    def __init__(self, message: str, file: str | None, line: int | None) -> None:
        super().__init__(message)
        self.file = file
        self.line = line


class PhaseMarks:
    """Where each exception was raised, "compile" or "run", as a DSL's wrapped entry points saw it
    go by; the first mark of an exception wins (the innermost entry point)."""

    def __init__(self) -> None:
        self._marks: dict[int, tuple[BaseException, str]] = {}

    def mark(self, exc: BaseException, where: str) -> None:
        if id(exc) not in self._marks:
            self._marks[id(exc)] = (exc, where)

    def phase_of(self, exc: BaseException) -> str | None:
        """The mark of the first exception in ``exc``'s chain that has one."""
        for err in exception_chain(exc):
            marked = self._marks.get(id(err))
            if marked is not None and marked[0] is err:
                return marked[1]
        return None


def first_call(state: Any, first_case_inputs: Callable[[], Any], is_compile_error: Callable[[BaseException], bool]) -> dict[str, Any]:
    """Call the candidate once on the first test case so a JIT compiles its kernels.

    A compile error fails the compile rung; any other error is kept for the run rung, which owns
    runtime failures (a crash still ends the process and is reported by the parent).
    """
    import time

    inputs = first_case_inputs()
    state.launches.clear()
    state.recording = True
    t0 = time.perf_counter()
    try:
        state.runtime.call(inputs)
        state.sync()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) or is_compile_error(exc):
            raise
        from kerneltui.core.worker.child.errors import describe_exception

        state.first_call_error = describe_exception(exc, state)
    finally:
        state.recording = False
    seconds = time.perf_counter() - t0
    launched = sorted({rec.kernel for rec in state.launches})
    first_launches = list(state.launches)
    state.compile_launches = first_launches
    result: dict[str, Any] = {"kernels": launched, "first_call_s": round(seconds, 4), "launch_count": len(first_launches)}
    if getattr(state, "first_call_error", None):
        result["first_call_error"] = state.first_call_error
    return result


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, innermost last; DSL errors that keep the original in ``cause`` too."""
    seen: list[BaseException] = []
    err: BaseException | None = exc
    while err is not None and all(err is not s for s in seen) and len(seen) < 16:
        seen.append(err)
        dsl_cause = getattr(err, "cause", None)
        err = err.__cause__ or (dsl_cause if isinstance(dsl_cause, BaseException) else None) or err.__context__
    return seen


def frame_in_task(exc: BaseException, state: Any) -> tuple[str, int] | None:
    """The innermost traceback frame in the task's own files, over the whole exception chain."""
    import os
    import traceback

    for err in exception_chain(exc):
        for frame in reversed(traceback.extract_tb(err.__traceback__)):
            # A compiled extension names its frames relatively (function.pxi): never a task file.
            if not os.path.isabs(frame.filename):
                continue
            rel = state.original_path(frame.filename)
            if rel is not None and frame.lineno:
                return rel, frame.lineno
    return None


def dump_cases(state: Any, notes: list[str]) -> Iterator[tuple[str, Any, bool]]:
    """(label, inputs, is the benchmark's) for every test case and the first benchmark case: the
    cases whose kernels a dump shows. A case whose inputs cannot be made is noted and skipped."""
    cases: list[tuple[str, dict[str, Any], bool]] = [("test", c, False) for c in state.task.get("tests") or []]
    benchmarks = state.task.get("benchmarks") or []
    if benchmarks:
        cases.append(("benchmark", benchmarks[0], True))
    for index, (kind, case, is_bench) in enumerate(cases):
        params = {k: v for k, v in case.items() if k != "seed"}
        label = f"{kind} " + (" ".join(f"{k}={v}" for k, v in params.items()) or "default")
        try:
            inputs = state.case_input(index)  # made by the judge, sent with the dump request
        except Exception as exc:
            notes.append(f"{label}: could not make its inputs for the dump ({type(exc).__name__}: {exc})")
            continue
        yield label, inputs, is_bench
        del inputs
