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

import secrets
import time
from typing import Any

from kerneltui.core import metrics as metric_fns
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.judging import CaseRef, Judging
from kerneltui.core.rungs.result import RungResult, fail, ok, skip, warn
from kerneltui.core.worker.process import WorkerFailure, WorkerProcess
from kerneltui.core.worker.verdicts import worst_metrics

MAX_PROBLEMS = 8
REUSED_OUTPUT = ("returns a buffer it reuses across calls, or one still being written after it returned (a lazy or "
                 "aliased result); return a freshly written tensor from every call")


class Stop(Exception):
    """A finding that ends the checks at once (tampering, aliasing, evidence of torch doing the work)."""


async def run(ctx: RunContext) -> RungResult:
    load = ctx.data.get("load") or {}
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
        loc = ctx.location_from(exc.error)
        return fail("correctness", exc.message, location=loc,
                    details=(exc.error.get("traceback") or "") + worker.stderr_since(mark), metrics={"failure": exc.kind})
    ctx.data["correctness"] = result
    worst = result.get("worst") or {}
    metrics = {
        "checks": result["checks"], "passed": result["passed"], "cases": result["cases"], "seeds": result["seeds"],
        "launches": result.get("launches", 0), **{f"worst_{k}": v for k, v in worst.items()},
    }
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


