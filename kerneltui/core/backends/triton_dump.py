"""Triton's compiler outputs for the dump rung (worker side): TTIR, TTGIR, LLIR, PTX and cubin for
every kernel specialisation the task's cases launch.

Which specialisations: the candidate is called once on every test case and on the first
benchmark case with kernel launches intercepted (the host code runs, no kernel does), and each
launch is specialised exactly as ``JITFunction.run`` would (Triton's own binder: 16-byte aligned
pointers and integers divisible by 16 get ``tt.divisibility = 16``, integers equal to 1 become
constants, ``num_warps``/``num_stages`` from the launch or the autotuner's config).

Where the kernels come from:

* on a GPU whose architecture is the one asked for, the JIT's own device caches (the kernels that
  actually ran, plus any the autotuner built), compiling only what no case has run yet;
* otherwise (no GPU: the candidate ran under the Triton interpreter, or another ``--arch``), ahead
  of time with ``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))``. Under the
  interpreter every ``@triton.jit`` function, Triton's own ``tl.cdiv``/``tl.max``… included, is an
  ``InterpretedFunction``; for the compile they are swapped for ``JITFunction`` twins in
  ``triton.language`` and in the task's modules, and the interpreter flag is lowered, both restored
  afterwards so the worker's interpreter keeps working.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.asm.artifact import encode_cubin
from kerneltui.core.backends.base import dump_cases

Progress = Callable[..., None]
MAX_VARIANTS = 32  # per dump; autotuners with many configs are cut here (said in the notes)


def capability_of(arch: str) -> int:
    """``sm_90a`` → 90, ``sm_100a`` → 100, ``sm_80`` → 80."""
    digits = "".join(ch for ch in arch.removeprefix("sm_").removeprefix("compute_") if ch.isdigit())
    if not digits:
        raise ValueError(f"cannot read an architecture from {arch!r}; expected e.g. sm_90a, sm_80, sm_100a")
    return int(digits)


@dataclass
class Launch:
    """One specialisation of one kernel, as ``JITFunction.run`` would compile it."""

    fn: Any  # the JITFunction (or the JITFunction twin of an InterpretedFunction)
    name: str
    key: str
    signature: dict[str, str]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], Any]
    options: Any  # CUDAOptions
    cases: list[str] = field(default_factory=list)
    grid: Any = None
    benchmark: bool = False
    autotune: str | None = None  # "best of 4 (tuned in this worker)", "config 2 of 4 (not tuned here: none timed)"
    autotune_best: bool | None = None


def collect(backend: Any, state: Any, arch: str, progress: Progress) -> list[dict[str, Any]]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    notes: list[str] = getattr(state, "dump_notes", [])
    cap = capability_of(arch)
    target = GPUTarget("cuda", cap, 32)
    device_arch = str((state.info or {}).get("arch") or "")
    use_device = bool(state.has_gpu) and bool(device_arch) and capability_of(device_arch) == cap
    if use_device:
        from triton.runtime import driver

        target = driver.active.get_current_target()
    target_backend = make_backend(target)
    twins = Twins()

    progress("running the kernel's host code on every case to see which specialisations it launches")
    launches = _launches_of_cases(state, target_backend, twins, notes)
    if use_device:
        _add_cached_kernels(backend, state, launches, twins)
    if not launches and not notes:
        notes.append("no case launched a Triton kernel (custom_kernel must launch one)")
    if len(launches) > MAX_VARIANTS:
        notes.append(f"{len(launches)} specialisations were launched; the dump keeps the first {MAX_VARIANTS}")
        launches = launches[:MAX_VARIANTS]

    artifacts = []
    for i, launch in enumerate(launches):
        label = variant_label(launch)
        progress(f"compiling {launch.name} [{label}] for {arch}", i / max(len(launches), 1))
        t0 = time.perf_counter()
        try:
            kernel, how = _compiled(launch, target, use_device, state, twins, triton)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            notes.append(f"{launch.name} [{label}]: Triton could not compile it for {arch}: {type(exc).__name__}: {first}")
            continue
        artifacts.append(_artifact(launch, label, kernel, how, time.perf_counter() - t0, state, cap))
    _disambiguate_labels(artifacts)
    return artifacts


# ----------------------------------------------------------------------------------------------
# which specialisations
# ----------------------------------------------------------------------------------------------


def _launches_of_cases(state: Any, target_backend: Any, twins: Twins, notes: list[str]) -> list[Launch]:
    rt = state.runtime
    found: dict[tuple[int, str], Launch] = {}
    order: list[tuple[int, str]] = []
    for label, inputs, is_bench in dump_cases(state, notes):
        seen_here: list[_Seen] = []
        try:
            with intercepted_launches(seen_here.append):
                rt.call(inputs)
        except Exception as exc:
            # Host code that reads a kernel's result cannot run without the kernel: keep what launched.
            if not seen_here:
                notes.append(f"{label}: the host code failed before launching a kernel ({type(exc).__name__}: {exc})")
        for seen in seen_here:
            try:
                launch = specialise(seen.fn, seen.args, seen.kwargs, target_backend, twins, seen.grid)
            except Exception as exc:
                notes.append(f"{label}: cannot specialise a launch of {_name(seen.fn)} ({type(exc).__name__}: {exc})")
                continue
            key = (id(launch.fn), launch.key)
            if key not in found:
                found[key] = launch
                order.append(key)
            entry = found[key]
            if label not in entry.cases:
                entry.cases.append(label)
            if seen.autotune is not None:
                entry.autotune = seen.autotune
                entry.autotune_best = bool(entry.autotune_best) or bool(seen.autotune_best)
            # Of an autotuner's configs, the benchmark runs the tuned best one (if tuning happened here).
            if is_bench and (seen.autotune is None or seen.autotune_best or seen.autotune_first_untuned):
                entry.benchmark = True
    return [found[k] for k in order]


def specialise(fn: Any, args: tuple[Any, ...] | list[Any], kwargs: dict[str, Any], target_backend: Any,
               twins: Twins, grid: Any = None) -> Launch:
    """What ``JITFunction.run`` computes before it compiles: signature, constants, attributes, options."""
    from triton import knobs
    from triton.runtime.jit import compute_cache_key

    jf = twins.jit_function(fn)
    binder = twins.binder(jf, target_backend)
    kwargs = dict(kwargs)
    kwargs["debug"] = kwargs.get("debug", jf.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    bound_args, specialization, options = binder(*args, **kwargs)
    key = compute_cache_key({}, specialization, options)
    parsed, signature, constexprs, attrs = jf._pack_args(target_backend, kwargs, bound_args, specialization, options)
    if callable(grid):
        try:
            grid = grid(bound_args)  # a grid function sees the bound arguments and meta-parameters, as in run()
        except Exception:
            grid = "callable"
    return Launch(fn=jf, name=jf.fn.__name__, key=key, signature=signature, constexprs=constexprs, attrs=attrs,
                  options=parsed, grid=_grid_repr(grid))


def _add_cached_kernels(backend: Any, state: Any, launches: list[Launch], twins: Twins) -> None:
    """Specialisations in the JIT's device caches that no case launched (e.g. autotuner configs)."""
    from triton.runtime import driver

    device = driver.active.get_current_device()
    known = {(id(launch.fn), launch.key) for launch in launches}
    for jf in backend.jit_functions(state):
        caches = getattr(jf, "device_caches", None)
        if not caches or device not in caches:
            continue
        kernel_cache = caches[device][0]
        for key, kernel in list(kernel_cache.items()):
            if (id(jf), key) in known:
                continue
            src = getattr(kernel, "src", None)
            if src is None or not hasattr(src, "signature"):
                continue
            meta = kernel.metadata
            launches.append(Launch(fn=jf, name=jf.fn.__name__, key=key, signature=dict(src.signature),
                                   constexprs=dict(src.constants), attrs=dict(src.attrs), options=meta,
                                   cases=["compiled earlier in this worker"]))


