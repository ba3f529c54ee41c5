"""The interface every backend implements (worker side)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class BaseBackend:
    name = "base"
    label = "base"  # how messages name the DSL ("Triton", "CuTe DSL", …)
    # Whether the candidate must launch at least one kernel of this backend (torch: no).
    requires_launch = True

    def warm(self, state: Any) -> None:
        """Import the DSL so that a rerun does not pay for it."""

    def install_hooks(self, state: Any) -> None:
        """Patch the DSL's launch path so launches are counted (``state.record_launch``)."""

    def can_run(self, state: Any) -> tuple[bool, str]:
        """Whether kernels can execute here; otherwise the reason (compile-only)."""
        return True, ""

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
        from kerneltui.core.worker.errors import describe_exception

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
