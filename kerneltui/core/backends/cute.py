"""CuTe DSL (nvidia-cutlass-dsl): JIT compile and run on a GPU; compile only without one.

What this backend adds to the DSL, all inside the worker:

* **Launch counting.** Every execution of a compiled CuTe program goes through
  ``JitCompiledFunction.__call__`` or ``run_compiled_program`` (the first call of a ``@cute.jit``
  function, and every call of what ``cute.compile`` returned). Both are wrapped; one host call
  counts once per kernel in its module.
* **Compile-only mode (no GPU).** The DSL compiles fine without a driver; only execution needs
  one. Here the wrapped ``run_compiled_program`` records the launch and returns without running,
  and CPU tensors handed to ``from_dlpack`` are presented to the compiler as device tensors, so
  the kernel is compiled exactly as for GPU inputs (global memory, same alignment). Nothing is
  ever dereferenced because nothing executes.
* **Compile errors with file:line.** Whether an exception came from tracing/compiling or from
  running is tracked around the DSL's entry point (``BaseDSL._func``); the DSL's own diagnostics
  carry the kernel's file and line, and Python errors raised while tracing carry them in the
  traceback.
* **Artifacts.** While the compile rung runs, the DSL keeps MLIR, PTX (with line info) and the
  cubin in memory on each compiled function (``CUTE_DSL_KEEP``); the dump rung collects them.
  Keeping is switched off afterwards because it disables the DSL's JIT cache.
"""

from __future__ import annotations

import base64
import ctypes
import os
import re
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

from kerneltui.core.backends.base import (
    BaseBackend,
    LocatedCompileError,
    PhaseMarks,
    exception_chain,
    first_call,
    frame_in_task,
)
from kerneltui.core.backends.spec import BackendSpec, CacheHome, CompileCache, DslTracer, KernelMarker


def _cute_cache(home: CacheHome) -> str:
    return os.path.join(home.temp, home.env.get("USER") or home.user, "cutlass_python_cache")


