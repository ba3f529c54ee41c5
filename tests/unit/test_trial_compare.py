"""Where decisions are made: a proposal's trial against the file on disk as an interleaved comparison
(core.agent.trial_compare), auto mode's keep rule on it (core.agent.keep_rule), the card's sentence
(ui/proposal_view.py) and the word the agent reads.

The comparisons come from the comparison's real driver (core.rungs.compare_series) run against the
stand-ins of tests/unit/test_compare_series.py: a judge and a worker holding both kernels that give
synthetic times (B takes ``1 + shift`` times A's time). The block orders are seeded, so each
verdict here is the same on every run.
"""

from __future__ import annotations

import asyncio
import re

from kerneltui.core.agent.comparison import DISK, TrialComparison
from kerneltui.core.agent.keep_rule import keep_verdict
from kerneltui.core.agent.trial_compare import compare_trial
from kerneltui.core.agent.trials import Perf, TrialRung, TrialSummary
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.compare_series import CompareSettings, compare_case, judge_case
from kerneltui.core.rungs.result import RungResult, fail, ok, skip
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from kerneltui.settings.bench import BenchSettings
from kerneltui.ui.proposal_view import PASSED, verdict_of
from tests.unit.test_compare_series import FAST, Judge, TwoKernels

KERNEL_NAMES = (DISK, "p2")
# What the two medians measured minutes apart would claim in both cases: 1.5 % faster, "kept" by the
# rule of a median that moved (at least 1 %).
DISK_PERF = Perf(correct=True, median_s=1.000e-3)
MOVED_MEDIAN = Perf(correct=True, median_s=0.985e-3)


def _compared(shift: float, noise: float, seed: int = 3) -> TrialComparison:
    times = asyncio.run(compare_case(Judge(), TwoKernels(shift, noise=noise, seed=seed), 0, 1234,  # type: ignore[arg-type]
                                     CompareSettings(bench=FAST), 30.0, lambda *a: None, order_seed=seed))
    case = judge_case(times, FAST.straggle_us, *KERNEL_NAMES)
    return TrialComparison.of_cases([case], "0123abcd", KERNEL_NAMES)


def test_auto_keeps_a_change_three_percent_faster_with_a_narrow_interval() -> None:
    comparison = _compared(-0.03, noise=0.01)
    verdict = comparison.verdict
    assert verdict is not None and verdict.direction == "faster" and verdict.high is not None
    assert verdict.high < -0.015 and verdict.low is not None and verdict.low > -0.045, verdict  # narrow: about ±0.5 %
    kept = keep_verdict(MOVED_MEDIAN, DISK_PERF, comparison, min_gain_pct=1.0)
    assert kept.keep, kept.reason
    assert re.fullmatch(r"kept: p2 is [23]\.\d % faster than the file on disk \(95 % CI [123]\.\d–[234]\.\d %, "
                        r"[\d,]+ calls each\) — significant", kept.reason), kept.reason


def test_auto_rejects_a_point_three_percent_improvement_within_noise() -> None:
    comparison = _compared(-0.003, noise=0.03)
    verdict = comparison.verdict
    assert verdict is not None and verdict.direction == "same", verdict.text
    # Rejected by the interval, not by the least gain: with no least gain it is still reverted.
    for min_gain in (1.0, 0.0):
        rejected = keep_verdict(MOVED_MEDIAN, DISK_PERF, comparison, min_gain_pct=min_gain)
        assert not rejected.keep
        assert rejected.reason.startswith("reverted: no difference found (") and rejected.reason.endswith("— within noise")


def test_a_real_but_small_gain_is_reverted_below_the_least_gain_at_the_intervals_slow_end() -> None:
    comparison = _compared(-0.008, noise=0.002)
    assert comparison.verdict is not None and comparison.verdict.direction == "faster"
    assert keep_verdict(MOVED_MEDIAN, DISK_PERF, comparison, min_gain_pct=0.0).keep
    small = keep_verdict(MOVED_MEDIAN, DISK_PERF, comparison, min_gain_pct=1.0)
    assert not small.keep and "the interval's slow end is not 1 % faster" in small.reason


