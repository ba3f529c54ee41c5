"""The resource report of one compiled kernel: registers, spills, shared/local memory, occupancy.

Sources, each exact for what it says:

* the cubin's ELF (:mod:`kerneltui.core.asm.elf`): registers, stack frame (local memory per
  thread), static shared memory, barriers, launch bounds: what the driver will load;
* ``ptxas -v`` run again on the kernel's PTX: spill stores and loads in bytes, which the cubin does
  not record. When the rerun reproduces the cubin byte for byte the numbers are the built kernel's;
  otherwise (another ptxas version or options) they are marked as approximate;
* the backend's metadata: dynamic shared memory and threads per block for the launch;
* the SASS: local-memory instructions (STL/LDL), the spill traffic when ptxas is not available.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from kerneltui.core.asm.elf import CubinInfo, KernelResources, same_code
from kerneltui.core.asm.occupancy import OccupancyData, estimate
from kerneltui.core.asm.tools import Tool

PTXAS_TIMEOUT_S = 120.0

_COMPILING = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(.*)")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")


@dataclass
class PtxasFunction:
    name: str
    arch: str = ""
    registers: int | None = None
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0
    shared_bytes: int = 0
    constant_bytes: dict[int, int] = field(default_factory=dict)


def parse_ptxas_log(text: str) -> dict[str, PtxasFunction]:
    """Per function, what ``ptxas -v`` printed about it."""
    out: dict[str, PtxasFunction] = {}
    current: PtxasFunction | None = None
    for line in text.splitlines():
        if m := _COMPILING.search(line):
            current = out.setdefault(m.group(1), PtxasFunction(name=m.group(1)))
            current.arch = m.group(2)
            continue
        if m := _PROPS.search(line):
            current = out.setdefault(m.group(1), PtxasFunction(name=m.group(1)))
            continue
        if current is None:
            continue
        if m := _FRAME.search(line):
            current.stack_frame_bytes, current.spill_store_bytes, current.spill_load_bytes = map(int, m.groups())
        elif m := _USED.search(line):
            current.registers = int(m.group(1))
            rest = m.group(2)
            if b := _BARRIERS.search(rest):
                current.barriers = int(b.group(1))
            if s := _SMEM.search(rest):
                current.shared_bytes = int(s.group(1))
            current.constant_bytes = {int(bank): int(size) for size, bank in _CMEM.findall(rest)}
    return out


@dataclass
class PtxasRun:
    log: str
    functions: dict[str, PtxasFunction]
    same_cubin: bool  # the rerun produced the backend's cubin (code, resources; see elf.same_code)
    command: list[str]
    tool: Tool
    lowered_version: str = ""  # set when the PTX header had to be lowered for this ptxas


def rerun_ptxas(ptx: str, arch: str, tool: Tool, reference_cubin: bytes | None,
                extra_options: list[str] | None = None, timeout: float = PTXAS_TIMEOUT_S) -> PtxasRun:
    """Assemble ``ptx`` again with ``-v`` and compare the result with the backend's cubin."""
    with tempfile.TemporaryDirectory(prefix="kerneltui-ptxas-") as tmp:
        src, dst = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx, encoding="utf-8")
        cmd = [tool.path, "-lineinfo", "-v", *(extra_options or []), f"--gpu-name={arch}", str(src), "-o", str(dst)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"ptxas gave no answer after {timeout:.0f} s") from exc
        log = proc.stdout + proc.stderr
        lowered = ""
        newer = _UNSUPPORTED_VERSION.search(log)
        if proc.returncode != 0 and newer:
            # A DSL can ship a newer compiler than the toolkit here (CuTe DSL emits PTX ISA versions
            # a CUDA 13.0 ptxas refuses). The header is often the only thing newer: assemble again
            # with the version ptxas knows; comparing with the build's cubin says if that was exact.
            lowered = f"PTX .version {newer.group(1)} lowered to {newer.group(2)} for ptxas {tool.version}"
            src.write_text(_VERSION_LINE.sub(f".version {newer.group(2)}", ptx, count=1), encoding="utf-8")
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            tail = "\n".join(log.strip().splitlines()[-5:])
            raise RuntimeError(f"ptxas {tool.version} could not assemble the PTX for {arch}"
                               f"{' (even ' + lowered + ')' if lowered else ''}: {tail}")
        built = dst.read_bytes() if dst.exists() else b""
    shown = [Path(c).name if c.startswith(tmp) else c for c in cmd]
    same = reference_cubin is not None and same_code(built, reference_cubin)
    return PtxasRun(log=log, functions=parse_ptxas_log(log), same_cubin=same, command=shown, tool=tool,
                    lowered_version=lowered)


_UNSUPPORTED_VERSION = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")
_VERSION_LINE = re.compile(r"^\s*\.version\s+\d+\.\d+", re.MULTILINE)


class ResourceReportData(TypedDict):
    """``ResourceReport.to_dict()``: its fields and ``shared_bytes``, in the dump's index."""

    kernel: str
    arch: str
    registers: int | None
    spill_store_bytes: int | None
    spill_load_bytes: int | None
    spills_source: str
    stack_frame_bytes: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    constant_bytes: int
    barriers: int
    threads_per_block: int | None
    max_registers: int | None
    local_loads: int
    local_stores: int
    occupancy: OccupancyData | None
    notes: list[str]
    shared_bytes: int


