"""The small interfaces the panes are drawn from, so each works with any source of its data.

The agent, the history store, the asm dumps and the profiler are separate parts of kerneltui. The
UI reads them through these shapes only: a real source (``ui.adapters``) in the app, fixed data in
tests and snapshots. Nothing here imports Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kerneltui.core.events import Emit, Event
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.worker.contract.replies import DeviceInfo

# ---------------------------------------------------------------------------------------------
# Agent
# ---------------------------------------------------------------------------------------------


class AgentController(Protocol):
    """What the chat pane drives. Replies come back as agent events through ``emit``."""

    label: str  # shown above the chat: provider and model, or why it is scripted

    @property
    def busy(self) -> bool:
        """A turn (or auto mode) is running: ctrl+c and esc interrupt it."""

    def attach(self, emit: Emit) -> None:
        """Called once by the app with the callback that carries agent events to the UI."""

    def observe(self, event: Event) -> None:
        """Every event the front end records (its own runs, the watcher's saves): the agent's view of
        the latest results and of proposals gone stale."""

    async def send(self, text: str) -> None:
        """The person's message (the controller emits a UserMessage and the reply)."""

    async def decide(self, proposal_id: str, decision: str, feedback: str = "", hunks: list[int] | None = None,
                     edited_source: str | None = None) -> None:
        """``decision`` is "accept" (``hunks``: only these, 0-based; None: all), "edit" (accept
        ``edited_source``, the person's edit of the proposal), "reject" (``feedback``: an optional reason)
        or "redirect" (``feedback`` says where to go instead); the text reaches the model."""

    async def undo(self) -> None:
        """Put the kernel back to the checkpoint before the last accepted edit (and tell the model)."""

    def interrupt(self) -> bool:
        """Stop the turn in flight now; whether anything was running."""

    def conversation(self) -> str | None:
        """The conversation as the model saw it, for the session log (None: nothing to keep)."""

    def restore(self, conversation: str) -> None:
        """Resume: put back a conversation :meth:`conversation` returned."""

    async def close(self) -> None:
        """Stop whatever the agent is doing; called when its task is closed."""


# ---------------------------------------------------------------------------------------------
# Benchmark history
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryPoint:
    """One version's benchmark: the median and its interval, in µs: the spread of its own benchmark
    (the interquartile range), or where it was compared interleaved with the version before it, that
    comparison's 95 % interval (the previous median times the ratio's bounds; ``vs_previous`` says it)."""

    version: str  # short label (source hash prefix)
    median_us: float
    low_us: float
    high_us: float
    current: bool = False
    vs_previous: str = ""  # "3.1 % faster (95 % CI 2.7–3.5 %)": low/high are that comparison's interval


@dataclass(frozen=True)
class HistorySeries:
    points: list[HistoryPoint] = field(default_factory=list)
    baseline_us: float | None = None  # the reference, timed the same way
    floor_us: float | None = None  # the roofline floor: no correct kernel can be faster
    note: str = ""  # why there is nothing to draw (no GPU, no benchmark yet)


class HistorySource(Protocol):
    def record(self, source_hash: str, results: list[RungResult], device: DeviceInfo) -> None:
        """After each run: the version now shown, and whether timing was possible."""

    def load(self) -> HistorySeries: ...


# ---------------------------------------------------------------------------------------------
# Compiler output
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AsmStage:
    """One compiler stage's text and, per line, the kernel-file line it came from (1-based)."""

    name: str  # "TTIR", "TTGIR", "LLIR", "PTX", "SASS", "MLIR"
    text: str
    source_lines: tuple[int | None, ...] = ()  # index: asm line (0-based); value: source line

    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True)
class AsmListing:
    stages: list[AsmStage] = field(default_factory=list)
    note: str = ""  # why there are no stages (no dump yet, disassembler missing …)


class AsmSource(Protocol):
    def load(self, version_dir: Path | None) -> AsmListing: ...


# ---------------------------------------------------------------------------------------------
# Profile (ncu)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


class ProfileSource(Protocol):
    def table(self, result: RungResult) -> ProfileTable | None: ...