SPEC = BackendSpec(
    name="cute",
    label="CuTe DSL",
    kernel_file="kernel.py",
    marker=KernelMarker(re.compile(r"@\s*(cute\.)?(kernel|jit)\b"), "a @cute.kernel (and a @cute.jit launcher)"),
    submission_signs=(re.compile(r"@\s*cute\.(kernel|jit)"), re.compile(re.escape("cutlass.cute"))),
    # IKET, the DSL's in-kernel event tracing: a kernel that marks ranges with cute.experimental.iket.
    tracer=DslTracer("iket", (re.compile(r"\biket\s*\.\s*(range_start|range_push|mark)\s*\(|cute\.experimental\.iket"),)),
    caches=(CompileCache("CUTE_DSL_CACHE_DIR", "CuTe DSL cache", _cute_cache, "cutlass"),),
    env_prefixes=("CUTE_", "CUTLASS_"),
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")
KDL_CPU, KDL_CUDA = 1, 2


class CuteCompileError(LocatedCompileError):
    """The CuTe DSL could not trace or compile a kernel (message cleaned of terminal colours)."""


class _Phase(threading.local):
    depth = 0  # nesting of BaseDSL._func (only the outermost call is a compile entry)
    running = False  # inside the execution of a compiled program
    calls = 0  # nesting of JitCompiledFunction.__call__ / run_compiled_program


class Backend(BaseBackend):
    spec = SPEC

    def __init__(self) -> None:
        self.compile_only = False
        self.compiled: dict[int, Any] = {}  # id -> JitCompiledFunction seen compiling or running
        self._phase = _Phase()
        self._marks = PhaseMarks()
        self._dsl: Any = None
        self._kernel_names: dict[str, str] = {}  # symbol -> readable name (cache)

    # -- start-up ------------------------------------------------------------------------------

    def warm(self, state: Any) -> None:
        self.compile_only = not state.has_gpu
        dump_dir = Path(state.workdir) / "cute_dump"
        dump_dir.mkdir(parents=True, exist_ok=True)
        # Read once, when the DSL builds its settings object: set before the first import.
        os.environ["CUTE_DSL_DUMP_DIR"] = str(dump_dir)
        os.environ.setdefault("CUTE_DSL_LINEINFO", "1")  # .loc lines in PTX for the source-linked views
        if self.compile_only:
            os.environ["CUTE_DSL_ARCH"] = state.arch
        warnings.filterwarnings("ignore", message="Cache is disabled as user wants")
        import cutlass
        import cutlass.cute  # noqa: F401
        import cutlass.cute.runtime  # noqa: F401
        from cutlass.cutlass_dsl import CuTeDSL

        self.cutlass = cutlass
        self._dsl = CuTeDSL._get_dsl()
        _plain_diagnostics()
        if self.compile_only:
            state.notes.append(
                f"CuTe DSL without a GPU: kernels are compiled for {state.arch} (PTX, cubin, MLIR kept) but not run"
            )

    # -- hooks ---------------------------------------------------------------------------------

    def install_hooks(self, state: Any) -> None:
        from cutlass.base_dsl.dsl import BaseDSL
        from cutlass.base_dsl.jit_executor import JitCompiledFunction

        self._set_keep(True)  # until the compile rung is done (see compile)
        if getattr(BaseDSL._func, "_kerneltui_hook", False):
            return
        backend = self
        phase = self._phase

        original_func = BaseDSL._func

        def _func(dsl: Any, funcBody: Any, *args: Any, **kwargs: Any) -> Any:
            if phase.depth > 0 or phase.running:
                return original_func(dsl, funcBody, *args, **kwargs)
            phase.depth += 1
            try:
                result = original_func(dsl, funcBody, *args, **kwargs)
            except BaseException as exc:
                backend._marks.mark(exc, "run" if phase.running else "compile")
                raise
            finally:
                phase.depth -= 1
            if isinstance(result, JitCompiledFunction):  # cute.compile(...) returns the compiled program
                backend._keep_compiled(result)
            return result

        _func._kerneltui_hook = True  # type: ignore[attr-defined]  # a marker on the hook: mypy does not model attributes set on functions
        BaseDSL._func = _func

        classes = [JitCompiledFunction]
        try:  # the alternative compiler backend overrides both entry points
            from cutlass.cutlass_dsl.cutlass_function import CutlassCallJitCompiledFunction

            classes.append(CutlassCallJitCompiledFunction)
        except ImportError:
            pass
        for cls in classes:
            self._wrap_execution(cls, state)
        if self.compile_only:
            self._present_cpu_tensors_as_device()

    def _wrap_execution(self, cls: type, state: Any) -> None:
        backend = self
        phase = self._phase
        original_call = cls.__dict__.get("__call__")
        original_run = cls.__dict__.get("run_compiled_program")

        def enter(compiled: Any) -> None:
            if phase.calls == 0:
                backend._keep_compiled(compiled)
                for name, symbol in backend._kernels_of(compiled):
                    state.record_launch("cute", name, symbol=symbol, function=getattr(compiled, "function_name", ""),
                                        executed=not backend.compile_only)
            phase.calls += 1

        if original_call is not None:
            def __call__(self: Any, *args: Any, _original: Any = original_call, **kwargs: Any) -> Any:
                enter(self)
                was_running, phase.running = phase.running, True
                try:
                    return _original(self, *args, **kwargs)
                except BaseException as exc:
                    backend._marks.mark(exc, "run")
                    raise
                finally:
                    phase.running = was_running
                    phase.calls -= 1

            cls.__call__ = __call__  # type: ignore[method-assign]  # the hook replaces the DSL class's method on purpose

        if original_run is not None:
            def run_compiled_program(self: Any, exe_args: Any, _original: Any = original_run) -> Any:
                enter(self)
                was_running, phase.running = phase.running, True
                try:
                    if backend.compile_only:
                        return None  # compiled, recorded, not executed: there is no GPU
                    return _original(self, exe_args)
                except BaseException as exc:
                    backend._marks.mark(exc, "run")
                    raise
                finally:
                    phase.running = was_running
                    phase.calls -= 1

            cls.run_compiled_program = run_compiled_program  # type: ignore[attr-defined]  # cls is a plain type here: the DSL's class, whose methods mypy cannot see

    def _present_cpu_tensors_as_device(self) -> None:
        """Make ``from_dlpack(cpu_tensor)`` describe a CUDA tensor, so that compile-only builds
        see global-memory tensors as on a GPU (a CPU tensor would compile for the generic
        address space, and TMA/cp.async code would not compile at all)."""
        from cutlass.cute import runtime

        cls = runtime._Tensor
        if getattr(cls.__init__, "_kerneltui_hook", False):
            return
        original_init = cls.__init__

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            capsule = getattr(self, "_dlpack_data", None)
            if capsule is not None:
                _dlpack_cpu_to_cuda(capsule)

        __init__._kerneltui_hook = True  # type: ignore[attr-defined]  # a marker on the hook: mypy does not model attributes set on functions
        cls.__init__ = __init__

    def _keep_compiled(self, compiled: Any) -> None:
        base = getattr(compiled, "_jit_base", compiled)  # the composed form of the other backend
        self.compiled.setdefault(id(base), base)

    def _set_keep(self, on: bool) -> None:
        """Keep MLIR/PTX/cubin on compiled functions. The DSL turns its JIT cache off while it
        keeps them, so this is on only while the compile rung runs."""
        env = self._dsl.envar
        env.keep_ptx = on
        env.keep_cubin = on
        env.keep_ir_clean = on

    # -- compile -------------------------------------------------------------------------------

    def compile(self, state: Any, first_case_inputs: Any) -> dict[str, Any]:
        # Compile-only: no run rung will follow to report a failing first call, so every error
        # of that call fails this rung.
        owns = self.first_call_owner()
        try:
            result = first_call(state, first_case_inputs, owns)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) or not owns(exc):
                raise
            raise self._compile_error(exc, state) from exc
        finally:
            if not self.compile_only:
                self._set_keep(False)
        if self.compile_only and not self.compiled:
            raise CuteCompileError(
                f"{state.task.get('entry_file', 'kernel.py')}: custom_kernel compiled no CuTe DSL program on the "
                "first test case: call a @cute.jit function (or what cute.compile returned) from custom_kernel",
                state.task.get("entry_file"), None,
            )
        result["compiled_programs"] = len(self.compiled)
        return result

    def is_compile_error(self, exc: BaseException) -> bool:
        from cutlass.base_dsl.common import DSLBaseError, DSLCudaRuntimeError

        if isinstance(exc, CuteCompileError):
            return True
        phase = self._marks.phase_of(exc)
        if phase is not None:
            return phase == "compile"
        # Raised before the DSL's entry point (the AST preprocessor of @cute.jit / @cute.kernel).
        return any(isinstance(e, DSLBaseError) and not isinstance(e, DSLCudaRuntimeError) for e in exception_chain(exc))

    def _compile_error(self, exc: BaseException, state: Any) -> CuteCompileError:
        where = self.locate_error(exc, state) or frame_in_task(exc, state)
        file, line = where if where else (None, None)
        prefix = f"{file}:{line}: " if file and line else ""
        if not self.is_compile_error(exc):
            # Compile-only mode: the first call failed outside the DSL (host code in custom_kernel).
            hint = ""
            if re.search(r"CUDA|cuda|driver", str(exc)):
                hint = (" (this needs a GPU: without one, custom_kernel is called on CPU tensors only to "
                        "compile its kernels; keep stream and device queries off that path, or check on a GPU)")
            what = _describe(exc)
            return CuteCompileError(f"{prefix}custom_kernel failed on the first test case: {what}{hint}", file, line)
        dsl_error = next((e for e in exception_chain(exc) if type(e).__module__.startswith("cutlass")), exc)
        text = ANSI.sub("", str(dsl_error)).strip()
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        headline = _headline(lines) or f"{type(exc).__name__}: {exc}"
        if not type(dsl_error).__module__.startswith("cutlass") and not headline.startswith(type(exc).__name__):
            headline = f"{type(exc).__name__}: {headline}"
        return CuteCompileError(f"{prefix}CuTe DSL compile error: {headline}", file, line)

    def locate_error(self, exc: BaseException, state: Any) -> tuple[str, int] | None:
        for err in exception_chain(exc):
            file, line = getattr(err, "file", None) or getattr(err, "filename", None), getattr(err, "line", None)
            if isinstance(file, str) and isinstance(line, int) and line > 0:
                rel = state.original_path(file)
                if rel is not None:
                    return rel, line
        return None

    # -- kernels and artifacts -------------------------------------------------------------------

    def _kernels_of(self, compiled: Any) -> list[tuple[str, str]]:
        base = getattr(compiled, "_jit_base", compiled)
        symbols = list(getattr(base, "kernel_info", None) or {})
        if not symbols:
            return [(_readable_host_name(getattr(base, "function_name", "") or "cute_program"), "")]
        return [(self._readable(sym), sym) for sym in symbols]

    def _readable(self, symbol: str) -> str:
        """``kernel_cutlass_axpb_kernel_tensorptrf32…_0`` -> ``axpb_kernel`` (the @cute.kernel's name)."""
        if symbol in self._kernel_names:
            return self._kernel_names[symbol]
        best = ""
        for name in _cute_kernel_names():
            if (f"_{name}_" in symbol or symbol.startswith(f"{name}_")) and len(name) > len(best):
                best = name
        self._kernel_names[symbol] = best or symbol
        return self._kernel_names[symbol]

    def kernels(self, state: Any) -> list[str]:
        names = {rec.kernel for rec in state.launches} | {rec.kernel for rec in state.compile_launches}
        for compiled in self.compiled.values():
            names.update(name for name, _ in self._kernels_of(compiled))
        return sorted(names)

    def collect_artifacts(self, state: Any, arch: str, progress: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        target = getattr(self._dsl.envar, "arch", None) or arch
        for compiled in self.compiled.values():
            art = getattr(compiled, "artifacts", None)
            if art is None or not (art.PTX or art.CUBIN or art.MLIR):
                continue
            stages: dict[str, Any] = {}
            if art.MLIR:
                stages["mlir"] = art.MLIR
            if art.PTX:
                stages["ptx"] = art.PTX
            if art.CUBIN:
                cubin = art.CUBIN if isinstance(art.CUBIN, bytes) else art.CUBIN.encode("latin-1")
                stages["cubin"] = {"base64": base64.b64encode(cubin).decode("ascii")}
            kernels = self._kernels_of(compiled)
            files = _ptx_files(art.PTX or "")
            file_map = {path: rel for path in files if (rel := state.original_path(path)) is not None}
            source_file = next(iter(file_map.values()), None) or _source_of(kernels, state)
            host = getattr(compiled, "function_name", "")
            for name, symbol in kernels:  # one entry per kernel; a program's kernels share its module
                out.append({
                    "kernel": name,
                    "variant": host,
                    "stages": stages,
                    "metadata": {
                        "backend": "cute",
                        "arch": target,
                        "symbol": symbol,
                        "host_function": host,
                        "module_kernels": [sym for _, sym in kernels],
                        "file_map": file_map,
                        "compile_only": self.compile_only,
                        "cutlass_dsl": _dsl_version(),
                    },
                    "source_file": source_file,
                })
        progress(f"CuTe DSL: {len(out)} kernel(s) in {len(self.compiled)} compiled program(s)")
        return out


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    """One line for an exception; the DSL's own errors by their first ``error:`` line."""
    if type(exc).__module__.startswith("cutlass"):
        lines = [ln.strip() for ln in ANSI.sub("", str(exc)).splitlines() if ln.strip()]
        head = _headline(lines) or (lines[0] if lines else "")
        return f"{type(exc).__name__}: {head}"
    return f"{type(exc).__name__}: {exc}"


def _plain_diagnostics() -> None:
    """The DSL colours its messages with ANSI codes; they end up in JSON and in the TUI, so the
    colours are switched off at the source."""
    try:
        from cutlass.base_dsl import diagnostics
    except ImportError:
        return
    colors = getattr(diagnostics, "Colors", None)
    for attr in ("RED", "YELLOW", "BLUE", "GREEN", "CYAN", "BOLD", "RESET"):
        if colors is not None and hasattr(colors, attr):
            setattr(colors, attr, "")
    table = getattr(diagnostics, "_DIAGNOSTIC_LABEL_COLORS", None)
    if isinstance(table, dict):
        for key in table:
            table[key] = ""


def _headline(lines: list[str]) -> str:
    """The DSL's first error line(s) without the decoration (``error[INTERNAL]:``, arrows, gutters)."""
    picked: list[str] = []
    for line in lines:
        m = re.match(r"^error(\[[A-Z_]+\])?:\s*(.*)$", line)
        if m:
            picked.append(m.group(2))
            if len(picked) == 2:
                break
    return " — ".join(p for p in picked if p)


def _cute_kernel_names() -> set[str]:
    """Names of @cute.kernel functions defined in task modules (and their classes)."""
    names: set[str] = set()
    for module in list(sys.modules.values()):
        try:
            values = list(vars(module).values())
        except TypeError:
            continue
        if getattr(module, "__name__", "").startswith(("cutlass", "torch", "kerneltui", "numpy")):
            continue
        for value in values:
            candidates = [value]
            if isinstance(value, type):
                candidates = list(vars(value).values())
            for obj in candidates:
                if getattr(obj, "_decorator_kind", None) == "kernel":
                    names.add(getattr(obj, "__name__", ""))
    names.discard("")
    return names


def _readable_host_name(function_name: str) -> str:
    return function_name.removeprefix("cutlass_")


def _ptx_files(ptx: str) -> list[str]:
    return re.findall(r'^\s*\.file\s+\d+\s+"([^"]+)"', ptx, flags=re.MULTILINE)


def _source_of(kernels: list[tuple[str, str]], state: Any) -> str | None:
    return state.task.get("kernel_file") if getattr(state, "task", None) else None


def _dsl_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("nvidia-cutlass-dsl")
    except Exception:
        return None


_PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
_PyCapsule_GetName.restype = ctypes.c_char_p
_PyCapsule_GetName.argtypes = [ctypes.py_object]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_cpu_to_cuda(capsule: Any) -> None:
    """Rewrite a DLPack capsule's device from CPU to CUDA:0 (compile-only mode)."""
    try:
        name = _PyCapsule_GetName(capsule)
    except (TypeError, ValueError):
        return
    if name not in (b"dltensor", b"dltensor_versioned"):
        return
    pointer = _PyCapsule_GetPointer(capsule, name)
    if not pointer:
        return
    # DLManagedTensor starts with its DLTensor; the versioned form has a header first:
    # {uint32 major, uint32 minor; void* manager_ctx; void (*deleter)(…); uint64 flags}.
    tensor = pointer if name == b"dltensor" else pointer + 8 + 8 + 8 + 8
    device = (ctypes.c_int32 * 2).from_address(tensor + 8)  # DLTensor: void* data; DLDevice device
    if device[0] == KDL_CPU:
        device[0], device[1] = KDL_CUDA, 0
