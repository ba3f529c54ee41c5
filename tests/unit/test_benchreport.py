"""The benchmark rung's verdict from raw worker answers (the parent decides, from raw event times)."""

from __future__ import annotations

import random
import re

import pytest

from kerneltui.core.bench.device_peaks import DevicePeaks
from kerneltui.core.bench.report import build
from kerneltui.core.bench.stats import STOP_WALL_BOUND, TimingStatsData
from kerneltui.core.rungs.rung_metrics import BenchCase, BenchMetrics, GraphStats, RecheckCounts, SeriesStats
from kerneltui.settings.bench import BenchSettings
from tests.rung_metric_keys import keys_of, undeclared_in_cases

SETTINGS = BenchSettings()
PEAKS = DevicePeaks(name="GPU", key="k", measured_at=0.0, copy_gbps=4000.0, matmul_tflops={"tf32": 400.0},
                    l2_bytes=60 << 20)
N = 1 << 26


def _series(median_ms: float, runs: int = 600, noise: float = 0.002, seed: int = 0, **extra):
    rng = random.Random(seed)
    return {
        "times_ms": [median_ms * (1 + rng.gauss(0, noise)) for _ in range(runs)],
        "host_us": [12.0] * runs, "straggle_us": [5.0] * runs, "idle_straggle_us": [5.0] * 30,
        "warmup_ms": [median_ms] * 3, "stopped": "converged", "wall_s": 0.5, "warmup_s": 0.05,
        "failure": None, "threads_left": 0, **extra,
    }


def _case(median_ms: float, index: int = 0, label: str = "n=67108864", **extra):
    return {"index": index, "label": label, "params": {"n": N}, "target": "candidate", "dtype": "float32",
            "dtypes": ["float32", "float32"], "recheck": {"checked": 203, "quick": 203, "full": 0},
            **_series(median_ms, **extra)}


def _answers(cand_cases, ref_ms=(0.21,), comp_ms=(0.20,), setup_extra=None):
    setup = {"cases": [{"index": c["index"], "label": c["label"], "params": c["params"], "flops": float(N),
                        "bytes": 12.0 * N, **(setup_extra or {})} for c in cand_cases]}
    reference = {"cases": [{"index": c["index"], "label": c["label"], **_series(ms, seed=5)}
                           for c, ms in zip(cand_cases, ref_ms, strict=False)]}
    compiled = {"cases": [{"index": c["index"], "label": c["label"], **_series(ms, seed=6)}
                          for c, ms in zip(cand_cases, comp_ms, strict=False)]}
    candidate = {"cases": cand_cases, "flush_bytes": 120 << 20, "l2_bytes": 60 << 20,
                 "persisting_l2": "reset before every call"}
    return setup, reference, compiled, candidate


def test_a_clean_benchmark_reports_median_spread_and_speedups():
    v = build(*_answers([_case(0.2)]), PEAKS, SETTINGS)
    assert v.status == "ok", v.details
    m = v.metrics
    case = m["cases"][0]
    assert case["candidate"]["median_ms"] == pytest.approx(0.2, rel=0.01)
    assert case["candidate"]["runs"] == 600 and case["candidate"]["converged"]
    assert case["speedup_vs_reference"] == pytest.approx(0.21 / 0.2, rel=0.02)
    assert case["speedup_vs_compile"] == pytest.approx(1.0, rel=0.02)
    assert m["median_ms"] == pytest.approx(0.2, rel=0.01)
    assert {"q1_ms", "q3_ms", "stderr_ms", "min_ms"} <= set(m)
    assert "vs reference" in v.summary and "vs torch.compile" in v.summary and "600 runs" in v.summary
    assert "203 outputs rechecked" in v.details


def test_a_wrong_output_in_a_timed_call_fails_with_the_seed():
    failure = {"phase": "timed", "call": 57, "seed": 123456, "reason": "out: 67108864 of 67108864 elements outside atol"}
    v = build(*_answers([_case(0.05, failure=failure)]), PEAKS, SETTINGS)
    assert v.status == "fail"
    assert "timed call #57" in v.error and "seed 123456" in v.error
    assert "cache keyed on pointers or content" in v.error
    assert "median_ms" not in v.metrics  # a rejected number is not reported as the result


def test_side_stream_work_that_outlives_the_timed_stream_fails():
    v = build(*_answers([_case(0.2, straggle_us=[190.0] * 600)]), PEAKS, SETTINGS)
    assert v.status == "fail"
    assert "still busy after the timed stream finished on 600 of 600" in v.error
    assert "wait_stream" in v.error


