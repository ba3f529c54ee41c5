"""CUDA C++: a .cu file built with nvcc, launched from the task's Python launcher.

The task's launcher (``launch.py``) compiles the kernel with ``kerneltui.cuda.load("kernel.cu")``
and launches it in ``custom_kernel``. This backend connects that runtime to the worker: launches
are counted through its launch hook, nvcc errors are located in the .cu file, and with no GPU
the runtime runs compile-only (launch arguments are checked and recorded, nothing runs).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from kerneltui.core.backends.base import BaseBackend, first_call
from kerneltui.core.backends.spec import BackendSpec, CacheHome, CompileCache, KernelMarker, OverrideSupport


def _kerneltui_cache(home: CacheHome) -> str:
    return str(Path(home.env.get("XDG_CACHE_HOME") or home.home / ".cache") / "kerneltui")


SPEC = BackendSpec(
    name="cuda",
    label="CUDA C++",
    kernel_file="kernel.cu",
    launcher="launch.py",
    marker=KernelMarker(re.compile(r"__global__"), "a __global__ kernel"),
    submission_signs=tuple(re.compile(re.escape(sign)) for sign in ("load_inline", "cpp_extension", "__global__")),
    override=OverrideSupport(("PTX",), named_for_kernel_file=True),
    warm_imports=("kerneltui.cuda",),
    # kerneltui.cuda's nvcc builds, under cuda/ of kerneltui's cache folder (which holds more).
    caches=(CompileCache("KERNELTUI_CACHE_DIR", "kerneltui's CUDA build cache (cuda/)", _kerneltui_cache, None,
                         part="cuda"),),
)


class CudaLaunchMissing(Exception):
    harness_message = True


class Backend(BaseBackend):
    spec = SPEC

    def __init__(self) -> None:
        self.compile_only = False
        self._remove_hook: Any = None
        self.nvcc: str | None = None

    def warm(self, state: Any) -> None:
        import kerneltui.cuda as runtime
        from kerneltui.cuda.nvcc import NvccNotFound, find_nvcc, nvcc_version

        self.runtime = runtime
        self.compile_only = not state.has_gpu
        runtime.configure(compile_only=self.compile_only, default_arch=state.arch)
        try:
            nvcc = find_nvcc()
            self.nvcc = f"{nvcc} ({nvcc_version(nvcc)})"
        except (NvccNotFound, OSError) as exc:
            # Not fatal here: the worker must start; the compile rung says what is missing.
            self.nvcc = None
            state.notes.append(str(exc))
        if self.compile_only:
            state.notes.append(f"CUDA C++ without a GPU: kernels are compiled for {state.arch} (PTX, cubin) but not run")

    def install_hooks(self, state: Any) -> None:
        if self._remove_hook is not None:
            return

        def on_launch(info: Any) -> None:
            state.record_launch("cuda", info.kernel, tensors=list(info.tensors), symbol=info.symbol,
                                grid=list(info.grid), block=list(info.block), shared=info.shared,
                                executed=info.executed)

        self._remove_hook = self.runtime.add_launch_hook(on_launch)

    def compile(self, state: Any, first_case_inputs: Any) -> dict[str, Any]:
        owns = self.first_call_owner()
        result = first_call(state, first_case_inputs, owns)
        if self.compile_only and not state.compile_launches:
            raise CudaLaunchMissing(
                f"{state.task.get('entry_file', 'launch.py')}: custom_kernel launched no CUDA kernel on the first test "
                "case: compile it with kerneltui.cuda.load(\"kernel.cu\") and call one of its kernels"
            )
        modules = self._task_modules(state)
        result["modules"] = [
            {"source": state.original_path(str(m.path)) or m.path.name, "arch": m.arch, "cached": m.result.cached,
             "kernels": {k.name: k.resources.to_dict() for k in m.kernels.values()}}
            for m in modules
        ]
        launched = {rec.detail.get("symbol") for rec in state.compile_launches}
        regs = [k.resources for m in modules for k in m.kernels.values() if k.symbol in launched]
        if regs:
            result["registers"] = max(r.registers or 0 for r in regs)
            result["spill_bytes"] = sum(r.spill_stores + r.spill_loads for r in regs)
        return result

    def is_compile_error(self, exc: BaseException) -> bool:
        from kerneltui.cuda.nvcc import CudaCompileError, NvccNotFound

        return isinstance(exc, (CudaCompileError, NvccNotFound))

    def locate_error(self, exc: BaseException, state: Any) -> tuple[str, int] | None:
        from kerneltui.cuda.nvcc import CudaCompileError

        if isinstance(exc, CudaCompileError) and exc.file:
            rel = state.original_path(exc.file)
            if rel is not None:
                return rel, exc.line or 1
        return None

    def kernels(self, state: Any) -> list[str]:
        launched = {rec.kernel for rec in state.launches} | {rec.kernel for rec in state.compile_launches}
        return sorted(launched or {k.name for m in self._task_modules(state) for k in m.kernels.values()})

    def _task_modules(self, state: Any) -> list[Any]:
        return [m for m in self.runtime.loaded_modules() if state.original_path(str(m.path)) is not None]

    def collect_artifacts(self, state: Any, arch: str, progress: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for module in self._task_modules(state):
            rel = state.original_path(str(module.path)) or module.path.name
            cubin = base64.b64encode(module.cubin).decode("ascii")
            file_map = _file_map(module, state)
            for kernel in module.kernels.values():
                out.append({
                    "kernel": kernel.name,
                    "variant": kernel.symbol,
                    "stages": {"ptx": module.ptx, "cubin": {"base64": cubin}},
                    "metadata": {
                        "backend": "cuda",
                        "arch": module.arch,
                        "symbol": kernel.symbol,
                        "signature": kernel.signature.describe(),
                        "resources": kernel.resources.to_dict(),
                        "nvcc_command": list(module.result.command),
                        "options": list(module.result.options),
                        "cached": module.result.cached,
                        "file_map": file_map,
                        "compile_only": self.compile_only,
                    },
                    "source_file": rel,
                })
        progress(f"CUDA C++: {len(out)} kernel(s)")
        return out


def _file_map(module: Any, state: Any) -> dict[str, str]:
    """Paths inside the PTX and the cubin's line table -> task-relative names. A cached build was
    compiled in another worker's copy of the task, whose paths the cubin still carries."""
    out: dict[str, str] = {}
    here = str(module.path.parent)
    for path in re.findall(r'^\s*\.file\s+\d+\s+"([^"]+)"', module.ptx, flags=re.MULTILINE):
        rel = state.original_path(path)
        if rel is None:
            continue
        out[path] = rel
        compiled_in = module.result.compiled_in
        if compiled_in and compiled_in != here and path.startswith(here + "/"):
            out[compiled_in + path[len(here):]] = rel
    return out
