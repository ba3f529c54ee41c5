"""Facts about the worker's device and software, reported once at start-up."""

from __future__ import annotations

import platform
import shutil
import subprocess
from typing import Any, cast

from kerneltui.core.backends import spec_of
from kerneltui.core.worker.contract.replies import DeviceInfo


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def nvidia_smi_query() -> DeviceInfo:
    """Driver version and clocks from nvidia-smi (empty when it is missing)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {}
    fields = ["driver_version", "clocks.max.sm", "clocks.max.mem", "name"]
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True, text=True, timeout=10,
        ).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if not out:
        return {}
    values = [v.strip() for v in out[0].split(",")]
    # A cast: the keys are DeviceInfo's nvidia-smi ones (fewer when it printed fewer columns).
    return cast(DeviceInfo, dict(zip(["driver", "sm_clock_max_mhz", "mem_clock_max_mhz", "smi_name"], values, strict=False)))


def describe_device(state: Any) -> DeviceInfo:
    torch = state.torch
    info: DeviceInfo = {
        "gpu": state.has_gpu,
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "triton": _version("triton"),
        "cutlass_dsl": _version("nvidia-cutlass-dsl"),
        "cpu_threads": torch.get_num_threads(),  # torch's intra-op threads (state.share_the_cores)
    }
    if state.has_gpu:
        props = torch.cuda.get_device_properties(0)
        major, minor = props.major, props.minor
        info.update({
            "name": props.name,
            "capability": f"{major}.{minor}",
            # Hopper and Blackwell need the arch-specific target for wgmma/tcgen05.
            "arch": f"sm_{major}{minor}" + ("a" if major >= 9 else ""),
            "sm_count": props.multi_processor_count,
            "memory_bytes": int(props.total_memory),
            "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
        })
        info.update(nvidia_smi_query())
    else:
        info.update({"name": "CPU (no GPU)", "arch": None,
                     "interpreter": spec_of(state.backend_name).interpreted_without_gpu})
    return info
