"""The result of one rung: what every rung returns, what the UI shows and the history stores."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict, cast

RungStatus = Literal["ok", "warn", "fail", "skip"]
PASSING: frozenset[str] = frozenset({"ok", "warn"})


@dataclass(frozen=True)
class SourceLocation:
    """A place in a task file, for the editor to jump to (1-based line and column)."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class SourceLocationData(TypedDict):
    file: str
    line: int
    column: int


class RungResultData(TypedDict):
    """``RungResult.to_dict()``: the result as JSON (sessions, the engine's replies, events)."""

    name: str
    status: RungStatus
    summary: str
    metrics: Mapping[str, object]
    error: str | None
    details: str
    duration_s: float
    location: SourceLocationData | None


@dataclass(frozen=True)
class RungResult:
    """Outcome of one rung.

    ``summary`` is the one-line headline (``26 regs · 0 spills``), ``metrics`` the numbers behind it
    (JSON types only; each rung's keys are typed in ``rung_metrics``, read them through its view), ``error`` the failure text a person can act on, ``details`` the full output
    (worker stdout/stderr, tables) shown when the row is selected.
    """

    name: str
    status: RungStatus
    summary: str = ""
    metrics: Mapping[str, object] = field(default_factory=dict)
    error: str | None = None
    details: str = ""
    duration_s: float = 0.0
    location: SourceLocation | None = None

    @property
    def passed(self) -> bool:
        return self.status in PASSING

    def to_dict(self) -> RungResultData:
        # A cast: asdict gives this dataclass's fields (and SourceLocation's), as RungResultData lists them.
        return cast(RungResultData, asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RungResult:
        loc = data.get("location")
        if isinstance(loc, dict):
            loc = SourceLocation(**{k: v for k, v in loc.items() if k != "__type__"})
        return cls(
            name=data["name"],
            status=data["status"],
            summary=data.get("summary", ""),
            metrics=dict(data.get("metrics") or {}),
            error=data.get("error"),
            details=data.get("details", ""),
            duration_s=float(data.get("duration_s", 0.0)),
            location=loc,
        )

    def line(self) -> str:
        """The text form of the seed's rung pattern: ``[name] ok  key=value …``."""
        if self.status == "fail":
            return f"[{self.name}] FAILED  {self.error or self.summary}"
        if self.status == "skip":
            return f"[{self.name}] skipped  {self.summary}"
        head = f"[{self.name}] {self.status}"
        return f"{head}  {self.summary}" if self.summary else head


def ok(name: str, summary: str = "", **kw: Any) -> RungResult:
    return RungResult(name=name, status="ok", summary=summary, **kw)


def warn(name: str, summary: str, **kw: Any) -> RungResult:
    return RungResult(name=name, status="warn", summary=summary, **kw)


def fail(name: str, error: str, **kw: Any) -> RungResult:
    return RungResult(name=name, status="fail", error=error, summary=kw.pop("summary", error.splitlines()[0] if error else ""), **kw)


def skip(name: str, reason: str, **kw: Any) -> RungResult:
    return RungResult(name=name, status="skip", summary=reason, **kw)
