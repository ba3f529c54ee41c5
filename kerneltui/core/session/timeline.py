"""The replay cursor: a loaded session's events as steps, its versions, and what to feed for any step.

Step ``k`` means "the first ``k`` events have happened". Going forward one step feeds one event;
going back or jumping rebuilds the panes from a plan (:meth:`Timeline.plan`) that is a subset of
``events[:k]`` in order: every chat event (without the streamed pieces of replies that completed),
every event of the run on screen at ``k`` (from its ``RunStarted``), and nothing else, since the
panes show only the latest run. The kernel text and the chart come from per-step indexes built in
one pass (:meth:`kernel_hash_at`, :meth:`versions_until`), so any step is reached without
replaying the whole stream through the widgets.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from kerneltui.core import events as ev
from kerneltui.core.agent.written import Written, written_of
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import BenchmarkMetrics, benchmark_metrics
from kerneltui.core.session.reader import LoadedSession
from kerneltui.core.worker.contract.replies import DeviceInfo

TRIAL_ORIGINS = frozenset({"proposal", "auto"})
CHAT_TYPES = (ev.UserMessage, ev.AgentTextDelta, ev.AgentMessage, ev.ToolCallStarted, ev.ToolCallFinished,
              ev.ProposalEvent, ev.TokenUsage, ev.AgentError)
CHAT_NAMES = frozenset(t.__name__ for t in CHAT_TYPES) - {"TokenUsage"}  # token counts go to the status line


@dataclass
class Version:
    """One kernel version the session checked (numbered in order of its first finished run)."""

    number: int
    source_hash: str
    step: int  # the step just after its first finished run (jump target)
    origin: str
    ok: bool
    results: list[RungResult] = field(default_factory=list)
    device: DeviceInfo = field(default_factory=lambda: DeviceInfo())
    accepted: bool = False  # kept by the person (a passing save or run of the file, an accepted proposal)
    finished_at: float = 0.0

    def benchmark(self) -> BenchmarkMetrics:
        """The first passing benchmark's metrics; none (empty) when it did not pass."""
        for r in self.results:
            if r.name == "benchmark" and r.status in ("ok", "warn"):
                return benchmark_metrics(r)
        return {}

    @property
    def correct(self) -> bool | None:
        """Correctness verdict: True/False when the rung ran, None when it was skipped or absent."""
        for r in self.results:
            if r.name == "correctness":
                return None if r.status == "skip" else r.status != "fail"
        return None

    @property
    def median_ms(self) -> float | None:
        value = self.benchmark().get("median_ms")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def speedup(self) -> float | None:
        value = self.benchmark().get("speedup_vs_reference")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def rel_noise(self) -> float | None:
        """The relative standard error of the median's run (the timing noise), when known."""
        bench = self.benchmark()
        se, mean = bench.get("stderr_ms"), bench.get("mean_ms")
        if isinstance(se, (int, float)) and isinstance(mean, (int, float)) and mean > 0:
            return float(se) / float(mean)
        return None


def applied_hash(proposal: object) -> str:
    """The hash of the text an accepted proposal wrote: the decision's (some hunks, the person's edit),
    else the proposal's own (sessions recorded before decisions said what they wrote)."""
    if not isinstance(proposal, dict):
        return ""
    decision = proposal.get("decision") or {}
    written = decision.get("applied_hash") if isinstance(decision, dict) else None
    return str(written or proposal.get("new_hash") or "")


