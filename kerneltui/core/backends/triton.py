"""Triton: JIT on the GPU, the Triton interpreter with no GPU (chosen by the worker at start-up)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from kerneltui.core.backends.base import BaseBackend
from kerneltui.core.backends.spec import (
    BackendSpec,
    CacheHome,
    CompileCache,
    DslTracer,
    KernelMarker,
    OverrideSupport,
)


def _triton_cache(home: CacheHome) -> str:
    return str(Path(home.env.get("TRITON_HOME") or home.home) / ".triton" / "cache")


SPEC = BackendSpec(
    name="triton",
    label="Triton",
    kernel_file="kernel.py",
    marker=KernelMarker(re.compile(r"@\s*(triton\.)?(jit|autotune|heuristics)\b"), "a @triton.jit kernel"),
    submission_signs=(re.compile(r"@\s*triton\.(jit|autotune)"), re.compile(re.escape("import triton"))),
    override=OverrideSupport(("PTX", "TTGIR"), keyed_by_specialisation=True),
    # Proton's instrumentation mode: a kernel that imports triton.profiler.language and opens scopes.
    tracer=DslTracer("proton", (re.compile(r"triton\.profiler\.language|from\s+triton\.profiler\s+import\s+language"),
                                re.compile(r"\.\s*(scope|enter_scope)\s*\("))),
    interpreted_without_gpu=True,
    warm_imports=("triton", "triton.language"),
    caches=(CompileCache("TRITON_CACHE_DIR", "Triton's JIT cache", _triton_cache, "triton"),),
    env_prefixes=("TRITON_",),
)

# Known gaps of the interpreter that can make a correct kernel look wrong (or a wrong one right).
INTERPRETER_CAVEATS = (
    "Triton interpreter (no GPU): numerics follow numpy on the CPU; bf16 tl.dot can give wrong "
    "numbers, fp8 is emulated, inline asm and some atomics/barriers do not run, and timing means nothing"
)


def describe_arg(value: Any) -> Any:
    """A JSON description of one launch argument, enough to specialise an ahead-of-time compile."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": str(value.dtype).replace("torch.", ""), "aligned16": value.data_ptr() % 16 == 0,
                "shape": list(value.shape), "stride": list(value.stride())}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value}
    base = getattr(value, "base", None)
    if isinstance(base, torch.Tensor):
        # A tensor descriptor: its repr prints the tensor, which on a GPU runs torch's kernels inside
        # the launch (and formats every element of a large one).
        return {"descriptor": str(base.dtype).replace("torch.", ""),
                "shape": [int(x) for x in getattr(value, "shape", base.shape)],
                "strides": [int(x) for x in getattr(value, "strides", base.stride())],
                "block_shape": [int(x) for x in getattr(value, "block_shape", [])]}
    if hasattr(value, "primitive_bitwidth") or type(value).__module__.startswith("triton"):
        return {"triton": str(value)}
    return {"object": type(value).__name__}


