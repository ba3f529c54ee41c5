"""The verdict is announced as soon as the rungs that decide it have ended: before the benchmark's
result and before the dump, which only describes the version (real workers, Triton interpreter)."""

from __future__ import annotations

import asyncio

from kerneltui.core import events as ev
from kerneltui.core.loop_factory import check_once
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import run_cli


def _position(seen: list[ev.Event], test) -> int:  # type: ignore[no-untyped-def]
    return next(i for i, e in enumerate(seen) if test(e))


def _finished(name: str):  # type: ignore[no-untyped-def]
    return lambda e: isinstance(e, ev.RungFinished) and e.result.name == name


def test_the_verdict_event_comes_before_the_benchmark_and_the_dump(example_task) -> None:
    task = load_task(example_task("vector_add"))
    seen: list[ev.Event] = []
    report = asyncio.run(check_once(task, RunOptions(seeds=1, record=False, origin="check"), emit=seen.append))
    assert report.ok, [r.line() for r in report.results]
    verdicts = [e for e in seen if isinstance(e, ev.VerdictReached)]
    assert len(verdicts) == 1, verdicts  # no GPU: the checks decide, once
    (verdict,) = verdicts
    assert verdict.ok and verdict.final and verdict.failed_rung == ""
    assert verdict.pending == ["benchmark", "roofline", "dump"]
    at = seen.index(verdict)
    assert _position(seen, _finished("correctness")) < at < _position(seen, _finished("benchmark"))
    assert at < _position(seen, _finished("dump")) < _position(seen, lambda e: isinstance(e, ev.RunFinished))
    assert report.verdicts == [verdict]
    (reported,) = report.to_json()["verdicts"]
    assert reported["ok"] is True and reported["final"] is True and reported["after_s"] <= report.duration_s


def test_check_prints_a_failure_before_the_dump(example_task) -> None:
    path = example_task("vector_add")
    kernel = path / "kernel.py"
    kernel.write_text(kernel.read_text().replace("x + y", "x - y"))
    proc = run_cli("check", str(path), "--seeds", "1", "--rungs", "correctness,dump", "--no-history")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict: FAIL (correctness failed)"))
    dump = next(i for i, line in enumerate(lines) if line.startswith("[dump]"))
    assert next(i for i, line in enumerate(lines) if line.startswith("[correctness] FAILED")) < verdict < dump
    assert "(dump still to come)" in lines[verdict]