class Checks:
    """The loop over cases and seeds, driving the judge and the candidate's worker."""

    def __init__(self, ctx: RunContext, judging: Judging, worker: WorkerProcess, seeds: int, hidden_seed: int) -> None:
        self.ctx = ctx
        self.judging = judging
        self.worker = worker
        self.seeds = int(seeds)
        self.hidden_seed = hidden_seed
        self.deadline = time.monotonic() + ctx.timeout("correctness")
        self.progress = ctx.progress_for("correctness")
        self.previous_label: str | None = None

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise WorkerFailure("timeout", f"the correctness checks took longer than {self.ctx.timeout('correctness'):.0f} s")
        return left

    async def run(self) -> dict[str, Any]:
        task = self.ctx.task
        checks: list[dict[str, Any]] = []
        problems: list[str] = []
        warnings_out: list[str] = []
        sanity: list[dict[str, Any]] = []
        determinism: list[dict[str, Any]] = []
        worst: dict[str, Any] = {}
        launches = 0
        cases = task.tests
        total = len(cases) * (self.seeds + 1)
        done = 0
        shapes_passed = 0  # test cases whose every seed passed so far
        for ci, case in enumerate(cases):
            params = dict(case.params)
            public_passed = 0
            seeds = [self.ctx.seed_for(ci, k) for k in range(self.seeds)]
            seeds.append(self.hidden_seed ^ (ci * 0x9E3779B1 & 0x7FFFFFFF))
            for si, seed in enumerate(seeds):
                hidden = si == len(seeds) - 1
                label = case.label + (" (hidden seed)" if hidden else f" seed={seed}")
                self.progress(label, done / total)
                done += 1
                ref = CaseRef(ci, params, seed, label)
                key, called, verdict = await self.check(ref, sanity=si == 0)
                launches += sum((called.get("launches") or {}).values())
                checks.append({"case": case.to_dict(), "seed": seed, "hidden": hidden, "ok": verdict["ok"],
                               "reason": verdict["reason"], "outputs": verdict.get("outputs")})
                worst_metrics(worst, verdict)
                if not verdict["ok"]:
                    hint = ""
                    if hidden and public_passed == len(seeds) - 1:
                        hint = (" — every published seed of this case passed and only the hidden seed fails: the kernel "
                                "depends on the test's seeds (inputs or answers hard-coded), not on its inputs")
                    elif shapes_passed and "left unwritten" in str(verdict["reason"]):
                        hint = (" — other test shapes pass, so the kernel covers only part of this one (a hard-coded "
                                "size, block or grid?)")
                    problems.append(f"{label}: {verdict['reason']}{hint}")
                    if len(problems) >= MAX_PROBLEMS:
                        break
                    continue
                self.previous_label = label
                if not hidden:
                    public_passed += 1
                elif public_passed == len(seeds) - 1:
                    shapes_passed += 1
                if si == 0:
                    det = await self.second_run(ref, key)
                    determinism.append(det)
                    if det.get("fail"):
                        problems.append(det["fail"])
                    elif det.get("warn"):
                        warnings_out.append(det["warn"])
                    if verdict.get("sanity"):
                        sanity.append(verdict["sanity"])
            if len(problems) >= MAX_PROBLEMS:
                break
        for s in sanity:
            for probe in s.get("passed") or []:
                warnings_out.append(
                    f"cannot tell right from wrong on {s['case']}: a {probe} output passes the check "
                    "(widen the test's value range or tighten [tolerance])")
        can_run = bool((self.ctx.data.get("load") or {}).get("can_run", True))
        if task.backend != "torch" and launches == 0 and can_run:
            problems.append(
                f"no {self.judging.backend_label} kernel was launched: custom_kernel must run a kernel of the task's "
                "backend (calling torch or the reference is not a kernel)")
        return {
            "ok": not problems, "checks": len(checks), "passed": sum(1 for c in checks if c["ok"]),
            "cases": len(cases), "seeds": self.seeds, "problems": problems, "warnings": warnings_out,
            "worst": worst, "launches": launches, "determinism": determinism, "sanity": sanity, "details": checks,
        }

    async def check(self, ref: CaseRef, sanity: bool) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """One checked call: inputs from the judge, the call, the judge's verdict. Findings that
        make the rest meaningless (an edited input, an aliased or reused output, torch doing the
        work) end the checks here."""
        key, inputs = await self.judging.inputs(ref, self.remaining())
        called = await self.judging.call(self.worker, key, inputs, self.remaining(), gpu_trace=sanity and self.ctx.has_gpu)
        if called.get("previous_changed") and self.previous_label:
            raise Stop(f"the output returned for {self.previous_label} changed when the kernel was called again "
                       f"({ref.label}): it {REUSED_OUTPUT}")
        verdict = await self.judging.verdict(key, called, self.remaining(), sanity=sanity)
        if verdict.get("problems"):
            raise Stop(str(verdict["problems"][0]) + (f" (+{len(verdict['problems']) - 1} more: "
                                                      + "; ".join(verdict["problems"][1:3]) + ")"
                                                      if len(verdict["problems"]) > 1 else ""))
        return key, called, verdict

    async def second_run(self, ref: CaseRef, first: str) -> dict[str, Any]:
        """The same inputs again, every fresh allocation filled with other (finite) garbage: a
        result that moves reads memory it never wrote; one that moves and stays right is merely
        not deterministic."""
        label = ref.label
        key, inputs = await self.judging.inputs(ref, self.remaining())
        called = await self.judging.call(self.worker, key, inputs, self.remaining(), fill="garbage",
                                         garbage_seed=ref.seed)
        if called.get("previous_changed"):
            return {"case": label, "identical": False,
                    "fail": f"{label}: the output of an earlier call changed when the kernel was called again: it "
                            + REUSED_OUTPUT}
        verdict = await self.judging.verdict(key, called, self.remaining(), mode="again", first=first)
        if verdict.get("problems"):
            raise Stop(str(verdict["problems"][0]))
        if verdict.get("identical"):
            return {"case": label, "identical": True}
        if not verdict.get("ok"):
            return {"case": label, "identical": False,
                    "fail": f"{label}: a second run with different garbage in fresh memory gave a wrong result "
                            f"({verdict.get('reason')}): the kernel reads memory it never wrote (uninitialised output or "
                            "scratch)"}
        return {"case": label, "identical": False,
                "warn": f"{label}: two runs on the same inputs differ bitwise (both pass): the kernel is not deterministic"}
