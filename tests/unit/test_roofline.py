"""Roofline arithmetic, the physical floor, the speed-of-light clamp and the device peaks' cache."""

from __future__ import annotations

import json

import pytest

from kerneltui.core.bench import device_peaks as device
from kerneltui.core.bench import roofline
from kerneltui.core.bench.device_peaks import DevicePeaks
from kerneltui.core.rungs.rung_metrics import RooflinePointData
from tests.rung_metric_keys import keys_of

# An H200-like device: 4.2 TB/s copy, 750 TFLOP/s bf16, 60 MiB L2.
H200 = roofline.Roofs(bandwidth_gbps=4200.0, peak_tflops=750.0, peak_name="bf16 tensor-core matmul", l2_bytes=60 << 20)


def test_memory_bound_vector_add():
    n = 1 << 26
    flops, nbytes = float(n), 12.0 * n  # x + y: one add, two reads and one write of float32
    p = roofline.analyse(0.2, flops, nbytes, H200)
    assert p.bound == "memory"
    assert p.intensity == pytest.approx(1 / 12)
    assert p.ridge == pytest.approx(750e12 / 4200e9)
    assert p.memory_ms == pytest.approx(nbytes / 4200e9 * 1e3)
    assert p.floor_ms == p.memory_ms
    assert p.achieved_gbps == pytest.approx(nbytes / 0.2e-3 / 1e9)
    assert p.achieved_tflops == pytest.approx(flops / 0.2e-3 / 1e12)
    assert p.pct_roofline == pytest.approx(p.floor_ms / 0.2 * 100)
    assert 90 < p.pct_roofline < 100
    assert not p.impossible and p.clamped_ms == 0.2


def test_compute_bound_matmul():
    m = n = k = 8192
    flops, nbytes = 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)
    p = roofline.analyse(2.0, flops, nbytes, H200)
    assert p.bound == "compute"
    assert p.compute_ms == pytest.approx(flops / 750e12 * 1e3)
    assert p.floor_ms == p.compute_ms
    assert p.pct_roofline == pytest.approx(p.compute_ms / 2.0 * 100)
    assert p.achieved_tflops == pytest.approx(flops / 2e-3 / 1e12)
    assert p.peak_name == "bf16 tensor-core matmul"


def test_a_little_above_the_measured_roof_is_allowed_far_above_is_impossible():
    n = 1 << 26
    nbytes = 12.0 * n
    floor = nbytes / 4200e9 * 1e3
    fast = roofline.analyse(floor * 0.95, None, nbytes, H200)  # 105% of the copy bandwidth: reads stream faster
    assert fast.pct_roofline > 100 and not fast.impossible
    # The physical floor: bytes beyond one L2, at 1.25× the measured bandwidth.
    physical = (nbytes - (60 << 20)) / (4200e9 * roofline.MEMORY_MARGIN) * 1e3
    assert fast.physical_floor_ms == pytest.approx(physical)
    cheat = roofline.analyse(physical * 0.5, None, nbytes, H200)
    assert cheat.impossible
    msg = roofline.impossible_message("n=67108864", cheat)
    assert "n=67108864" in msg and "physical floor" in msg and "flops()/bytes_moved()" in msg


def test_compute_floor_uses_its_own_margin():
    flops = 2.0 * 8192**3
    floor = flops / 750e12 * 1e3
    assert not roofline.analyse(floor / 1.4, flops, None, H200).impossible  # a 1.4× better kernel than cuBLAS: unlikely, allowed
    assert roofline.analyse(floor / 1.6, flops, None, H200).impossible


def test_small_problems_that_fit_in_l2_are_never_impossible_by_bandwidth():
    small = roofline.analyse(1e-4, None, 8.0 * (1 << 20), H200)  # 8 MB: all of it may stay in L2
    assert small.physical_floor_ms == 0.0 and not small.impossible


