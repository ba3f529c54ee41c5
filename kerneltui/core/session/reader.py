"""Loading a session log, tolerantly: a log cut short by a crash loads up to its last complete line.

The loader reads the file once, splits it into lines and decodes each record. The only damage a
crash can do (``SessionLog`` writes whole lines, flushed) is a last line without its newline; that
line is dropped and reported (``lost_bytes``). Any other damaged line is reported in ``problems``
with its number and skipped, so the rest of the session still opens.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, overload

from kerneltui.core.events import Event, Notice, event_from_dict, event_types
from kerneltui.core.session.record import (
    CONTEXT,
    EVENT,
    HEADER,
    LOG_NAME,
    RESUMED,
    SCHEMA_VERSION,
    SOURCE,
    TASK_DIR,
    SessionError,
    SessionTask,
)


class EventList(Sequence[Event]):
    """The session's events, decoded into dataclasses when first read.

    Opening a large session reads every line as JSON but builds event objects only for what is
    shown (the timeline indexes the raw records); that keeps a 10,000-event session quick to open.
    """

    def __init__(self, raw: list[dict[str, Any]], where: list[int], log_name: str) -> None:
        self.raw = raw
        self._where = where  # line number of each event, for messages about a damaged one
        self._log_name = log_name
        self._cache: list[Event | None] = [None] * len(raw)

    def __len__(self) -> int:
        return len(self.raw)

    def _decode(self, index: int) -> Event:
        event = self._cache[index]
        if event is None:
            try:
                event = event_from_dict(self.raw[index])
            except (ValueError, TypeError, KeyError) as exc:
                # Replay goes on; the pane that shows the event says what was wrong with it.
                event = Notice(level="warning", source="replay",
                               message=f"{self._log_name}:{self._where[index]}: a damaged event was skipped ({exc})")
            self._cache[index] = event
        return event

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [self._decode(i) for i in range(*index.indices(len(self.raw)))]
        if index < 0:
            index += len(self.raw)
        if not 0 <= index < len(self.raw):
            raise IndexError(index)
        return self._decode(index)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self.raw)):
            yield self._decode(i)


@dataclass
class LoadedSession:
    folder: Path
    header: dict[str, Any]
    events: EventList = field(default_factory=lambda: EventList([], [], ""))
    sources: dict[str, str] = field(default_factory=dict)  # hash -> file relative to the folder
    start_hash: str = ""  # the kernel as it was when the session started
    contexts: list[str] = field(default_factory=list)  # the agent's conversation after each turn
    resumed: list[dict[str, Any]] = field(default_factory=list)
    last_seq: int = -1
    good_bytes: int = 0  # the log's length up to its last complete line
    lost_bytes: int = 0  # what a crash cut off (a partial last line), 0 when the log is whole
    problems: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.header.get("id") or self.folder.name)

    @property
    def task(self) -> SessionTask:
        # A cast: the header's task is task_record's, read back from JSON (older sessions may lack keys).
        return cast(SessionTask, dict(self.header.get("task") or {}))

    @property
    def task_dir(self) -> Path:
        """The copy of the task's files taken when the session started."""
        return self.folder / TASK_DIR

    def source(self, digest: str) -> str | None:
        rel = self.sources.get(digest)
        if rel is None:
            return None
        try:
            return (self.folder / rel).read_text(encoding="utf-8")
        except OSError:
            return None

    def damaged_note(self) -> str:
        """One line on the damaged records skipped (how many, at which lines), or "" when there were none."""
        skipped = [p.split(": ", 1)[0] for p in self.problems if "skipped a damaged record" in p]
        if not skipped:
            return ""
        lines = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        plural = "s" if len(skipped) != 1 else ""
        return f"{self.folder.name}: skipped {len(skipped)} damaged record{plural} ({lines}); loaded the rest"

    def lost_note(self) -> str:
        """One line on what a crash cost, or "" when nothing was lost."""
        if not self.lost_bytes:
            return ""
        return (f"{self.folder.name}: the log ends in a partial line ({self.lost_bytes} bytes, written when the "
                f"session stopped abruptly); loaded everything before it ({len(self.events)} events)")


def session_log_path(path: Path) -> Path:
    """A session folder or its log file -> the log file."""
    path = Path(path)
    return path / LOG_NAME if path.is_dir() else path


def load_session(path: Path | str) -> LoadedSession:
    log = session_log_path(Path(path))
    folder = log.parent
    try:
        data = log.read_bytes()
    except FileNotFoundError as exc:
        raise SessionError(f"{log}: no such session log (list sessions with `kerneltui sessions`)") from exc
    except OSError as exc:
        raise SessionError(f"{log}: cannot read it: {exc.strerror}") from exc
    good = data.rfind(b"\n") + 1
    lost = len(data) - good
    lines = data[:good].split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    if not lines:
        if lost:
            raise SessionError(f"{log}: the session was cut off before its first record was complete; nothing to load")
        raise SessionError(f"{log}: empty log: not a session")
    try:
        header = json.loads(lines[0])
    except ValueError as exc:
        raise SessionError(f"{log}:1: not a session log (the first line is not JSON: {exc})") from exc
    if not isinstance(header, dict) or header.get("r") != HEADER:
        raise SessionError(f"{log}:1: not a session log (no session header); open session folders written by kerneltui")
    schema = header.get("schema")
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise SessionError(f"{log}: written by a newer kerneltui (session schema {schema}, this one reads up to "
                           f"{SCHEMA_VERSION}); upgrade kerneltui to open it")
    session = LoadedSession(folder=folder, header=header, good_bytes=good, lost_bytes=lost)
    raw_events: list[dict[str, Any]] = []
    where: list[int] = []
    known = event_types()
    for number, raw in enumerate(lines[1:], 2):
        try:
            record = json.loads(raw)
            kind = record["r"]
            if kind == EVENT:
                data = record["event"]
                if not isinstance(data, dict) or data.get("type") not in known:
                    raise ValueError(f"unknown event type {data.get('type') if isinstance(data, dict) else data!r}")
                raw_events.append(data)
                where.append(number)
                session.last_seq = int(record.get("seq", session.last_seq + 1))
            elif kind == SOURCE:
                session.sources[str(record["hash"])] = str(record["file"])
                if record.get("why") == "start" and not session.start_hash:
                    session.start_hash = str(record["hash"])
            elif kind == CONTEXT:
                session.contexts.append(str(record["messages"]))
            elif kind == RESUMED:
                session.resumed.append(record)
            # Other kinds come from a newer kerneltui of the same schema: skipped on purpose.
        except (ValueError, TypeError, KeyError) as exc:
            session.problems.append(f"{log.name}:{number}: skipped a damaged record ({type(exc).__name__}: {exc})")
    session.events = EventList(raw_events, where, log.name)
    return session
