"""Run the candidate under Proton's instrumentation (worker side; imports Triton when called).

Three sessions, so that what is read is one clean launch: the first compiles the instrumented
build (Triton keys its cache on the instrumentation mode) and is thrown away; the second times
``reps`` traced calls (its trace is thrown away too: every launch of a session lands in the same
file under the same names); the third records exactly one call, whose Chrome trace is read into
kerneltui's per-CTA buffers here, in the worker, so only the folded words cross the protocol
(a trace of every warp of a large launch runs to hundreds of megabytes).

Triton 3.6 instruments kernels written in the Triton DSL only after
``triton.profiler.language.enable_semantic("triton")`` (by default only Gluon's); that is done
here. Outside a session ``pl.scope`` compiles to nothing, so the kernel's untraced build is the
plain one.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from kerneltui.core.trace.buffer import TraceBufferData
from kerneltui.core.trace.proton import read_chrome_trace


def unavailable() -> str | None:
    """Why Proton cannot instrument a kernel in this worker, or None."""
    try:
        import triton.profiler as proton
        import triton.profiler.language as pl
    except ImportError as exc:
        return f"this Triton has no Proton ({exc})"
    try:
        from triton._C.libproton import proton as _libproton  # noqa: F401
    except ImportError as exc:
        return f"this Triton was built without Proton's library ({exc})"
    if not hasattr(proton, "finalize") or not hasattr(pl, "scope"):
        return "this Triton's Proton has no intra-kernel scopes (triton.profiler.language.scope)"
    return None


def allow_scopes_in_interpreter() -> None:
    """Let ``pl.scope`` run under the Triton interpreter (no GPU), where it records nothing.

    Proton's scope functions are Triton builtins that insist on the compiler's ``_semantic``
    argument; the interpreter supplies it to ``triton.language``'s builtins but not to Proton's,
    so a kernel with scopes would fail on the CPU before its first line ran. Outside an
    instrumentation session a scope compiles to nothing, and that is what it does here.
    """
    try:
        import triton.profiler.language as pl
    except ImportError:
        return
    for name in ("enter_scope", "exit_scope"):
        original = getattr(pl, name, None)
        if original is None or getattr(original, "_kerneltui_interpreter", False):
            continue

        def tolerant(scope_name: Any, _semantic: Any = None, _original: Any = original) -> Any:
            if _semantic is None:
                return None
            return _original(scope_name, _semantic=_semantic)

        tolerant._kerneltui_interpreter = True  # type: ignore[attr-defined]  # a marker on the function: mypy does not model attributes set on functions
        setattr(pl, name, tolerant)


class ProtonTrace(TypedDict):
    """What ``trace`` gives the trace op's reply (``replies.TraceReply``), and the traced call's output."""

    traced_ms: list[float]
    buffers: list[TraceBufferData]  # per kernel
    out: Any  # the traced call's output, compared with the untraced one's
    source: str  # "proton"


def trace(call: Callable[[Any], Any], inputs: Any, time_calls: Callable[[], list[float]],
          workdir: Path, sync: Callable[[], None]) -> ProtonTrace:
    """``traced_ms``, ``buffers`` (``TraceBuffer.to_dict()`` per kernel), ``out`` (the traced call's
    output) and ``source`` for the trace op's reply."""
    import triton.profiler as proton
    import triton.profiler.language as pl

    if hasattr(pl, "enable_semantic"):
        try:
            pl.enable_semantic("triton")
        except (KeyError, ValueError):
            pass
    folder = Path(tempfile.mkdtemp(prefix="proton-", dir=workdir))
    try:
        with _ProtonSession(proton, folder / "warmup"):
            call(inputs)
            sync()
        with _ProtonSession(proton, folder / "timed"):
            traced_ms = time_calls()
        recorded = folder / "trace"
        with _ProtonSession(proton, recorded):
            out = call(inputs)
            sync()
        path = recorded.with_suffix(".chrome_trace")
        if not path.is_file():
            raise RuntimeError(f"Proton wrote no trace ({path.name} is missing after finalize)")
        buffers = read_chrome_trace(json.loads(path.read_text(encoding="utf-8")))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"traced_ms": traced_ms, "buffers": [b.to_dict() for b in buffers], "out": out, "source": "proton"}


class _ProtonSession:
    def __init__(self, proton: Any, path: Path) -> None:
        self.proton = proton
        self.path = path

    def __enter__(self) -> None:
        self.proton.start(str(self.path), backend="instrumentation", data="trace")

    def __exit__(self, *exc: object) -> None:
        self.proton.finalize()