@dataclass
class ResourceReport:
    kernel: str
    arch: str
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    spills_source: str = ""  # where the spill numbers come from, and how sure they are
    stack_frame_bytes: int = 0  # local memory per thread
    static_shared_bytes: int = 0
    dynamic_shared_bytes: int = 0
    constant_bytes: int = 0
    barriers: int = 0
    threads_per_block: int | None = None
    max_registers: int | None = None
    local_loads: int = 0  # LDL instructions in the SASS
    local_stores: int = 0  # STL instructions in the SASS
    occupancy: OccupancyData | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def shared_bytes(self) -> int:
        return self.static_shared_bytes + self.dynamic_shared_bytes

    @property
    def spill_bytes(self) -> int | None:
        if self.spill_store_bytes is None or self.spill_load_bytes is None:
            return None
        return self.spill_store_bytes + self.spill_load_bytes

    def to_dict(self) -> ResourceReportData:
        return {"kernel": self.kernel, "arch": self.arch, "registers": self.registers,
                "spill_store_bytes": self.spill_store_bytes, "spill_load_bytes": self.spill_load_bytes,
                "spills_source": self.spills_source, "stack_frame_bytes": self.stack_frame_bytes,
                "static_shared_bytes": self.static_shared_bytes, "dynamic_shared_bytes": self.dynamic_shared_bytes,
                "constant_bytes": self.constant_bytes, "barriers": self.barriers,
                "threads_per_block": self.threads_per_block, "max_registers": self.max_registers,
                "local_loads": self.local_loads, "local_stores": self.local_stores,
                "occupancy": self.occupancy.copy() if self.occupancy else None,
                "notes": list(self.notes), "shared_bytes": self.shared_bytes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResourceReport:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def spills_text(self) -> str:
        if self.spill_store_bytes is None:
            if self.local_stores or self.local_loads:
                return f"{self.local_stores} STL / {self.local_loads} LDL"
            return "spills unknown"
        if not self.spill_store_bytes and not self.spill_load_bytes:
            return "0 spills"
        return f"spills {self.spill_store_bytes} B st / {self.spill_load_bytes} B ld"


def kernel_resources(info: CubinInfo, kernel: str, symbol: str | None = None) -> KernelResources | None:
    """The cubin's record for ``kernel`` (its symbol, a mangled name containing it, or the only one)."""
    for name in (symbol, kernel):
        if name and name in info.kernels:
            return info.kernels[name]
    if len(info.kernels) == 1:
        return next(iter(info.kernels.values()))
    for name, res in info.kernels.items():
        if kernel and kernel in name:
            return res
    return None


def build_report(kernel: str, arch: str, metadata: dict[str, Any], cubin: KernelResources | None,
                 ptxas: PtxasRun | None, symbol: str | None, local_loads: int, local_stores: int) -> ResourceReport:
    report = ResourceReport(kernel=kernel, arch=arch, local_loads=local_loads, local_stores=local_stores)
    if cubin is not None:
        report.registers = cubin.registers
        report.stack_frame_bytes = cubin.frame_bytes
        report.static_shared_bytes = cubin.static_shared_bytes
        report.constant_bytes = cubin.constant0_bytes
        report.barriers = cubin.barriers
        report.max_registers = cubin.max_registers
        if cubin.required_threads:
            report.threads_per_block = _product(cubin.required_threads)
    fn = None
    if ptxas is not None:
        fn = ptxas.functions.get(symbol or "") or ptxas.functions.get(kernel)
        if fn is None and len(ptxas.functions) == 1:
            fn = next(iter(ptxas.functions.values()))
    if fn is not None and ptxas is not None:
        report.spill_store_bytes = fn.spill_store_bytes
        report.spill_load_bytes = fn.spill_load_bytes
        if ptxas.same_cubin:
            report.spills_source = f"ptxas -v ({ptxas.tool.version or ptxas.tool.origin}), same cubin as the build"
        else:
            report.spills_source = (f"ptxas -v ({ptxas.tool.version or ptxas.tool.origin}) run again; its cubin differs "
                                    "from the build (other ptxas version or options), so spills are approximate")
            report.notes.append(report.spills_source)
        if ptxas.lowered_version:
            report.spills_source += f" ({ptxas.lowered_version})"
        if report.registers is None:
            report.registers = fn.registers
            report.barriers = fn.barriers
            report.stack_frame_bytes = fn.stack_frame_bytes
    elif ptxas is None:
        report.spills_source = "no ptxas to report spills; STL/LDL counts in the SASS show local-memory traffic"
    dynamic = metadata.get("dynamic_shared_bytes", metadata.get("shared"))
    if isinstance(dynamic, int):
        report.dynamic_shared_bytes = dynamic
    threads = metadata.get("threads_per_block")
    if threads is None and isinstance(metadata.get("block"), (list, tuple)):
        threads = _product(metadata["block"])
    if threads is None and isinstance(metadata.get("num_warps"), int):
        threads = metadata["num_warps"] * int(metadata.get("warp_size") or 32)
    if isinstance(threads, int) and threads > 0:
        report.threads_per_block = threads
    if isinstance(metadata.get("maxnreg"), int):
        report.max_registers = metadata["maxnreg"]
    if report.threads_per_block and report.registers is not None:
        occ = estimate(arch, report.threads_per_block, report.registers, report.shared_bytes)
        if occ is not None:
            report.occupancy = occ.to_dict()
            report.occupancy["text"] = occ.describe()
        else:
            report.notes.append(f"no occupancy estimate: the limits of {arch} are not in kerneltui's table")
    elif report.registers is not None:
        report.notes.append("no occupancy estimate: the launch configuration (threads per block) is unknown")
    return report


def _product(values: list[int] | tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= max(int(v), 1)
    return out