def test_missing_work_or_roofs():
    none = roofline.analyse(1.0, None, None, H200)
    assert none.bound == "unknown" and none.floor_ms is None and none.pct_roofline is None and not none.impossible
    no_compute_roof = roofline.analyse(1.0, 1e9, 1e9, roofline.Roofs(4200.0, None))
    assert no_compute_roof.bound == "memory" and no_compute_roof.compute_ms is None
    with pytest.raises(ValueError):
        roofline.analyse(0.0, 1.0, 1.0, H200)
    assert json.dumps(none.to_dict())  # JSON-safe (the history stores it)


def test_speed_of_light_clamp_before_aggregating():
    nbytes = 12.0 * (1 << 26)
    good = roofline.analyse(0.2, None, nbytes, H200)
    absurd = roofline.analyse(1e-6, None, nbytes, H200)  # one shape "timed" at ~0
    assert absurd.clamped_ms == pytest.approx(absurd.floor_ms)
    assert roofline.clamp_to_floor(1e-6, absurd.floor_ms) == absurd.floor_ms
    assert roofline.clamp_to_floor(0.5, None) == 0.5
    agg = roofline.aggregate_pct([good, absurd])
    # the absurd case counts as 100%, not as millions of percent
    assert agg == pytest.approx((good.pct_roofline * 100.0) ** 0.5)
    assert roofline.aggregate_pct([roofline.analyse(1.0, None, None, H200)]) is None


def _peaks(**rates: float) -> DevicePeaks:
    return DevicePeaks(name="GPU", key="k", measured_at=0.0, copy_gbps=4000.0, matmul_tflops=rates, l2_bytes=1 << 20)


def test_compute_peak_by_dtype():
    p = _peaks(fp32=60.0, tf32=400.0, fp16=750.0, bf16=760.0, fp64=60.0)
    assert p.compute_peak("float32") == (400.0, device.MATMUL_TITLES["tf32"])  # the faster of fp32 and tf32
    assert p.compute_peak("torch.bfloat16") == (760.0, device.MATMUL_TITLES["bf16"])
    assert p.compute_peak("float16")[0] == 750.0
    assert p.compute_peak("float8_e4m3fn") == (760.0, device.MATMUL_TITLES["bf16"])  # no fp8 measured
    assert p.compute_peak("int32") == (None, None)
    assert p.compute_peak(None) == (None, None)
    assert _peaks(fp32=60.0).compute_peak("float32")[0] == 60.0


GPU_INFO = {"gpu": True, "name": "NVIDIA H200", "driver": "570.1", "sm_clock_max_mhz": "1980", "mem_clock_max_mhz": "3201",
            "sm_count": 132, "memory_bytes": 150_000_000_000, "torch": "2.11.0", "cuda_runtime": "13.0", "l2_bytes": 62914560}


def test_peaks_cache_is_keyed_by_device_driver_and_clocks(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path))
    assert device.device_key({"gpu": False}) == "cpu"
    key = device.device_key(GPU_INFO)
    assert key.startswith("nvidia-h200-")
    for change in ({"driver": "575.0"}, {"sm_clock_max_mhz": "1500"}, {"name": "NVIDIA H100"}, {"torch": "2.12.0"}):
        assert device.device_key({**GPU_INFO, **change}) != key
    assert device.load_cached(GPU_INFO) is None
    raw = {"copy_gbps": 4210.5, "read_gbps": 4400.0, "write_gbps": 4300.0, "l2_bytes": 62914560, "sm_count": 132,
           "matmul_tflops": {"bf16": 780.0, "fp8": 1400.0}, "unsupported": {}, "methods": {"copy_gbps": "copy_"}}
    peaks = device.from_measurement(GPU_INFO, raw)
    path = device.save(peaks)
    assert path.parent == tmp_path / "device-peaks" and path.name == f"{key}.json"
    again = device.load_cached(GPU_INFO)
    assert again == peaks
    assert device.load_cached({**GPU_INFO, "driver": "575.0"}) is None  # another driver: measure again
    path.write_text("{ not json")
    assert device.load_cached(GPU_INFO) is None  # a damaged cache is measured again, not trusted


def test_a_point_as_json_has_the_keys_its_typed_dict_declares():
    point = roofline.analyse(0.2, 1.0 * (1 << 26), 12.0 * (1 << 26), H200)
    assert set(point.to_dict()) == keys_of(RooflinePointData)
