"""What the parts around the chat use of it: the model's tools, a proposal's trial, auto mode.

``AgentChat`` (``core.agent.chat``) is the one implementation; it imports those parts, and they read
it through these ports, so none of them imports the chat (tests/unit/test_import_cycles.py). Each port
names only what its part uses: a member added here is a dependency added on the chat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kerneltui.core.agent.budget import BudgetCheck
    from kerneltui.core.agent.checkpoints import KernelTarget
    from kerneltui.core.agent.conversation import Message
    from kerneltui.core.agent.prices import CostMeter
    from kerneltui.core.agent.proposals import OverrideTarget, Proposal, ProposalBook
    from kerneltui.core.agent.providers.base import Provider
    from kerneltui.core.agent.search import ContextIndex, Hit
    from kerneltui.core.agent.turn_result import TurnResult
    from kerneltui.core.agent.workspace import Workspace
    from kerneltui.core.events import Event
    from kerneltui.core.loop import RunReport
    from kerneltui.core.task import Task
    from kerneltui.core.worker.parent.pool import WorkerPool


class Verifier(Protocol):
    """The task, its kernel file as it is now, and the loop on any text of it."""

    @property
    def task(self) -> Task: ...

    @property
    def target(self) -> KernelTarget: ...

    async def verify_source(self, source: str, origin: str, record: bool, rungs: list[str] | None = ...,
                            override_folder: str | None = ..., author: str = ...) -> RunReport: ...


class ToolHost(Verifier, Protocol):
    """What the model's tools use (``core.agent.tools``, ``core.agent.override_proposals``)."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def index(self) -> ContextIndex: ...

    def note_file_read(self, path: str) -> None: ...

    async def search_context(self, query: str, limit: int, under: str | None) -> tuple[list[Hit], str]: ...

    async def latest_report(self) -> tuple[RunReport, bool]: ...

    def feedback(self, report: RunReport, label: str, candidate: str) -> str: ...

    def version_text(self, prefix: str) -> tuple[str, str, str] | None: ...

    async def make_proposal(self, base: str, new: str, kind: str, rationale: str, turn_id: str, call_id: str,
                            submitted_diff: str = ..., override: OverrideTarget | None = ...) -> Proposal: ...

    def proposal_summary(self, p: Proposal) -> str: ...

    def proposal_tool_text(self, p: Proposal) -> str: ...


class TrialHost(Verifier, Protocol):
    """What a proposal's trial uses (``core.agent.trial_compare``): the pool and loop it runs on, the
    latest run of the file on disk, and whether trials are recorded."""

    @property
    def pool(self) -> WorkerPool: ...

    @property
    def loop(self) -> object: ...  # a Loop, or the engine's loop when the front end routes trials there

    @property
    def latest(self) -> RunReport | None: ...

    @property
    def record_trials(self) -> bool: ...

    def emit(self, event: Event) -> None: ...


class AutoHost(Verifier, Protocol):
    """What auto mode uses (``core.agent.auto``): it reads the spending, the conversation and the
    proposals, sets how proposals are made and judged while it runs, and drives turns and decisions."""

    origin: str
    record_trials: bool
    budget_guard: Callable[[int], BudgetCheck] | None
    keep_rule: str
    latest: RunReport | None

    @property
    def meter(self) -> CostMeter: ...

    @property
    def provider(self) -> Provider: ...

    @property
    def messages(self) -> list[Message]: ...

    @property
    def book(self) -> ProposalBook: ...

    @property
    def trial_reports(self) -> dict[str, RunReport]: ...

    @property
    def prompt_kernel_hash(self) -> str: ...

    def emit(self, event: Event) -> None: ...

    async def run_turn(self, text: str | None) -> TurnResult: ...

    async def decide(self, proposal_id: str, action: str, reason: str = ..., *, respond: bool | None = ...,
                     by: str = ...) -> Proposal: ...
