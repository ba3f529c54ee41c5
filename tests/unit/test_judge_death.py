"""Whose fault a worker's death is: a judge's is never the kernel's failure (``judge_died``).

The judge killed for real (SIGKILL in the reference) runs end to end in
tests/integration/test_task_formats.py; these are the cases around it that need no process."""

from __future__ import annotations

from kerneltui.core.rungs.judging import StepLimit, judge_died
from kerneltui.core.worker.parent.process import WorkerDeath, WorkerFailure

LIMIT = StepLimit(60.0, "--timeout SECONDS", "run smaller sizes with --scale F", "prob.py")


def died(role: str, op: str, signal: str) -> WorkerFailure:
    return WorkerFailure("crash", f"the worker died with {signal} during {op}", death=WorkerDeath(role, op, signal))


def test_the_candidates_death_stays_the_kernels():
    exc = died("candidate", "call", "SIGKILL")
    assert judge_died(exc, LIMIT) is exc


def test_a_judge_killed_holding_the_kernels_output_is_still_the_tasks():
    # The judge's memory is the reference's sizes (its own copy of the output included).
    judged = judge_died(died("judge", "judge_verdict", "SIGKILL"), LIMIT)
    assert judged.kind == "task" and "out-of-memory killer" in judged.message and "--scale F" in judged.message


def test_a_judge_crashing_in_the_reference_is_the_tasks():
    judged = judge_died(died("judge", "judge_benchmark", "SIGSEGV"), LIMIT)
    assert judged.kind == "task"
    assert judged.message.startswith("the judge, which runs only the task's reference (prob.py), died with SIGSEGV "
                                     "(segmentation fault")
    assert "the reference (or a library it calls) crashed, not the kernel" in judged.message


def test_a_judge_crashing_on_the_kernels_output_stays_a_crash_named_as_the_judges():
    # Memory the kernel handed over and then took away can kill the judge that reads it (SIGBUS).
    judged = judge_died(died("judge", "judge_recheck", "SIGBUS"), LIMIT)
    assert judged.kind == "crash"
    assert "the judge, which runs only the task's reference (prob.py), died with SIGBUS" in judged.message
    assert "while it held the kernel's output" in judged.message
