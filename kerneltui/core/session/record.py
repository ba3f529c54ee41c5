"""The session log's on-disk format: one folder per session, one JSON object per line.

```
<sessions dir>/20260101-120000-vector_add-3f2a/
  log.jsonl            append-only records (below), each one line, flushed as written
  summary.json         the file's last verdict, how many versions and proposals (what the list shows)
  sources/<hash>.py    the text of every kernel version the session saw (checked, saved, proposed)
  task/                the task's other files when the session started (reference, task.toml …)
```

Records (every line has ``"r"``, the record kind):

* ``{"r": "session", "schema": 1, "id", "created_at", "origin", "kerneltui", "task": {...}}``: the
  first line. ``origin`` is the front end that wrote it (tui, check, watch, ask).
* ``{"r": "event", "seq": n, "event": {...}}``: one ``core.events`` event (``event_to_dict``).
* ``{"r": "source", "hash", "file", "path", "why"}``: a kernel version, stored in ``sources/``; it is
  written before the first event that needs it.
* ``{"r": "context", "messages": "..."}``: the agent's conversation as the model saw it, after each
  turn (what ``--resume`` gives back to the agent).
* ``{"r": "resumed", "at", "origin"}``: the session was opened again and continues here.

A reader skips record kinds it does not know (written by a newer kerneltui of the same schema); a
larger ``schema`` means the format changed incompatibly and is refused with a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

SCHEMA_VERSION = 1
LOG_NAME = "log.jsonl"
SUMMARY_NAME = "summary.json"  # the file's last verdict, its versions, the proposals (for the listing)
SOURCES_DIR = "sources"
TASK_DIR = "task"

HEADER = "session"
EVENT = "event"
SOURCE = "source"
CONTEXT = "context"
RESUMED = "resumed"


class SessionTask(TypedDict, total=False):
    """The task as a session's header records it (``task_record``; ``LoadedSession.task`` reads it back)."""

    name: str
    root: str  # the task folder, resolved
    kernel_file: str
    backend: str
    format: str
    reference_file: str


class SessionError(Exception):
    """A session cannot be opened or written; the message says which file and what to do."""


@dataclass(frozen=True)
class SessionSummary:
    """What ``kerneltui sessions`` lists beside a session's name, kept by the writer as it goes."""

    verdict: str = ""  # the kernel file's last verdict, PASS or FAIL ("" before any run of it)
    versions: int = 0  # versions of the file checked
    proposals: int = 0
    accepted: int = 0