def test_an_unsettled_series_is_a_warning_not_a_number_to_trust_blindly():
    noisy = _case(0.2, runs=30, noise=0.3, stopped="time cap")
    v = build(*_answers([noisy]), PEAKS, SETTINGS)
    assert v.status == "warn"
    assert "stopped (time cap) after 30 runs" in v.summary
    assert v.metrics["median_ms"] is not None


def test_threads_and_stream_changes_are_reported():
    v = build(*_answers([_case(0.2, threads_left=1, stream_changes=3)]), PEAKS, SETTINGS)
    assert v.status == "warn"
    assert any("thread(s) running" in w for w in v.warnings)
    assert any("changed the current CUDA stream" in w for w in v.warnings)


def test_torch_compile_failure_or_absence_is_stated():
    setup, reference, compiled, candidate = _answers([_case(0.2)])
    compiled = {"cases": [{"index": 0, "label": "n=67108864", "error": "torch.compile of the reference failed: X"}]}
    v = build(setup, reference, compiled, candidate, PEAKS, SETTINGS)
    assert v.status == "ok"
    assert v.metrics["cases"][0]["torch_compile"]["error"].startswith("torch.compile of the reference failed")
    assert v.metrics["speedup_vs_compile"] is None
    v = build(setup, reference, None, candidate, PEAKS, SETTINGS, "not measured ([benchmark] torch_compile = false)")
    assert "torch_compile = false" in v.details and v.metrics["torch_compile_note"]


def test_aggregates_clamp_each_case_at_its_floor_first():
    good = _case(0.2, index=0, label="n=big")
    tiny = _case(1e-6, index=1, label="n=big2")  # one shape "timed" at ~0
    v = build(*_answers([good, tiny], ref_ms=(0.21, 0.21), comp_ms=(0.2, 0.2)), PEAKS, SETTINGS)
    floor = 12.0 * N / 4000e9 * 1e3
    assert v.metrics["cases"][1]["clamped_ms"] == pytest.approx(floor)
    # the geomean speedup uses the clamped time: ~1.1× at most, not thousands
    assert v.metrics["speedup_vs_reference"] < 1.2
    assert "2 cases" in v.summary


def test_the_reference_meets_the_same_floor_as_the_candidate():
    # A memory-bound kernel at the copy bandwidth's edge: the candidate (the reference's own code) and
    # the reference both time a little under the floor; neither is faster than the other.
    floor = 12.0 * N / 4000e9 * 1e3
    v = build(*_answers([_case(0.97 * floor)], ref_ms=(0.975 * floor,), comp_ms=(0.98 * floor,)), PEAKS, SETTINGS)
    case = v.metrics["cases"][0]
    assert case["clamped_ms"] == pytest.approx(floor)
    assert case["speedup_vs_reference"] == pytest.approx(1.0, abs=1e-3)
    assert case["speedup_vs_compile"] == pytest.approx(1.0, abs=1e-3)
    # a candidate that really is faster than a reference above the floor keeps its speedup
    v = build(*_answers([_case(0.97 * floor)], ref_ms=(2 * floor,), comp_ms=(2 * floor,)), PEAKS, SETTINGS)
    assert v.metrics["speedup_vs_reference"] == pytest.approx(2.0, rel=0.01)


def test_graph_mode_numbers_subtract_the_flush_replay():
    graph = {"total_ms": [0.050 + 0.0001 * (i % 3) for i in range(40)], "flush_ms": [0.045] * 40,
             "warmup_runs": 3, "stopped": "converged", "failure": None}
    v = build(*_answers([_case(0.012, graph=graph)]), PEAKS, SETTINGS)
    g = v.metrics["cases"][0]["graph"]
    assert g["median_ms"] == pytest.approx(0.0051, abs=2e-5)
    assert g["flush_median_ms"] == pytest.approx(0.045)
    assert "graph" in v.summary
    unavailable = build(*_answers([_case(0.012, graph={"error": "the call could not be captured"})]), PEAKS, SETTINGS)
    assert unavailable.status == "warn" and "CUDA-graph mode unavailable" in unavailable.summary


def test_no_timed_call_is_a_failure():
    empty = _case(0.2)
    empty.update(times_ms=[], host_us=[], straggle_us=[])
    v = build(*_answers([empty]), PEAKS, SETTINGS)
    assert v.status == "fail" and "no timed call" in v.error


def test_a_case_with_no_declared_work_is_clamped_at_writing_its_output():
    # One shape timed at ~0 must not collapse the aggregate even when reference.py declares no work:
    # a correct call writes its output at least once.
    fast = _case(1e-6, index=1, label="n=small")
    cases = [_case(0.2, out_bytes=4 * N), {**fast, "out_bytes": 4 * N}]
    setup, reference, compiled, candidate = _answers(cases, ref_ms=(0.21, 0.21), comp_ms=(0.2, 0.2))
    for c in setup["cases"]:
        c.pop("flops"), c.pop("bytes")
    v = build(setup, reference, compiled, candidate, PEAKS, SETTINGS)
    floor = 4.0 * N / 4000e9 * 1e3
    assert v.metrics["cases"][1]["floor_ms"] == pytest.approx(floor)
    assert v.metrics["cases"][1]["clamped_ms"] == pytest.approx(floor)
    assert v.metrics["speedup_vs_reference"] < 10  # not millions


