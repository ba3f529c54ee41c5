"""Auto mode: the agent iterates by itself, and only improvements are kept.

Each iteration asks the agent for one proposal; its trial decides: kept (applied, checkpointed,
recorded) when it is correct and faster than the kept version, the file on disk, by more than the
interval of an interleaved comparison with it (``keep_rule``; by at least ``min_gain_pct`` at the
interval's slow end), reverted otherwise, and the reason goes back to the agent. It stops at the
first of: the number of iterations, a target % of roofline, a token or money budget (checked before each request, see
``budget``), two iterations without a proposal, a provider error, or the person's interrupt. Every
trial lands in the history, and every stop reason names its cause.

Auto mode knows what it can judge. With no benchmark (no GPU, a task without [[benchmarks]], or trial
rungs without the benchmark) nothing can be shown to be faster: an incorrect kernel is worked toward
correctness (the brief says so, and it stops once a correct version is kept); a kernel that is
already correct is refused up front, before any token is spent, saying why.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltui.core.agent import prompts
from kerneltui.core.agent.budget import BudgetCheck, check_money, check_tokens, combine
from kerneltui.core.agent.errors import BUDGET
from kerneltui.core.agent.folding import FoldedProposal, fold, folded_line
from kerneltui.core.agent.keep_rule import keep_verdict
from kerneltui.core.agent.proposals import SUPERSEDED, TRIAL_DONE, Proposal
from kerneltui.core.agent.trials import Perf, TrialSummary, perf_of
from kerneltui.core.events import AgentError, Notice, UserMessage
from kerneltui.core.loop import RunReport
from kerneltui.core.task import source_hash

if TYPE_CHECKING:
    from kerneltui.core.agent.host import AutoHost
    from kerneltui.core.agent.turn_result import TurnResult
    from kerneltui.core.task import Task

KEEP_FASTER = ("kept only if it is correct and faster than the kept version by more than the noise (an interleaved "
               "comparison's 95 % interval entirely faster)")

# What an auto run came to, for a script (``kerneltui ask`` maps each to its exit status):
IMPROVED = "improved"  # kept a version faster than the correct kernel it started from
MADE_CORRECT = "made_correct"  # the kernel failed; a kept version is correct (no speed claim)
KEPT_NOTHING = "kept_nothing"  # stopped (iterations, an idle agent, a target already met) with nothing kept
STOPPED_BY_BUDGET = "budget"  # a token or money budget stopped it before anything was kept
FAILED = "failed"  # the provider failed, or a budget could not be applied
REFUSED = "refused"  # nothing it could keep here; no request was made
OUTCOMES = (IMPROVED, MADE_CORRECT, KEPT_NOTHING, STOPPED_BY_BUDGET, FAILED, REFUSED)
KEEP_CORRECT = "kept if it is correct (there is no benchmark here, so speed cannot be judged)"


@dataclass
class AutoLimits:
    iterations: int = 5
    target_pct_roofline: float | None = None
    max_tokens: int | None = None  # input + output tokens spent by this auto run
    max_cost_usd: float | None = None
    min_gain_pct: float = 1.0


@dataclass
class AutoResult:
    iterations: int = 0
    kept: list[str] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)  # replaced by a later proposal of the same turn
    stop_reason: str = ""
    baseline: TrialSummary | None = None
    best: TrialSummary | None = None
    tokens: int = 0
    cost_usd: float | None = 0.0
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, str] | None = None  # {"kind", "message"} when a provider failure or a budget problem stopped it
    refused: bool = False  # nothing it could keep here (a correct kernel and no benchmark): no request was made
    requests: int = 0
    cache_read_tokens: int = 0
    stopped_by_budget: bool = False  # the stop reason is a token or money budget

    @property
    def outcome(self) -> str:
        """What happened, one of ``OUTCOMES``: a failure first (whatever was kept before it is in
        ``kept``), then what was kept, then why nothing was."""
        if self.refused:
            return REFUSED
        if self.error is not None:
            return FAILED
        if self.kept:
            return IMPROVED if self.baseline is not None and self.baseline.correct else MADE_CORRECT
        return STOPPED_BY_BUDGET if self.stopped_by_budget else KEPT_NOTHING

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "iterations": self.iterations, "kept": self.kept, "reverted": self.reverted,
                "superseded": self.superseded, "stop_reason": self.stop_reason, "refused": self.refused,
                "baseline": self.baseline.to_dict() if self.baseline else None,
                "best": self.best.to_dict() if self.best else None, "tokens": self.tokens, "requests": self.requests,
                "cache_read_tokens": self.cache_read_tokens, "cost_usd": self.cost_usd, "verdicts": self.verdicts,
                "error": self.error}


def budget_stop(limits: AutoLimits, tokens: int, cost: float | None) -> str | None:
    if limits.max_tokens is not None and tokens >= limits.max_tokens:
        return f"token budget spent ({tokens:,} of {limits.max_tokens:,} tokens)"
    if limits.max_cost_usd is not None:
        if cost is None:
            return "money budget cannot be tracked: a request had no price in [prices]"
        if cost >= limits.max_cost_usd:
            return f"money budget spent (${cost:.4f} of ${limits.max_cost_usd:.4f})"
    return None


def no_benchmark_reason(report: RunReport, task: Task) -> str | None:
    """Why no trial here can show a version is faster, or None when a benchmark runs."""
    if report.result("benchmark") is None:
        return "the trial rungs leave out the benchmark ([agent] trial_rungs)"
    if not report.device.get("gpu"):
        return "there is no GPU here and the benchmark needs one"
    if not task.benchmarks:
        return "the task has no [[benchmarks]] cases in task.toml"
    return None


def target_stop(limits: AutoLimits, best: Perf | None) -> str | None:
    if limits.target_pct_roofline is None or best is None or best.pct_roofline is None:
        return None
    if best.pct_roofline >= limits.target_pct_roofline:
        return f"target reached: {best.pct_roofline:.1f}% of roofline (target {limits.target_pct_roofline:g}%)"
    return None


class AutoPilot:
    def __init__(self, chat: AutoHost, goal: str, limits: AutoLimits) -> None:
        self.chat = chat
        self.goal = goal
        self.limits = limits
        self.result = AutoResult()
        self.best: Perf | None = None
        meter = chat.meter
        self._start = (meter.total_tokens, meter.cost_usd, meter.requests, meter.cache_read_tokens)
        self.keep_rule = KEEP_FASTER

    def spent(self) -> tuple[int, float | None]:
        """Tokens and money this run spent; the money is unknown (None) while the model has no price,
        even before its first request (never "$0" for a price nobody knows)."""
        meter = self.chat.meter
        tokens = meter.total_tokens - self._start[0]
        cost0 = self._start[1]
        if meter.cost_usd is None or cost0 is None or meter.table.lookup(self.chat.provider.model) is None:
            return tokens, None
        return tokens, meter.cost_usd - cost0

    def _budget(self) -> str | None:
        return budget_stop(self.limits, *self.spent())

    def _check_request(self, input_estimate: int) -> BudgetCheck:
        """Before each model request: whether the budgets allow it, and how long its reply may be."""
        tokens, cost = self.spent()
        checks = []
        if self.limits.max_tokens is not None:
            checks.append(check_tokens(self.limits.max_tokens, tokens, input_estimate))
        if self.limits.max_cost_usd is not None:
            model = self.chat.provider.model
            checks.append(check_money(self.limits.max_cost_usd, cost, input_estimate,
                                      self.chat.meter.table.lookup(model), model))
        return combine(*checks)

    def finish(self, reason: str, budget: bool = False) -> AutoResult:
        if self.result.stop_reason:
            return self.result  # already finished (an interrupt reports once)
        self.result.stop_reason = reason
        self.result.stopped_by_budget = budget
        self.result.tokens, self.result.cost_usd = self.spent()
        meter = self.chat.meter
        self.result.requests = meter.requests - self._start[2]
        self.result.cache_read_tokens = meter.cache_read_tokens - self._start[3]
        cost = "cost unknown" if self.result.cost_usd is None else f"${self.result.cost_usd:.4f}"
        replaced = f", {len(self.result.superseded)} replaced" if self.result.superseded else ""
        self.chat.emit(Notice(level="info", source="agent", message=(
            f"auto mode stopped: {self.result.stop_reason} · {self.result.iterations} iteration(s), "
            f"{len(self.result.kept)} kept, {len(self.result.reverted)} reverted{replaced} · "
            f"{self.result.tokens:,} tokens ({self.result.cache_read_tokens:,} read from the cache) in "
            f"{self.result.requests} request(s), {cost}")))
        return self.result

    async def run(self) -> AutoResult:
        chat = self.chat
        chat.emit(UserMessage(text=f"auto mode ({self.limits.iterations} iteration(s)): "
                                      f"{self.goal or prompts.DEFAULT_AUTO_GOAL}"))
        if self.limits.max_cost_usd is not None and chat.meter.table.lookup(chat.provider.model) is None:
            message = (f"a money budget needs a price for {chat.provider.model} in [prices] "
                       f"(USD per million tokens); add one or use a token budget")
            chat.emit(AgentError(turn_id="", kind=BUDGET, message=message))
            self.result.error = {"kind": BUDGET, "message": message}
            return self.finish(message)
        chat.origin, chat.record_trials, chat.budget_guard = "auto", True, self._check_request
        try:
            return await self._iterate()
        except asyncio.CancelledError:
            await self._revert_open("auto mode was interrupted")
            self.finish("interrupted by the person")
            raise
        finally:
            chat.origin, chat.record_trials, chat.budget_guard = "chat", False, None
            chat.keep_rule = ""

    async def _iterate(self) -> AutoResult:
        chat = self.chat
        baseline = await chat.verify_source(chat.target.read(), origin="auto", record=True)
        chat.latest = baseline
        self.best = perf_of(baseline)
        self.result.baseline = self.result.best = TrialSummary.of(baseline)
        chat.emit(Notice(level="info", source="agent", message=f"auto mode: starting from {self.best.describe()}"))
        unmeasurable = no_benchmark_reason(baseline, chat.task)
        if unmeasurable is not None:
            if self.best.correct:
                self.result.refused = True
                return self.finish(f"nothing auto mode could keep: the kernel is already correct, and {unmeasurable}, "
                                   f"so no version can be shown to be faster. Run it where the benchmark runs "
                                   f"(a GPU machine), or ask in a chat turn instead")
            self.keep_rule = KEEP_CORRECT
            chat.emit(Notice(level="info", source="agent", message=(
                f"auto mode: {unmeasurable}, so it works toward a correct kernel and stops once one is kept")))
        chat.keep_rule = self.keep_rule
        roofline = baseline.result("roofline")
        if self.limits.target_pct_roofline is not None and (roofline is None or roofline.status == "skip"):
            why = roofline.summary if roofline is not None else "this build has no roofline rung"
            chat.emit(Notice(level="warning", source="agent", message=(
                f"auto mode: the target % of roofline cannot be checked here ({why}); the other limits still apply")))
        stop = target_stop(self.limits, self.best)
        if stop:
            return self.finish(stop)
        last: str | None = None
        idle = 0
        decided: tuple[int, int, list[Proposal], str] | None = None  # the iteration to fold next
        for iteration in range(1, self.limits.iterations + 1):
            stop = self._budget()
            if stop:
                return self.finish(stop, budget=True)
            self.result.iterations = iteration
            if decided is not None:
                folded = [FoldedProposal(p.id, p.new_hash, self._fate(p)) for p in decided[2]]
                fold(chat.messages, decided[1], folded_line(decided[0], folded, decided[3]))
            brief = prompts.auto_brief(iteration, self.limits.iterations, self.goal, self.best.describe(), last,
                                       self.limits.target_pct_roofline, self.keep_rule, unmeasurable,
                                       self._kept_file())
            start = len(chat.messages)
            turn = await chat.run_turn(brief)
            made = [chat.book.get(pid) for pid in turn.proposals]
            decided = (iteration, start, made, _no_proposal(turn))
            self.result.superseded += [p.id for p in made if p.state == SUPERSEDED]
            candidates = [p for p in made if p.state == TRIAL_DONE]
            if turn.error is not None:
                # A proposal verified before the provider failed is still judged (and kept if it earns it).
                if candidates:
                    await self._judge(iteration, candidates[-1])
                self.result.error = {"kind": turn.error.kind, "message": turn.error.message}
                return self.finish(f"the provider failed: {turn.error.message}")
            if not candidates:
                idle += 1
                last = _no_proposal(turn)
                if turn.stopped:
                    return self.finish(turn.stopped, budget=turn.stopped_by_budget)
                if idle >= 2:
                    return self.finish(f"the agent made no proposal in two iterations in a row (the last: {last})")
                continue
            idle = 0
            proposal = candidates[-1]
            await self._judge(iteration, proposal)
            last = None  # the decision note that goes with the next brief carries the verdict
            stop = target_stop(self.limits, self.best)
            if stop:
                return self.finish(stop)
            if turn.stopped:
                return self.finish(turn.stopped, budget=turn.stopped_by_budget)
            if unmeasurable is not None and self.best.correct:
                return self.finish(f"the kernel is correct now ({proposal.id} kept), and {unmeasurable}, so a faster "
                                   f"version could not be told apart")
        return self.finish(f"did {self.limits.iterations} iteration(s), the limit")

    def _kept_file(self) -> prompts.KeptFile | None:
        """The kept text for the brief, unless the system prompt already shows it."""
        text = self.chat.target.read()
        version = source_hash(text)
        if version == self.chat.prompt_kernel_hash:
            return None
        return prompts.KeptFile(self.chat.task.kernel_file, version, text)

    def _fate(self, proposal: Proposal) -> str:
        """What became of a proposal, for its folded line: auto mode's verdict, else its state."""
        verdict = next((v for v in reversed(self.result.verdicts) if v["proposal"] == proposal.id), None)
        if verdict is not None:
            return str(verdict["reason"])
        return proposal.state.replace("_", " ")

    async def _judge(self, iteration: int, proposal: Proposal) -> None:
        """Keep (apply) or revert the iteration's proposal; the verdict goes to the model as a decision note."""
        chat = self.chat
        assert self.best is not None
        report = chat.trial_reports.get(proposal.id)
        perf = perf_of(report) if report is not None else Perf(correct=False, reason="the trial did not run")
        verdict = keep_verdict(perf, self.best, proposal.trial.comparison if proposal.trial else None,
                               self.limits.min_gain_pct)
        await chat.decide(proposal.id, "accept" if verdict.keep else "reject", reason=verdict.reason,
                             respond=False, by="auto")
        self.result.verdicts.append({"iteration": iteration, "proposal": proposal.id, "keep": verdict.keep,
                                     "reason": verdict.reason})
        if verdict.keep:
            self.result.kept.append(proposal.id)
            self.best = perf
            self.result.best = proposal.trial
        else:
            self.result.reverted.append(proposal.id)
        chat.emit(Notice(level="info", source="agent",
                            message=f"auto {iteration}/{self.limits.iterations}: {proposal.id} {verdict.reason}"))

    async def _revert_open(self, why: str) -> None:
        for p in list(self.chat.book.proposals.values()):
            if p.origin == "auto" and p.is_open:
                try:
                    await self.chat.decide(p.id, "reject", reason=why, respond=False, by="auto")
                except Exception:  # noqa: BLE001 - best effort while stopping; the state stays visible
                    pass


def _no_proposal(turn: TurnResult) -> str:
    """What the agent did instead of proposing: for the next brief and the stop reason."""
    if turn.failed_tools:
        return f"no proposal; the tool calls that failed: {'; '.join(turn.failed_tools[-2:])}"
    if turn.tool_calls:
        return "no proposal; tools were called, but not propose_edit"
    return "no proposal; the reply called no tool"
