"""ncu's CSV pages, recorded on the H200, read into numbers, a bound, stall reasons and hot spots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.core.profile.csvpages import number, parse_details, parse_raw, unit_scale
from kerneltui.core.profile.hotspots import KernelHotSpots, build_hotspots, task_relative
from kerneltui.core.profile.summary import ProfileResult, classify, summarise_report

DATA = Path(__file__).resolve().parent.parent / "data" / "ncu"
RUNG = DATA / "kerneltui_rung"


def rung_result(name: str) -> ProfileResult:
    target = json.loads((RUNG / f"{name}.target.json").read_text())
    result = summarise_report(parse_raw((RUNG / f"{name}.raw.csv").read_text()),
                              parse_details((RUNG / f"{name}.details.csv").read_text()),
                              task_bytes=target["bytes_moved"], task_flops=target["flops"], case=target["case"])
    assert result is not None
    return result


def folder_result(folder: str, raw: str = "raw_base_units.csv") -> ProfileResult:
    result = summarise_report(parse_raw((DATA / folder / raw).read_text()),
                              parse_details((DATA / folder / "details_all.csv").read_text()))
    assert result is not None
    return result


@pytest.mark.parametrize("text, value", [
    ("182,848", 182848.0), ("89.36", 89.36), ("0", 0.0), ("1,048,576.5", 1048576.5), ("-3", -3.0),
    ("1e-05", 1e-05), ("n/a", None), ("", None), ("no data", None), ("(128, 1, 1)", None), ("1,2", None),
])
def test_number_reads_ncu_values(text, value):
    assert number(text) == value


@pytest.mark.parametrize("unit, scale", [
    ("", 1.0), ("byte", 1.0), ("Mbyte", 1e6), ("Gbyte/s", 1e9), ("Kbyte/block", 1e3), ("us", 1e3),
    ("ns", 1.0), ("ms", 1e6), ("Ghz", 1e9), ("%", 1.0), ("%/Kbyte", 1.0), ("register/thread", 1.0),
])
def test_unit_scale(unit, scale):
    assert unit_scale(unit) == scale


def test_raw_page_has_one_launch_with_its_metrics():
    kernels = parse_raw((RUNG / "memory_vector_add.raw.csv").read_text())
    assert len(kernels) == 1
    k = kernels[0]
    assert (k.id, k.name, k.block, k.grid) == (0, "add_kernel", "(128, 1, 1)", "(65536, 1, 1)")
    assert k.get("gpu__time_duration.sum") == 182848.0
    assert k.get("launch__grid_size") == 65536.0
    assert k.units["gpu__time_duration.sum"] == "ns"
    assert k.text("launch__cluster_scheduling_policy") == "PolicySpread"
    # NVTX range columns are not metrics
    assert not any(":" in name for name in k.values)


def test_scaled_and_base_units_agree():
    scaled = parse_raw((DATA / "memory" / "raw.csv").read_text())[0]
    base = parse_raw((DATA / "memory" / "raw_base_units.csv").read_text())[0]
    assert scaled.units["gpu__time_duration.sum"] == "us"
    for metric in ("gpu__time_duration.sum", "dram__bytes.sum.per_second", "sm__cycles_active.avg",
                   "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"):
        assert scaled.get(metric) == pytest.approx(base.get(metric), rel=1e-3), metric


def test_details_page_has_sections_and_rules_with_speedups():
    (k,) = parse_details((RUNG / "underutilised_vector_add_4096.details.csv").read_text())
    assert k.name == "add_kernel"
    occupancy = k.metric("Occupancy", "Theoretical Occupancy")
    assert occupancy is not None and occupancy.number == 100.0
    launch = next(r for r in k.rules if r.name == "LaunchConfiguration")
    assert (launch.section, launch.kind, launch.speedup, launch.speedup_kind) == ("LaunchStats", "OPT", 96.97, "global")
    assert "only 4 blocks, which is less than the GPU's 132 multiprocessors" in launch.text
    assert {r.name for r in k.rules} >= {"SOLBottleneck", "CPIStall", "AchievedOccupancy"}


@pytest.mark.parametrize("name, bound", [
    ("memory_vector_add", "memory"),
    ("compute_matmul_fp16", "compute"),
    ("latency_fma_chain", "latency"),
    ("underutilised_vector_add_4096", "under-utilised"),
])
def test_bound_of_recorded_kernels(name, bound):
    assert rung_result(name).summary.bound == bound


@pytest.mark.parametrize("folder, bound", [("memory", "memory"), ("compute", "compute"), ("one_block", "under-utilised")])
@pytest.mark.parametrize("raw", ["raw.csv", "raw_base_units.csv"])
def test_bound_of_separately_recorded_kernels(folder, bound, raw):
    assert folder_result(folder, raw).summary.bound == bound


def test_memory_bound_summary():
    s = rung_result("memory_vector_add").summary
    assert s.kernel == "add_kernel" and s.case == "n=67108864"
    assert s.memory_pct == pytest.approx(89.36) and s.dram_pct == pytest.approx(89.36)
    assert s.compute_pct == pytest.approx(5.75)
    assert s.duration_ns == 182848.0
    # DRAM read + write against the task's 3 × 4 bytes × n: every byte moved once.
    assert s.dram_bytes == 536881920 + 249117440
    assert s.dram_vs_task == pytest.approx(0.976, abs=1e-3)
    assert s.dram_gbps == pytest.approx(4298.6, rel=1e-3)
    assert s.occupancy_theoretical_pct == 100.0 and s.occupancy_achieved_pct == pytest.approx(84.32)
    assert s.occupancy_limiter is None  # nothing holds it below the maximum
    assert s.stalls[0].reason == "long_scoreboard" and s.stalls[0].unit == "cycles/inst"
    assert s.stalls[0].share_pct == pytest.approx(74.5, abs=0.1)
    assert "selected" not in [st.reason for st in s.stalls]
    assert s.l2_hit_pct == pytest.approx(35.22) and s.l1_hit_pct == 0.0


def test_compute_bound_summary_names_the_occupancy_limiter():
    s = rung_result("compute_matmul_fp16").summary
    assert s.compute_pct == pytest.approx(86.51)
    assert s.occupancy_theoretical_pct == 12.5
    assert s.occupancy_limiter == "registers and shared memory (1 block/SM)"
    assert s.registers_per_thread == 220 and s.shared_mem_per_block == 147456
    assert s.achieved_tflops == pytest.approx(723.3, rel=1e-3)
    assert s.dram_vs_task == pytest.approx(2.13, abs=0.01)  # A and B come from DRAM about twice
    assert s.stalls[0].reason == "barrier"


def test_latency_bound_summary_says_what_warps_wait_on():
    s = rung_result("latency_fma_chain").summary
    assert s.grid_size == s.sm_count == 132
    assert s.sm_active_pct == pytest.approx(94.4, abs=0.1)
    assert s.stalls[0].reason == "wait"
    assert "fixed-latency dependency" in s.bound_reason


def test_under_utilised_reason_counts_blocks_and_idle_time():
    s = rung_result("underutilised_vector_add_4096").summary
    assert "4 blocks for 132 SMs" in s.bound_reason
    assert "SMs active 1.0% of the time" in s.bound_reason


def test_dram_bytes_fall_back_to_rate_times_duration():
    # The separately recorded run did not ask for dram__bytes_read/write.sum.
    s = folder_result("memory").summary
    assert s.dram_read_bytes is None
    assert s.dram_bytes == pytest.approx(785.7e6, rel=1e-3)


@pytest.mark.parametrize("compute, memory, grid, sms, active, bound", [
    (60.0, 10.0, 1000, 132, 99.0, "compute"),  # the threshold itself counts
    (59.9, 60.0, 1000, 132, 99.0, "memory"),
    (80.0, 80.0, 1000, 132, 99.0, "memory"),  # a tie goes to memory
    (59.9, 59.9, 1000, 132, 99.0, "latency"),
    (20.0, 5.0, 131, 132, 99.0, "under-utilised"),  # one SM without a block
    (20.0, 5.0, 1000, 132, 49.0, "under-utilised"),  # SMs idle half the time
    (20.0, 5.0, 1000, 132, 50.0, "latency"),
    (None, None, None, None, None, "latency"),
])
def test_classify_thresholds(compute, memory, grid, sms, active, bound):
    assert classify(compute, memory, grid, sms, active)[0] == bound


def test_summary_round_trips_through_json():
    result = rung_result("compute_matmul_fp16")
    again = ProfileResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.summary == result.summary
    assert again.summary.stalls == result.summary.stalls and again.summary.rules == result.summary.rules


def hotspots(name: str) -> KernelHotSpots:
    target = json.loads((RUNG / f"{name}.target.json").read_text())
    (spots,) = build_hotspots((RUNG / f"{name}.source_sass.csv").read_text(),
                              (RUNG / f"{name}.source_cuda_sass.csv").read_text(), task_relative(target["task_dir"]))
    return spots


def test_sass_hot_spots_are_keyed_by_offset_from_the_kernel_start():
    spots = hotspots("latency_fma_chain")
    assert spots.kernel == "chain_kernel"
    offsets = [s.offset for s in spots.sass]
    assert offsets[0] == 0 and offsets == sorted(offsets) and all(o % 16 == 0 for o in offsets)
    assert len(spots.sass) == 64
    ffma = [s for s in spots.sass if s.text.startswith("FFMA")]
    assert ffma and all((s.file, s.line) == ("kernel.py", 13) for s in ffma)
    assert spots.by_offset()[0x1F0].text == "FFMA R2, R2, 0.5, R5"
    assert spots.by_offset()[0x1F0].stalls == {"wait": 401}


def test_source_hot_spots_are_keyed_by_task_file_and_line():
    spots = hotspots("latency_fma_chain")
    lines = spots.by_source()
    assert lines[("kernel.py", 13)].text.strip() == "y = y * 0.5 + x"
    assert [(s.file, s.line) for s in spots.top_source(2)] == [("kernel.py", 12), ("kernel.py", 13)]
    # Every sample is attributed: the source lines add up to the instructions.
    assert sum(s.samples for s in spots.source) == sum(s.samples for s in spots.sass) == spots.total_samples == 3798
    assert spots.heat(lines[("kernel.py", 13)].samples) == pytest.approx(1853 / 3798)


def test_hot_spots_of_a_matmul_include_inlined_library_lines():
    spots = hotspots("compute_matmul_fp16")
    files = {s.file for s in spots.source}
    assert "kernel.py" in files
    assert any(f.endswith("triton/language/standard.py") for f in files)  # tl.cdiv, inlined
    hgmma = [s for s in spots.sass if s.text.startswith("HGMMA")]
    # Tensor-core instructions come from the tl.dot line and the loads feeding it.
    assert hgmma and ("kernel.py", 31) in {(s.file, s.line) for s in hgmma}
    assert {s.file for s in hgmma} == {"kernel.py"} and {s.line for s in hgmma} <= {29, 30, 31}
    assert spots.top_source(1)[0].line == 29  # the A tile load waits on the barrier


def test_paths_of_any_task_copy_become_task_relative():
    name = task_relative("/tmp/kerneltui-profile-ab/task", ["kernel.py", "lib/helpers.py"])
    assert name("/tmp/kerneltui-profile-ab/task/kernel.py") == "kernel.py"
    # Triton's cache: compiled earlier in a check worker's copy of the same task.
    assert name("/tmp/kerneltui-worker-x1/task/lib/helpers.py") == "lib/helpers.py"
    assert name("/tmp/kerneltui-worker-x1/task/kernel.py") == "kernel.py"
    assert name("/usr/lib/python3/site-packages/triton/language/standard.py").endswith("standard.py")
    assert name("/home/me/other/kernel.py") == "/home/me/other/kernel.py"  # not a task copy


def test_hot_spots_round_trip_through_json():
    spots = hotspots("memory_vector_add")
    again = KernelHotSpots.from_dict(json.loads(json.dumps(spots.to_dict())))
    assert again.sass == spots.sass and again.source == spots.source
