"""Finding NVIDIA's binary tools (nvdisasm, cuobjdump, ptxas) without a CUDA toolkit install.

Searched in this order, first hit wins:

1. ``KERNELTUI_<TOOL>`` (e.g. ``KERNELTUI_NVDISASM=/opt/cuda/bin/nvdisasm``): an explicit choice;
2. the ``PATH``;
3. ``$CUDA_HOME/bin`` and ``$CUDA_PATH/bin``, then ``/usr/local/cuda/bin``;
4. Triton's wheel, which ships ``nvdisasm``, ``cuobjdump`` and ``ptxas`` in
   ``triton/backends/nvidia/bin`` (located with ``importlib.util.find_spec`` so the parent process
   never imports triton);
5. NVIDIA's PyPI packages (``nvidia-cuda-nvdisasm``, ``nvidia-cuda-cuobjdump``, ``nvidia-cuda-nvcc``),
   which install under ``site-packages/nvidia/<cuXX|cuda_*>/bin``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TOOL_NAMES = ("nvdisasm", "cuobjdump", "ptxas")
INSTALL_HINT = ("install one: `pip install nvidia-cuda-nvdisasm` (or triton, which ships nvdisasm and cuobjdump), "
                "or a CUDA toolkit, or point KERNELTUI_NVDISASM at an nvdisasm binary")


@dataclass(frozen=True)
class Tool:
    name: str  # "nvdisasm"
    path: str
    origin: str  # where it was found: "PATH", "CUDA_HOME", "triton wheel", "nvidia-cuda-nvdisasm", …
    version: str = ""  # "12.8.55" when the tool says

    def describe(self) -> str:
        return f"{self.name} {self.version or '(version unknown)'} from {self.origin} ({self.path})"

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "path": self.path, "origin": self.origin, "version": self.version}


def find_tool(name: str) -> Tool | None:
    """The first ``name`` binary found (see the module docstring for the order), or None."""
    for origin, path in candidates(name):
        if path.is_file() and os.access(path, os.X_OK):
            return Tool(name=name, path=str(path), origin=origin, version=tool_version(str(path)))
    return None


def find_all(name: str) -> list[Tool]:
    """Every usable ``name`` binary, in search order (for diagnostics)."""
    seen: set[str] = set()
    out = []
    for origin, path in candidates(name):
        real = str(path.resolve()) if path.exists() else str(path)
        if real in seen or not (path.is_file() and os.access(path, os.X_OK)):
            continue
        seen.add(real)
        out.append(Tool(name=name, path=str(path), origin=origin, version=tool_version(str(path))))
    return out


def candidates(name: str) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    override = os.environ.get(f"KERNELTUI_{name.upper()}")
    if override:
        out.append((f"KERNELTUI_{name.upper()}", Path(override)))
    on_path = shutil.which(name)
    if on_path:
        out.append(("PATH", Path(on_path)))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            out.append((var, Path(root) / "bin" / name))
    out.append(("/usr/local/cuda", Path("/usr/local/cuda/bin") / name))
    triton_bin = triton_bin_dir()
    if triton_bin is not None:
        out.append(("triton wheel", triton_bin / name))
    for package_dir, origin in nvidia_package_bins():
        out.append((origin, package_dir / name))
    return out


@cache
def triton_bin_dir() -> Path | None:
    """``…/site-packages/triton/backends/nvidia/bin`` of the installed triton, without importing it."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "backends" / "nvidia" / "bin"
        if candidate.is_dir():
            return candidate
    return None


def nvidia_package_bins() -> list[tuple[Path, str]]:
    """``site-packages/nvidia/*/bin`` folders of NVIDIA's PyPI wheels (cu13/bin, cuda_nvdisasm/bin, …)."""
    out: list[tuple[Path, str]] = []
    roots: list[Path] = []
    for entry in sys.path:
        if entry and Path(entry).is_dir():
            roots.append(Path(entry) / "nvidia")
    seen: set[Path] = set()
    for root in roots:
        if root in seen or not root.is_dir():
            continue
        seen.add(root)
        for sub in sorted(root.iterdir()):
            bin_dir = sub / "bin"
            if bin_dir.is_dir():
                out.append((bin_dir, f"pip package nvidia/{sub.name}"))
    return out


_VERSION = re.compile(r"release\s+[\d.]+,\s+V([\d.]+)")


@cache
def tool_version(path: str) -> str:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = _VERSION.search(proc.stdout + proc.stderr)
    return m.group(1) if m else ""


@dataclass(frozen=True)
class Toolset:
    """The tools the dump uses, found once per run."""

    nvdisasm: Tool | None
    cuobjdump: Tool | None
    ptxas: Tool | None

    @classmethod
    def discover(cls) -> Toolset:
        return cls(nvdisasm=find_tool("nvdisasm"), cuobjdump=find_tool("cuobjdump"), ptxas=find_tool("ptxas"))

    @property
    def disassembler(self) -> Tool | None:
        return self.nvdisasm or self.cuobjdump

    def missing_disassembler_message(self) -> str:
        return f"no SASS: neither nvdisasm nor cuobjdump was found; {INSTALL_HINT}"

    def to_dict(self) -> dict[str, dict[str, str] | None]:
        return {name: (tool.to_dict() if tool else None)
                for name, tool in (("nvdisasm", self.nvdisasm), ("cuobjdump", self.cuobjdump), ("ptxas", self.ptxas))}
