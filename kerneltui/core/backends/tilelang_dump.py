"""TileLang's compiler outputs for the dump rung (worker side): per compiled kernel, the CUDA source
TileLang generated, and the PTX and cubin nvcc builds from it.

Which kernels: ``custom_kernel`` runs on every test case and on the first benchmark case with the
execution of TileLang kernels suppressed (``Backend.dry_run``), so every shape specialisation the
cases need is compiled (or found compiled) and each kernel knows the cases that use it; the
benchmark's kernel is the primary one.

How: TileLang compiles its source straight to a cubin and keeps no PTX. The dump builds the same
source once more with TileLang's own nvcc driver (``tilelang.contrib.nvcc.compile_cuda``: ``-O3
-lineinfo``) and the options of TileLang's CUDA compile callback (C++20, its templates and CUTLASS
on the include path, the kernel's device compile flags, fast math and the register usage level when
configured), keeping nvcc's intermediate PTX (``--keep``), so the PTX is the one in the cubin. The
source carries ``#line`` directives (the backend asks TileLang for them), so the PTX's ``.loc``
lines and the SASS's line table point at the kernel's Python lines. Builds are cached by content
under kerneltui's cache folder.

TileLang generates CUDA for one target: a kernel built for sm_90a is dumped for sm_90a even when
another ``--arch`` is asked (the notes say so).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui.core.asm.artifact import encode_cubin
from kerneltui.core.backends.base import dump_cases

MAX_VARIANTS = 32
LINE_DIRECTIVE = re.compile(r'^\s*#line\s+\d+\s+"([^"]+)"', re.MULTILINE)
GENERATED = "tilelang_generated.cu"  # the file name nvcc's line info gives TileLang's own lines


@dataclass
class _Use:
    kernel: Any
    cases: list[str] = field(default_factory=list)
    benchmark: bool = False


def collect(backend: Any, state: Any, arch: str, progress: Any) -> list[dict[str, Any]]:
    notes: list[str] = state.dump_notes
    progress("running the kernel's host code on every case to see which kernels it compiles")
    uses = _uses_of_cases(backend, state, notes)
    for kernel in backend.compiled.values():  # compiled earlier in this worker, by no case here
        uses.setdefault(id(kernel), _Use(kernel, ["compiled earlier in this worker"]))
    ordered = list(uses.values())
    if not ordered and not notes:
        notes.append("no case compiled a TileLang kernel (custom_kernel must call one)")
    if len(ordered) > MAX_VARIANTS:
        notes.append(f"{len(ordered)} kernels were compiled; the dump keeps the first {MAX_VARIANTS}")
        ordered = ordered[:MAX_VARIANTS]
    from kerneltui.core.backends.tilelang_kernels import describe_kernel

    out = []
    for i, use in enumerate(ordered):
        name = describe_kernel(use.kernel)[0]
        target = kernel_arch(use.kernel) or arch
        progress(f"nvcc: {name} for {target}", i / max(len(ordered), 1))
        if target != arch:
            note = f"{name}: TileLang generated it for {target}, so it is dumped for {target}, not {arch}"
            if note not in notes:
                notes.append(note)
        try:
            out.append(_artifact(use, target, state, backend.compile_only))
        except Exception as exc:
            last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            notes.append(f"{name}: nvcc could not build TileLang's CUDA source for {target}: {last}")
    progress(f"TileLang: {len(out)} kernel(s)")
    return out


def _uses_of_cases(backend: Any, state: Any, notes: list[str]) -> dict[int, _Use]:
    uses: dict[int, _Use] = {}
    for label, inputs, is_bench in dump_cases(state, notes):
        with backend.dry_run() as calls:
            try:
                state.runtime.call(inputs)
            except Exception as exc:
                if not calls:
                    notes.append(f"{label}: custom_kernel failed before calling a TileLang kernel "
                                 f"({type(exc).__name__}: {exc})")
        for kernel in calls:
            use = uses.setdefault(id(kernel), _Use(kernel))
            if label not in use.cases:
                use.cases.append(label)
            use.benchmark = use.benchmark or is_bench
    return uses


def kernel_arch(kernel: Any) -> str | None:
    target = getattr(kernel, "target", None)
    attrs = getattr(target, "attrs", None)
    if attrs is not None and "arch" in attrs:
        return str(attrs["arch"])
    return None


def nvcc_options(kernel: Any) -> list[str]:
    """The options TileLang's CUDA compile callback gives nvcc for this kernel."""
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    configs = {str(getattr(k, "value", k)): v for k, v in (getattr(kernel, "pass_configs", None) or {}).items()}
    options = ["-std=c++20", f"-I{TILELANG_TEMPLATE_PATH}", f"-I{CUTLASS_INCLUDE_DIR}"]
    flags = configs.get("tl.device_compile_flags")
    for flag in ([flags] if isinstance(flags, str) else list(flags or [])) + list(getattr(kernel, "compile_flags", None) or []):
        options += shlex.split(flag) if isinstance(flag, str) else [str(flag)]
    if configs.get("tl.enable_fast_math"):
        options.append("--use_fast_math")
    level = configs.get("tl.ptxas_register_usage_level")
    if level is not None:
        options.append(f"--ptxas-options=--register-usage-level={int(level)}")
    return options


