"""When a run's verdict is known (core.verdict): the checks decide it, a failure decides at once, and
on a GPU a PASS stays a PASS so far until the benchmark and the roofline have ended."""

from __future__ import annotations

from kerneltui.core.events import VerdictReached, event_from_dict, event_to_dict
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.verdict import verdict_of

RUNGS = ["prechecks", "compile", "run", "correctness", "benchmark", "roofline", "dump"]


def _done(*pairs: tuple[str, str]) -> dict[str, RungResult]:
    return {name: RungResult(name, status, "") for name, status in pairs}


CHECKED = (("prechecks", "ok"), ("compile", "ok"), ("run", "ok"), ("correctness", "ok"))


def test_the_checks_decide_on_a_machine_without_a_gpu() -> None:
    assert verdict_of(RUNGS, _done(*CHECKED[:3]), has_gpu=False) is None
    state = verdict_of(RUNGS, _done(*CHECKED), has_gpu=False)
    assert state is not None and state.ok and state.undecided == ()
    assert state.pending == ("benchmark", "roofline", "dump")


def test_on_a_gpu_a_pass_waits_for_the_timed_rungs_and_the_dump_never_decides() -> None:
    early = verdict_of(RUNGS, _done(*CHECKED), has_gpu=True)
    assert early is not None and early.ok and early.undecided == ("benchmark", "roofline")
    timed = verdict_of(RUNGS, _done(*CHECKED, ("benchmark", "warn"), ("roofline", "ok")), has_gpu=True)
    assert timed is not None and timed.ok and timed.undecided == () and timed.pending == ("dump",)
    cheated = verdict_of(RUNGS, _done(*CHECKED, ("benchmark", "fail")), has_gpu=True)
    assert cheated is not None and not cheated.ok and cheated.failed_rung == "benchmark"


def test_a_failure_decides_at_once() -> None:
    state = verdict_of(RUNGS, _done(("prechecks", "ok"), ("compile", "fail")), has_gpu=True)
    assert state is not None and not state.ok and state.failed_rung == "compile" and state.undecided == ()


def test_the_event_round_trips_and_reads_as_check_prints_it() -> None:
    event = VerdictReached(run_id="r", ok=True, undecided=["benchmark"], pending=["benchmark", "dump"], after_s=0.93)
    assert event_from_dict(event_to_dict(event)) == event
    assert not event.final
    assert event.describe() == "PASS so far (the checks; benchmark may still fail it) · 0.9 s (benchmark, dump still to come)"
    failed = VerdictReached(run_id="r", ok=False, failed_rung="correctness", pending=["dump"], after_s=1.0)
    assert failed.final and failed.describe() == "FAIL (correctness failed) · 1.0 s (dump still to come)"


def test_the_loop_announces_a_pass_so_far_once_then_the_final_verdict_once() -> None:
    from kerneltui.core.loop import _verdict_news
    from kerneltui.core.rungs.context import Stopwatch

    clock = Stopwatch()
    announced: list[VerdictReached] = []
    steps = [_done(*CHECKED[:2]), _done(*CHECKED), _done(*CHECKED, ("benchmark", "ok")),
             _done(*CHECKED, ("benchmark", "ok"), ("roofline", "ok")),
             _done(*CHECKED, ("benchmark", "ok"), ("roofline", "ok"), ("dump", "fail"))]
    said = []
    for results in steps:
        news = _verdict_news(announced, verdict_of(RUNGS, results, has_gpu=True), "r", clock)
        said.append(news)
        if news is not None:
            announced.append(news)
    assert [n is not None for n in said] == [False, True, False, True, False]
    first, final = announced
    assert first.ok and first.undecided == ["benchmark", "roofline"] and not first.final
    assert final.ok and final.final and final.pending == ["dump"] and final.after_s >= first.after_s
