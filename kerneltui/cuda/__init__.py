"""CUDA C++ kernels from Python: compile a .cu file with nvcc, launch its kernels on torch tensors.

    import kerneltui.cuda

    mod = kerneltui.cuda.load("kernel.cu")          # nvcc -> PTX -> cubin, cached by content

    def custom_kernel(x, a, b):
        y = torch.empty_like(x)
        n = x.numel()
        mod.axpb(grid=((n + 1023) // 1024,), block=(256,), args=(x, y, a, b, n))   # or positionally:
        mod.axpb((n + 1023) // 1024, 256, x, y, a, b, n)
        return y

* ``load(path)`` resolves ``path`` against the calling file's folder, builds for the GPU that is
  there (``sm_90a`` on an H100/H200) or, with none, for ``arch=`` / the harness's target, and
  raises :class:`CudaCompileError` with ``file:line`` of nvcc's first error.
* Each ``__global__`` function is an attribute of the module, by its C++ name (``extern "C"`` or
  not; overloads and template instances by their mangled symbol: ``mod["_Z4axpbPKfPfffi"]``).
* A call is ``kernel(grid, block, *args, shared=0, stream=None)``. Tensors are passed as pointers,
  Python ints and floats are converted to the exact parameter types read from the PTX (and the
  C++ signature when it is mangled), structs as bytes or ctypes objects. Mismatches are Python
  errors naming the parameter. The launch goes on torch's current stream of the tensors' device.
* Driver failures raise :class:`CudaError` with the driver's error name and text. Kernel faults
  (an illegal address) surface at the next synchronisation, as with any CUDA launch.

Harnesses (kerneltui's worker) can observe launches with :func:`add_launch_hook` and switch to
compile-only mode with :func:`configure`; used on its own, this module records nothing.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltui.cuda.driver import CudaError
from kerneltui.cuda.nvcc import (
    BuildResult,
    CudaCompileError,
    KernelResources,
    NvccNotFound,
    build,
    build_from_ptx,
)
from kerneltui.cuda.params import Signature, entries, pack

__all__ = [
    "CudaCompileError", "CudaError", "Kernel", "KernelResources", "LaunchInfo", "Module", "NvccNotFound",
    "add_launch_hook", "configure", "load", "loaded_modules",
]

MAX_THREADS_PER_BLOCK = 1024
DEFAULT_SHARED_LIMIT = 48 * 1024


@dataclass(frozen=True)
class LaunchInfo:
    """What a launch hook is told about one launch."""

    kernel: str
    symbol: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    source: str
    executed: bool  # False in compile-only mode (no GPU): checked and recorded, not run
    tensors: tuple[Any, ...] = ()  # the torch tensors among the arguments (what the kernel may write)


class _Settings:
    def __init__(self) -> None:
        self.compile_only = False
        self.default_arch: str | None = None
        self.hooks: list[Callable[[LaunchInfo], None]] = []
        self.modules: weakref.WeakSet[Module] = weakref.WeakSet()


_settings = _Settings()


def configure(*, compile_only: bool | None = None, default_arch: str | None = None) -> None:
    """For harnesses: ``compile_only`` makes launches check and record their arguments without
    running (a machine with no GPU); ``default_arch`` is the target when no GPU is there."""
    if compile_only is not None:
        _settings.compile_only = compile_only
    if default_arch is not None:
        _settings.default_arch = default_arch


def add_launch_hook(hook: Callable[[LaunchInfo], None]) -> Callable[[], None]:
    """Call ``hook(info)`` on every launch; returns a function that removes it."""
    _settings.hooks.append(hook)
    return lambda: _settings.hooks.remove(hook) if hook in _settings.hooks else None


def loaded_modules() -> list[Module]:
    """Every module loaded in this process that is still alive."""
    return list(_settings.modules)


def load(path: str | Path, *, arch: str | None = None, options: Sequence[str] = (),
         defines: Mapping[str, object] | None = None, include_dirs: Iterable[str | Path] = ()) -> Module:
    """Compile ``path`` (relative to the calling file's folder) and return its kernels.

    ``options`` go to nvcc as they are (e.g. ``["-O3", "--use_fast_math", "-std=c++20"]``);
    ``defines`` become ``-DNAME=VALUE``."""
    here = _caller_dir()
    source = Path(path)
    if not source.is_absolute():
        source = here / source
    if not source.is_file():
        raise FileNotFoundError(f"kerneltui.cuda.load: {source} does not exist")
    opts = list(options) + [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in (defines or {}).items()]
    dirs = tuple(Path(d) if Path(d).is_absolute() else here / d for d in include_dirs)
    target = arch or _target_arch()
    edited = _ptx_override(source, opts)
    result = build_from_ptx(edited, source, target) if edited is not None else build(source, target, tuple(opts), dirs)
    module = Module(result)
    _settings.modules.add(module)
    return module


class Module:
    """A compiled .cu file: its PTX, cubin, ptxas report and kernels."""

    def __init__(self, result: BuildResult) -> None:
        self.result = result
        self.path = result.source
        self.arch = result.arch
        self.ptx = result.ptx
        self.cubin = result.cubin
        self.ptxas_log = result.ptxas_log
        self.signatures = entries(result.ptx)
        self.kernels: dict[str, Kernel] = {}
        by_name: dict[str, list[str]] = {}
        for symbol, sig in self.signatures.items():
            by_name.setdefault(sig.name, []).append(symbol)
            self.kernels[symbol] = Kernel(self, sig, result.resources.get(symbol, KernelResources()))
        self._names = {name: symbols[0] for name, symbols in by_name.items() if len(symbols) == 1}
        self._ambiguous = {name: symbols for name, symbols in by_name.items() if len(symbols) > 1}
        self._loaded: dict[int, tuple[Any, dict[str, Any]]] = {}  # context -> (CUmodule, functions)
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Kernel:
        if name in self.kernels:
            return self.kernels[name]
        if name in self._names:
            return self.kernels[self._names[name]]
        if name in self._ambiguous:
            raise KeyError(f"{self.path.name} has several kernels named {name}: "
                           f"{', '.join(self._ambiguous[name])}; pick one by its symbol: mod[\"…\"]")
        known = sorted(set(self._names) | set(self._ambiguous))
        raise KeyError(f"{self.path.name} has no __global__ function {name!r}; kernels: {', '.join(known) or 'none'}")

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(exc.args[0]) from None

    def __repr__(self) -> str:
        return f"<kerneltui.cuda.Module {self.path.name} ({self.arch}): {', '.join(k.name for k in self.kernels.values())}>"

    def _function(self, device: int, symbol: str) -> tuple[Any, Any]:
        from kerneltui.cuda.driver import driver

        drv = driver()
        ctx = drv.primary_context(device)
        with self._lock:
            loaded = self._loaded.get(ctx.value or 0)
            if loaded is None:
                previous = drv.current_context()
                drv.set_context(ctx.value)
                try:
                    handle = drv.load_module(self.cubin, f"{self.path.name} ({self.arch}) on device {device}")
                finally:
                    if previous != ctx.value:
                        drv.set_context(previous)
                loaded = (handle, {})
                self._loaded[ctx.value or 0] = loaded
            handle, functions = loaded
            fn = functions.get(symbol)
            if fn is None:
                fn = functions[symbol] = drv.get_function(handle, symbol)
        return drv, fn


class Kernel:
    """One ``__global__`` function: ``kernel(grid, block, *args, shared=0, stream=None)``."""

    def __init__(self, module: Module, signature: Signature, resources: KernelResources) -> None:
        self.module = module
        self.signature = signature
        self.name = signature.name
        self.symbol = signature.symbol
        self.resources = resources
        self._shared_allowed = DEFAULT_SHARED_LIMIT

    def __repr__(self) -> str:
        return f"<kerneltui.cuda.Kernel {self.signature.describe()}>"

    def __call__(self, grid: Any, block: Any, *args: Any, shared: int = 0, stream: Any = None,
                 **kwargs: Any) -> None:
        if "args" in kwargs:
            if args:
                raise TypeError(f"{self.name}: give the kernel's arguments either positionally or as args=, not both")
            args = tuple(kwargs.pop("args"))
        if kwargs:
            raise TypeError(f"{self.name}: unexpected keyword argument(s) {', '.join(sorted(kwargs))}")
        g = _dims(grid, "grid", self.name)
        b = _dims(block, "block", self.name)
        threads = b[0] * b[1] * b[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise ValueError(f"{self.name}: block {b} has {threads} threads; the limit is {MAX_THREADS_PER_BLOCK}")
        if g[1] > 65535 or g[2] > 65535 or g[0] > 2**31 - 1:
            raise ValueError(f"{self.name}: grid {g} is too large (x < 2^31, y and z ≤ 65535)")
        if shared < 0:
            raise ValueError(f"{self.name}: shared={shared} must not be negative")
        compile_only = _settings.compile_only
        storage, tensors = pack(self.signature, args, check_device=not compile_only)
        info = LaunchInfo(self.name, self.symbol, g, b, int(shared), str(self.module.path), not compile_only,
                          tuple(tensors))
        for hook in list(_settings.hooks):
            hook(info)
        if compile_only:
            return
        self._launch(g, b, int(shared), stream, storage, tensors)

    def _launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, stream: Any,
                storage: list[Any], tensors: list[Any]) -> None:
        import torch

        from kerneltui.cuda.driver import driver

        driver()  # no driver: say so before asking torch about devices
        devices = {t.device.index for t in tensors}
        if len(devices) > 1:
            raise ValueError(f"{self.name}: tensor arguments are on different devices {sorted(devices)}")
        device = devices.pop() if devices else torch.cuda.current_device()
        if device is None:
            device = torch.cuda.current_device()
        if stream is None:
            handle = torch.cuda.current_stream(device).cuda_stream
        else:
            handle = int(getattr(stream, "cuda_stream", stream))
        drv, fn = self.module._function(device, self.symbol)
        if shared > self._shared_allowed:
            drv.set_max_dynamic_shared(fn, shared, self.name)
            self._shared_allowed = shared
        params = (ctypes.c_void_p * len(storage))(*[ctypes.cast(ctypes.pointer(s), ctypes.c_void_p) for s in storage])
        what = f"{self.name} (grid {grid}, block {block}, shared {shared} B)"
        ctx = drv.primary_context(device)
        previous = drv.current_context()
        if previous != ctx.value:
            drv.set_context(ctx.value)
        try:
            drv.launch(fn, grid, block, shared, handle, params, what)
        finally:
            if previous != ctx.value:
                drv.set_context(previous)


def _dims(value: Any, what: str, kernel: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"{kernel}: {what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    if any(d < 1 for d in dims):
        raise ValueError(f"{kernel}: {what} {tuple(dims)} has a dimension below 1 (an empty input? skip the launch)")
    full = (*dims, 1, 1)[:3]
    return (int(full[0]), int(full[1]), int(full[2]))


PTX_OVERRIDE_ENV = "KERNELTUI_PTX_OVERRIDE_DIR"


def _ptx_override(source: Path, options: list[str]) -> Path | None:
    """Hand-edited PTX for ``source`` (``$KERNELTUI_PTX_OVERRIDE_DIR/<stem>.ptx``, set by kerneltui for a
    version with an override). Builds with ``-DKTRACE`` (the traced build) keep nvcc's PTX."""
    folder = os.environ.get(PTX_OVERRIDE_ENV)
    if not folder or any(o.startswith("-DKTRACE") for o in options):
        return None
    path = Path(folder) / f"{source.stem}.ptx"
    return path if path.is_file() else None


def _caller_dir() -> Path:
    frame = inspect.currentframe()
    try:
        outer = frame.f_back.f_back if frame and frame.f_back else None  # load()'s caller
        file = outer.f_globals.get("__file__") if outer else None
    finally:
        del frame
    return Path(file).resolve().parent if file else Path.cwd()


def _target_arch() -> str:
    """The GPU's own target when there is one (sm_90a on Hopper: wgmma/TMA need the a-variant)."""
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    except Exception:
        pass
    return _settings.default_arch or "sm_90a"
