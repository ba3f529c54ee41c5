"""Build a .cu file into PTX and a cubin with the CUDA toolkit, cached by content.

Two steps, so that both stages are kept and the resource report is exact: ``nvcc -ptx`` (the C++
front end and NVVM, with ``-lineinfo``), then ``nvcc -cubin`` on that PTX (ptxas, with ``-v`` for
registers, spills, shared memory and barriers per kernel). Artifacts are cached under
``$KERNELTUI_CACHE_DIR/cuda/<hash>``; the hash covers the source, the headers beside it, the
options, the target and the toolkit version, so an unchanged kernel is never rebuilt (every
check runs in fresh worker processes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TypedDict

HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hh", ".inl", ".inc")
# nvcc/EDG: "kernel.cu(12): error: ..."; the host preprocessor: "kernel.cu:1:10: fatal error: ..."
EDG_DIAG = re.compile(r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\): (?P<kind>catastrophic error|error|warning)[^:]*: (?P<text>.*)$")
GCC_DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?P<kind>fatal error|error|warning): (?P<text>.*)$")
PTXAS_DIAG = re.compile(r"^ptxas (?P<kind>error|fatal)\s*: (?P<text>.*)$")


class NvccNotFound(RuntimeError):
    """No CUDA toolkit: nothing can be compiled."""


class CudaCompileError(RuntimeError):
    """nvcc or ptxas rejected the source. ``file``/``line`` point at the first error."""

    harness_message = True  # the message is a full sentence; harnesses show it as it is

    def __init__(self, message: str, *, file: str | None, line: int | None, log: str, command: list[str]) -> None:
        super().__init__(message)
        self.file = file  # absolute path of the file with the first error
        self.line = line
        self.log = log
        self.command = command
        if log:
            self.add_note(log)  # the whole compiler output, shown with the traceback


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reported for one entry function."""

    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    stack_frame: int = 0
    shared_bytes: int = 0
    barriers: int | None = None
    constant: dict[str, int] = field(default_factory=dict)
    lines: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"registers": self.registers, "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
                "stack_frame": self.stack_frame, "shared_bytes": self.shared_bytes, "barriers": self.barriers,
                "constant": dict(self.constant), "ptxas": list(self.lines)}


@dataclass(frozen=True)
class BuildResult:
    source: Path
    arch: str
    ptx: str
    cubin: bytes
    ptxas_log: str
    resources: dict[str, KernelResources]
    options: tuple[str, ...]
    command: tuple[str, ...]
    compiled_in: str  # the directory the source was compiled in (paths inside the cubin's line table)
    cached: bool
    key: str


