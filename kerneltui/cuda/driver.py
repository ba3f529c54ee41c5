"""The few CUDA driver calls a launch needs, through ctypes (libcuda ships with the driver).

Every call's status is checked; a failure becomes :class:`CudaError` with the driver's own name
and description (``CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered``) and
what was being done. Modules are loaded into the primary context of the tensors' device: the
one PyTorch uses, so kernels and torch share memory, streams and ordering.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class CudaError(RuntimeError):
    """A CUDA driver call failed. ``code`` is the CUresult, ``name`` e.g. CUDA_ERROR_ILLEGAL_ADDRESS."""

    def __init__(self, message: str, code: int = -1, name: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.name = name


class Driver:
    def __init__(self) -> None:
        lib = None
        errors = []
        for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as exc:
                errors.append(str(exc))
        if lib is None:
            raise CudaError("no CUDA driver (libcuda) on this machine: kernels compile here but run only on a "
                            "machine with an NVIDIA GPU and its driver")
        self.lib = lib
        for fn in ("cuGetErrorName", "cuGetErrorString"):
            getattr(lib, fn).argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuLaunchKernel.argtypes = [
            ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ]
        lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        lib.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
        self.check(lib.cuInit(0), "initialising the CUDA driver (cuInit)")
        self._contexts: dict[int, ctypes.c_void_p] = {}

    def error_text(self, code: int) -> tuple[str, str]:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(name))
        self.lib.cuGetErrorString(code, ctypes.byref(text))
        return ((name.value or b"CUDA_ERROR_UNKNOWN").decode(), (text.value or b"unknown error").decode())

    def check(self, code: int, doing: str) -> None:
        if code != 0:
            name, text = self.error_text(code)
            raise CudaError(f"CUDA error {name} ({code}): {text}, while {doing}", code, name)

    def primary_context(self, device: int) -> ctypes.c_void_p:
        ctx = self._contexts.get(device)
        if ctx is None:
            dev = ctypes.c_int()
            self.check(self.lib.cuDeviceGet(ctypes.byref(dev), device), f"opening device {device}")
            ctx = ctypes.c_void_p()
            self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), f"retaining device {device}'s context")
            self._contexts[device] = ctx
        return ctx

    def current_context(self) -> int | None:
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "reading the current context")
        return ctx.value

    def set_context(self, ctx: int | None) -> None:
        self.check(self.lib.cuCtxSetCurrent(ctx), "making a context current")

    def load_module(self, image: bytes, what: str) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), image), f"loading {what}")
        return module

    def get_function(self, module: ctypes.c_void_p, symbol: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, symbol.encode()), f"finding kernel {symbol}")
        return fn

    def set_max_dynamic_shared(self, fn: ctypes.c_void_p, nbytes: int, what: str) -> None:
        self.check(self.lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
                   f"allowing {nbytes} bytes of dynamic shared memory for {what}")

    def launch(self, fn: ctypes.c_void_p, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
               stream: int, params: Any, what: str) -> None:
        self.check(self.lib.cuLaunchKernel(fn, *grid, *block, shared, stream or None, params, None), f"launching {what}")


_driver: Driver | None = None
_lock = threading.Lock()


def driver() -> Driver:
    global _driver
    with _lock:
        if _driver is None:
            _driver = Driver()
        return _driver
