"""The proposal card's verdict line (ui/proposal_view.py), from the dicts a ProposalEvent carries."""

from __future__ import annotations

from kerneltui.ui.proposal_view import FAILED, NO_TRIAL, PASSED, RUNNING, UNCHECKED, verdict_of


def _proposal(trial: dict | None, hunks: int = 2) -> dict:
    return {"id": "p3", "file": "kernel.py", "hunks": [{}] * hunks, "added": 5, "removed": 2, "trial": trial}


def _rungs(*rows: tuple[str, str, str, str]) -> list[dict]:
    return [{"name": n, "status": s, "summary": summary, "error": error} for n, s, summary, error in rows]


def test_a_benchmarked_pass_says_time_and_roofline_and_never_a_ratio_of_two_medians() -> None:
    trial = {"ok": True, "correct": True, "median_s": 182e-6, "pct_roofline": 91.4,
             "rungs": _rungs(("correctness", "ok", "exact", ""), ("benchmark", "ok", "182 µs", ""))}
    verdict = verdict_of(_proposal(trial))
    assert verdict.outcome == PASSED and verdict.safe_to_accept
    assert verdict.headline == "trial passed · 182.00 µs · 91% of roofline"
    assert verdict.diff_stat == "2 hunks +5 −2"


def test_without_the_files_number_the_speed_is_against_the_reference() -> None:
    trial = {"ok": True, "correct": True, "median_s": 1e-3,
             "rungs": [{"name": "benchmark", "status": "ok", "summary": "", "metrics": {"speedup_vs_reference": 3.5}}]}
    assert verdict_of(_proposal(trial)).headline == "trial passed · 1.000 ms · 3.50× vs the reference"


def test_a_failure_names_the_rung_and_its_first_line_and_asks_twice() -> None:
    trial = {"ok": False, "correct": False, "rungs": _rungs(
        ("compile", "ok", "fine", ""), ("correctness", "fail", "3 of 24", "max_abs 2.0 > 1e-05\ntraceback…"))}
    verdict = verdict_of(_proposal(trial, hunks=1))
    assert verdict.outcome == FAILED and not verdict.safe_to_accept
    assert verdict.headline == "trial FAILED · correctness: max_abs 2.0 > 1e-05"
    assert verdict.diff_stat == "1 hunk +5 −2"
    warning = verdict.warning("p3", "kernel.py")
    assert "its trial failed (correctness: max_abs 2.0 > 1e-05)" in warning and "Press a again" in warning


def test_running_cancelled_and_untried_are_not_safe() -> None:
    assert verdict_of(_proposal({"running": True})).outcome == RUNNING
    cancelled = verdict_of(_proposal({"cancelled": True, "ok": False, "headline": "trial cancelled: the file changed"}))
    assert cancelled.outcome == NO_TRIAL and cancelled.headline == "trial cancelled: the file changed"
    assert not verdict_of(_proposal(None)).safe_to_accept
    only_prechecks = verdict_of(_proposal({"ok": True, "correct": False, "headline": "not correct (the correctness "
                                           "rung did not run)", "rungs": _rungs(("prechecks", "ok", "clean", ""))}))
    assert only_prechecks.outcome == UNCHECKED and not only_prechecks.safe_to_accept
    assert "did not check correctness" in only_prechecks.warning("p3", "kernel.py")
