"""What a suite's verdicts and times belong to: the GPU, its driver, and kerneltui's and the DSLs' versions.

A results file carried to another machine (or kept across an upgrade) must not lend its verdicts and
timings to a run they were not made by, so each verdict is stored with the environment that made it,
and a resumed suite verifies again every item whose environment differs, saying what changed. The
facts are read without importing torch or a DSL: package metadata, and ``nvidia-smi`` for the GPU.
A Ray suite runs on the cluster's nodes, whose software this machine cannot see: it keys on
kerneltui's version and the cluster's address.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version

import kerneltui

Environment = dict[str, str | None]

# Package (distribution) names, by the key stored with each verdict.
PACKAGES = {"torch": "torch", "triton": "triton", "cutlass_dsl": "nvidia-cutlass-dsl", "tilelang": "tilelang"}
LABELS = {"gpu": "GPU", "driver": "driver", "kerneltui": "kerneltui", "torch": "torch", "triton": "triton",
          "cutlass_dsl": "CuTe DSL", "tilelang": "TileLang", "runner": "runner"}


def _package(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _gpu() -> tuple[str | None, str | None]:
    """The first visible GPU's name and the driver's version, or (None, None) without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, None
    try:
        out = subprocess.run([exe, "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    if not out or "," not in out[0]:
        return None, None
    name, driver = (part.strip() for part in out[0].rsplit(",", 1))
    return name or None, driver or None


def this_machine() -> Environment:
    gpu, driver = _gpu()
    found: Environment = {"gpu": gpu, "driver": driver, "kerneltui": kerneltui.__version__}
    found.update({key: _package(dist) for key, dist in PACKAGES.items()})
    return found


def ray_cluster(address: str) -> Environment:
    return {"kerneltui": kerneltui.__version__, "runner": f"ray {address}"}


def differences(old: Environment, new: Environment) -> str:
    """What changed between the environment that made a verdict and this one; "" when nothing did."""
    if not old:
        return "recorded without its machine and versions (an older results file)"
    changes = [f"{LABELS.get(key, key)} {old.get(key) or 'none'} → {new.get(key) or 'none'}"
               for key in dict.fromkeys([*new, *old]) if old.get(key) != new.get(key)]
    return ", ".join(changes)
