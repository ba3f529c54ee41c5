"""The device's measured peaks: what they are, how they are keyed and cached (parent side).

A worker measures them (``core.worker.child.peaks``) once per device; the result is cached as JSON under
``paths.cache_dir()/device-peaks/``, keyed by what changes the numbers: the device name, the
driver, the maximum clocks, the memory size and SM count, and the torch/CUDA build (its cuBLAS
sets the matmul rates). Everything here is pure Python: the parent never imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kerneltui import paths
from kerneltui.core.worker.contract.replies import DeviceInfo

PEAKS_VERSION = 1  # bump when the measurement changes so old caches are not trusted

# Matmul peaks measured per dtype, in the order `kerneltui device` prints them.
MATMUL_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")
MATMUL_TITLES = {
    "fp64": "fp64 matmul", "fp32": "fp32 matmul (TF32 off)", "tf32": "tf32 tensor-core matmul",
    "fp16": "fp16 tensor-core matmul", "bf16": "bf16 tensor-core matmul", "fp8": "fp8 e4m3 tensor-core matmul",
}


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    key: str
    measured_at: float
    copy_gbps: float  # device-to-device copy, read + write bytes counted
    read_gbps: float | None = None
    write_gbps: float | None = None
    matmul_tflops: dict[str, float] = field(default_factory=dict)
    unsupported: dict[str, str] = field(default_factory=dict)  # dtype -> why it was not measured
    l2_bytes: int = 0
    sm_count: int = 0
    memory_bytes: int = 0
    methods: dict[str, str] = field(default_factory=dict)  # what was run for each number
    facts: dict[str, Any] = field(default_factory=dict)  # driver, clocks, torch, cuda of the measurement
    version: int = PEAKS_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DevicePeaks:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def compute_peak(self, dtype: str | None) -> tuple[float | None, str | None]:
        """The math roof for a kernel whose data has ``dtype`` (torch name), with its name.

        float32 data is held against the faster of the fp32 and TF32 rates (a kernel may use TF32
        where the task's tolerance allows it, so the floor must allow it too); fp8 falls back to
        the bf16 rate when fp8 was not measured. Integer kernels have no math roof here.
        """
        family = dtype_family(dtype)
        rates = self.matmul_tflops
        if family == "fp32":
            options = [(rates[k], MATMUL_TITLES[k]) for k in ("tf32", "fp32") if rates.get(k)]
            return max(options) if options else (None, None)
        if family == "fp8" and not rates.get("fp8"):
            family = "bf16"
        if family and rates.get(family):
            return rates[family], MATMUL_TITLES[family]
        return None, None


def dtype_family(dtype: str | None) -> str | None:
    if not dtype:
        return None
    d = dtype.replace("torch.", "")
    if d.startswith("float8"):
        return "fp8"
    return {"float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "float16": "fp16",
            "half": "fp16", "bfloat16": "bf16", "complex64": "fp32", "complex128": "fp64"}.get(d)


def device_key(info: DeviceInfo) -> str:
    """A stable key for the numbers a worker's device would measure ("cpu" without a GPU)."""
    if not info.get("gpu"):
        return "cpu"
    parts = {k: str(info.get(k) or "") for k in (
        "name", "driver", "sm_clock_max_mhz", "mem_clock_max_mhz", "sm_count", "memory_bytes", "torch", "cuda_runtime")}
    parts["version"] = str(PEAKS_VERSION)
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
    slug = "".join(c if c.isalnum() else "-" for c in str(info.get("name") or "gpu")).strip("-").lower()
    return f"{slug}-{digest}"


def peaks_dir() -> Path:
    return paths.cache_dir() / "device-peaks"


def peaks_path(info: DeviceInfo) -> Path:
    return peaks_dir() / f"{device_key(info)}.json"


def load_cached(info: DeviceInfo) -> DevicePeaks | None:
    """The cached peaks for this device, or None (missing, unreadable or from another version)."""
    path = peaks_path(info)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        peaks = DevicePeaks.from_dict(data)
    except (OSError, ValueError, TypeError):
        return None
    if peaks.version != PEAKS_VERSION or peaks.key != device_key(info) or not peaks.copy_gbps:
        return None
    return peaks


def from_measurement(info: DeviceInfo, raw: dict[str, Any]) -> DevicePeaks:
    """Turn a worker's ``device_peaks`` answer into DevicePeaks for this device."""
    facts = {k: info.get(k) for k in ("driver", "sm_clock_max_mhz", "mem_clock_max_mhz", "torch", "cuda_runtime",
                                       "capability", "arch")}
    return DevicePeaks(
        name=str(info.get("name") or raw.get("name") or "GPU"),
        key=device_key(info),
        measured_at=time.time(),
        copy_gbps=float(raw["copy_gbps"]),
        read_gbps=raw.get("read_gbps"),
        write_gbps=raw.get("write_gbps"),
        matmul_tflops={k: float(v) for k, v in (raw.get("matmul_tflops") or {}).items() if v},
        unsupported=dict(raw.get("unsupported") or {}),
        l2_bytes=int(raw.get("l2_bytes") or info.get("l2_bytes") or 0),
        sm_count=int(raw.get("sm_count") or info.get("sm_count") or 0),
        memory_bytes=int(info.get("memory_bytes") or 0),
        methods=dict(raw.get("methods") or {}),
        facts=facts,
    )


def save(peaks: DevicePeaks) -> Path:
    """Write the cache atomically (a concurrent reader sees the old file or the new one)."""
    directory = peaks_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{peaks.key}.json"
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(peaks.to_dict(), indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)
    return target
