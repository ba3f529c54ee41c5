"""Finding Nsight Compute's command-line profiler (``ncu``).

The CUDA toolkit puts ``ncu`` in ``/usr/local/cuda/bin``, which is often not on the PATH of an SSH
session; standalone installs go to ``/opt/nvidia/nsight-compute/<version>/``. Look in all of those,
newest version first, and say where we looked when nothing is found.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# An explicit path wins over every search (a second install, a wrapper script).
NCU_ENV = "KERNELTUI_NCU"
TOOLKIT_DIRS = ("/usr/local/cuda/bin",)
TOOLKIT_GLOBS = ("/usr/local/cuda-*/bin", "/opt/nvidia/nsight-compute/*", "/usr/local/cuda/nsight-compute-*")


@dataclass(frozen=True)
class NcuNotFound:
    """Where we looked, so the message can say it."""

    searched: tuple[str, ...]
    env_value: str | None = None

    @property
    def message(self) -> str:
        if self.env_value:
            return f"{NCU_ENV}={self.env_value} is not an executable ncu"
        return "ncu (Nsight Compute) was not found on PATH, in /usr/local/cuda/bin or in /opt/nvidia/nsight-compute/*"

    @property
    def fix(self) -> str:
        return (
            "install Nsight Compute (it ships with the CUDA toolkit; on Debian/Ubuntu `apt install nsight-compute`, "
            "or NVIDIA's standalone installer), then put its folder on PATH "
            f"(e.g. `export PATH=/usr/local/cuda/bin:$PATH`) or point {NCU_ENV} at the ncu executable"
        )


def _version_key(path: Path) -> tuple[int, ...]:
    """Sort installs by the version numbers in their path (``2025.3.1`` > ``2024.1.0``)."""
    return tuple(int(n) for n in re.findall(r"\d+", str(path)))


def candidate_paths(env: Mapping[str, str] | None = None) -> list[Path]:
    """Every place ncu might be, in the order we try them."""
    env = os.environ if env is None else env
    found: list[Path] = []
    on_path = shutil.which("ncu", path=env.get("PATH"))
    if on_path:
        found.append(Path(on_path))
    for folder in TOOLKIT_DIRS:
        found.append(Path(folder) / "ncu")
    globbed: list[Path] = []
    for pattern in TOOLKIT_GLOBS:
        root = Path(pattern.split("*", 1)[0]).parent
        if not root.is_dir():
            continue
        globbed.extend(p / "ncu" for p in root.glob(Path(pattern).relative_to(root).as_posix()))
    found.extend(sorted(globbed, key=_version_key, reverse=True))
    unique: list[Path] = []
    for p in found:
        if p not in unique:
            unique.append(p)
    return unique


def find_ncu(env: Mapping[str, str] | None = None) -> Path | NcuNotFound:
    """The ncu to use, or where we looked for it."""
    env = os.environ if env is None else env
    explicit = env.get(NCU_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path
        return NcuNotFound(searched=(str(path),), env_value=explicit)
    candidates = candidate_paths(env)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return NcuNotFound(searched=tuple(str(p) for p in candidates) or ("PATH",))