class Backend(BaseBackend):
    spec = SPEC

    def warm(self, state: Any) -> None:
        import triton
        import triton.language  # noqa: F401

        self.triton = triton
        self.interpret = os.environ.get("TRITON_INTERPRET") == "1"
        if self.interpret:
            state.notes.append(INTERPRETER_CAVEATS)
            from kerneltui.core.backends.triton_dump import remember_language

            remember_language()  # before any interpreted run alters triton.language (see there)
            from kerneltui.core.trace.proton_run import allow_scopes_in_interpreter

            allow_scopes_in_interpreter()  # kernels marked with Proton scopes run on the CPU too

    def use_override(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Triton's kernel override: ``knobs.compilation.override`` + ``knobs.cache.override_dir``, whose
        layout is ``<key>/<kernel>.<stage>``. Without a key (no dump of the base version) the edited file
        is offered for every specialisation of the kernel, under whatever key Triton asks for."""
        from triton import knobs

        knobs.compilation.override = True
        knobs.cache.override_dir = str(folder)
        # A private cache: the overridden kernel must not land in the shared cache under the key of
        # the unedited one (Triton's cache key does not include the override).
        knobs.cache.dir = tempfile.mkdtemp(prefix="kerneltui-override-cache-")
        if manifest.get("key"):
            return
        from triton.runtime.cache import FileCacheManager

        edited = folder / str(manifest["file"])

        class AnyKeyOverride(FileCacheManager):
            def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
                super().__init__(key, override=override, dump=dump)
                if override:
                    target = Path(self.cache_dir)
                    if not target.exists():
                        target.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(edited, target / edited.name)

        knobs.cache.manager_class = AnyKeyOverride

    def install_hooks(self, state: Any) -> None:
        from triton.runtime import jit

        if self.interpret:
            from kerneltui.core.backends import triton_interpreted

            triton_interpreted.install(state.known_code, state.original_path)

        classes = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            if getattr(cls.run, "_kerneltui_hook", False):
                continue
            original = cls.run

            def run(self: Any, *args: Any, grid: Any, warmup: Any, _original: Any = original, **kwargs: Any) -> Any:
                if not warmup and state.recording:
                    import torch

                    name = getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "kernel")
                    tensors = _tensor_arguments((*args, *kwargs.values()), torch)
                    with state.launching(
                        "triton", name, tensors,
                        args=[describe_arg(a) for a in args],
                        kwargs={k: describe_arg(v) for k, v in kwargs.items()},
                        grid=_grid_repr(grid),
                        jit_fn=self,
                    ):
                        if not interpreted_launch(self):
                            return _original(self, *args, grid=grid, warmup=warmup, **kwargs)
                        return watched_launch(self, args, kwargs, grid, state, torch,
                                              lambda: _original(self, *args, grid=grid, warmup=warmup, **kwargs))
                return _original(self, *args, grid=grid, warmup=warmup, **kwargs)

            run._kerneltui_hook = True  # type: ignore[attr-defined]  # a marker on the hook: mypy does not model attributes set on functions
            cls.run = run

    def is_compile_error(self, exc: BaseException) -> bool:
        from triton.compiler.errors import CompilationError

        if isinstance(exc, CompilationError):
            return True
        # Under the interpreter the kernel body runs as Python on the first call; what fails
        # there (bad arguments, non-power-of-two shapes, type errors) is what the compiler would
        # reject on a GPU.
        if type(exc).__name__ == "InterpreterError":
            return True
        # Errors raised while lowering (MLIR/ptxas) surface as RuntimeError/PTXASError.
        return type(exc).__name__ in {"PTXASError", "MLIRCompilationError"}

    def locate_error(self, exc: BaseException, state: Any) -> tuple[str, int] | None:
        from triton.compiler.errors import CompilationError

        err: BaseException | None = exc
        while err is not None and not isinstance(err, CompilationError):
            err = err.__cause__ or err.__context__
        if err is None or getattr(err, "src", None) is None or not hasattr(err.node, "lineno"):
            return None
        for fn in self.jit_functions(state):
            if getattr(fn, "_src", None) == err.src or getattr(fn, "src", None) == err.src:
                raw = "".join(fn.raw_src)
                lines = raw.splitlines()
                def_offset = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
                line = fn.starting_line_number + def_offset + err.node.lineno - 1
                rel = state.original_path(fn.fn.__code__.co_filename)
                if rel:
                    return rel, line
        return None

    def jit_functions(self, state: Any) -> list[Any]:
        from triton.runtime import jit

        kinds: tuple[type, ...] = (jit.JITFunction,)
        try:
            from triton.runtime.interpreter import InterpretedFunction

            kinds = (*kinds, InterpretedFunction)
        except ImportError:
            pass
        found: dict[int, Any] = {}
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if not file or state.original_path(file) is None:
                continue
            for value in vars(module).values():
                inner = value
                while inner is not None and not isinstance(inner, kinds) and hasattr(inner, "fn"):
                    inner = inner.fn  # autotuner / heuristics wrappers
                if isinstance(inner, kinds):
                    found[id(inner)] = inner
        return list(found.values())

    def collect_artifacts(self, state: Any, arch: str, progress: Any) -> list[dict[str, Any]]:
        from kerneltui.core.backends.triton_dump import collect

        return collect(self, state, arch, progress)


def _grid_repr(grid: Any) -> Any:
    if callable(grid):
        return "callable"
    try:
        return [int(g) for g in grid]
    except Exception:
        return str(grid)


def interpreted_launch(fn: Any) -> bool:
    """An outermost launch the Triton interpreter runs as Python (see ``triton_interpreted.LaunchWatch``)."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    from kerneltui.core.backends.triton_interpreted import LaunchWatch

    return isinstance(fn, InterpretedFunction) and LaunchWatch.active is None


def watched_launch(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, state: Any, torch: Any,
                   launch: Any) -> Any:
    """Run an interpreted launch with its tensor arguments watched at the edges of its programs: the
    kernel's Python the interpreter runs there (a grid function, pre-run hooks) must not write them."""
    from kerneltui.core.backends import triton_interpreted

    recorder = state.recorder
    if recorder is None:
        return launch()
    names = list(getattr(fn, "arg_names", None) or [])
    named = [(names[i] if i < len(names) else f"argument {i + 1}", a) for i, a in enumerate(args)]
    named += list(kwargs.items())
    tensors = [(name, t) for name, value in named for t in _tensor_arguments((value,), torch)]
    watch = triton_interpreted.LaunchWatch.begin(
        getattr(getattr(fn, "fn", None), "__name__", None) or "kernel",
        triton_interpreted.launch_site(state.original_path),
        triton_interpreted.launch_around(grid, list(getattr(fn, "pre_run_hooks", None) or []), state.original_path),
        tensors, recorder.digest)
    try:
        result = launch()
    except BaseException:
        triton_interpreted.LaunchWatch.active = None
        watch.raise_finding()  # the interpreter wraps what a program raised; the finding is the cause
        raise
    watch.end()
    return result


def _tensor_arguments(values: Any, torch: Any, depth: int = 0) -> list[Any]:
    """Every tensor a launch can reach: top-level arguments, those inside tuples and lists (Triton
    unpacks them), and the memory behind a tensor descriptor (its ``base``)."""
    found: list[Any] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)) and depth < 4:
            found.extend(_tensor_arguments(value, torch, depth + 1))
        elif isinstance(getattr(value, "base", None), torch.Tensor):
            found.append(value.base)
    return found
