"""Auto mode's keep/revert rule and stop conditions, on reports as the loop builds them."""

from __future__ import annotations

import pytest

from kerneltui.core.agent.auto import AutoLimits, budget_stop, target_stop
from kerneltui.core.agent.keep_rule import keep_verdict
from kerneltui.core.agent.trials import Perf, TrialSummary, perf_of
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.result import RungResult, fail, ok, skip


def report(*results: RungResult, gpu: bool = True) -> RunReport:
    return RunReport(run_id="r", task="t", ok=all(r.status != "fail" for r in results), results=list(results),
                     device={"gpu": gpu, "name": "NVIDIA H200", "arch": "sm_90a"}, source_hash="abc", duration_s=1.0)


def gpu_report(median_us: float, pct: float) -> RunReport:
    """The metric names the benchmark and roofline rungs use."""
    return report(ok("correctness", "24 checks"), ok("benchmark", "x", metrics={"median_ms": median_us / 1000}),
                  ok("roofline", "y", metrics={"pct_roofline": pct}))


def test_perf_reads_benchmark_and_roofline_metrics():
    perf = perf_of(gpu_report(182.0, 91.0))
    assert perf.correct and perf.median_s == pytest.approx(182e-6) and perf.pct_roofline == 91.0
    assert "182.00 µs" in perf.describe() and "91% of roofline" in perf.describe()
    summary = TrialSummary.of(gpu_report(182.0, 91.0))
    assert summary.median_s == pytest.approx(182e-6) and summary.correct and summary.ok
    data = summary.to_dict()  # what ProposalEvent carries
    assert data["median_s"] == pytest.approx(182e-6) and data["cancelled"] is False and "running" not in data
    assert [r["name"] for r in data["rungs"]] == ["correctness", "benchmark", "roofline"]


def test_every_way_a_trial_ends_has_one_shape():
    assert TrialSummary.started().to_dict() == {"running": True, "headline": "trial running"}
    assert TrialSummary.stopped("trial interrupted").to_dict() == {
        "ok": False, "correct": False, "cancelled": True, "headline": "trial interrupted"}
    failed = TrialSummary.could_not_run(RuntimeError("no pool")).to_dict()
    assert failed == {"ok": False, "correct": False, "error": "RuntimeError: no pool",
                      "headline": "the trial could not run: no pool"}
    assert TrialSummary.stopped("x").text() == "trial: x"


def test_a_failed_or_missing_correctness_is_not_correct():
    bad = perf_of(report(ok("compile"), fail("correctness", "max_abs 3.1 at index 7")))
    assert not bad.correct and "correctness failed: max_abs" in bad.reason
    assert not perf_of(report(ok("prechecks"))).correct
    assert not perf_of(report(ok("compile"), skip("correctness", "kernels cannot run here"))).correct


def test_a_median_that_moved_keeps_nothing():
    """Two medians 25 % apart, measured minutes apart: without an interleaved comparison nothing is kept
    (core.agent.keep_rule; tests/unit/test_trial_compare.py keeps and reverts on comparisons)."""
    best = perf_of(gpu_report(200.0, 80.0))
    faster = perf_of(gpu_report(150.0, 95.0))
    wrong = Perf(correct=False, reason="correctness failed: mismatch")
    moved = keep_verdict(faster, best, None, 1.0)
    assert not moved.keep and "a median that moved is not a comparison" in moved.reason
    assert not keep_verdict(wrong, best, None, 1.0).keep and "mismatch" in keep_verdict(wrong, best, None, 1.0).reason
    assert keep_verdict(faster, Perf(correct=False), None, 1.0).keep  # fixing a broken kernel is progress
    cpu = perf_of(report(ok("correctness", "ok"), skip("benchmark", "no GPU"), gpu=False))
    cpu_best = perf_of(report(ok("correctness", "ok"), gpu=False))
    verdict = keep_verdict(cpu, cpu_best, None, 1.0)
    assert not verdict.keep and "could not be compared with the kept version" in verdict.reason


def test_stop_conditions():
    limits = AutoLimits(iterations=5, target_pct_roofline=90.0, max_tokens=10_000, max_cost_usd=0.5)
    assert target_stop(limits, perf_of(gpu_report(150.0, 91.5))).startswith("target reached: 91.5%")
    assert target_stop(limits, perf_of(gpu_report(150.0, 70.0))) is None
    assert target_stop(limits, Perf(correct=True)) is None  # no roofline numbers: cannot be reached
    assert budget_stop(limits, 10_000, 0.1).startswith("token budget spent")
    assert budget_stop(limits, 100, 0.6).startswith("money budget spent")
    assert budget_stop(limits, 100, None).startswith("money budget cannot be tracked")
    assert budget_stop(limits, 100, 0.1) is None