class Timeline:
    def __init__(self, session: LoadedSession) -> None:
        self.session = session
        self.events = session.events
        self.versions: list[Version] = []
        self._version_of: dict[str, Version] = {}
        self._version_steps: list[int] = []  # Version.step, ascending
        self._kernel_steps: list[int] = []  # steps where the kernel on disk changed
        self._kernel_hashes: list[str] = []
        self._run_starts: list[int] = []  # event indexes of RunStarted
        self._trial_runs: set[str] = set()  # run ids of trials (a proposal's text on a scratch copy)
        self._chat_index: list[int] = []  # event indexes of chat events
        self._turn_done: dict[str, int] = {}  # turn id -> index of its AgentMessage
        self._usage_index: list[int] = []  # event indexes of TokenUsage
        self.written: dict[str, Written] = {}  # kernel hash -> the accepted proposal that wrote it
        self._build()

    def __len__(self) -> int:
        return len(self.events)

    def _build(self) -> None:
        # One pass over the raw records (see reader.EventList): only RunFinished events are decoded here.
        origins: dict[str, tuple[str, str]] = {}
        kernel_name = str(self.session.task.get("kernel_file") or "").split("/")[-1]
        start = self.session.start_hash
        if start:
            self._kernel_steps.append(0)
            self._kernel_hashes.append(start)

        def kernel_changed(step: int, digest: str) -> None:
            if digest and (not self._kernel_hashes or self._kernel_hashes[-1] != digest):
                self._kernel_steps.append(step)
                self._kernel_hashes.append(digest)

        accepted_hashes: set[str] = set()
        for i, raw in enumerate(self.session.events.raw):
            kind = raw.get("type")
            if kind == "RunStarted":
                origin, digest = str(raw.get("origin", "manual")), str(raw.get("source_hash", ""))
                origins[str(raw.get("run_id"))] = (origin, digest)
                if origin not in TRIAL_ORIGINS:  # a trial is its proposal's, never "the run on screen"
                    self._run_starts.append(i)
                    kernel_changed(i + 1, digest)
                else:
                    self._trial_runs.add(str(raw.get("run_id")))
            elif kind == "RunFinished":
                origin, digest = origins.get(str(raw.get("run_id")), ("manual", ""))
                if raw.get("cancelled") or not digest:
                    continue
                event = self.events[i]
                if not isinstance(event, ev.RunFinished):
                    continue  # a damaged record (the replay shows a notice in its place)
                self._add_run(i, event, origin, digest)
            elif kind == "FileChanged":
                if kernel_name and str(raw.get("path", "")).endswith(kernel_name):
                    kernel_changed(i + 1, str(raw.get("source_hash", "")))
            elif kind == "ProposalEvent" and raw.get("state") == "accepted":
                digest = applied_hash(raw.get("proposal"))
                kernel_changed(i + 1, digest)
                accepted_hashes.add(digest)
                proposal = raw.get("proposal")
                written = written_of(proposal, str(raw.get("proposal_id") or "")) if isinstance(proposal, dict) else None
                if written is not None and digest:
                    self.written[digest] = written  # the latest word on it (its verdict comes after)
            if kind in CHAT_NAMES or (kind == "Notice" and raw.get("source") == "agent"):
                self._chat_index.append(i)
                if kind == "AgentMessage":
                    self._turn_done.setdefault(str(raw.get("turn_id")), i)
            elif kind == "TokenUsage":
                self._usage_index.append(i)
        # An accepted proposal is kept even when its trial's version finished after the decision.
        for digest in accepted_hashes:
            version = self._version_of.get(digest)
            if version is not None:
                version.accepted = True

    def _add_run(self, i: int, event: ev.RunFinished, origin: str, digest: str) -> None:
        version = self._version_of.get(digest)
        if version is None:
            version = Version(number=len(self.versions) + 1, source_hash=digest, step=i + 1, origin=origin,
                              ok=event.ok, results=list(event.results), device=event.device.copy(),
                              finished_at=event.at)
            self.versions.append(version)
            self._version_of[digest] = version
            self._version_steps.append(i + 1)
        elif origin not in TRIAL_ORIGINS or version.origin in TRIAL_ORIGINS:
            # The file's own (latest) run is the version's record; a trial does not override it.
            version.results, version.ok, version.device = list(event.results), event.ok, event.device.copy()
            version.origin, version.finished_at = origin, event.at
        if event.ok and origin not in TRIAL_ORIGINS:
            version.accepted = True

    # -- per-step state ---------------------------------------------------------------------------

    def kernel_hash_at(self, step: int) -> str:
        """The kernel file's version after ``step`` events ("" when the session recorded none)."""
        pos = bisect.bisect_right(self._kernel_steps, step) - 1
        return self._kernel_hashes[pos] if pos >= 0 else ""

    def kernel_text_at(self, step: int) -> str | None:
        digest = self.kernel_hash_at(step)
        return self.session.source(digest) if digest else None

    def versions_until(self, step: int) -> list[Version]:
        """Versions whose first run had finished by ``step``."""
        return self.versions[: bisect.bisect_right(self._version_steps, step)]

    def author(self, version: Version) -> str:
        """Who made ``version``: "agent p4, edited by you", "agent p2", or "" (the person, a run)."""
        written = self.written.get(version.source_hash)
        return written.author if written is not None else ""

    def version(self, number: int) -> Version | None:
        return self.versions[number - 1] if 1 <= number <= len(self.versions) else None

    def version_at(self, step: int) -> Version | None:
        """The version of the latest finished run at ``step``."""
        done = self.versions_until(step)
        return done[-1] if done else None

    def run_start_before(self, step: int) -> int:
        """Index of the last RunStarted of the kernel file (not a trial) among the first ``step`` events,
        -1 if none."""
        pos = bisect.bisect_left(self._run_starts, step) - 1
        return self._run_starts[pos] if pos >= 0 else -1

    def chat_count(self, step: int) -> int:
        """How many chat events happened in the first ``step`` events."""
        return bisect.bisect_left(self._chat_index, step)

    def plan(self, step: int, chat_limit: int | None = None) -> list[ev.Event]:
        """The events to feed into empty panes to show the state at ``step`` (see the module doc).

        ``chat_limit`` keeps only the latest chat events (a long session's chat is rebuilt from its
        tail when jumping; stepping forward from there adds the rest as usual)."""
        step = max(0, min(step, len(self.events)))
        run_start = self.run_start_before(step)
        out: list[ev.Event] = []
        chat_end = bisect.bisect_left(self._chat_index, step)
        chat_begin = max(0, chat_end - chat_limit) if chat_limit is not None else 0
        chat = self._chat_index[chat_begin:chat_end]
        ci = 0
        events = self.events
        # Merge the chat indexes (sorted) with the run's range [run_start, step), in order.
        for i in range(run_start if run_start >= 0 else step, step):
            while ci < len(chat) and chat[ci] < i:
                self._take_chat(chat[ci], step, out)
                ci += 1
            if ci < len(chat) and chat[ci] == i:
                self._take_chat(i, step, out)
                ci += 1
            elif getattr(events[i], "run_id", None) not in self._trial_runs:
                out.append(events[i])  # the file's run; a trial's events after it belong to its card
        while ci < len(chat):
            self._take_chat(chat[ci], step, out)
            ci += 1
        usage = self.token_usage(step)
        if usage is not None:
            out.append(usage)  # the status line's token and cost totals
        return out

    def _take_chat(self, i: int, step: int, out: list[ev.Event]) -> None:
        event = self.events[i]
        if isinstance(event, ev.AgentTextDelta):
            done = self._turn_done.get(event.turn_id)
            if done is not None and done < step:
                return  # the complete reply is fed instead of its pieces
        out.append(event)

    # -- totals -----------------------------------------------------------------------------------

    def token_usage(self, step: int | None = None) -> ev.TokenUsage | None:
        """The last token count (session totals) at ``step`` (default: the end)."""
        end = len(self.events) if step is None else step
        pos = bisect.bisect_left(self._usage_index, end) - 1
        if pos < 0:
            return None
        event = self.events[self._usage_index[pos]]
        return event if isinstance(event, ev.TokenUsage) else None

    def final_hash(self) -> str:
        return self.kernel_hash_at(len(self.events))