def _artifact(use: _Use, arch: str, state: Any, compile_only: bool) -> dict[str, Any]:
    from kerneltui.core.backends.tilelang_kernels import describe_kernel

    kernel = use.kernel
    name, symbol, block = describe_kernel(kernel)
    source = kernel.get_kernel_source()
    options = nvcc_options(kernel)
    ptx, cubin, command = build(pin_lines(source), arch, options)
    file_map = {path: rel for path in dict.fromkeys(LINE_DIRECTIVE.findall(source))
                if (rel := state.original_path(path)) is not None}
    metadata: dict[str, Any] = {
        "backend": "tilelang",
        "arch": arch,
        "symbol": symbol or name,
        "cases": use.cases,
        "primary": use.benchmark,
        "file_map": file_map,
        "nvcc_command": command,
        "compile_only": compile_only,
        "tilelang": _version(),
        "line_directives": bool(file_map),
        # How nvcc ran ptxas, so that the dump's ptxas -v run builds the same cubin.
        "ptxas": str(Path(command[0]).with_name("ptxas")),
        "ptxas_options": ["-m64", *ptxas_options(options)],
    }
    if block:
        metadata["block"] = block
    return {
        "kernel": name,
        "variant": variant_label(kernel),
        "stages": {"cuda": source, "ptx": ptx, "cubin": encode_cubin(cubin)},
        "metadata": metadata,
        "source_file": next(iter(file_map.values()), None) or state.task.get("kernel_file"),
    }


def pin_lines(source: str) -> str:
    """``source`` with a ``#line`` back to itself after every line a ``#line`` directive mapped.

    nvcc counts lines on from a directive, so the lines TileLang generates between two statements
    with spans (braces, its own declarations, whole loops) would be charged to the Python lines
    after the last statement. Pinned, they map to this generated source (``GENERATED``) at their
    own line numbers, and only what TileLang mapped maps to the kernel. The code is unchanged.
    """
    out = [f'#line 1 "{GENERATED}"']
    follows_directive = False
    for number, line in enumerate(source.splitlines(), start=1):
        out.append(line)
        if LINE_DIRECTIVE.match(line):
            follows_directive = True
        elif follows_directive and line.strip():
            out.append(f'#line {number + 1} "{GENERATED}"')
            follows_directive = False
    return "\n".join(out) + "\n"


def ptxas_options(options: list[str]) -> list[str]:
    out: list[str] = []
    for option in options:
        if option.startswith("--ptxas-options="):
            out += option.split("=", 1)[1].split(",")
    return out


def variant_label(kernel: Any) -> str:
    """``A 256x256 f16 · B 256x256 f16 · C 256x256 f16``: the buffers the kernel was built for."""
    func = kernel.prim_func
    parts = []
    for var in func.params:
        buffer = func.buffer_map.get(var)
        if buffer is None:
            continue
        dims = "x".join(str(d) for d in buffer.shape)
        dtype = str(buffer.dtype).replace("float", "f").replace("bfloat", "bf")
        parts.append(f"{buffer.name} {dims} {dtype}")
    return " · ".join(parts) or "default"


def build(source: str, arch: str, options: list[str]) -> tuple[str, bytes, list[str]]:
    """PTX and cubin of ``source`` for ``arch``, built once per content (kerneltui's cache)."""
    from tilelang.contrib import nvcc

    from kerneltui.paths import cache_dir

    compiler = nvcc.get_nvcc_compiler()
    key = hashlib.sha256(json.dumps([source, arch, options, str(compiler), _nvcc_version(compiler)]).encode()).hexdigest()
    entry = cache_dir() / "tilelang-dump" / key[:32]
    command = [str(compiler), "--cubin", "-O3", "-lineinfo", f"-arch={arch}", *options, "--keep"]
    if (entry / "kernel.ptx").is_file() and (entry / "kernel.cubin").is_file():
        return (entry / "kernel.ptx").read_text(encoding="utf-8"), (entry / "kernel.cubin").read_bytes(), command
    keep = Path(tempfile.mkdtemp(prefix="kerneltui-tilelang-"))
    try:
        cubin = bytes(nvcc.compile_cuda(source, "cubin", [f"-arch={arch}"], options=[*options, "--keep", f"--keep-dir={keep}"]))
        kept = sorted(keep.glob("*.ptx"))
        if not kept:
            raise RuntimeError("nvcc --keep left no PTX")
        ptx = kept[0].read_text(encoding="utf-8")
    finally:
        shutil.rmtree(keep, ignore_errors=True)
    try:
        entry.mkdir(parents=True, exist_ok=True)
        (entry / "kernel.ptx").write_text(ptx, encoding="utf-8")
        (entry / "kernel.cubin").write_bytes(cubin)
    except OSError:
        pass  # a cache that cannot be written costs the next dump a rebuild, nothing else
    return ptx, cubin, command


def _nvcc_version(compiler: Any) -> str:
    import subprocess

    try:
        return subprocess.run([str(compiler), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _version() -> str | None:
    try:
        from importlib.metadata import version

        return version("tilelang")
    except Exception:
        return None