@dataclass
class _Seen:
    """One intercepted launch: the real arguments, as JITFunction.run received them."""

    fn: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grid: Any
    autotune: str | None = None
    autotune_best: bool = False
    autotune_first_untuned: bool = False


@contextmanager
def intercepted_launches(sink: Callable[[_Seen], None]) -> Iterator[None]:
    """Kernel launches call ``sink`` instead of running. An autotuner launches every config it
    would try (without timing anything: nothing runs) and says which one it had chosen, if any."""
    from triton.runtime import jit

    classes: list[type] = [jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    saved: dict[type, Any] = {cls: cls.__dict__.get("run") for cls in classes}
    context: dict[str, Any] = {}

    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        if warmup:
            return None
        sink(_Seen(self, args, kwargs, grid, **context))
        return None

    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        Autotuner = None  # noqa: N806
    if Autotuner is not None:
        saved[Autotuner] = Autotuner.__dict__.get("run")

        def tuner_run(self: Any, *args: Any, **kwargs: Any) -> Any:
            self.nargs = dict(zip(self.arg_names, args, strict=False))
            best = self.cache.get(_tuner_key(self, kwargs)) if len(self.configs) > 1 else self.configs[0]
            try:
                configs = self.prune_configs(kwargs) if len(self.configs) > 1 else list(self.configs)
            except Exception:
                configs = list(self.configs)
            for i, config in enumerate(configs):
                if best is not None:
                    context.update(autotune=f"{'best' if config is best else 'config'} of {len(configs)} "
                                            f"({'tuned in this worker' if len(configs) > 1 else 'one config'})",
                                   autotune_best=config is best, autotune_first_untuned=False)
                else:
                    context.update(autotune=f"config {i + 1} of {len(configs)} (not tuned here: none timed)",
                                   autotune_best=False, autotune_first_untuned=i == 0)
                try:
                    self.fn.run(*args, **{**kwargs, **config.all_kwargs()})
                finally:
                    context.clear()
            return None

    for cls in classes:
        cls.run = run  # type: ignore[attr-defined]  # the hook replaces Triton's launcher classes' run for the dump, put back below
    if Autotuner is not None:
        Autotuner.run = tuner_run
    try:
        yield
    finally:
        for cls, original in saved.items():
            if original is None:
                delattr(cls, "run")
            else:
                cls.run = original  # type: ignore[attr-defined]  # putting Triton's own run back


def _tuner_key(tuner: Any, kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The autotuner's cache key for these arguments (as Autotuner.run computes it)."""
    all_args = {**tuner.nargs, **kwargs}
    args = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    key = [args[k] for k in tuner.keys if k in args]
    key += [str(v.dtype) for v in args.values() if hasattr(v, "dtype")]
    return tuple(key)


# ----------------------------------------------------------------------------------------------
# compiling
# ----------------------------------------------------------------------------------------------


def _compiled(launch: Launch, target: Any, use_device: bool, state: Any, twins: Twins, triton: Any) -> tuple[Any, str]:
    from triton.compiler.compiler import ASTSource

    if use_device:
        from triton.runtime import driver

        caches = getattr(launch.fn, "device_caches", None)
        device = driver.active.get_current_device()
        if caches and device in caches:
            kernel = caches[device][0].get(launch.key)
            if kernel is not None:
                if hasattr(kernel, "result"):
                    kernel = kernel.result()
                return kernel, "JIT device cache"
        source = ASTSource(launch.fn, launch.signature, launch.constexprs, launch.attrs)
        return triton.compile(source, target=target, options=launch.options.__dict__), "compiled for the device"
    with aot_scope(state, twins):
        source = ASTSource(launch.fn, launch.signature, launch.constexprs, launch.attrs)
        return triton.compile(source, target=target, options=launch.options.__dict__), "ahead of time"


_LANGUAGE_SNAPSHOT: list[tuple[Any, str, Any]] = []
_MISSING = object()


def remember_language() -> None:
    """Record ``triton.language`` as imported, before the interpreter runs anything.

    An interpreted kernel calling one of Triton's own ``@jit`` helpers (``tl.max``, ``tl.sum``…)
    patches the helper's module for the interpreter and never restores it, so after the first
    interpreted run ``triton.language.core`` is no longer what the compiler needs. The dump puts
    these recorded values back for the duration of an ahead-of-time compile.
    """
    if _LANGUAGE_SNAPSHOT:
        return
    import triton.language as tl

    owners: list[Any] = [m for n, m in sorted(sys.modules.items()) if m is not None and n.startswith("triton.language")]
    owners += [tl.core.tensor, tl.core.dtype]
    if hasattr(tl.core, "tensor_descriptor_base"):
        owners.append(tl.core.tensor_descriptor_base)
    for owner in owners:
        for name, value in list(vars(owner).items()):
            _LANGUAGE_SNAPSHOT.append((owner, name, value))


@contextmanager
def aot_scope(state: Any, twins: Twins) -> Iterator[None]:
    """Let the real compiler see ``triton.language`` as imported and JITFunctions where the
    interpreter has InterpretedFunctions; everything is put back afterwards."""
    from triton import knobs

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        yield
        return
    if not _LANGUAGE_SNAPSHOT:
        remember_language()  # late: right unless an interpreted kernel already ran in this process
    changes: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        changes.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, value)

    for owner, name, value in _LANGUAGE_SNAPSHOT:
        if owner.__dict__.get(name, _MISSING) is not value:
            patch(owner, name, value)
    modules = [m for n, m in list(sys.modules.items()) if m is not None and n.startswith("triton.language")]
    modules += _task_modules(state)
    for module in modules:
        for name, value in list(vars(module).items()):
            if isinstance(value, InterpretedFunction):
                patch(module, name, twins.jit_function(value))
    import triton.language.core as core

    for name, value in list(vars(core.tensor).items()):
        inner = _interpreted_inside(value, InterpretedFunction)
        if inner is not None:  # tensor methods (x.sum()) wrap the interpreted free function
            patch(core.tensor, name, twins.jit_function(inner))
    try:
        with knobs.runtime.scope():
            knobs.runtime.interpret = False
            yield
    finally:
        while changes:
            owner, name, value = changes.pop()
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def _interpreted_inside(value: Any, kind: type) -> Any:
    if isinstance(value, kind):
        return value
    if isinstance(value, types.FunctionType) and value.__closure__:
        for cell in value.__closure__:
            try:
                content = cell.cell_contents
            except ValueError:
                continue
            if isinstance(content, kind):
                return content
    return None


class Twins:
    """JITFunction twins of InterpretedFunctions (one per function, so callees resolve to one object),
    and Triton binders per (function, target backend)."""

    def __init__(self) -> None:
        self._twins: dict[int, Any] = {}
        self._binders: dict[tuple[int, int], Any] = {}

    def jit_function(self, fn: Any) -> Any:
        from triton.runtime.jit import JITFunction

        if isinstance(fn, JITFunction):
            return fn
        twin = self._twins.get(id(fn))
        if twin is None:
            kwargs = dict(getattr(fn, "kwargs", {}) or {})
            twin = JITFunction(fn.fn, **kwargs)
            self._twins[id(fn)] = twin
            self._twins[id(twin)] = twin
        return twin

    def binder(self, jf: Any, target_backend: Any) -> Any:
        from triton.runtime.jit import create_function_from_signature

        key = (id(jf), id(target_backend))
        if key not in self._binders:
            self._binders[key] = create_function_from_signature(jf.signature, jf.params, target_backend)
        return self._binders[key]


# ----------------------------------------------------------------------------------------------
# the artifact
# ----------------------------------------------------------------------------------------------


def _override_key(kernel: Any) -> str | None:
    """Where Triton's kernel override looks for this specialisation: ``<override_dir>/<key>/``."""
    src = getattr(kernel, "src", None)
    try:
        from triton.runtime.cache import _base32

        return str(_base32(src.hash())) if src is not None else None
    except Exception:  # an older or newer Triton without these internals: overrides then match by name
        return None


def _artifact(launch: Launch, label: str, kernel: Any, how: str, seconds: float, state: Any, cap: int) -> dict[str, Any]:
    asm = kernel.asm
    stages: dict[str, Any] = {}
    for name in ("ttir", "ttgir", "llir", "ptx"):
        if name in asm and isinstance(asm[name], str):
            stages[name] = asm[name]
    if "cubin" in asm and isinstance(asm["cubin"], (bytes, bytearray)):
        stages["cubin"] = encode_cubin(bytes(asm["cubin"]))
    meta = kernel.metadata
    num_warps = int(getattr(meta, "num_warps", 4))
    warp_size = int(getattr(meta, "warp_size", 32) or 32)
    metadata: dict[str, Any] = {
        "num_warps": num_warps,
        "num_stages": getattr(meta, "num_stages", None),
        "num_ctas": getattr(meta, "num_ctas", 1),
        "shared": int(getattr(meta, "shared", 0) or 0),
        "maxnreg": getattr(meta, "maxnreg", None),
        "warp_size": warp_size,
        "threads_per_block": num_warps * warp_size,
        "arch": f"sm_{cap}" + ("a" if cap >= 90 else ""),
        "cases": list(launch.cases),
        "grid": launch.grid,
        "primary": launch.benchmark,
        "autotune": launch.autotune,
        "compiled": how,
        "compile_s": round(seconds, 3),
        "triton_version": getattr(meta, "triton_version", None),
        "hash": getattr(meta, "hash", None),
        "override_key": _override_key(kernel),
        "signature": {k: v for k, v in launch.signature.items() if v != "constexpr"},
        "constants": {launch.fn.arg_names[k[0]] if len(k) == 1 and k[0] < len(launch.fn.arg_names) else str(k): _json_value(v)
                      for k, v in launch.constexprs.items()},
    }
    for extra in ("tmem_size", "global_scratch_size", "cluster_dims"):
        value = getattr(meta, extra, None)
        if value:
            metadata[extra] = _json_value(value)
    if getattr(kernel, "n_regs", None) is not None:
        metadata["driver_registers"] = kernel.n_regs  # what cuFuncGetAttribute reported on the device
        metadata["driver_spills"] = getattr(kernel, "n_spills", None)
    ptxas, options = _ptxas_for(cap, meta)
    if ptxas:
        metadata["ptxas"] = ptxas
    if options:
        metadata["ptxas_options"] = options
    return {
        "kernel": launch.name,
        "variant": label,
        "stages": stages,
        "metadata": metadata,
        "source_file": state.original_path(launch.fn.fn.__code__.co_filename),
    }


def _ptxas_for(cap: int, meta: Any) -> tuple[str | None, list[str]]:
    """The ptxas Triton ran and the options it passed besides -lineinfo/-v/--gpu-name."""
    try:
        from triton import knobs
        from triton.backends.nvidia.compiler import get_ptxas

        path = get_ptxas(cap).path
    except Exception:
        return None, []
    options: list[str] = []
    if not getattr(meta, "enable_fp_fusion", True):
        options.append("--fmad=false")
    if knobs.nvidia.disable_ptxas_opt:
        options += ["--opt-level", "0"]
    extra = getattr(meta, "ptx_options", None)
    if extra:
        options += str(extra).split(" ")
    return path, options


def variant_label(launch: Launch) -> str:
    """``n%16 BLOCK=1024 w4 s3``: the constants and divisibility a specialisation was built for."""
    parts: list[str] = []
    names = list(launch.fn.arg_names)
    for i, name in enumerate(names):
        ty = launch.signature.get(name)
        if ty is None:
            continue
        attrs = launch.attrs.get((i,)) or []
        divisible = any(a and a[0] == "tt.divisibility" for a in attrs)
        if ty == "constexpr":
            parts.append(f"{name}={_short(launch.constexprs.get((i,)))}")
        elif ty.startswith("*"):
            if not divisible:
                parts.append(f"{name} unaligned")
        elif divisible and ty[0] in "iu":
            parts.append(f"{name}%16")
    opts = launch.options
    parts.append(f"w{getattr(opts, 'num_warps', '?')}")
    parts.append(f"s{getattr(opts, 'num_stages', '?')}")
    if getattr(opts, "num_ctas", 1) not in (1, None):
        parts.append(f"ctas{opts.num_ctas}")
    if getattr(opts, "maxnreg", None):
        parts.append(f"maxnreg{opts.maxnreg}")
    return " ".join(parts)


def _disambiguate_labels(artifacts: list[dict[str, Any]]) -> None:
    """Two specialisations with one label differ in argument types: name them."""
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for art in artifacts:
        seen.setdefault((art["kernel"], art["variant"]), []).append(art)
    for group in seen.values():
        if len(group) < 2:
            continue
        for art in group:
            sig = art["metadata"].get("signature") or {}
            types_ = ",".join(sorted({t.lstrip("*") for t in sig.values()}))
            art["variant"] = f"{art['variant']} [{types_}]"


def _short(value: Any) -> str:
    text = str(value.value if hasattr(value, "value") and not isinstance(value, (int, float, str)) else value)
    return text if len(text) <= 24 else text[:21] + "..."


def _json_value(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return str(value)


def _task_modules(state: Any) -> list[types.ModuleType]:
    out = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and state.original_path(file) is not None:
            out.append(module)
    return out


def _name(fn: Any) -> str:
    return str(getattr(getattr(fn, "fn", None), "__name__", None) or getattr(fn, "__name__", "kernel"))


def _grid_repr(grid: Any) -> Any:
    if callable(grid):
        return "callable"
    try:
        return [int(g) for g in grid]
    except Exception:
        return str(grid) if grid is not None else None
