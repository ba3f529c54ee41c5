"""Plain dataclass events shared by the loop, the agent, the watcher, the session log and the UI.

Events flow one way: producers call an ``emit`` callback with an event; the session log writes every
event as one JSON line; the UI turns events into Textual messages. Replay feeds a saved stream back
through the same path, so every event must round-trip through :func:`event_to_dict` /
:func:`event_from_dict` unchanged.

Add a new event type by subclassing :class:`Event` with ``@register_event``; its fields must be JSON
types, other registered dataclasses (see ``_NESTED``), or lists/dicts of those.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from kerneltui.core.rungs.result import RungResult, SourceLocation
from kerneltui.core.worker.contract.replies import DeviceInfo

_EVENT_TYPES: dict[str, type[Event]] = {}
# Dataclasses that may appear as event fields; serialised with a "__type__" tag.
_NESTED: dict[str, type] = {"RungResult": RungResult, "SourceLocation": SourceLocation}

E = TypeVar("E", bound="type[Event]")


def register_event(cls: E) -> E:
    kind = cls.__name__
    if kind in _EVENT_TYPES and _EVENT_TYPES[kind] is not cls:
        raise ValueError(f"event type {kind} registered twice")
    _EVENT_TYPES[kind] = cls
    return cls


def register_nested(cls: type) -> type:
    """Let instances of a dataclass appear inside events (e.g. a Proposal in ProposalMade)."""
    _NESTED[cls.__name__] = cls
    return cls


@dataclass(frozen=True)
class Event:
    """Base of every event. ``at`` is a wall-clock timestamp (seconds since the epoch)."""

    at: float = field(default_factory=time.time, kw_only=True)
    type_name: ClassVar[str] = "Event"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.type_name = cls.__name__


Emit = Callable[[Event], None]


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if name not in _NESTED and not isinstance(value, Event):
            raise TypeError(f"{name} is not registered for use inside events")
        data = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        data["__type__"] = name
        return data
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "__type__" in value:
            name = value["__type__"]
            cls = _NESTED.get(name) or _EVENT_TYPES.get(name)
            if cls is None:
                raise ValueError(f"unknown nested type {name!r}")
            kwargs = {k: _decode(v) for k, v in value.items() if k != "__type__"}
            return _construct(cls, kwargs)
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _construct(cls: type, kwargs: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    # Unknown keys come from newer writers; dropping them keeps old readers working.
    known = {k: v for k, v in kwargs.items() if k in names}
    from_dict = getattr(cls, "from_dict", None)
    if from_dict is not None:
        return from_dict(known)
    return cls(**known)


def event_to_dict(event: Event) -> dict[str, Any]:
    data = {f.name: _encode(getattr(event, f.name)) for f in dataclasses.fields(event)}
    data["type"] = event.type_name
    return data


def event_from_dict(data: dict[str, Any]) -> Event:
    kind = data.get("type")
    cls = _EVENT_TYPES.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    kwargs = {k: _decode(v) for k, v in data.items() if k != "type"}
    return _construct(cls, kwargs)


def event_types() -> dict[str, type[Event]]:
    return dict(_EVENT_TYPES)


# ----------------------------------------------------------------------------------------------
# The verification loop
# ----------------------------------------------------------------------------------------------


@register_event
@dataclass(frozen=True)
class RunStarted(Event):
    run_id: str
    task: str
    kernel_file: str
    source_hash: str
    rungs: list[str]
    origin: str = "manual"  # "manual" | "save" | "proposal" | "auto" | "verify"


@register_event
@dataclass(frozen=True)
class RungStarted(Event):
    run_id: str
    rung: str


@register_event
@dataclass(frozen=True)
class RungProgress(Event):
    run_id: str
    rung: str
    message: str
    fraction: float | None = None


@register_event
@dataclass(frozen=True)
class BenchmarkProvisional(Event):
    """An early number while the benchmark still runs; the rung's result replaces it."""

    run_id: str
    case: str  # the benchmark case's label
    kernel_ms: float  # median of the timed calls so far
    runs: int
    speedup_vs_reference: float | None = None  # against the reference's median on that case

    def describe(self) -> str:
        speed = f"{self.speedup_vs_reference:.2f}x" if self.speedup_vs_reference else f"{self.kernel_ms * 1e3:.1f} µs"
        return f"provisional {speed} (n={self.runs}, {self.case})"


@register_event
@dataclass(frozen=True)
class RungFinished(Event):
    run_id: str
    result: RungResult