def test_without_a_comparison_speed_is_never_judged_only_a_kernel_made_correct_is_kept() -> None:
    no_gpu = TrialComparison("no_gpu", "0123abcd", reason="no GPU here: nothing is timed")
    side_work = TrialComparison.not_compared("p2 left work running after its calls returned (side work)")
    for comparison in (no_gpu, side_work, None):
        reverted = keep_verdict(MOVED_MEDIAN, DISK_PERF, comparison, min_gain_pct=1.0)
        assert not reverted.keep and "its speed could not be compared with the kept version" in reverted.reason
        assert "a median that moved is not a comparison" in reverted.reason
    assert "(no GPU here: nothing is timed)" in keep_verdict(MOVED_MEDIAN, DISK_PERF, no_gpu, 1.0).reason
    made_correct = keep_verdict(MOVED_MEDIAN, Perf(correct=False, reason="mismatch"), no_gpu, min_gain_pct=1.0)
    assert made_correct.keep and made_correct.reason == "kept: correct, and the kept version was not"
    wrong = keep_verdict(Perf(correct=False, reason="correctness failed: mismatch"), DISK_PERF, None, 1.0)
    assert not wrong.keep and "mismatch" in wrong.reason


def _card(comparison: TrialComparison | None, median_s: float | None = 182e-6) -> str:
    trial = TrialSummary(headline="correct", ok=True, correct=True, run_id="r1", median_s=median_s, pct_roofline=91.4,
                         rungs=(TrialRung("correctness", "ok", "exact"), TrialRung("benchmark", "ok", "182 µs")),
                         comparison=comparison)
    verdict = verdict_of({"id": "p2", "hunks": [{}], "added": 1, "removed": 1, "trial": trial.to_dict()})
    assert verdict.outcome == PASSED
    return verdict.headline


def test_the_card_shows_the_interleaved_comparison_not_two_medians() -> None:
    faster = _card(_compared(-0.03, noise=0.01))
    assert re.match(r"trial passed · p2 is [23]\.\d % faster than the file on disk \(95 % CI ", faster), faster
    assert "calls each) · 91% of roofline" in faster and "µs" not in faster and "×" not in faster
    same = _card(_compared(-0.003, noise=0.03))
    assert same.startswith("trial passed · no difference found (−") and "calls each) · 91% of roofline" in same


def test_while_the_comparison_runs_the_card_says_so() -> None:
    from dataclasses import replace

    from kerneltui.ui.proposal_view import RUNNING

    passed = TrialSummary(headline="correct", ok=True, correct=True, run_id="r1",
                          rungs=(TrialRung("correctness", "ok", "exact"), TrialRung("benchmark", "ok", "182 µs")))
    interim = replace(passed, running=True, headline="trial passed; comparing with the file on disk, interleaved…")
    verdict = verdict_of({"id": "p2", "hunks": [{}], "trial": interim.to_dict()})
    assert verdict.outcome == RUNNING and not verdict.safe_to_accept
    assert verdict.headline == "trial passed; comparing with the file on disk, interleaved…"
    assert verdict_of({"id": "p2", "trial": TrialSummary.started().to_dict()}).headline == "trial running on a scratch copy…"


def test_kerneltui_ask_prints_the_comparison_under_the_trial() -> None:
    from kerneltui.commands.ask import proposal_card

    comparison = _compared(-0.03, noise=0.01)
    trial = TrialSummary(headline="correct · 182.00 µs", ok=True, correct=True, run_id="r1", device="H100 (sm_90)",
                         comparison=comparison)
    text = proposal_card({"id": "p2", "state": "trial_done", "file": "kernel.py", "trial": trial.to_dict()})
    assert f"  trial: PASS · correct · 182.00 µs · H100 (sm_90)\n  speed: {comparison.sentence()}" in text
    no_gpu = TrialSummary(headline="correct", ok=True, correct=True, run_id="r1",
                          comparison=TrialComparison("no_gpu", reason="no GPU here"))
    assert "speed:" not in proposal_card({"id": "p2", "state": "trial_done", "file": "kernel.py",
                                          "trial": no_gpu.to_dict()})


