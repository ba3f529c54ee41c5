"""The ``correctness`` rung: every test case × several seeds + a hidden seed, against the reference.

HARNESS.md's correctness section, run across two processes (``core.rungs.judging``): for each check
the judge makes fresh inputs, runs the reference first on a clone and hands the candidate's worker
a copy; the kernel's output comes back with the evidence of how it was made, and the judge decides
(dtype-aware gate, float64-golden rule or the task's check_implementation; inputs untouched; no
output inside an input's memory; outputs produced by the task's backend, not by torch). The first
seed of every case also gets a second call with other garbage in fresh memory (uninitialised reads
and non-determinism) and the checker sanity probes. The hidden seed is drawn here, per run; the
kernel's process never learns any seed.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from kerneltui.core import metrics as metric_fns
from kerneltui.core.metrics import ErrorMetrics
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.judging import CaseRef, Judging
from kerneltui.core.rungs.result import RungResult, fail, ok, skip, warn
from kerneltui.core.rungs.rung_metrics import (
    CheckRecord,
    CorrectnessMetrics,
    CorrectnessOutcome,
    DeterminismNote,
)
from kerneltui.core.worker.contract.replies import LoadReply, SanityReport, VerdictReply
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess

MAX_PROBLEMS = 8
REUSED_OUTPUT = ("returns a buffer it reuses across calls, or one still being written after it returned (a lazy or "
                 "aliased result); return a freshly written tensor from every call")


class Stop(Exception):
    """A finding that ends the checks at once (tampering, aliasing, evidence of torch doing the work)."""


async def run(ctx: RunContext) -> RungResult:
    load: LoadReply = ctx.data.load or {}
    if not load.get("can_run", True):
        return skip("correctness", load.get("run_skipped_reason") or "kernels cannot run here")
    worker = await ctx.check_worker()
    judging = await ctx.judging()
    mark = worker.stderr_mark()
    # Drawn here, per run, so the candidate cannot know it in advance (it never sees any seed).
    hidden_seed = secrets.randbelow(2**31 - 1) + 1
    seeds = ctx.options.seeds or ctx.task.seeds
    checker = Checks(ctx, judging, worker, seeds, hidden_seed)
    try:
        result = await checker.run()
    except Stop as exc:
        return fail("correctness", str(exc), details=str(exc) + "\n" + worker.stderr_since(mark))
    except WorkerFailure as exc:
        return ctx.failure("correctness", exc, worker, mark)
    ctx.data.correctness = result
    worst = result["worst"]
    metrics: CorrectnessMetrics = {
        "checks": result["checks"], "passed": result["passed"], "cases": result["cases"], "seeds": result["seeds"],
        "launches": result.get("launches", 0),
    }
    # A cast: each worst value under its ErrorMetrics key with "worst_" before it (CorrectnessMetrics lists them).
    metrics.update(cast(CorrectnessMetrics, {f"worst_{k}": v for k, v in worst.items()}))
    lines = [f"{c['case']} seed={c['seed']}{' (hidden)' if c.get('hidden') else ''}: {'ok' if c['ok'] else 'FAIL'} — {c['reason']}"
             for c in result.get("details", [])]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    details = "\n".join(lines) + "\n" + worker.stderr_since(mark)
    head = metric_fns.headline(worst)
    if result.get("problems"):
        problems = result["problems"]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return fail("correctness", problems[0] + more, metrics=metrics, details="\n".join(problems) + "\n\n" + details,
                    summary=f"{result['passed']}/{result['checks']} checks passed · {problems[0][:120]}")
    cases = f"{result['cases']} case{'s' if result['cases'] != 1 else ''}"
    summary = f"{result['checks']} checks ({cases} × {result['seeds']}+1 seeds) · {head}"
    if result.get("warnings"):
        return warn("correctness", summary + f" · {len(result['warnings'])} warning(s): {result['warnings'][0]}",
                    metrics=metrics, details=details)
    return ok("correctness", summary, metrics=metrics, details=details)


@dataclass
class Step:
    """One call of the plan: a checked call on a case and seed, or the determinism call after it."""

    case_index: int
    ref: CaseRef
    seed_index: int
    hidden: bool
    again_of: int | None = None  # index of the checked call this one repeats with other garbage


@dataclass(frozen=True)
class NanFailure:
    problem: int  # index into Tally.problems
    label: str
    reason: str  # the judge's, which names both causes (metrics.NAN_CAUSES)
    shape_hint: str  # said only if the NaNs were left unwritten


@dataclass
class Tally:
    """What the verdicts said so far, in plan order."""

    checks: list[CheckRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sanity: list[SanityReport] = field(default_factory=list)
    determinism: list[DeterminismNote] = field(default_factory=list)
    worst: ErrorMetrics = field(default_factory=lambda: ErrorMetrics())
    launches: int = 0
    shapes_passed: int = 0  # test cases whose every seed passed so far
    public_passed: dict[int, int] = field(default_factory=dict)  # per case: published seeds passed
    failed_first: set[int] = field(default_factory=set)  # checked calls that failed (no determinism call)
    # Checked calls that failed with NaN where the reference is finite, by step: the problem's index
    # and its text's parts, until the determinism call says whether the NaNs were written or left.
    nan_failures: dict[int, NanFailure] = field(default_factory=dict)
    skipped_cases: set[int] = field(default_factory=set)  # cases that stopped at MAX_PROBLEMS

    @property
    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS


class Checks:
    """The loop over cases and seeds, driving the judge and the candidate's worker.

    The plan is fixed before the first call (every case × seeds + the hidden seed, a determinism
    call after each case's first seed), and it runs as a pipeline: the judge makes the next call's
    inputs while the kernel runs this one, and judges this one while the kernel runs the next. Both
    workers serve their requests in order, so the judge always has the first call's output before it
    compares the determinism call with it. Verdicts are read in plan order; a finding that ends the
    checks ends them after at most one call more.
    """

    def __init__(self, ctx: RunContext, judging: Judging, worker: WorkerProcess, seeds: int, hidden_seed: int) -> None:
        self.ctx = ctx
        self.judging = judging
        self.worker = worker
        self.seeds = int(seeds)
        self.hidden_seed = hidden_seed
        self.deadline = time.monotonic() + ctx.timeout("correctness")
        self.limit = ctx.step_limit("correctness")
        self.progress = ctx.progress_for("correctness")
        self.previous_label: str | None = None

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise WorkerFailure("timeout", f"the correctness checks took longer than {self.ctx.timeout('correctness'):.0f} s")
        return left

    def plan(self) -> list[Step]:
        steps: list[Step] = []
        for ci, case in enumerate(self.ctx.task.tests):
            seeds = [self.ctx.seed_for(ci, k) for k in range(self.seeds)]
            seeds.append(self.hidden_seed ^ (ci * 0x9E3779B1 & 0x7FFFFFFF))
            for si, seed in enumerate(seeds):
                hidden = si == len(seeds) - 1
                label = case.label + (" (hidden seed)" if hidden else f" seed={seed}")
                steps.append(Step(ci, CaseRef(ci, dict(case.params), seed, label), si, hidden))
                if si == 0:
                    steps.append(Step(ci, steps[-1].ref, si, hidden, again_of=len(steps) - 1))
        return steps

    async def run(self) -> CorrectnessOutcome:
        steps = self.plan()
        tally = Tally()
        keys: dict[int, str] = {}
        total = len(steps)
        inputs_next: asyncio.Task[tuple[str, Any]] | None = self._inputs(steps[0]) if steps else None
        pending: tuple[int, asyncio.Task[VerdictReply]] | None = None
        in_flight: list[asyncio.Future[Any]] = []
        try:
            for i, step in enumerate(steps):
                assert inputs_next is not None
                key, inputs = await inputs_next
                keys[i] = key
                inputs_next = self._inputs(steps[i + 1]) if i + 1 < total else None
                self.progress(step.ref.label, i / total)
                call = asyncio.ensure_future(self.judging.call(
                    self.worker, key, inputs, self.remaining(),
                    fill="garbage" if step.again_of is not None else "poison", garbage_seed=step.ref.seed,
                    gpu_trace=step.again_of is None and step.seed_index == 0 and self.ctx.has_gpu))
                in_flight = [call] + ([inputs_next] if inputs_next else [])
                if pending is not None:
                    self.read(steps, pending[0], await pending[1], tally)
                    pending = None
                called = await call
                tally.launches += sum((called.get("launches") or {}).values())
                if step.again_of is None and called.get("previous_changed") and self.previous_label:
                    raise Stop(f"the output returned for {self.previous_label} changed when the kernel was called "
                               f"again ({step.ref.label}): it {REUSED_OUTPUT}")
                if step.again_of is not None and called.get("previous_changed"):
                    tally.determinism.append({"case": step.ref.label, "identical": False,
                                              "fail": f"{step.ref.label}: the output of an earlier call changed when the "
                                                      f"kernel was called again: it {REUSED_OUTPUT}"})
                    tally.problems.append(tally.determinism[-1]["fail"])
                if tally.full:
                    break
                first = keys.get(step.again_of) if step.again_of is not None else None
                pending = (i, asyncio.ensure_future(self.judging.verdict(
                    key, called, self.remaining(), mode="again" if step.again_of is not None else "check", first=first,
                    sanity=step.again_of is None and step.seed_index == 0, limit=self.limit)))
                in_flight = [pending[1]] + ([inputs_next] if inputs_next else [])
            if pending is not None and not tally.full:
                self.read(steps, pending[0], await pending[1], tally)
                pending = None
        finally:
            # Requests already sent are answered before the rung ends: cancelling one mid-op would
            # kill its worker.
            rest = [f for f in in_flight if not f.done()] + ([pending[1]] if pending and not pending[1].done() else [])
            if rest:
                await asyncio.gather(*rest, return_exceptions=True)
        return self.result(tally)

    def _inputs(self, step: Step) -> asyncio.Task[tuple[str, Any]]:
        return asyncio.ensure_future(self.judging.inputs(step.ref, self.remaining(), limit=self.limit))

    def read(self, steps: list[Step], i: int, verdict: VerdictReply, tally: Tally) -> None:
        """Take one verdict into the tally (in plan order)."""
        step = steps[i]
        if verdict.get("problems"):
            problems = verdict["problems"]
            raise Stop(str(problems[0]) + (f" (+{len(problems) - 1} more: " + "; ".join(problems[1:3]) + ")"
                                           if len(problems) > 1 else ""))
        # What the judge could not look at (the GPU trace), said once.
        tally.warnings.extend(w for w in dict.fromkeys(verdict.get("warnings") or []) if w not in tally.warnings)
        if step.case_index in tally.skipped_cases:
            return
        if step.again_of is not None:
            if step.again_of in tally.nan_failures:
                self.name_the_nan(tally, tally.nan_failures.pop(step.again_of), verdict)
            if step.again_of in tally.failed_first or any(d["case"] == step.ref.label for d in tally.determinism):
                return
            tally.determinism.append(self.second_run(step.ref.label, verdict))
            if tally.determinism[-1].get("fail"):
                tally.problems.append(tally.determinism[-1]["fail"])
            elif tally.determinism[-1].get("warn"):
                tally.warnings.append(tally.determinism[-1]["warn"])
            if tally.full:
                tally.skipped_cases.add(step.case_index)
            return
        case = self.ctx.task.tests[step.case_index]
        tally.checks.append({"case": case.to_dict(), "seed": step.ref.seed, "hidden": step.hidden, "ok": verdict["ok"],
                             "reason": verdict["reason"], "outputs": verdict.get("outputs")})
        worst_metrics(tally.worst, verdict)
        passed = tally.public_passed.setdefault(step.case_index, 0)
        if not verdict["ok"]:
            tally.failed_first.add(i)
            hint = ""
            reason = str(verdict["reason"])
            if step.hidden and passed == self.seeds:
                hint = (" — every published seed of this case passed and only the hidden seed fails: the kernel "
                        "depends on the test's seeds (inputs or answers hard-coded), not on its inputs")
            elif metric_fns.NAN_CAUSES in reason:
                shape_hint = (" — other test shapes pass, so the kernel covers only part of this one (a hard-coded "
                              "size, block or grid?)") if tally.shapes_passed else ""
                if step.again_of is None and step.seed_index == 0:  # a determinism call follows
                    tally.nan_failures[i] = NanFailure(len(tally.problems), step.ref.label, reason, shape_hint)
                else:
                    hint = shape_hint
            tally.problems.append(f"{step.ref.label}: {reason}{hint}")
            if tally.full:
                tally.skipped_cases.add(step.case_index)
            return
        self.previous_label = step.ref.label
        if not step.hidden:
            tally.public_passed[step.case_index] = passed + 1
        elif passed == self.seeds:
            tally.shapes_passed += 1
        if verdict.get("sanity"):
            tally.sanity.append(verdict["sanity"])

    @staticmethod
    def name_the_nan(tally: Tally, first: NanFailure, again: VerdictReply) -> None:
        """Say which of the two causes the NaNs had: the second call's fresh memory held finite
        garbage, so NaNs left unwritten became that garbage, while computed ones came back."""
        if again.get("identical") or metric_fns.NAN_CAUSES in str(again.get("reason") or ""):
            cause = ("computed as NaN: a second call, with finite garbage in fresh memory instead of NaN, returned NaN "
                     "there again (a division by zero, a square root or log of a negative number, an epsilon left out?)")
            hint = ""
        else:
            cause = ("left unwritten: a second call, with finite garbage in fresh memory instead of NaN, returned that "
                     "garbage there")
            hint = first.shape_hint
        tally.problems[first.problem] = f"{first.label}: {first.reason.replace(metric_fns.NAN_CAUSES, cause)}{hint}"

    @staticmethod
    def second_run(label: str, verdict: VerdictReply) -> DeterminismNote:
        """The same inputs again, every fresh allocation filled with other (finite) garbage: a
        result that moves reads memory it never wrote; one that moves and stays right is merely
        not deterministic."""
        if verdict.get("identical"):
            return {"case": label, "identical": True}
        if not verdict.get("ok"):
            return {"case": label, "identical": False,
                    "fail": f"{label}: a second run with different garbage in fresh memory gave a wrong result "
                            f"({verdict.get('reason')}): the kernel reads memory it never wrote (uninitialised output or "
                            "scratch)"}
        return {"case": label, "identical": False,
                "warn": f"{label}: two runs on the same inputs differ bitwise (both pass): the kernel is not deterministic"}

    def result(self, tally: Tally) -> CorrectnessOutcome:
        task = self.ctx.task
        for s in tally.sanity:
            for probe in s.get("passed") or []:
                tally.warnings.append(
                    f"cannot tell right from wrong on {s['case']}: a {probe} output passes the check "
                    f"(widen the test's value range or {_tighten_tolerance(task.format)})")
        can_run = bool((self.ctx.data.load or {}).get("can_run", True))
        if task.backend_spec.requires_launch and tally.launches == 0 and can_run:
            tally.problems.append(
                f"no {self.judging.backend_label} kernel was launched: custom_kernel must run a kernel of the task's "
                "backend (calling torch or the reference is not a kernel)")
        return {
            "ok": not tally.problems, "checks": len(tally.checks), "passed": sum(1 for c in tally.checks if c["ok"]),
            "cases": len(task.tests), "seeds": self.seeds, "problems": tally.problems, "warnings": tally.warnings,
            "worst": tally.worst, "launches": tally.launches, "determinism": tally.determinism, "sanity": tally.sanity,
            "details": tally.checks,
        }


def _tighten_tolerance(task_format: str) -> str:
    """Where this task's tolerance is set."""
    if task_format == "kernelbench":
        return "tighten it with `# kerneltui: atol = …` / `# kerneltui: rtol = …` lines in the problem file"
    if task_format == "gpumode":
        return "tighten the tolerance its check_implementation uses"
    return "tighten [tolerance] in task.toml"


WORST_OF: tuple[tuple[Literal["max_abs", "max_rel", "rel_l2", "psnr_db", "cosine", "rmse"], Callable[..., object]], ...] = (
    ("max_abs", min), ("max_rel", min), ("rel_l2", min), ("psnr_db", max), ("cosine", max), ("rmse", min))


def worst_metrics(worst: ErrorMetrics, verdict: Mapping[str, Any]) -> None:
    """Fold one verdict's metrics into the run's worst values."""
    for part in verdict.get("outputs") or []:
        m = part.get("metrics") or {}
        for key, better in WORST_OF:
            v = m.get(key)
            if v is None:
                continue
            cur = worst.get(key)
            if cur is None or (better is min and v > cur) or (better is max and v < cur):
                worst[key] = v
        if m.get("exact") is False:
            worst["exact"] = False
        elif "exact" not in worst and m.get("exact"):
            worst["exact"] = True
