"""TileLang (``tilelang`` on PyPI, with its own TVM): JIT on a GPU, compile only without one.

What this backend adds to the DSL, all inside the worker:

* **Compiles seen.** Every TileLang compile goes through ``tilelang.jit.cached`` (``@tilelang.jit``
  kernels and ``tilelang.compile`` alike); it is wrapped to keep each compiled ``JITKernel`` for
  the dump and to ask TileLang for ``#line`` directives (``tl.emit_line_directives``), so that its
  generated CUDA, and the PTX and SASS built from it, point at the kernel's own Python lines.
* **Launch counting.** Every execution of a compiled kernel goes through ``JITKernel.__call__``.
* **Compile-only mode (no GPU).** TileLang lowers and runs nvcc without a driver; only execution
  needs one. The target is pinned to ``{"kind": "cuda", "arch": <--arch>}`` (TileLang would look
  for a GPU otherwise), and a call of a compiled kernel is recorded and answered with freshly
  allocated outputs of the declared shapes instead of running, so ``custom_kernel``'s host code
  goes on. Nothing reads those outputs: run and correctness are skipped without a GPU.
* **Compile errors with file:line.** Errors raised inside a compile entry (elaborating the
  ``@T.prim_func``, lowering, nvcc) are compile errors; TileLang's own ``--> file:line:col``
  marker locates those from its C++ passes, the traceback the Python ones.

The dump (``tilelang_dump.py``) compiles each kernel's generated CUDA source to PTX and a cubin
with TileLang's own nvcc options.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kerneltui.core.backends.base import (
    BaseBackend,
    LocatedCompileError,
    PhaseMarks,
    exception_chain,
    first_call,
    frame_in_task,
)
from kerneltui.core.backends.spec import BackendSpec, CacheHome, CompileCache, KernelMarker
from kerneltui.core.backends.tilelang_kernels import describe_kernel


def _tilelang_cache(home: CacheHome) -> str:
    return str(home.home / ".tilelang" / "cache")


SPEC = BackendSpec(
    name="tilelang",
    label="TileLang",
    kernel_file="kernel.py",
    marker=KernelMarker(re.compile(r"@\s*(tilelang\.)?jit\b|@\s*(T\.)?prim_func\b"),
                        "a @tilelang.jit kernel (or a @T.prim_func)"),
    caches=(CompileCache("TILELANG_CACHE_DIR", "TileLang cache", _tilelang_cache, "tilelang"),),
    env_prefixes=("TILELANG_", "TVM_"),  # TileLang's own TVM
)

LINE_DIRECTIVES = "tl.emit_line_directives"
# TileLang's C++ passes append this to a message when the IR node carries a source span.
SPAN_MARKER = re.compile(r"-->\s+(?P<file>[^\n]+?):(?P<line>\d+)(?::\d+)?\s*$", re.MULTILINE)


class TileLangCompileError(LocatedCompileError):
    """TileLang could not elaborate, lower or build a kernel (or, without a GPU, custom_kernel failed)."""


class TileLangMissing(RuntimeError):
    harness_message = True


class _Phase(threading.local):
    compiling = 0  # nesting of compile entries (only the outermost marks errors)
    dry = False  # the dump is calling custom_kernel to see which kernels it compiles: run nothing


class Backend(BaseBackend):
    spec = SPEC

    def __init__(self) -> None:
        self.compile_only = False
        self.compiled: dict[int, Any] = {}  # id -> JITKernel compiled (or taken from TileLang's cache) here
        self.calls: list[Any] = []  # JITKernels called while the dump watches (see dry_run)
        self._phase = _Phase()
        self._marks = PhaseMarks()
        self.tilelang: Any = None

    # -- start-up ------------------------------------------------------------------------------

    def warm(self, state: Any) -> None:
        self.compile_only = not state.has_gpu
        # Read by TileLang when it builds its settings: set before the first import.
        os.environ.setdefault("TILELANG_PRINT_ON_COMPILATION", "0")
        from kerneltui.paths import cache_dir

        os.environ.setdefault("TILELANG_CACHE_DIR", str(cache_dir() / "tilelang"))
        if self.compile_only:
            # "auto" would look for a GPU; without one the kernel is built for the asked architecture.
            os.environ["TILELANG_DEFAULT_TARGET"] = json.dumps({"kind": "cuda", "arch": state.arch})
        try:
            import tilelang
            import tilelang.language  # noqa: F401
        except ImportError as exc:
            import sys

            raise TileLangMissing(
                f"TileLang is not installed for {sys.executable} ({exc}): install it with "
                "pip install 'kerneltui[tilelang]' (./dev setup does)") from exc
        self.tilelang = tilelang
        if self.compile_only:
            state.notes.append(
                f"TileLang without a GPU: kernels are compiled for {state.arch} (CUDA source, PTX, cubin) but not run"
            )

    # -- hooks ---------------------------------------------------------------------------------

    def install_hooks(self, state: Any) -> None:
        jit_module: Any = importlib.import_module("tilelang.jit")  # `tilelang.jit` itself is the decorator
        from tilelang.jit.kernel import JITKernel

        if getattr(jit_module.cached, "_kerneltui_hook", False):
            return
        backend = self
        original_cached = jit_module.cached

        def cached(*args: Any, **kwargs: Any) -> Any:
            kwargs["pass_configs"] = with_line_directives(kwargs.get("pass_configs"))
            with backend._compiling():
                kernel = original_cached(*args, **kwargs)
            backend.compiled.setdefault(id(kernel), kernel)
            return kernel

        cached._kerneltui_hook = True  # type: ignore[attr-defined]  # a marker on the hook: mypy does not model attributes set on functions
        jit_module.cached = cached

        original_compile = jit_module.JITImpl.compile

        def compile_(impl: Any, *args: Any, **kwargs: Any) -> Any:  # elaborates the prim_func, then cached()
            with backend._compiling():
                return original_compile(impl, *args, **kwargs)

        jit_module.JITImpl.compile = compile_

        original_call = JITKernel.__call__

        def __call__(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            import torch

            name, symbol, block = describe_kernel(kernel)
            run = not (backend.compile_only or backend._phase.dry)
            # The arguments and what TileLang allocates inside the call are what the kernel wrote.
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            with state.launching("tilelang", name, tensors, symbol=symbol, block=block, executed=run):
                if backend._phase.dry:
                    backend.calls.append(kernel)
                if not run:
                    return allocate_outputs(kernel, args)
                try:
                    return original_call(kernel, *args, **kwargs)
                except BaseException as exc:
                    backend._marks.mark(exc, "run")
                    raise

        JITKernel.__call__ = __call__

    @contextmanager
    def _compiling(self) -> Iterator[None]:
        phase = self._phase
        phase.compiling += 1
        try:
            yield
        except BaseException as exc:
            if phase.compiling == 1:
                self._marks.mark(exc, "compile")
            raise
        finally:
            phase.compiling -= 1

    @contextmanager
    def dry_run(self) -> Iterator[list[Any]]:
        """Calls of compiled kernels are recorded and answered with empty outputs, not run."""
        self.calls = []
        was, self._phase.dry = self._phase.dry, True
        try:
            yield self.calls
        finally:
            self._phase.dry = was

    # -- compile -------------------------------------------------------------------------------

    def compile(self, state: Any, first_case_inputs: Callable[[], Any]) -> dict[str, Any]:
        owns = self.first_call_owner()
        try:
            result = first_call(state, first_case_inputs, owns)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) or not owns(exc):
                raise
            raise self._compile_error(exc, state) from exc
        if self.compile_only and not self.compiled:
            entry = state.task.get("entry_file", "kernel.py")
            raise TileLangCompileError(
                f"{entry}: custom_kernel compiled no TileLang kernel on the first test case: call a "
                "@tilelang.jit kernel (or what tilelang.compile returned) from custom_kernel", entry, None)
        result["compiled_kernels"] = len(self.compiled)
        return result

    def is_compile_error(self, exc: BaseException) -> bool:
        if isinstance(exc, TileLangCompileError):
            return True
        phase = self._marks.phase_of(exc)
        if phase is not None:
            return phase == "compile"
        return False

    def _compile_error(self, exc: BaseException, state: Any) -> TileLangCompileError:
        where = self.locate_error(exc, state) or frame_in_task(exc, state)
        file, line = where if where else (None, None)
        prefix = f"{file}:{line}: " if file and line else ""
        headline = _headline(exc)
        if not self.is_compile_error(exc):
            # Compile-only mode: the first call failed outside TileLang (host code in custom_kernel).
            return TileLangCompileError(f"{prefix}custom_kernel failed on the first test case: {headline}", file, line)
        return TileLangCompileError(f"{prefix}TileLang compile error: {headline}", file, line)

    def locate_error(self, exc: BaseException, state: Any) -> tuple[str, int] | None:
        for err in exception_chain(exc):
            if isinstance(err, TileLangCompileError) and err.file and err.line:
                return err.file, err.line
            for match in SPAN_MARKER.finditer(str(err)):
                path = match.group("file").strip()
                rel = state.original_path(path) if os.path.isabs(path) else None
                if rel is not None:
                    return rel, int(match.group("line"))
        return None

    # -- kernels and artifacts -------------------------------------------------------------------

    def kernels(self, state: Any) -> list[str]:
        names = {rec.kernel for rec in state.launches} | {rec.kernel for rec in state.compile_launches}
        names.update(describe_kernel(k)[0] for k in self.compiled.values())
        return sorted(names)

    def collect_artifacts(self, state: Any, arch: str, progress: Any) -> list[dict[str, Any]]:
        from kerneltui.core.backends.tilelang_dump import collect

        return collect(self, state, arch, progress)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def with_line_directives(pass_configs: Any) -> Any:
    """The kernel's pass configs with ``#line`` directives on, unless it says otherwise (or this
    TileLang predates the option)."""
    from tilelang.transform import PassConfigKey

    key = getattr(PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
    if key is None:
        return pass_configs
    configs = dict(pass_configs or {})
    if not any(str(getattr(k, "value", k)) == LINE_DIRECTIVES for k in configs):
        configs[LINE_DIRECTIVES] = True
    return configs


def allocate_outputs(kernel: Any, args: tuple[Any, ...]) -> Any:
    """What a call of ``kernel`` returns, without running it: empty tensors of its outputs'
    declared shapes (symbolic sizes read from the inputs), on the inputs' device."""
    import torch

    params = list(kernel.params)
    outs = sorted(int(i) for i in (kernel.out_idx or []))
    if not outs:
        return None
    func = kernel.prim_func
    inputs = iter(args)
    sizes: dict[str, int] = {}
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
    for index, var in enumerate(func.params):
        if index in outs:
            continue
        value = next(inputs, None)
        buffer = func.buffer_map.get(var)
        if buffer is None or not isinstance(value, torch.Tensor):
            continue
        for dim, size in zip(buffer.shape, value.shape, strict=False):
            if not _is_int(dim):
                sizes[str(dim)] = int(size)
    results = []
    for index in outs:
        shape = []
        for dim in params[index].shape:
            if _is_int(dim):
                shape.append(int(dim))
            elif str(dim) in sizes:
                shape.append(sizes[str(dim)])
            else:
                raise TileLangCompileError(
                    f"output {index} of {describe_kernel(kernel)[0]} has a size ({dim}) that no input gives: "
                    "without a GPU kerneltui cannot allocate it; give the kernel its output as an argument",
                    None, None)
        results.append(torch.empty(shape, dtype=params[index].torch_dtype(), device=device))
    return results[0] if len(results) == 1 else results


def _is_int(dim: Any) -> bool:
    return isinstance(dim, int) or type(dim).__name__ == "IntImm"


def _headline(exc: BaseException) -> str:
    """The first meaningful line of the error: TileLang puts the generated CUDA source before
    nvcc's diagnostics, and a source snippet after the C++ passes' messages."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\berror\b", ln) and not ln.startswith("#")]
    if "Compilation error:" in text and errors:
        first = errors[0]
        return f"nvcc: {first}"
    # A message that ends its first line with ':' goes on (TVM's "… caused by lhs at …:" then the values).
    picked: list[str] = []
    for line in lines[:4 if lines and lines[0].endswith(":") else 1]:
        if line.startswith(("-->", "|", "Traceback")):
            break
        picked.append(line)
    head = " ".join(picked)
    return f"{type(exc).__name__}: {head}" if head else type(exc).__name__
