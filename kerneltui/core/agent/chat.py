"""AgentChat: the conversation, its tools, proposals and decisions, for the TUI and the CLI.

The front end creates one chat per task and drives it with four calls, each awaited in a
background task (never on the UI's event loop)::

    await chat.send("make the loads 128-bit")            # one turn: streamed reply, tool calls, proposals
    await chat.decide("p2", "reject", reason="keep BLOCK a power of two")   # the agent answers
    await chat.undo()                                     # back to the previous checkpoint
    chat.interrupt()                                      # stop the turn (or auto mode) now

Everything the person sees arrives through ``emit`` as ``core.events`` (UserMessage, AgentTextDelta,
AgentMessage, ToolCallStarted/Finished, ProposalEvent, TokenUsage, AgentError, Notice, and the
loop's Run*/Rung* events of trials, with origin "proposal" or "auto"). ``observe(event)`` lets the
chat see the front end's own runs and saves (latest results, stale proposals).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltui.core.agent import prompts
from kerneltui.core.agent.budget import BudgetCheck, TokenEstimator, request_chars
from kerneltui.core.agent.checkpoints import Checkpoint, CheckpointStore, KernelFile, KernelTarget
from kerneltui.core.agent.conversation import Message, ModelReply, ModelRequest, ToolCall, ToolResult, Usage
from kerneltui.core.agent.diffs import DiffError, apply_hunk_subset, unified_diff
from kerneltui.core.agent.errors import CUT_OFF, TOOL, ProviderError, redact
from kerneltui.core.agent.feedback import PathScrub, run_feedback
from kerneltui.core.agent.folding import without_decided_texts
from kerneltui.core.agent.override_proposals import accept_override
from kerneltui.core.agent.prices import CostMeter, PriceTable
from kerneltui.core.agent.proposals import (
    ACCEPTED,
    REDIRECTED,
    REJECTED,
    STALE,
    SUPERSEDED,
    TRIAL,
    TRIAL_DONE,
    UNDONE,
    Decision,
    OverrideTarget,
    Proposal,
    ProposalBook,
    ProposalError,
    VerifiedVerdict,
)
from kerneltui.core.agent.providers.base import Provider
from kerneltui.core.agent.search import ContextIndex, Hit, context_folders
from kerneltui.core.agent.search.installed import installed_packages
from kerneltui.core.agent.settings import AgentSettings, context_dir
from kerneltui.core.agent.tools import TOOL_SPECS, ToolFailure, run_tool, summarise_call
from kerneltui.core.agent.trial_compare import TrialOutcome, checked_then_compared
from kerneltui.core.agent.trials import TrialSummary
from kerneltui.core.agent.turn_result import TurnResult
from kerneltui.core.agent.versions import record_in_history
from kerneltui.core.agent.workspace import Workspace
from kerneltui.core.agent.written import written_of
from kerneltui.core.events import (
    AgentError,
    AgentMessage,
    AgentTextDelta,
    Emit,
    Event,
    FileChanged,
    Notice,
    ProposalEvent,
    RunFinished,
    RunStarted,
    TokenUsage,
    ToolCallFinished,
    ToolCallStarted,
    UserMessage,
)
from kerneltui.core.loop import RunReport
from kerneltui.core.loop_factory import PoolKind, new_loop, new_pool
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import Task, source_hash
from kerneltui.core.worker.parent.pool import WorkerPool

# Runs started by the agent itself; the front end's own runs (save, manual, check …) are "latest".
AGENT_ORIGINS = frozenset({"proposal", "auto"})
ACTIONS = ("accept", "reject", "redirect", "edit")


class AgentChat:
    def __init__(self, task: Task, provider: Provider, emit: Emit | None = None, *,
                 settings: AgentSettings | None = None, prices: PriceTable | None = None,
                 pool: WorkerPool | None = None, target: KernelTarget | None = None,
                 checkpoints: CheckpointStore | None = None, context_root: Path | None = None,
                 index: ContextIndex | None = None, verify_applied: bool = True) -> None:
        self.task = task
        self.provider = provider
        self.settings = settings or AgentSettings(provider=provider.name, model=provider.model)
        self.meter = CostMeter(prices or PriceTable.from_config(None))
        self._emit = emit or (lambda event: None)
        self._own_pool = pool is None
        self.pool = pool or new_pool(PoolKind.STANDING, task.backend, task.arch)
        from kerneltui.core.history import observer_for

        # The loop that verifies a version records it (here, or the engine's when the front end
        # routes trials there): one history row per run, never a second write from the chat.
        self.loop = new_loop(task, self.pool, self._loop_event, [observer_for(task)])
        self.target: KernelTarget = target or KernelFile(task.kernel_path)
        self.checkpoints = checkpoints or CheckpointStore(task.state_dir / "agent",
                                                          persist=isinstance(self.target, KernelFile))
        configured = Path(context_root or context_dir(self.settings))
        # The DSL packages the workers import, found on disk (never imported here), are searched too.
        installed = installed_packages() if self.settings.search_installed else []
        folders = context_folders(task.root, configured, installed)
        self.workspace = Workspace(task.root.resolve(), tuple(f.path for f in folders if f.package is None),
                                   tuple((p.name, p.root) for p in installed))
        self.scrub = PathScrub(str(task.root.resolve()), str(configured.expanduser().resolve()))
        self._no_gpu_said = False
        self.index = index or ContextIndex(folders)
        self.book = ProposalBook()
        self.messages: list[Message] = []
        self.pending_notes: list[str] = []
        self.latest: RunReport | None = None
        self.trial_reports: dict[str, RunReport] = {}
        # When set (auto mode), given a request's estimated input tokens, says whether it may be made
        # and how long its reply may be.
        self.budget_guard: Callable[[int], BudgetCheck] | None = None
        self.estimator = TokenEstimator()
        # How auto mode judges a proposal, for the model's view of a trial ("" outside auto mode).
        self.keep_rule = ""
        # Proposals made now are "chat" (the person decides) or "auto" (auto mode decides).
        self.origin = "chat"
        self.record_trials = False  # auto mode records every trial in the history
        self.verify_applied = verify_applied  # rerun the loop on an applied text no trial covered
        self._trial_tasks: dict[str, asyncio.Task[TrialOutcome]] = {}
        self._run_origins: dict[str, tuple[str, str]] = {}
        self._turn_lock = asyncio.Lock()
        self._turn_task: asyncio.Task[None] | None = None
        self._auto_task: asyncio.Task[Any] | None = None
        self._index_task: asyncio.Task[Any] | None = None
        self._history_note_shown = False
        kernel = self.target.read()
        try:
            reference = task.reference_path.read_text(encoding="utf-8")
        except OSError:
            reference = "(the reference could not be read)"
        self.system = prompts.system_prompt(task, kernel, reference)
        # Requests of this task with this prompt share a cached prefix; the key groups them.
        self.cache_key = "kerneltui-" + hashlib.sha256(self.system.encode()).hexdigest()[:16]
        self._seen_hash = source_hash(kernel)
        self.prompt_kernel_hash = self._seen_hash  # the version the system prompt shows

    # -- life cycle -------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """One line for the chat header and status bar: provider and model, or that it is scripted."""
        return self.provider.describe()

    def attach(self, emit: Emit) -> None:
        """Route events to ``emit`` (the UI's bridge) and start: call once, on the running event loop."""
        self._emit = emit
        self.start()

    def start(self) -> None:
        """Say who the agent is and bring the context index up to date (in the background)."""
        self.emit(Notice(level="info", message=f"agent: {self.provider.describe()} · {self.provider.key_note()}",
                         source="agent"))
        if self.provider.name == "scripted":
            self.emit(Notice(level="warning", source="agent",
                             message="the agent is a scripted replay: no model is called, replies are recorded"))
        self.index_in_background()

    def index_in_background(self) -> None:
        """Bring the context index up to date off the event loop, so the model's first search does
        not wait for a cold build; call on the running event loop."""
        if self.index.searchable() and self._index_task is None:
            self._index_task = asyncio.create_task(
                asyncio.to_thread(self.index.ensure_fresh, self.settings.index_refresh_s))

    async def close(self) -> None:
        self.interrupt()
        for task in list(self._trial_tasks.values()):
            task.cancel()
        if self._index_task is not None and not self._index_task.done():
            # The refresh runs in a thread; it finishes its transaction, we just stop waiting.
            self._index_task.cancel()
        await self.provider.close()
        if self._own_pool:
            await self.pool.close()

    def conversation_json(self) -> str:
        """The conversation as the model saw it (for the session log's resume); no keys in it."""
        from kerneltui.core.agent.conversation import conversation_to_json

        return conversation_to_json(self.messages, self.pending_notes)

    def restore_conversation(self, text: str) -> None:
        """Resume: put back a conversation saved with :meth:`conversation_json`, with the decision notes
        that were still waiting for the next turn."""
        from kerneltui.core.agent.conversation import conversation_from_json, pending_notes_from_json

        self.messages = conversation_from_json(text)
        self.pending_notes = pending_notes_from_json(text)

    @property
    def busy(self) -> bool:
        return self._turn_lock.locked() or (self._auto_task is not None and not self._auto_task.done())

    # -- events -----------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self._emit(event)

    def _loop_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._run_origins[event.run_id] = (event.origin, event.source_hash)
        self._emit(event)

    def observe(self, event: Event) -> None:
        """Feed the front end's events here: its runs become the latest results; saves stale proposals."""
        if isinstance(event, RunStarted):
            self._run_origins.setdefault(event.run_id, (event.origin, event.source_hash))
        elif isinstance(event, RunFinished):
            origin, digest = self._run_origins.get(event.run_id, ("manual", ""))
            if origin not in AGENT_ORIGINS and not event.cancelled and digest:
                self.latest = RunReport(run_id=event.run_id, task=self.task.name, ok=event.ok,
                                        results=list(event.results), device=event.device.copy(), source_hash=digest,
                                        duration_s=event.duration_s, version_id=event.version_id)
        elif isinstance(event, FileChanged):
            try:
                same = Path(event.path).resolve() == self.task.kernel_path.resolve()
            except OSError:
                same = False
            if same:
                for p in self.book.open_on_kernel(self.task.kernel_file):
                    if p.base_hash != event.source_hash:
                        trial = self._trial_tasks.get(p.id)
                        if trial is not None and not trial.done():
                            trial.cancel()
                            p.trial = TrialSummary.stopped("trial cancelled: the file changed")
                        self._end(p, STALE, {"decision": "stale", "by": "file",
                                             "reason": f"{p.file} changed before a decision"})

    def _emit_proposal(self, p: Proposal) -> None:
        self.emit(ProposalEvent(proposal_id=p.id, state=p.state, proposal=dict(p.to_dict())))

    # -- turns ------------------------------------------------------------------------------------

    async def send(self, text: str) -> TurnResult:
        """The person's message: one turn of the agent (it may call tools and make proposals)."""
        self.emit(UserMessage(text=text))
        return await self.run_turn(text)

    async def run_turn(self, text: str | None) -> TurnResult:
        """A turn with ``text`` (and any queued decision notes) as the user's message."""
        async with self._turn_lock:
            result = TurnResult()
            inner = asyncio.create_task(self._turn(text, result))
            self._turn_task = inner
            try:
                await asyncio.wait({inner})
            except asyncio.CancelledError:
                inner.cancel()
                await asyncio.wait({inner})
                raise
            finally:
                self._turn_task = None
            if inner.cancelled():
                result.interrupted = True
            else:
                inner.result()
            return result

    def interrupt(self) -> bool:
        """Stop the running turn and auto mode. Returns whether anything was running."""
        stopped = False
        if self._auto_task is not None and not self._auto_task.done():
            self._auto_task.cancel()
            stopped = True
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()
            stopped = True
        return stopped

    def _compose(self, text: str | None) -> str:
        parts = list(self.pending_notes)
        self.pending_notes.clear()
        current = self.target.read()
        digest = source_hash(current)
        if digest != self._seen_hash:
            parts.append(prompts.kernel_changed_note(self.task.kernel_file, current, digest))
            self._seen_hash = digest
        if text:
            parts.append(text)
        return self.scrub("\n\n".join(parts)) if parts else "Continue."

    async def _turn(self, text: str | None, result: TurnResult) -> None:
        decided = {p.call_id: (p.new_hash, p.state.replace("_", " ")) for p in self.book.proposals.values()
                   if p.call_id and not p.is_open and not p.override}
        without_decided_texts(self.messages, decided)
        self.messages.append(Message(role="user", text=self._compose(text)))
        for _ in range(max(1, self.settings.max_tool_rounds)):
            turn_id = uuid.uuid4().hex[:12]
            reply = await self._request(turn_id, result)
            if reply is None:
                return
            self.messages.append(Message(role="assistant", text=reply.text, tool_calls=reply.tool_calls))
            if not reply.tool_calls:
                return
            if self._own_pool:
                # Warm a worker once the model is answering with tools (trials need one); not before,
                # so a chat that fails at its first request never pays for starting torch.
                self.pool.prestart()
            await self._run_tools(turn_id, reply.tool_calls, result)
        result.stopped = f"stopped after {self.settings.max_tool_rounds} model requests in one turn"
        self.emit(Notice(level="warning", source="agent",
                         message=f"the agent {result.stopped} ([agent] max_tool_rounds); send a message to go on"))

    async def _request(self, turn_id: str, result: TurnResult) -> ModelReply | None:
        """One model request (asked again once when the reply is cut off); None when it failed or
        the budget does not allow it (``result`` says which)."""
        request = ModelRequest(system=self.system, messages=list(self.messages), tools=TOOL_SPECS,
                               max_tokens=self.settings.max_tokens, temperature=self.settings.temperature,
                               cache_key=self.cache_key)
        chars = request_chars(request)
        for attempt in (1, 2):
            if self.budget_guard is not None:
                check = self.budget_guard(self.estimator.estimate(chars))
                if check.stop:
                    result.stopped, result.stopped_by_budget = check.stop, True
                    return None
                if check.max_output_tokens is not None:
                    request.max_tokens = min(self.settings.max_tokens, check.max_output_tokens)
            try:
                reply = await self._stream(turn_id, request)
            except ProviderError as exc:
                message = redact(exc.message, self.provider.secrets())
                if exc.kind == CUT_OFF and attempt == 1:
                    self.emit(Notice(level="warning", source="agent", message=f"{message}; asking again (once)"))
                    continue
                if exc.kind == CUT_OFF:
                    message += "; it was asked again once, and that reply was cut off too"
                self.emit(AgentError(turn_id=turn_id, kind=exc.kind, message=message))
                result.error = ProviderError(exc.kind, message)
                return None
            break
        result.requests += 1
        self.estimator.observe(chars, reply.usage)
        if reply.text:
            result.text += ("\n\n" if result.text else "") + reply.text
            self.emit(AgentMessage(turn_id=turn_id, text=reply.text, provider=self.provider.name,
                                   model=reply.model or self.provider.model))
        self._account(turn_id, reply.usage, reply.model)
        if reply.stop_reason in ("length", "max_tokens"):
            self.emit(Notice(level="warning", source="agent",
                             message=f"the reply was cut at {request.max_tokens} tokens "
                                     f"({'the budget left' if request.max_tokens < self.settings.max_tokens else '[agent] max_tokens'})"))
        return reply

    async def _stream(self, turn_id: str, request: ModelRequest) -> ModelReply:
        """Send the request, streaming its text to the person; a partial reply is shown as such."""
        streamed: list[str] = []

        def on_text(piece: str) -> None:
            streamed.append(piece)
            self.emit(AgentTextDelta(turn_id=turn_id, text=piece))

        def on_wait(message: str) -> None:
            self.emit(Notice(level="warning", source="agent", message=message))

        try:
            return await self.provider.complete(request, on_text, on_wait)
        except asyncio.CancelledError:
            partial = "".join(streamed)
            if streamed:
                self.emit(AgentMessage(turn_id=turn_id, text=partial + " [interrupted]", provider=self.provider.name,
                                       model=self.provider.model))
                self.messages.append(Message(role="assistant", text=partial + " [interrupted by the person]"))
            # The server counts (and bills) a stream cut by the client as far as it got, and sends no
            # usage: count an estimate, marked as not reported, rather than nothing.
            self._account(turn_id, Usage(input_tokens=self.estimator.estimate(request_chars(request)),
                                         output_tokens=self.estimator.estimate(len(partial)), reported=False),
                          "", cut_off=True)
            self.emit(Notice(level="info", message="agent interrupted: the reply so far is kept, marked [interrupted]; "
                                                   "its tokens are counted as an estimate", source="agent"))
            raise
        except ProviderError as exc:
            if exc.usage is not None or exc.kind == CUT_OFF:
                # A reply cut off mid-stream was paid for as far as the server counted it; where the
                # server sent no usage (OpenAI's comes last), an estimate marked as such, never zero.
                usage = exc.usage or Usage(input_tokens=self.estimator.estimate(request_chars(request)),
                                           output_tokens=self.estimator.estimate(len("".join(streamed))),
                                           reported=False)
                self._account(turn_id, usage, "", cut_off=True)
            if streamed:
                self.emit(AgentMessage(turn_id=turn_id, text="".join(streamed) + " [cut off]",
                                       provider=self.provider.name, model=self.provider.model))
            raise

    def _account(self, turn_id: str, usage: Usage | None, reply_model: str, cut_off: bool = False) -> None:
        table = self.meter.table
        model = self.provider.model if table.lookup(self.provider.model) else (reply_model or self.provider.model)
        cost = self.meter.add(model, usage, cut_off=cut_off)
        counted = usage or Usage(input_tokens=0, output_tokens=0, reported=False)
        self.emit(TokenUsage(
            turn_id=turn_id, provider=self.provider.name, model=model,
            input_tokens=counted.input_tokens, output_tokens=counted.output_tokens, cost_usd=cost,
            session_input_tokens=self.meter.input_tokens, session_output_tokens=self.meter.output_tokens,
            session_cost_usd=self.meter.cost_usd, cache_read_tokens=counted.cache_read_tokens,
            cache_write_tokens=counted.cache_write_tokens, reported=counted.reported,
        ))

    async def _run_tools(self, turn_id: str, calls: list[ToolCall], result: TurnResult) -> None:
        results: list[ToolResult] = []
        try:
            for call in calls:
                results.append(await self._call_tool(turn_id, call, result))
        finally:
            # Every call gets an answer, even when the turn is interrupted, so the conversation stays valid.
            for call in calls[len(results):]:
                results.append(ToolResult(call_id=call.id, name=call.name, is_error=True,
                                          content="interrupted by the person before this tool ran or finished"))
            self.messages.append(Message(role="tool", tool_results=results))

    async def _call_tool(self, turn_id: str, call: ToolCall, result: TurnResult) -> ToolResult:
        summary = summarise_call(call)
        self.emit(ToolCallStarted(turn_id=turn_id, call_id=call.id, name=call.name, summary=summary,
                                  arguments=dict(call.arguments)))
        result.tool_calls += 1
        started = time.perf_counter()
        before = set(self.book.proposals)
        try:
            outcome = await run_tool(self, call, turn_id)
        except asyncio.CancelledError:
            self.emit(ToolCallFinished(turn_id=turn_id, call_id=call.id, name=call.name, ok=False,
                                       summary="interrupted", duration_s=time.perf_counter() - started))
            raise
        except Exception as exc:  # a bug in a tool: the person must see it, the model gets an error result
            import traceback

            message = f"internal error in {call.name}: {type(exc).__name__}: {exc}"
            self.emit(AgentError(turn_id=turn_id, kind=TOOL, message=message))
            self.emit(ToolCallFinished(turn_id=turn_id, call_id=call.id, name=call.name, ok=False, summary=message,
                                       output=traceback.format_exc(), duration_s=time.perf_counter() - started))
            return ToolResult(call_id=call.id, name=call.name, content=message, is_error=True)
        result.proposals += [pid for pid in self.book.proposals if pid not in before]
        if not outcome.ok:
            result.failed_tools.append(f"{summary}: {outcome.summary}")
        output = self.scrub(outcome.output)
        self.emit(ToolCallFinished(turn_id=turn_id, call_id=call.id, name=call.name, ok=outcome.ok,
                                   summary=outcome.summary, output=output,
                                   duration_s=time.perf_counter() - started))
        return ToolResult(call_id=call.id, name=call.name, content=output, is_error=not outcome.ok)

    # -- what tools use ---------------------------------------------------------------------------

    def feedback(self, report: RunReport, label: str, candidate: str) -> str:
        """A run as the model reads it (see ``feedback``); ``candidate`` is the kernel text it verified."""

        def read(file: str) -> str | None:
            if file == self.task.kernel_file:
                return candidate
            try:
                path = (self.task.root / file).resolve()
                path.relative_to(self.task.root.resolve())
                return path.read_text(encoding="utf-8")
            except (OSError, ValueError, UnicodeDecodeError):
                return None

        text = run_feedback(report, label, read, note_no_gpu=not self._no_gpu_said)
        self._no_gpu_said = self._no_gpu_said or not report.device.get("gpu")
        return text

    def note_file_read(self, path: str) -> None:
        try:
            real, _ = self.workspace.resolve(path)
        except Exception:
            return
        if real == self.task.kernel_path.resolve() and isinstance(self.target, KernelFile):
            self._seen_hash = source_hash(self.target.read())

    async def search_context(self, query: str, limit: int, under: str | None) -> tuple[list[Hit], str]:
        if not self.index.searchable():
            raise ToolFailure(f"there is no context folder ({', '.join(str(f.path) for f in self.index.folders)}); "
                              f"kerneltui's context/README.md "
                              f"says how to add notes or clone docs there")
        note = ""
        task = self._index_task
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = self._index_task = asyncio.create_task(
                asyncio.to_thread(self.index.ensure_fresh, self.settings.index_refresh_s))
        if not task.done():
            if self.index.refreshed_at() is None:
                stats = await asyncio.shield(task)
                note = f"context/ indexed for the first time: {stats.describe()}" if stats else ""
            else:
                note = "context/ is being re-indexed; the newest changes may be missing"
        elif task.exception() is not None:
            raise ToolFailure(f"the context index could not be built: {task.exception()}")
        hits = await asyncio.to_thread(self.index.search, query, limit, under)
        return hits, note

    def version_text(self, prefix: str) -> tuple[str, str, str] | None:
        """(hash, where it is from, text) of the kernel version whose hash starts with ``prefix``: the file
        as it is, this session's proposals, then the task's history; None when none or several match."""
        found: dict[str, tuple[str, str]] = {}
        current = self.target.read()
        if source_hash(current).startswith(prefix):
            found[source_hash(current)] = ("the kernel file now", current)
        for p in self.book.proposals.values():
            if p.override:
                continue
            if p.new_hash.startswith(prefix):
                found.setdefault(p.new_hash, (f"proposal {p.id}, {p.state.replace('_', ' ')}", p.new_source))
            if p.base_hash.startswith(prefix):
                found.setdefault(p.base_hash, (f"the base of proposal {p.id}", p.base_source))
        if not found:
            from kerneltui.core.history import HistoryStore

            stored = HistoryStore.for_task(self.task).source_by_hash(prefix)
            if stored is not None:
                found[stored[0]] = ("the task's history", stored[1])
        if len(found) != 1:
            return None
        digest, (where, text) = next(iter(found.items()))
        return digest, where, text

    async def latest_report(self) -> tuple[RunReport, bool]:
        """The latest run of the kernel as it is now; runs the loop when there is none."""
        text = self.target.read()
        if self.latest is not None and self.latest.source_hash == source_hash(text):
            return self.latest, False
        report = await self.verify_source(text, origin="verify", record=True)
        self.latest = report
        return report, True

    async def verify_source(self, source: str, origin: str, record: bool, rungs: list[str] | None = None,
                            override_folder: str | None = None, author: str = "") -> RunReport:
        """Run the loop on ``source``; ``author`` (who made the text) goes into its history row."""
        options = RunOptions(kernel_source=source, origin=origin, record=record, rungs=rungs or self.settings.rungs(),
                             seeds=int(self.settings.trial_seeds) or None, override_folder=override_folder,
                             author=author)
        return await self.loop.run(options)  # its observer records the run when ``record``

    async def _record(self, source: str, report: RunReport, options: RunOptions) -> None:
        """Record a run made with ``record=False`` (a trial the person then accepted)."""
        try:
            note = await record_in_history(self.task, source, report, options)
        except Exception as exc:  # the history must never lose a result the person is looking at
            note = f"could not record the version in the history: {type(exc).__name__}: {exc}"
        if note and not self._history_note_shown:
            self._history_note_shown = True
            self.emit(Notice(level="info", message=note, source="agent"))

    # -- proposals --------------------------------------------------------------------------------

    async def make_proposal(self, base: str, new: str, kind: str, rationale: str, turn_id: str, call_id: str,
                            submitted_diff: str = "", override: OverrideTarget | None = None) -> Proposal:
        # A hand-edited stage (override) lives in its own file; its base is the kernel file it was built from.
        file = str(override["file"]) if override else self.task.kernel_file
        pid = self.book.next_id()
        for old in self.book.open_for(file):
            await self._cancel_trial(old, f"superseded by {pid}")
            self._end(old, SUPERSEDED, {"decision": "superseded", "by": "agent", "reason": f"superseded by {pid}"})
        base_hash = source_hash(self.target.read()) if override else source_hash(base)
        p = Proposal(id=pid, file=file, rationale=rationale.strip(), kind=kind, base_source=base,
                     base_hash=base_hash, new_source=new, new_hash=source_hash(new), origin=self.origin,
                     turn_id=turn_id, call_id=call_id, submitted_diff=submitted_diff, override=override)
        self.book.add(p)
        self._emit_proposal(p)
        await self._run_trial(p)
        return p

    async def _run_trial(self, p: Proposal) -> None:
        p.move(TRIAL)
        p.trial = TrialSummary.started()
        self._emit_proposal(p)
        origin = "auto" if p.origin == "auto" else "proposal"
        source, folder = self._checked_input(p)
        task = asyncio.create_task(checked_then_compared(self, p, source, origin, folder,
                                                         lambda interim: self._interim(p, interim)))
        self._trial_tasks[p.id] = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task})
            if p.state == TRIAL:
                p.trial = TrialSummary.stopped("trial interrupted")
                p.move(TRIAL_DONE)
                self._emit_proposal(p)
            raise
        finally:
            self._trial_tasks.pop(p.id, None)
        if task.cancelled():
            return  # a decision (or a newer proposal) cancelled it and recorded why
        exc = task.exception()
        if exc is not None:
            p.trial = TrialSummary.could_not_run(exc)
        else:
            outcome = task.result()
            self.trial_reports[p.id] = outcome.report
            p.trial = TrialSummary.of(outcome.report, outcome.comparison)
        if p.state == TRIAL:
            p.move(TRIAL_DONE)
            self._emit_proposal(p)

    def _interim(self, p: Proposal, trial: TrialSummary) -> None:
        p.trial = trial
        self._emit_proposal(p)

    def _checked_input(self, p: Proposal) -> tuple[str, str | None]:
        """What the loop checks for ``p``: its text as the kernel, or for a hand-edited stage the kernel
        file as it is, built from the override folder that holds the text."""
        if p.override:
            return self.target.read(), p.override["folder"]
        return p.new_source, None

    async def _cancel_trial(self, p: Proposal, why: str) -> None:
        task = self._trial_tasks.get(p.id)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})
            p.trial = TrialSummary.stopped(f"trial cancelled: {why}")

    def _end(self, p: Proposal, state: str, decision: Decision) -> None:
        decision.setdefault("proposal", p.id)
        decision.setdefault("file", p.file)
        decision.setdefault("at", time.time())
        p.decision = decision
        p.move(state)
        self._emit_proposal(p)
        if state == STALE:
            self.pending_notes.append(prompts.decision_note(decision))

    def proposal_summary(self, p: Proposal) -> str:
        trial = p.trial.headline if p.trial else "no trial"
        return (f"{p.id} · {len(p.hunks)} hunk(s) +{sum(h.added for h in p.hunks)} "
                f"−{sum(h.removed for h in p.hunks)} · trial: {trial}")

    def proposal_tool_text(self, p: Proposal) -> str:
        lines = [f"proposal {p.id} on {p.file}: {len(p.hunks)} hunk(s), +{sum(h.added for h in p.hunks)} "
                 f"−{sum(h.removed for h in p.hunks)} lines. State: {p.state}."]
        report = self.trial_reports.get(p.id)
        if report is not None:
            lines.append(self.feedback(report, "trial on a scratch copy (the kernel file is unchanged)", p.new_source))
            if p.trial and p.trial.comparison and p.trial.comparison.feedback():
                lines.append(p.trial.comparison.feedback())
        elif p.trial:
            lines.append(p.trial.text())
        if p.origin == "auto":
            lines.append(f"Auto mode decides after this turn: {self.keep_rule or 'kept only if it is correct and faster than the kept version'}.")
        elif p.is_open:
            lines.append("The person decides now (accept, reject or redirect). Say in a sentence what the trial "
                         "showed and stop.")
        else:
            lines.append(f"It was already decided: {p.state}.")
        return "\n".join(lines)

    async def decide(self, proposal_id: str, action: str, reason: str = "", hunks: list[int] | None = None,
                     edited_source: str | None = None, respond: bool | None = None, by: str = "person") -> Proposal:
        """The person's decision on an open proposal.

        ``action``: ``accept`` (all hunks, or only ``hunks``), ``reject`` (with an optional reason;
        with ``hunks`` it rejects only those and accepts the rest), ``redirect`` (``reason`` is the
        feedback), ``edit`` (accept ``edited_source``, the person's edit of the proposal). The
        decision goes back to the agent as a structured note; ``respond`` (default: for redirect, and
        for reject with a reason) runs the agent's next turn straight away.
        """
        if action not in ACTIONS:
            raise ProposalError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        p = self.book.get(proposal_id)
        if not p.is_open:
            raise ProposalError(f"proposal {p.id} is already {p.state}")
        all_hunks = set(range(len(p.hunks)))
        if action == "reject" and hunks and set(hunks) != all_hunks:
            action, hunks = "accept", sorted(all_hunks - set(hunks))
        if hunks is not None:
            bad = set(hunks) - all_hunks
            if bad:
                raise ProposalError(f"proposal {p.id} has hunks 0-{len(p.hunks) - 1}; there is no hunk {min(bad)}")
            if not hunks:
                raise ProposalError("accepting no hunks is a rejection: use action 'reject'")
        if action == "edit" and edited_source is None:
            raise ProposalError("action 'edit' needs the edited text (edited_source)")
        await self._cancel_trial(p, f"the person decided ({action}) before it finished")
        decision: Decision = {"proposal": p.id, "file": p.file, "by": by}
        decision["trial"] = {"ok": p.trial.ok, "headline": p.trial.headline} if p.trial else {"ok": None, "headline": None}
        if action in ("accept", "edit"):
            current = self.target.read()
            if source_hash(current) != p.base_hash:
                decision.update({"decision": "stale", "reason": f"{p.file} changed after the proposal was made "
                                                                f"(now {source_hash(current)}); nothing was applied"})
                self._end(p, STALE, decision)
                return p
            if action == "edit":
                assert edited_source is not None
                new = edited_source
                decision.update({"decision": "accepted_with_edits", "edited": True,
                                 "person_edits": unified_diff(p.new_source, new, p.file) or None,
                                 "applied_hunks": sorted(all_hunks), "rejected_hunks": []})
            elif hunks is not None and set(hunks) != all_hunks:
                try:
                    new = apply_hunk_subset(p.base_source, p.new_source, set(hunks))
                except DiffError as exc:
                    raise ProposalError(str(exc)) from exc
                decision.update({"decision": "partially_accepted", "applied_hunks": sorted(hunks),
                                 "rejected_hunks": sorted(all_hunks - set(hunks))})
            else:
                new = p.new_source
                decision.update({"decision": "accepted", "applied_hunks": sorted(all_hunks), "rejected_hunks": []})
            if reason:
                decision["reason"] = reason
            if p.override:  # the text goes to its override folder; the kernel file stays as it is
                accept_override(self.task, p, new, decision)
            else:
                self._apply(p, new)
            decision["applied_hash"] = source_hash(new)
            if new != p.new_source:
                # Not the trial's text: the record keeps what was written and its diff, and the run
                # below (verify_applied) gives it a verdict of its own.
                p.applied_source = new
                decision["written_diff"] = unified_diff(p.base_source, new, p.file)
            if new == p.new_source and not p.override:
                self._seen_hash = source_hash(new)
            self._end(p, ACCEPTED, decision)
            for other in (self.book.open_on_kernel(p.file) if not p.override else []):
                await self._cancel_trial(other, f"{p.id} was accepted")
                self._end(other, STALE, {"decision": "stale", "by": "file",
                                         "reason": f"{p.id} was accepted, so {other.id}'s base is gone"})
            verified = await self._after_apply(p, new)
            if verified is not None:
                decision["verified_after_apply"] = verified
                self._emit_proposal(p)  # the card and the record get the written text's verdict
            self.pending_notes.append(prompts.decision_note(decision))
            if respond:
                await self.run_turn(None)
            return p
        if action == "reject":
            decision.update({"decision": "rejected", "reason": reason or None, "applied_hunks": [],
                             "rejected_hunks": sorted(all_hunks)})
            self._end(p, REJECTED, decision)
            respond = bool(reason) if respond is None else respond
        else:
            decision.update({"decision": "redirected", "feedback": reason or None, "applied_hunks": [],
                             "rejected_hunks": sorted(all_hunks)})
            self._end(p, REDIRECTED, decision)
            respond = True if respond is None else respond
        self.pending_notes.append(prompts.decision_note(decision))
        if respond:
            await self.run_turn(None)
        return p

    def _apply(self, p: Proposal, new: str) -> Checkpoint:
        before = self.target.read()
        self.target.write(new)
        return self.checkpoints.push(p.id, p.file, before, new, f"{p.id}: {p.rationale[:80]}")

    async def _after_apply(self, p: Proposal, new: str) -> VerifiedVerdict | None:
        """Put the applied version in the history: the trial's results when it checked this exact text."""
        report = self.trial_reports.get(p.id)
        source, folder = self._checked_input(p) if p.override else (new, None)
        written = written_of(p.to_dict(), p.id)
        author = written.author if written is not None else f"agent {p.id}"
        if report is not None and new == p.new_source and not report.cancelled:
            if not p.override:  # a hand-edited build is a version of its own, not the kernel file's
                self.latest = report
            if not self.record_trials:  # auto mode recorded it already
                await self._record(source, report, RunOptions(kernel_source=source, origin="proposal", record=True,
                                                              override_folder=folder, author=author))
            return None
        if not self.verify_applied:
            return None
        report = await self.verify_source(source, origin="proposal", record=True, override_folder=folder,
                                          author=author)
        if not p.override:
            self.latest = report
        summary = TrialSummary.of(report)
        return {"ok": report.ok, "correct": summary.correct, "headline": summary.headline}

    async def undo(self) -> Checkpoint | None:
        """Restore the kernel to the checkpoint before the last applied edit."""
        cp = self.checkpoints.peek()
        if cp is None:
            self.emit(Notice(level="info", message="nothing to undo", source="agent"))
            return None
        current = self.target.read()
        kept = ""
        if source_hash(current) != cp.after_hash:
            digest = self.checkpoints.keep_text(current)
            kept = (f"; your edits made after it are saved in {self.checkpoints.text_path(digest)}"
                    if self.checkpoints.persist else "")
        restored = self.checkpoints.text(cp.before_hash)
        self.target.write(restored)
        self.checkpoints.pop()
        self.latest = None
        p = self.book.proposals.get(cp.proposal_id or "")
        if p is not None and p.state == ACCEPTED:
            p.move(UNDONE)
            self._emit_proposal(p)
        self.pending_notes.append(prompts.decision_note({
            "proposal": cp.proposal_id, "file": cp.file, "decision": "undone", "by": "person",
            "restored_hash": cp.before_hash, "reason": "the person undid this change"}))
        self.emit(Notice(level="info", source="agent",
                         message=f"undo: {cp.file} restored to {cp.before_hash} (before {cp.label}){kept}"))
        return cp

    # -- auto mode --------------------------------------------------------------------------------

    async def run_auto(self, goal: str, limits: Any) -> Any:
        """Iterate by itself: propose → verify → keep if correct and faster. See core.agent.auto."""
        from kerneltui.core.agent.auto import AutoPilot

        pilot = AutoPilot(self, goal, limits)
        self._auto_task = asyncio.create_task(pilot.run())
        try:
            await asyncio.wait({self._auto_task})
        except asyncio.CancelledError:
            self._auto_task.cancel()
            await asyncio.wait({self._auto_task})
            raise
        if self._auto_task.cancelled():
            return pilot.finish("interrupted by the person")
        return self._auto_task.result()