def test_a_side_work_flag_not_seen_again_when_measured_twice_is_noise_not_a_failure():
    controls = [20.0, 22.0, 25.0, 30.0] * 40
    flagged_once = _case(0.2, straggle_us=[190.0] * 600, control_straggle_us=controls,
                         confirm_straggle_us=[21.0, 24.0] * 32, confirm_control_us=[20.0, 25.0] * 32)
    v = build(*_answers([flagged_once]), PEAKS, SETTINGS)
    assert v.status != "fail", v.error
    assert any("not when measured again" in w for w in v.warnings)
    both = _case(0.2, straggle_us=[190.0] * 600, control_straggle_us=controls,
                 confirm_straggle_us=[190.0] * 64, confirm_control_us=[22.0] * 64)
    v = build(*_answers([both]), PEAKS, SETTINGS)
    assert v.status == "fail" and "again when measured a second time" in v.error


def test_a_long_kernel_flagged_without_enough_controls_and_cleared_when_measured_again_is_no_internal_error():
    """On the H200 an honest 15.6 ms grid-stride kernel got 14 timed calls and 3 controls: too few
    controls for the test, so the threshold flagged it; the confirmation cleared it, and writing the
    warning formatted the missing p-value: "internal error in the benchmark rung: TypeError"."""
    long_call = _case(15.6, runs=14, straggle_us=[105.0] * 14, control_straggle_us=[22.0, 22.0, 60.0],
                      confirm_straggle_us=[60.0, 70.0] * 32, confirm_control_us=[45.0, 50.0] * 32)
    v = build(*_answers([long_call]), PEAKS, SETTINGS)
    assert v.status != "fail", v.error
    assert any("not when measured again" in w for w in v.warnings), v.warnings


def test_a_series_cut_by_the_wall_time_bound_is_a_warning_that_names_it():
    cut = _case(0.2, runs=40, noise=0.3, stopped=STOP_WALL_BOUND)
    v = build(*_answers([cut]), PEAKS, SETTINGS)
    assert v.status == "warn" and v.metrics["median_ms"] is not None
    assert "stopped (the benchmark's wall-time bound, [benchmark] max_wall_s) after 40 runs" in v.summary


def test_the_report_holds_only_the_keys_its_typed_dicts_declare():
    graph = {"total_ms": [0.050 + 0.0001 * (i % 3) for i in range(40)], "flush_ms": [0.045] * 40,
             "warmup_runs": 3, "stopped": "converged", "failure": None}
    v = build(*_answers([_case(0.012, graph=graph, pool={"sets": 4}, spent_s=0.4)],
                        setup_extra={"work_estimated": "counted"}), PEAKS, SETTINGS)
    cases = v.metrics["cases"]
    assert set(v.metrics) - keys_of(BenchMetrics) == set()
    assert undeclared_in_cases(BenchCase, cases) == set()
    assert undeclared_in_cases(SeriesStats, [c[t] for c in cases for t in ("candidate", "reference", "torch_compile")]) == set()
    assert undeclared_in_cases(GraphStats, [c["graph"] for c in cases]) == set()
    assert undeclared_in_cases(RecheckCounts, [c["recheck"] for c in cases]) == set()
    # the one-case statistics the metrics repeat are all there
    assert {"q1_ms", "q3_ms", "mean_ms", "stderr_ms", "min_ms", "median_ms"} <= set(v.metrics)
    assert set(cases[0]["candidate"]) >= set(keys_of(TimingStatsData))


def test_a_kept_baseline_says_so_beside_its_numbers():
    verdict = build(*_answers([_case(0.2)]), PEAKS, SETTINGS, "kept from 21:40 (same reference)",
                    {"reference": "kept from 21:40", "torch_compile": "kept from 21:40"})
    assert verdict.status == "ok"
    assert "vs reference (kept from 21:40)" in verdict.summary and "vs torch.compile (kept from 21:40)" in verdict.summary
    case_line = verdict.details.splitlines()[0]
    assert re.search(r"· reference \S+ µs \(kept from 21:40\) · torch\.compile \S+ µs \(kept from 21:40\)", case_line), case_line
    fresh = build(*_answers([_case(0.2)]), PEAKS, SETTINGS)
    assert "kept" not in fresh.summary and "kept" not in fresh.details
