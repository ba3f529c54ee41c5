"""Statistics of timing samples, the adaptive stopping rule and the benchmark settings."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics

import pytest

from kerneltui.core.bench.stats import (
    STOP_CONVERGED,
    STOP_MAX_RUNS,
    STOP_TIME_CAP,
    BenchSettings,
    RunningStats,
    TimingStats,
    converged,
    format_ms,
    geomean,
    graph_kernel_samples,
    quantile,
    stop_reason,
    straggle_verdict,
    summarize,
)


def test_summary_matches_the_textbook_definitions():
    samples = [0.31, 0.30, 0.29, 0.35, 0.30, 0.32, 0.28, 0.30, 0.33, 0.31]
    s = summarize(samples)
    assert s.runs == 10
    assert s.median_ms == pytest.approx(statistics.median(samples))
    assert s.mean_ms == pytest.approx(statistics.fmean(samples))
    assert s.stderr_ms == pytest.approx(statistics.stdev(samples) / math.sqrt(10))
    # linear interpolation between order statistics (numpy's default): the "inclusive" method
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    assert (s.q1_ms, s.q3_ms) == (pytest.approx(q1), pytest.approx(q3))
    assert s.iqr_ms == pytest.approx(q3 - q1)
    assert (s.min_ms, s.max_ms) == (0.28, 0.35)
    assert s.total_ms == pytest.approx(sum(samples))
    assert s.rel_stderr == pytest.approx(s.stderr_ms / s.mean_ms)
    d = s.to_dict()
    assert d["iqr_ms"] == pytest.approx(s.iqr_ms) and d["rel_stderr"] == pytest.approx(s.rel_stderr)


def test_quantile_edges_and_errors():
    assert quantile([1.0], 0.5) == 1.0
    assert quantile([1.0, 3.0], 0.5) == 2.0
    assert quantile([1.0, 2.0, 4.0], 0.0) == 1.0 and quantile([1.0, 2.0, 4.0], 1.0) == 4.0
    with pytest.raises(ValueError):
        quantile([], 0.5)
    with pytest.raises(ValueError):
        quantile([1.0], 1.5)


def test_summary_refuses_empty_and_non_finite_samples():
    with pytest.raises(ValueError, match="no timed calls"):
        summarize([])
    with pytest.raises(ValueError, match="non-finite"):
        summarize([0.1, float("nan")])
    single = summarize([0.5])
    assert single.stderr_ms == math.inf and single.to_dict()["rel_stderr"] is None


def test_running_stats_agree_with_the_batch_summary():
    rng = random.Random(7)
    values = [rng.gauss(1.0, 0.05) for _ in range(500)]
    running = RunningStats()
    for v in values:
        running.add(v)
    batch = summarize(values)
    assert running.n == 500
    assert running.mean == pytest.approx(batch.mean_ms, rel=1e-12)
    assert running.stderr == pytest.approx(batch.stderr_ms, rel=1e-9)
    assert running.total == pytest.approx(batch.total_ms)
    assert RunningStats().stderr == math.inf


def _simulate(settings: BenchSettings, draw, call_s: float) -> tuple[str, int]:
    """Run the stopping rule over a stream of samples; wall time advances call_s per call."""
    running = RunningStats()
    while True:
        running.add(draw())
        reason = stop_reason(running.n, running.total, running.mean, running.stderr, running.n * call_s, settings)
        if reason:
            return reason, running.n


def test_stopping_needs_min_runs_min_kernel_time_and_a_small_stderr():
    settings = BenchSettings()
    rng = random.Random(1)
    # 2 ms kernels with 1% noise: 100 ms of kernel time needs 50 runs; the stderr is tiny by then.
    reason, n = _simulate(settings, lambda: rng.gauss(2.0, 0.02), 0.003)
    assert reason == STOP_CONVERGED and n == 50
    # 50 ms kernels: 10 runs already sum past 100 ms, and ten runs are the minimum anyway.
    reason, n = _simulate(settings, lambda: rng.gauss(50.0, 0.1), 0.06)
    assert reason == STOP_CONVERGED and n == 10


def test_a_noisy_kernel_runs_until_its_standard_error_is_small():
    settings = BenchSettings()
    rng = random.Random(2)
    # 20% noise: stderr < 0.5% of the mean needs (0.2/0.005)^2 = 1600 runs, far past the 100 ms point.
    reason, n = _simulate(settings, lambda: max(0.01, rng.gauss(1.0, 0.2)), 0.0015)
    assert reason == STOP_CONVERGED
    assert 1200 < n < 2200


def test_time_and_run_caps_end_series_that_cannot_settle():
    rng = random.Random(3)
    capped = BenchSettings(max_seconds=0.5)
    reason, n = _simulate(capped, lambda: max(0.01, rng.gauss(1.0, 0.5)), 0.01)
    assert reason == STOP_TIME_CAP and n == 50
    # a kernel slower than the cap still gets one call
    assert stop_reason(1, 2000.0, 2000.0, math.inf, 30.0, capped) == STOP_TIME_CAP
    assert stop_reason(0, 0.0, 0.0, math.inf, 30.0, capped) is None
    few = BenchSettings(max_runs=20, min_runs=10)
    reason, n = _simulate(few, lambda: max(0.01, rng.gauss(1.0, 0.5)), 0.001)
    assert reason == STOP_MAX_RUNS and n == 20


def test_the_parent_rechecks_convergence_on_its_own_numbers():
    settings = BenchSettings()
    assert converged(summarize([10.0 + 0.001 * i for i in range(12)]), settings)
    assert not converged(summarize([1.0] * 9), settings)  # too few runs
    assert not converged(summarize([1.0] * 50), settings)  # 50 ms of kernel time
    assert not converged(summarize([5.0, 15.0] * 20), settings)  # stderr 12.5% of the mean


def test_graph_samples_subtract_the_median_flush_replay():
    assert graph_kernel_samples([10.0, 11.0, 12.0], [4.0, 5.0, 100.0]) == [5.0, 6.0, 7.0]
    with pytest.raises(ValueError):
        graph_kernel_samples([], [1.0])


def test_straggle_verdict_flags_work_left_running():
    idle = [4.0, 5.0, 6.0, 5.0, 4.5] * 6
    clean = straggle_verdict([5.0, 6.0, 30.0, 5.5] * 25, idle, floor_us=20.0)
    assert not clean.flagged and clean.threshold_us == pytest.approx(20.0)
    side = straggle_verdict([180.0] * 80 + [5.0] * 20, idle, floor_us=20.0)
    assert side.flagged and side.over == 80 and side.median_us == 180.0
    # a slow host raises the threshold: three times the idle gap's 90th percentile
    slow_host = straggle_verdict([40.0] * 50, [15.0] * 30, floor_us=20.0)
    assert slow_host.threshold_us == pytest.approx(45.0) and not slow_host.flagged
    assert not straggle_verdict([], idle, 20.0).flagged



def test_straggle_threshold_follows_the_busy_calibration_up_to_a_quarter_of_the_kernel():
    idle = [6.0] * 30
    # an honest 150 µs kernel whose host pays ~20 µs after a real wait: not flagged once the busy
    # calibration (the same wait after a spin kernel) is taken into account
    honest = [24.0, 26.0, 19.0, 22.0] * 100
    assert straggle_verdict(honest, idle, floor_us=20.0).flagged
    calibrated = straggle_verdict(honest, idle, floor_us=20.0, busy_us=[10.0, 11.0, 12.0] * 10, kernel_us=150.0)
    assert not calibrated.flagged
    assert calibrated.threshold_us == pytest.approx(36.0) and calibrated.busy_p90_us == pytest.approx(12.0)
    # a calibration inflated by work left running cannot hide side work longer than a quarter of the kernel
    inflated = straggle_verdict([150.0] * 100, idle, floor_us=20.0, busy_us=[200.0] * 30, kernel_us=150.0)
    assert inflated.threshold_us == pytest.approx(37.5) and inflated.flagged
    # without the kernel's time the busy calibration counts in full
    assert straggle_verdict([150.0] * 100, idle, 20.0, busy_us=[200.0] * 30).threshold_us == pytest.approx(600.0)


def test_interleaved_controls_keep_host_jitter_from_flagging_and_still_catch_side_work():
    idle, busy = [8.0] * 30, [8.0] * 30
    # a slow spell of the host: a third of the calls over the threshold, and the controls made
    # between the calls just as slow
    jittery = [12.0, 14.0, 40.0] * 200
    assert straggle_verdict(jittery, idle, 20.0, busy, kernel_us=135.0).flagged
    calm = straggle_verdict(jittery, idle, 20.0, busy, kernel_us=135.0, control_us=[11.0, 13.0, 38.0] * 50)
    assert not calm.flagged and calm.excess_us == pytest.approx(14.0 - 3 * 13.0)
    # side work of 190 µs on every call: the controls stay short, the calls do not
    side = straggle_verdict([200.0] * 400, idle, 20.0, busy, kernel_us=2.0, control_us=[10.0] * 100)
    assert side.flagged and side.excess_us == pytest.approx(200.0 - 3 * 10.0) and side.control_median_us == 10.0
    # a small excess on a long kernel is not enough: more than a tenth of the kernel's time is needed
    small = straggle_verdict([60.0] * 400, idle, 20.0, busy, kernel_us=1000.0, control_us=[10.0] * 100)
    assert small.over == 400 and not small.flagged

def test_geomean_ignores_missing_values():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([None, 3.0]) == pytest.approx(3.0)
    assert geomean([]) is None and geomean([None, 0.0]) is None


def test_format_ms_keeps_the_unit_readable():
    assert format_ms(0.1824) == "182.4 µs"
    assert format_ms(0.004567) == "4.57 µs"
    assert format_ms(1.23456) == "1.235 ms"
    assert format_ms(2500.0) == "2.500 s"
    assert format_ms(0.0005) == "500 ns"
    assert format_ms(None) == "—" and format_ms(float("nan")) == "—"


def test_settings_layer_and_validate():
    s = BenchSettings.from_mapping({"graph": "on", "max_seconds": "3"}, {"min_runs": 20, "torch_compile": "false"})
    assert (s.graph, s.max_seconds, s.min_runs, s.torch_compile) == ("on", 3.0, 20, False)
    assert BenchSettings.from_mapping(None).to_dict() == BenchSettings().to_dict()
    with pytest.raises(ValueError, match="unknown \\[benchmark\\] setting 'warmup'"):
        BenchSettings.from_mapping({"warmup": 3})
    with pytest.raises(ValueError, match="graph must be one of"):
        BenchSettings.from_mapping({"graph": "sometimes"})
    with pytest.raises(ValueError, match="min_runs must be a int"):
        BenchSettings.from_mapping({"min_runs": "many"})
    with pytest.raises(ValueError, match="pool_fraction"):
        BenchSettings.from_mapping({"pool_fraction": 2})


def test_the_side_work_test_has_the_false_alarm_rate_it_states():
    """Honest calls and their interleaved controls come from one distribution (here: the heavy-tailed
    gaps a busy host gives); over many simulated measurements, flags stay under the stated rate."""
    import random

    from kerneltui.core.bench.stats import STRAGGLE_ALPHA

    rng = random.Random(11)

    def gaps(n: int) -> list[float]:
        return [rng.lognormvariate(3.3, 0.35) + (rng.random() < 0.05) * rng.uniform(20, 200) for _ in range(n)]

    flags = sum(straggle_verdict(gaps(400), [5.0] * 30, 20.0, kernel_us=135.0, control_us=gaps(100)).flagged
                for _ in range(2000))
    assert flags <= max(1, int(3 * STRAGGLE_ALPHA * 2000))


def test_the_side_work_test_sees_work_as_short_as_its_stated_effect():
    import random

    rng = random.Random(5)
    # as on the H200: an honest call's gap is about twice its controls'
    controls = [rng.gauss(15, 2) for _ in range(100)]
    # 35 µs of work left running on every call of a 135 µs kernel: past the effect (13.5 µs) and the
    # one control median (15 µs) that the allowance for honest calls takes
    hidden = [rng.gauss(30, 4) + 35 for _ in range(400)]
    verdict = straggle_verdict(hidden, [5.0] * 30, 20.0, kernel_us=135.0, control_us=controls)
    assert verdict.flagged and verdict.effect_us == pytest.approx(13.5) and verdict.p_value < 1e-10
    # 20 µs: inside the documented blind spot
    below = straggle_verdict([g - 15 for g in hidden], [5.0] * 30, 20.0, kernel_us=135.0, control_us=controls)
    assert not below.flagged
    # honest calls at 2.5× their controls (the most seen on the H200) are not flagged either
    honest = [2.5 * c for c in controls] * 4
    assert not straggle_verdict(honest, [5.0] * 30, 20.0, kernel_us=135.0, control_us=controls).flagged


def test_mann_whitney_matches_a_hand_computed_case():
    from kerneltui.core.bench.stats import mann_whitney_greater

    assert mann_whitney_greater([10, 11, 12, 13] * 5, [1, 2, 3, 4] * 5) < 1e-6
    assert mann_whitney_greater([1, 2, 3, 4] * 5, [10, 11, 12, 13] * 5) > 0.999
    assert 0.3 < mann_whitney_greater([1, 2, 3, 4] * 5, [1, 2, 3, 4] * 5) < 0.7
    assert mann_whitney_greater([10, 11, 12] * 5, [1, 2, 3] * 5, shift=20) > 0.999


def test_timing_stats_as_json_keep_their_fields_order_then_iqr_and_relative_error():
    stats = summarize([1.0, 2.0, 3.0, 4.0])
    data = stats.to_dict()
    assert list(data) == [f.name for f in dataclasses.fields(TimingStats)] + ["iqr_ms", "rel_stderr"]
    assert data["iqr_ms"] == stats.iqr_ms and data["rel_stderr"] == stats.rel_stderr
    assert summarize([0.0, 0.0]).to_dict()["rel_stderr"] is None  # infinite: JSON has no infinity
