"""The suite's numbers: KernelBench's fast_p and geometric-mean speedup, GPU MODE's score and ranking,
and the results file an interrupted suite resumes from."""

from __future__ import annotations

import math

import pytest

from kerneltui.core.suite.record import ItemResult, ResultsFile, from_report, score
from kerneltui.core.suite.score import fast_p, geomean_speedup, ranks, summarise


def item(problem: str, candidate: str = "c", status: str = "correct", speedup: float | None = None,
         score_us: float | None = None) -> ItemResult:
    return ItemResult(key=f"{problem}::{candidate}", problem=problem, candidate=candidate, status=status,  # type: ignore[arg-type]
                      speedup=speedup, score_us=score_us)


def test_fast_p_counts_every_item_in_the_denominator():
    results = [item("a", speedup=2.0), item("b", speedup=0.9), item("c", status="failed", speedup=5.0),
               item("d", status="no candidate"), item("e", status="task error")]
    assert fast_p(results, 0.0) == pytest.approx(2 / 5)
    assert fast_p(results, 1.0) == pytest.approx(1 / 5)  # strictly faster than p, as KernelBench counts
    assert fast_p(results, 2.0) == 0.0
    assert geomean_speedup(results) == pytest.approx(math.sqrt(2.0 * 0.9))  # correct items only
    summary = summarise(results, timed=True)
    assert summary.fast_p["1"] == pytest.approx(0.2) and summary.task_errors == 1 and summary.missing == 1
    assert summarise(results, timed=False).fast_p == {}


def test_fast_p_counts_problems_not_samples_and_says_which_sample_counts():
    """KernelBench's layout: several samples a problem. A problem weighs one, whatever its samples."""
    results = [item("1_a", "sample 0", speedup=2.0), item("1_a", "sample 1", status="failed"),
               item("1_a", "sample 2", status="failed"),
               item("2_b", "sample 0", status="failed"), item("2_b", "sample 1", speedup=1.5),
               item("3_c", "sample 0", speedup=0.5), item("4_d", status="no candidate")]
    assert fast_p(results, 1.0) == pytest.approx(1 / 4)  # 1_a by its first sample, over 4 problems
    assert fast_p(results, 1.0, sample="best") == pytest.approx(2 / 4)  # 2_b's second sample counts
    assert fast_p(results, 0.0) == pytest.approx(2 / 4)
    assert geomean_speedup(results) == pytest.approx(math.sqrt(2.0 * 0.5))
    first = summarise(results, timed=True)
    assert first.fast_p["1"] == pytest.approx(0.25) and first.sample == "first"
    assert first.to_json()["fast_p_over"] == "problems" and first.to_json()["problems"] == 4
    assert first.to_json()["sample"] == "first" and first.to_json()["correct_problems"] == 2
    best = summarise(results, timed=True, sample="best")
    assert best.fast_p["1"] == pytest.approx(0.5) and best.correct_problems == 3
    with pytest.raises(ValueError, match="first or best"):
        fast_p(results, 1.0, sample="mean")


@pytest.mark.parametrize(("ranking", "expected"), [("last", 9.0), ("mean", 6.5), ("geom", 6.0)])
def test_gpumode_score(ranking, expected):
    assert score([4.0e-3, 9.0e-3], ranking) == pytest.approx(expected)
    assert score([4.0e-3, 0.0], ranking) is None  # a case without a time: no score


def test_ranking_within_each_problem():
    results = [item("p", "slow", score_us=9.0), item("p", "wrong", status="failed"), item("p", "fast", score_us=4.0),
               item("q", "only", score_us=1.0)]
    assert ranks(results) == {"p::fast": 1, "p::slow": 2, "p::wrong": 3, "q::only": 1}


def test_verdict_from_a_report():
    report = {"ok": False, "rungs": [
        {"name": "compile", "status": "fail", "error": "needs a GPU", "metrics": {"failure": "task"}}]}
    assert from_report("k", "p", "c", report, "geom", "triton", "cpu 0", 1.0, "x").status == "task error"
    bench = {"name": "benchmark", "status": "ok", "metrics": {
        "speedup_vs_reference": 2.0, "median_ms": 0.5,
        "cases": [{"candidate": {"mean_ms": 0.004}, "reference": {"median_ms": 0.01}},
                  {"candidate": {"mean_ms": 0.009}, "reference": {"median_ms": 0.02}}]}}
    result = from_report("k", "p", "c", {"ok": True, "rungs": [bench]}, "geom", "triton", "gpu 0", 1.0, None)
    assert result.correct and result.speedup == 2.0 and result.score_us == pytest.approx(6.0)
    assert result.reference_ms == pytest.approx(math.sqrt(0.01 * 0.02))


def test_results_file_keeps_the_last_line_per_key_and_drops_a_torn_one(tmp_path):
    results = ResultsFile(tmp_path / "r.jsonl")
    results.append(item("a", status="failed"))
    results.append(item("a", speedup=1.5))
    results.append(item("b"))
    with results.path.open("a") as fh:
        fh.write('{"schema": 1, "result": {"key": "c"')  # killed while writing
    loaded = results.load()
    assert sorted(loaded) == ["a::c", "b::c"] and loaded["a::c"].speedup == 1.5
    assert results.dropped == 1


def test_a_missing_candidate_under_candidates_names_that_folder():
    """With --candidates given, "pass --candidates" is no help: the message names the folder and the names."""
    from kerneltui.core.suite.discover import discover
    from kerneltui.core.suite.prepare import prepare
    from kerneltui.core.task import LoadOptions
    from tests.conftest import DATA

    runs = DATA / "kernelbench" / "runs" / "torch_only"
    suite = discover(DATA / "kernelbench" / "level1", runs)
    missing = {p.item.problem: p.done.failure for p in prepare(suite, LoadOptions(), {})
               if p.done is not None and p.done.status == "no candidate"}
    assert set(missing) == {"7_ScaledReLU", "30_SoftsignWide", "40_TallMatmul"}
    text = missing["7_ScaledReLU"]
    assert "pass --candidates" not in text and str(runs.resolve()) in text
    assert "level_1_problem_7_sample_<s>_kernel.py" in text and "7_ScaledReLU_new.py" in text
    beside = {p.item.problem: p.done.failure for p in prepare(discover(DATA / "kernelbench" / "level1"), LoadOptions(), {})
              if p.done is not None and p.done.status == "no candidate"}
    assert all("--candidates" in text for text in beside.values())


def test_the_progress_line_says_what_the_table_says():
    from kerneltui.core.suite.table import progress_line

    for status, word in (("correct", "ok"), ("failed", "FAILED"), ("task error", "TASK ERROR"),
                         ("no candidate", "missing")):
        line = progress_line(item("1_a", "sample 0", status=status))
        assert line.split()[0] == word.split()[0] and word in line, line