def test_the_card_says_nothing_about_speed_without_a_gpu_and_why_nothing_was_compared_with_one() -> None:
    no_gpu = TrialComparison("no_gpu", "0123abcd", reason="no GPU here: nothing is timed")
    assert _card(no_gpu, median_s=None) == "trial passed · correct (no benchmark)"
    wrong_disk = TrialComparison.not_compared("kernel.py on disk does not pass its checks, so there is no speed "
                                              "to compare with")
    assert _card(wrong_disk) == ("trial passed · 182.00 µs · not compared with the file on disk: kernel.py on disk "
                                 "does not pass its checks, so there is no speed to compare with · 91% of roofline")


def test_the_agent_reads_significant_or_within_noise_with_the_interval() -> None:
    faster, same = _compared(-0.03, noise=0.01), _compared(-0.003, noise=0.03)
    assert re.match(r"speed against the file on disk, interleaved on one GPU: p2 is [23]\.\d % faster than the "
                    r"file on disk \(95 % CI ", faster.feedback()), faster.feedback()
    assert faster.feedback().endswith("— significant")
    assert "no difference found (−" in same.feedback() and same.feedback().endswith("— within noise")
    trial = TrialSummary(headline="correct", ok=True, correct=True, run_id="r1", device="H100 (sm_90)",
                         rungs=(TrialRung("correctness", "ok", "exact"),), comparison=same)
    assert trial.text().splitlines()[-1] == same.feedback()
    assert TrialComparison("no_gpu", reason="no GPU here").feedback() == ""


def test_a_comparison_survives_the_proposal_events_json() -> None:
    import json

    for comparison in (_compared(-0.03, noise=0.01), TrialComparison.not_compared("side work")):
        data = json.loads(json.dumps(comparison.to_dict()))
        again = TrialComparison.from_dict(data)
        assert again == comparison and again.sentence() == data["sentence"]


def _report(*results: RungResult, gpu: bool = True, source: str = "") -> RunReport:
    return RunReport(run_id="r", task="vector_add", ok=all(r.status != "fail" for r in results), results=list(results),
                     device={"gpu": gpu, "name": "NVIDIA H100", "arch": "sm_90a"},
                     source_hash=source_hash(source) if source else "abc", duration_s=1.0)


PASSED_TRIAL = (ok("correctness", "24 checks"), ok("benchmark", "182 µs", metrics={"median_ms": 0.182}))


def test_the_comparison_step_says_why_it_compares_nothing(example_task) -> None:
    task = load_task(example_task("vector_add"))
    disk = task.kernel_source()
    proposal = disk.replace("BLOCK = 1024", "BLOCK = 2048")

    def step(trial: RunReport, disk_report: RunReport | None = None, source: str = proposal,
             stage: bool = False) -> TrialComparison | None:
        # None for the pool: every case here decides before a worker is needed.
        return asyncio.run(compare_trial(task, None, "p2", source, trial, disk, disk_report,  # type: ignore[arg-type]
                                         BenchSettings(), hand_edited_stage=stage))

    assert step(_report(ok("correctness", "24 checks"))) is None  # the trial's rungs left out the benchmark
    assert step(_report(ok("correctness", "24 checks"), fail("benchmark", "side work"))) is None  # a failed trial
    assert step(_report(*PASSED_TRIAL, gpu=False)) == TrialComparison("no_gpu", source_hash(disk),
                                                                       reason="no GPU here: nothing is timed")
    wrong_disk = step(_report(*PASSED_TRIAL), _report(fail("correctness", "max_abs 3.0"), source=disk))
    assert wrong_disk is not None and wrong_disk.kind == "not_compared"
    assert wrong_disk.sentence() == ("not compared with the file on disk: kernel.py on disk does not pass its checks, "
                                     "so there is no speed to compare with")
    same = step(_report(*PASSED_TRIAL), source=disk)
    assert same is not None and "the same text as the file on disk" in same.reason
    stage = step(_report(*PASSED_TRIAL), stage=True)
    assert stage is not None and "hand-edited compiler stage" in stage.reason
    skipped = step(_report(ok("correctness", "24 checks"), skip("benchmark", "the task has no [[benchmarks]] cases")))
    assert skipped is not None and skipped.reason == "the benchmark was skipped (the task has no [[benchmarks]] cases)"