@register_event
@dataclass(frozen=True)
class VerdictReached(Event):
    """PASS or FAIL as soon as the rungs that decide it have ended (``core.verdict``), before the rungs
    that only describe the version (the dump, a profile, a trace), which stream in after it.

    While the checks have passed and a timed rung that can still fail the kernel (the benchmark's
    recheck and side-work check, the roofline's floor) has yet to end on a GPU, the verdict is not
    final (``undecided`` names those rungs); a second, final VerdictReached follows when they have
    ended. A FAIL is final at once."""

    run_id: str
    ok: bool
    failed_rung: str = ""  # the first rung that failed ("" when ok)
    undecided: list[str] = field(default_factory=list)  # rungs still to end that can still fail it
    pending: list[str] = field(default_factory=list)  # every rung of the run still to end, in order
    after_s: float = 0.0  # seconds from the run's start

    @property
    def final(self) -> bool:
        return not self.undecided

    def describe(self) -> str:
        """The verdict as ``check`` prints it, e.g. ``PASS · 1.9 s (dump still to come)``."""
        head = "PASS" if self.ok else f"FAIL ({self.failed_rung} failed)" if self.failed_rung else "FAIL"
        if not self.final:
            head += f" so far (the checks; {', '.join(self.undecided)} may still fail it)"
        rest = f" ({', '.join(self.pending)} still to come)" if self.pending else ""
        return f"{head} · {self.after_s:.1f} s{rest}"


@register_event
@dataclass(frozen=True)
class RunFinished(Event):
    run_id: str
    ok: bool
    results: list[RungResult]
    duration_s: float
    cancelled: bool = False
    version_id: str | None = None
    device: DeviceInfo = field(default_factory=lambda: DeviceInfo())
    cancel_reason: str = ""  # why a cancelled run was: "overtaken by a newer save", "stopped" (core.scheduler)
    environment: str = ""  # a fault of the machine stopped the run: what to do (core.environment_fault)


@register_event
@dataclass(frozen=True)
class FileChanged(Event):
    """A file of the task changed on disk (a save in any editor)."""

    path: str
    source_hash: str


@register_event
@dataclass(frozen=True)
class Notice(Event):
    """Something a person should read: level is "info", "warning" or "error"."""

    level: str
    message: str
    source: str = "kerneltui"


@register_event
@dataclass(frozen=True)
class EditsKept(Event):
    """Unsaved edits of ``file`` written to ``path`` (``reason``: "SIGHUP" or "SIGTERM" as the app closed,
    "a failed save"); a resume of the session puts them back in the editor, unsaved, when nothing
    changed the kernel after them."""

    file: str
    path: str
    reason: str


# ----------------------------------------------------------------------------------------------
# The agent (produced by core.agent, rendered by the chat pane, written by the session log)
# ----------------------------------------------------------------------------------------------


@register_event
@dataclass(frozen=True)
class UserMessage(Event):
    text: str


@register_event
@dataclass(frozen=True)
class AgentTextDelta(Event):
    """A streamed piece of the agent's reply (``turn_id`` groups one reply)."""

    turn_id: str
    text: str


@register_event
@dataclass(frozen=True)
class AgentMessage(Event):
    """The agent's complete reply text for one turn (after its deltas)."""

    turn_id: str
    text: str
    provider: str = ""
    model: str = ""


@register_event
@dataclass(frozen=True)
class ToolCallStarted(Event):
    turn_id: str
    call_id: str
    name: str
    summary: str  # one line: "search_context('wgmma layout')"
    # The model's arguments as it wrote them: free-form JSON, checked by the tool, not here.
    arguments: dict[str, object] = field(default_factory=dict)


@register_event
@dataclass(frozen=True)
class ToolCallFinished(Event):
    turn_id: str
    call_id: str
    name: str
    ok: bool
    summary: str  # one line: "12 hits in context/" or the error
    output: str = ""  # what the agent saw (may be long; the chat shows it collapsed)
    duration_s: float = 0.0


@register_event
@dataclass(frozen=True)
class ProposalEvent(Event):
    """A proposal was made or changed state.

    ``state`` is one of pending, trial, trial_done, accepted, rejected, redirected, stale,
    superseded, undone; ``proposal`` carries the full proposal as a dict (id, rationale, kind,
    new_source or diff, hunks, trial results, decision reason).
    """

    proposal_id: str
    state: str
    proposal: dict[str, Any] = field(default_factory=dict)


@register_event
@dataclass(frozen=True)
class TokenUsage(Event):
    turn_id: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None  # None when the model has no price in the table
    session_input_tokens: int = 0
    session_output_tokens: int = 0
    session_cost_usd: float | None = None
    cache_read_tokens: int = 0  # part of input_tokens served from the provider's prompt cache
    cache_write_tokens: int = 0  # part of input_tokens written to it
    reported: bool = True  # False: the server sent no usage; the counts are unknown, not zero


@register_event
@dataclass(frozen=True)
class AgentError(Event):
    """A provider or tool failure the person must see (no key, 401, 429, network)."""

    turn_id: str
    kind: str  # "no_key", "auth", "rate_limit", "network", "refused", "provider", "tool"
    message: str
