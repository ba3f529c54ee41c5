"""bench/sidework_data.py's RESULTS entry: a cheat that correctness caught before the benchmark is a
catch, not a miss (the table of 2026-12-06 10:40 showed lazy_result_on_a_side_stream as "0 failed")."""

from __future__ import annotations

from bench.sidework_data import report


def _run(kernel: str, status: str, summary: str = "", error: str = "") -> dict:
    return {"kernel": kernel, "run": 0, "status": status, "error": error, "summary": summary, "wall_s": 1.0,
            "timings": {}, "cases": [{}]}


def test_a_cheat_caught_by_correctness_is_counted_as_caught_before_the_benchmark() -> None:
    data = [_run("cheat:lazy", "skip", "correctness failed"), _run("cheat:lazy", "skip", "correctness failed"),
            _run("cheat:side", "fail", error="n=4: the GPU was still busy after the timed stream finished on 9 of 9"),
            _run("vector_add", "ok"), _run("vector_add", "skip", "no GPU")]
    text = report(data, [("cheat:lazy", False), ("cheat:side", False), ("vector_add", True)], 0.0, "cmd", 1.0)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in text.splitlines() if line.startswith("| ")}
    assert rows["cheat:lazy"][2:6] == ["2", "2", "0", "0"] and rows["cheat:lazy"][6].startswith("correctness failed")
    assert rows["cheat:side"][2:6] == ["1", "0", "1", "1"]
    assert rows["vector_add"][2:6] == ["2", "0", "0", "0"]
    assert "Honest runs failed: 0 of 1 measured (1 skipped: the benchmark did not run)" in text