def find_nvcc() -> str:
    candidates = [shutil.which("nvcc")]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(str(Path(os.environ[var]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for path in candidates:
        if path and Path(path).is_file():
            return path
    raise NvccNotFound("nvcc not found: install the CUDA toolkit, put nvcc on PATH or set CUDA_HOME")


@cache
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def cache_root() -> Path:
    base = os.environ.get("KERNELTUI_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "kerneltui")
    return Path(base) / "cuda"


def build(source: Path, arch: str, options: tuple[str, ...] = (), include_dirs: tuple[Path, ...] = ()) -> BuildResult:
    """Compile ``source`` for ``arch`` (e.g. ``sm_90a``), or take it from the cache."""
    nvcc = find_nvcc()
    source = source.resolve()
    text = source.read_bytes()
    key = _cache_key(source, text, arch, options, include_dirs, nvcc_version(nvcc))
    entry = cache_root() / key
    cached = _read_entry(entry, source)
    if cached is not None:
        return cached
    return _compile_into(entry, source, arch, options, include_dirs, nvcc, key)


def build_from_ptx(ptx_path: Path, source: Path, arch: str) -> BuildResult:
    """Assemble hand-edited PTX (``ptx_path``) with ptxas into a cubin, for the kernels of ``source``.

    The PTX must target ``arch`` or one it can run on; ptxas's errors come back as
    :class:`CudaCompileError` naming the PTX file and line."""
    nvcc = find_nvcc()
    source = source.resolve()
    text = ptx_path.read_bytes()
    h = hashlib.sha256(text)
    h.update(json.dumps([source.name, arch, "ptx-override", nvcc_version(nvcc)]).encode())
    entry = cache_root() / f"ptx-{h.hexdigest()[:28]}"
    cached = _read_entry(entry, source)
    if cached is not None:
        return cached
    entry.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    try:
        shutil.copyfile(ptx_path, work / "kernel.ptx")
        back = [nvcc, "-cubin", f"-arch={arch}", "-lineinfo", "-Xptxas", "-v", str(work / "kernel.ptx"),
                "-o", str(work / "kernel.cubin")]
        proc = subprocess.run(back, cwd=source.parent, capture_output=True, text=True)
        log = (proc.stdout + ("\n" if proc.stdout and proc.stderr else "") + proc.stderr).strip()
        if proc.returncode != 0:
            raise ptx_error(log, ptx_path, back)
        (work / "ptxas.log").write_text(log)
        (work / "meta.json").write_text(json.dumps({"arch": arch, "options": [], "command": back,
                                                    "compiled_in": str(source.parent), "source": source.name,
                                                    "ptx_override": str(ptx_path)}))
        try:
            os.replace(work, entry)
        except OSError:
            pass
        result = _read_entry(entry, source, cached=False)
        if result is None:
            raise RuntimeError(f"kerneltui.cuda: assembling {ptx_path.name} left no artifacts in {entry}")
        return result
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


PTXAS_LINE = re.compile(r"^ptxas\s+(?P<file>[^,]+), line (?P<line>\d+); (?P<kind>error|fatal)\s*: (?P<text>.*)$")


def ptx_error(log: str, ptx_path: Path, cmd: list[str]) -> CudaCompileError:
    """ptxas's first error in edited PTX: ``ptxas kernel.ptx, line 42; error : Unknown symbol 'x'``."""
    for line in log.splitlines():
        m = PTXAS_LINE.match(line.strip())
        if m:
            return CudaCompileError(f"{ptx_path.name}:{m.group('line')}: ptxas {m.group('kind')}: {m.group('text')}",
                                    file=str(ptx_path), line=int(m.group("line")), log=log, command=cmd)
    tail = " | ".join(log.splitlines()[-3:]) or "ptxas failed without output"
    return CudaCompileError(f"{ptx_path.name}: {tail}", file=str(ptx_path), line=None, log=log, command=cmd)


def _cache_key(source: Path, text: bytes, arch: str, options: tuple[str, ...], include_dirs: tuple[Path, ...],
               version: str) -> str:
    h = hashlib.sha256()
    h.update(text)
    # Headers beside the source and in the include directories: a change there changes the build.
    for folder in (source.parent, *include_dirs):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in HEADER_SUFFIXES and path.is_file():
                h.update(path.name.encode())
                h.update(path.read_bytes())
    h.update(json.dumps([source.name, arch, list(options), version, 2]).encode())
    return h.hexdigest()[:32]


def _compile_into(entry: Path, source: Path, arch: str, options: tuple[str, ...], include_dirs: tuple[Path, ...],
                  nvcc: str, key: str) -> BuildResult:
    entry.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=entry.parent))
    try:
        ptx_path, cubin_path = work / "kernel.ptx", work / "kernel.cubin"
        includes = [f"-I{d}" for d in include_dirs]
        front = [nvcc, "-ptx", f"-arch={arch}", "-lineinfo", *includes, *options, source.name, "-o", str(ptx_path)]
        _run(front, cwd=source.parent, source=source)
        back = [nvcc, "-cubin", f"-arch={arch}", "-lineinfo", "-Xptxas", "-v", str(ptx_path), "-o", str(cubin_path)]
        log = _run(back, cwd=source.parent, source=source)
        meta = {"arch": arch, "options": list(options), "command": front, "compiled_in": str(source.parent),
                "source": source.name}
        (work / "ptxas.log").write_text(log)
        (work / "meta.json").write_text(json.dumps(meta))
        try:
            os.replace(work, entry)  # atomic; when a concurrent build of the same key won, keep its entry
        except OSError:
            pass
        result = _read_entry(entry, source, cached=False)
        if result is None:
            raise RuntimeError(f"kerneltui.cuda: the build of {source.name} left no artifacts in {entry}")
        return result
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _read_entry(entry: Path, source: Path, cached: bool = True) -> BuildResult | None:
    try:
        meta = json.loads((entry / "meta.json").read_text())
        ptx = (entry / "kernel.ptx").read_text()
        cubin = (entry / "kernel.cubin").read_bytes()
        log = (entry / "ptxas.log").read_text()
    except (OSError, ValueError):
        return None
    compiled_in = str(meta.get("compiled_in", ""))
    here = str(source.parent)
    if compiled_in and compiled_in != here:
        # Same source compiled elsewhere (each worker has its own copy of the task): point the
        # PTX's file table here. The cubin's line table keeps the old path (see compiled_in).
        ptx = ptx.replace(f'"{compiled_in}/', f'"{here}/')
    return BuildResult(source=source, arch=str(meta["arch"]), ptx=ptx, cubin=cubin, ptxas_log=log,
                       resources=parse_ptxas_log(log), options=tuple(meta.get("options", ())),
                       command=tuple(meta.get("command", ())), compiled_in=compiled_in, cached=cached,
                       key=entry.name)


def _run(cmd: list[str], cwd: Path, source: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    log = (proc.stdout + ("\n" if proc.stdout and proc.stderr else "") + proc.stderr).strip()
    if proc.returncode != 0:
        raise compile_error(log, cwd, source, cmd)
    return log


def compile_error(log: str, cwd: Path, source: Path, cmd: list[str]) -> CudaCompileError:
    errors: list[tuple[str | None, int | None, str]] = []
    for log_line in log.splitlines():
        m = EDG_DIAG.match(log_line) or GCC_DIAG.match(log_line)
        if m and "warning" not in m.group("kind"):
            errors.append((m.group("file"), int(m.group("line")), f"{m.group('kind')}: {m.group('text')}"))
            continue
        m = PTXAS_DIAG.match(log_line)
        if m:
            errors.append((None, None, f"ptxas {m.group('kind')}: {m.group('text')}"))
    if not errors:
        tail = " | ".join(log.splitlines()[-3:]) or f"exit status without output ({' '.join(cmd)})"
        return CudaCompileError(f"{source.name}: nvcc failed: {tail}", file=str(source), line=None, log=log,
                                command=cmd)
    file, line, text = errors[0]
    path = str((cwd / file).resolve()) if file else None
    shown = os.path.relpath(path, source.parent) if path else source.name
    where = f"{shown}:{line}: " if line else f"{shown}: "
    more = f" (+{len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return CudaCompileError(f"{where}{text}{more}", file=path or str(source), line=line, log=log, command=cmd)


class _PtxasFields(TypedDict, total=False):
    """What ptxas's lines have said so far of the entry function being read (KernelResources' fields)."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    shared_bytes: int
    barriers: int
    constant: dict[str, int]


def parse_ptxas_log(log: str) -> dict[str, KernelResources]:
    """Per entry function: ``ptxas info : Used 12 registers, used 1 barriers, 1024 bytes smem, …``."""
    out: dict[str, KernelResources] = {}
    current: str | None = None
    fields: _PtxasFields = {}
    lines: list[str] = []

    def flush() -> None:
        if current is not None:
            out[current] = KernelResources(lines=tuple(lines), **fields)

    for raw in log.splitlines():
        line = raw.strip()
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            flush()
            current, fields, lines = m.group(1), {}, [line]
            continue
        if current is None:
            continue
        if "Compile time" not in line:
            lines.append(line)
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            fields.update({"stack_frame": int(m.group(1)), "spill_stores": int(m.group(2)), "spill_loads": int(m.group(3))})
        m = re.search(r"Used (\d+) registers", line)
        if m:
            fields["registers"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            if b:
                fields["barriers"] = int(b.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            if s:
                fields["shared_bytes"] = int(s.group(1))
            fields["constant"] = {f"cmem[{k}]": int(v) for v, k in re.findall(r"(\d+) bytes cmem\[(\d+)\]", line)}
    flush()
    return out
