"""Measure the device's peaks once (worker side): memory bandwidth and matmul rate per dtype.

These are the roofs the roofline rung holds kernels against, so they are measured, not read from a
datasheet: what this device, driver and clock setting deliver to real kernels.

* bandwidth: a device-to-device ``copy_`` of a buffer much larger than L2 (at least 1 GiB and
  8 × L2), read + write bytes counted; also a read-only reduction and a write-only fill;
* matmul: ``torch.matmul`` (cuBLAS) on square random matrices, per dtype: fp64, fp32 with TF32 off,
  TF32, fp16, bf16, and fp8 e4m3 through ``torch._scaled_mm`` where the device and torch support it.

Every number is the best of several timed calls after warm-up (CUDA events, one device-wide
synchronisation per call): a peak is what the device can do, not what it usually does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypedDict

from kerneltui.core.worker.contract.replies import PeaksReply

Progress = Callable[..., None]

COPY_MIN_BYTES = 1 << 30
MATMUL_N_TENSOR = 8192  # tensor-core dtypes: large enough that cuBLAS runs near its best
MATMUL_N_SIMT = 4096  # fp32 / fp64: slower per call, 4096 already saturates
MIN_REPS, MAX_REPS, REP_BUDGET_S = 5, 20, 0.25



class Bandwidth(TypedDict):
    """``measure_bandwidth``: the best copy, read and write rates, and how each was measured."""

    copy_gbps: float
    read_gbps: float
    write_gbps: float
    methods: dict[str, str]


class MatmulRates(TypedDict):
    """``measure_matmul``: the rate of each dtype measured, why the others were not, and how."""

    matmul_tflops: dict[str, float]
    unsupported: dict[str, str]
    methods: dict[str, str]


def time_calls(torch: Any, fn: Callable[[], Any], warmup: int = 3) -> list[float]:
    """Event times (ms) of repeated calls: at least MIN_REPS, at most MAX_REPS or REP_BUDGET_S."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times: list[float] = []
    began = time.perf_counter()
    while len(times) < MAX_REPS and (len(times) < MIN_REPS or time.perf_counter() - began < REP_BUDGET_S):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def measure_bandwidth(torch: Any, l2_bytes: int) -> Bandwidth:
    free, _total = torch.cuda.mem_get_info()
    nbytes = max(COPY_MIN_BYTES, 8 * l2_bytes)
    nbytes = min(nbytes, free // 4)
    n = nbytes // 4
    src = torch.randn(n, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    nbytes = n * 4
    copy = min(time_calls(torch, lambda: dst.copy_(src)))
    read = min(time_calls(torch, lambda: torch.sum(src)))
    write = min(time_calls(torch, lambda: dst.fill_(0.5)))
    mib = nbytes / (1 << 20)
    return {
        "copy_gbps": 2 * nbytes / (copy * 1e-3) / 1e9,
        "read_gbps": nbytes / (read * 1e-3) / 1e9,
        "write_gbps": nbytes / (write * 1e-3) / 1e9,
        "methods": {
            "copy_gbps": f"torch copy_ of {mib:.0f} MiB float32, 2 × bytes per call, best of the timed calls",
            "read_gbps": f"torch.sum over {mib:.0f} MiB float32, best of the timed calls",
            "write_gbps": f"fill_ of {mib:.0f} MiB float32, best of the timed calls",
        },
    }


def _matmul_case(torch: Any, name: str, capability: tuple[int, int]) -> tuple[Callable[[], Any], int, str] | str:
    """(call, n, method) for one dtype, or the reason it cannot be measured here."""
    if name in ("fp64", "fp32", "tf32"):
        n = MATMUL_N_SIMT if name != "tf32" else MATMUL_N_TENSOR
        dtype = torch.float64 if name == "fp64" else torch.float32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        return (lambda: torch.matmul(a, b)), n, f"torch.matmul {n}³ {dtype}".replace("torch.", "")
    if name in ("fp16", "bf16"):
        dtype = torch.float16 if name == "fp16" else torch.bfloat16
        if name == "bf16" and capability < (8, 0):
            return "bf16 tensor cores need compute capability 8.0 or newer"
        n = MATMUL_N_TENSOR
        a = torch.randn(n, n, device="cuda").to(dtype)
        b = torch.randn(n, n, device="cuda").to(dtype)
        return (lambda: torch.matmul(a, b)), n, f"torch.matmul {n}³ {name}"
    if name == "fp8":
        if capability < (8, 9):
            return "fp8 tensor cores need compute capability 8.9 or newer"
        if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
            return f"torch {torch.__version__} has no float8_e4m3fn/_scaled_mm"
        n = MATMUL_N_TENSOR
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants
        one = torch.tensor(1.0, device="cuda")

        def call() -> Any:
            out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            return out[0] if isinstance(out, tuple) else out  # older torch returned (out, amax)

        try:
            call()
            torch.cuda.synchronize()
        except Exception as exc:  # an unsupported layout or build says so here, not in the timing
            return f"torch._scaled_mm failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return call, n, f"torch._scaled_mm {n}³ e4m3 × e4m3 → bf16, unit scales"
    return f"unknown dtype {name}"


def measure_matmul(torch: Any, dtypes: tuple[str, ...], progress: Progress) -> MatmulRates:
    props = torch.cuda.get_device_properties(0)
    capability = (props.major, props.minor)
    rates: dict[str, float] = {}
    unsupported: dict[str, str] = {}
    methods: dict[str, str] = {}
    previous = torch.get_float32_matmul_precision()
    try:
        for name in dtypes:
            progress(f"measuring the {name} matmul rate")
            torch.set_float32_matmul_precision("high" if name == "tf32" else "highest")
            case = _matmul_case(torch, name, capability)
            if isinstance(case, str):
                unsupported[name] = case
                continue
            call, n, method = case
            best = min(time_calls(torch, call))
            rates[name] = 2.0 * n * n * n / (best * 1e-3) / 1e12
            methods[f"matmul_{name}"] = method + ", best of the timed calls"
            del call
            torch.cuda.empty_cache()
    finally:
        torch.set_float32_matmul_precision(previous)
    return {"matmul_tflops": rates, "unsupported": unsupported, "methods": methods}


def measure_peaks(torch: Any, progress: Progress, dtypes: tuple[str, ...] | None = None) -> PeaksReply:
    from kerneltui.core.bench.device_peaks import MATMUL_DTYPES

    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    t0 = time.perf_counter()
    progress("measuring memory bandwidth")
    bandwidth = measure_bandwidth(torch, l2)
    torch.cuda.empty_cache()
    matmul = measure_matmul(torch, dtypes or MATMUL_DTYPES, progress)
    return {
        "name": props.name,
        "l2_bytes": l2,
        "sm_count": int(props.multi_processor_count),
        "copy_gbps": bandwidth["copy_gbps"],
        "read_gbps": bandwidth["read_gbps"],
        "write_gbps": bandwidth["write_gbps"],
        "matmul_tflops": matmul["matmul_tflops"],
        "unsupported": matmul["unsupported"],
        "methods": {**bandwidth["methods"], **matmul["methods"]},
        "seconds": round(time.perf_counter() - t0, 3),
    }
