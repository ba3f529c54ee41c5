"""When a run's verdict is known: the rule behind ``VerdictReached`` (``core.events``).

A run's verdict is PASS when none of the rungs that judge the kernel failed. Those are every rung
but the ones that only describe a version (``rungs.AFTER_VERDICT``: the dump, a profile, a trace).
The checks (prechecks, compile, run, correctness) decide it on every machine; on a GPU the
benchmark (its recheck of every timed output, its side-work check) and the roofline (a time under the
physical floor) can still fail a kernel whose checks passed, so a PASS before they end is a PASS so
far. On a machine without a GPU those rungs are skipped, never failed, so the checks alone decide.
A failed rung decides at once: nothing after it turns a FAIL into a PASS.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.rungs import AFTER_VERDICT
from kerneltui.core.rungs.result import RungResult

GPU_ONLY = ("benchmark", "roofline")  # rungs that judge the kernel only where there is a GPU


@dataclass(frozen=True)
class VerdictState:
    ok: bool
    failed_rung: str
    undecided: tuple[str, ...]  # rungs still to end that can still fail a PASS
    pending: tuple[str, ...]  # every rung of the run still to end


def verdict_of(names: list[str], results: dict[str, RungResult], has_gpu: bool) -> VerdictState | None:
    """The verdict of a run of rungs ``names`` once ``results`` have landed, or None while a check
    that decides it is still to end."""
    pending = tuple(n for n in names if n not in results)
    judging = [n for n in names if n not in AFTER_VERDICT]
    failed = next((n for n in judging if n in results and results[n].status == "fail"), None)
    if failed is not None:
        return VerdictState(False, failed, (), pending)
    if any(n not in results for n in judging if n not in GPU_ONLY):
        return None
    undecided = tuple(n for n in judging if n not in results and has_gpu)
    return VerdictState(True, "", undecided, pending)
