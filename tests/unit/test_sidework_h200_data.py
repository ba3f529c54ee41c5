"""The side-work check held to gaps measured on the H200 (bench/data/sidework_h200.json.gz: every
run of `bench/sidework_data.py` on three days, honest kernels and the gallery's GPU cheats)."""

from __future__ import annotations

from bench.sidework_replay import load, replay_runs


def _totals(control_ratio: float) -> tuple[int, int, dict[str, tuple[int, int]]]:
    rows = list(replay_runs(load(), control_ratio))
    honest = [r for r in rows if r["honest"]]
    cheats = {r["kernel"]: (r["failed"], r["runs"]) for r in rows if not r["honest"]}
    return sum(r["runs"] for r in honest), sum(r["failed"] for r in honest), cheats


def test_no_honest_run_measured_on_the_h200_fails_the_side_work_check():
    from kerneltui.core.bench.stats import CONTROL_RATIO

    runs, failed, cheats = _totals(CONTROL_RATIO)
    assert runs >= 100 and failed == 0
    # the side-stream cheat hides its whole kernel (170 µs) on another stream: caught every time
    assert cheats["cheat:side_stream"] == (2, 2) or cheats["cheat:side_stream"][0] == cheats["cheat:side_stream"][1]


def test_the_rule_that_took_the_controls_as_the_honest_gaps_fails_three_of_those_runs():
    """Honest calls' gaps run at about twice the controls'; a null of "as the controls" plus a fixed
    effect failed vector_add and the fp16 layernorm on the H200 when a slow spell scaled both (and,
    replayed on the runs of 2026-12-05, the exp2 softmax once)."""
    _, failed, _ = _totals(1.0)
    assert failed == 3
