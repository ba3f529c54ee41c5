"""SessionLog: the writer. A subscriber of the event stream, like the history observer.

Every front end hands it each event it emits (``log.write(event)``); the TUI subscribes it to its
``EventBridge``, ``kerneltui check/watch/ask`` tee their printer into it. Each record is one
``write()`` of one whole line followed by a flush, so a crash or ``kill -9`` can cut at most the
line being written (the OS keeps what was flushed; ``fsync`` would only matter for a power cut and
costs a disk round trip per event, so it is done on close only).

Kernel versions are stored once each in ``sources/``: on ``RunFinished`` the loop has already
written the checked text into the task's version folder; a ``FileChanged`` of the kernel is read
from disk; a proposal carries its text (and, accepted in part or edited, the text written). No
secrets: events hold no keys by construction, and as a second line of defence every line is
scrubbed of the values of environment variables that look like credentials before it is written.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from kerneltui import __version__
from kerneltui.core.events import (
    EditsKept,
    Event,
    FileChanged,
    ProposalEvent,
    RunFinished,
    RunStarted,
    UserMessage,
    event_to_dict,
)
from kerneltui.core.redact import redact_tree
from kerneltui.core.session.record import (
    CONTEXT,
    EVENT,
    HEADER,
    LOG_NAME,
    RESUMED,
    SCHEMA_VERSION,
    SOURCE,
    SOURCES_DIR,
    SUMMARY_NAME,
    TASK_DIR,
    SessionError,
    SessionSummary,
    SessionTask,
)
from kerneltui.core.task import Task, source_hash


def new_session_name(task_name: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", task_name).strip("-") or "task"
    return f"{stamp}-{safe}-{secrets.token_hex(2)}"


def task_record(task: Task) -> SessionTask:
    return {"name": task.name, "root": str(task.root.resolve()), "kernel_file": task.kernel_file,
            "backend": task.backend, "format": task.format, "reference_file": task.reference_file}


class SessionLog:
    """Appends records to ``<folder>/log.jsonl``; thread-safe (the loop and agent threads both emit)."""

    def __init__(self, folder: Path, task: Task) -> None:
        self.folder = Path(folder)
        self.task = task
        self.path = self.folder / LOG_NAME
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._seq = 0
        self._stored: set[str] = set()
        self._run_hash: dict[str, str] = {}
        self.closed = False
        self.created = False  # made by this process (``create``), not reopened by a resume
        self.eventful = False  # something happened beyond the launch's own run (see ``_eventful``)
        self._summary = SessionSummary()
        self._run_origin: dict[str, str] = {}
        self._file_hashes: set[str] = set()
        self._proposal_ids: set[str] = set()
        self._accepted_ids: set[str] = set()
        self.lost_events = 0  # events that could not be written (disk full, a value JSON cannot hold)
        self.error = ""  # the first such failure, for the front end to say

    def problem(self) -> str:
        """One line on what the log could not record, or "" when it recorded everything."""
        if not self.lost_events:
            return ""
        return f"session log {self.path}: {self.lost_events} events not recorded ({self.error})"

    # -- opening ----------------------------------------------------------------------------------

    @classmethod
    def create(cls, sessions_dir: Path, task: Task, origin: str, *, name: str | None = None) -> SessionLog:
        """A new session folder for ``task``: header, a copy of the task's files, the kernel as it is now."""
        folder = Path(sessions_dir) / (name or new_session_name(task.name))
        try:
            folder.mkdir(parents=True, exist_ok=False)
        except FileExistsError as exc:
            raise SessionError(f"{folder} already exists: choose another name") from exc
        except OSError as exc:
            raise SessionError(f"cannot create the session folder {folder}: {exc.strerror} "
                               f"(set [sessions] dir or KERNELTUI_SESSIONS_DIR to a writable folder)") from exc
        log = cls(folder, task)
        log.created = True
        log._copy_task_files()
        log._append({"r": HEADER, "schema": SCHEMA_VERSION, "id": folder.name, "created_at": time.time(),
                     "origin": origin, "kerneltui": __version__, "task": task_record(task)})
        try:
            log.store_source(task.kernel_source(), "start")
        except Exception:  # noqa: BLE001 - a missing kernel file is the task's problem, reported elsewhere
            pass
        return log

    @classmethod
    def reopen(cls, folder: Path, task: Task, origin: str) -> SessionLog:
        """Continue an existing session (resume): later records append to the same log."""
        from kerneltui.core.session.reader import load_session

        loaded = load_session(folder)
        log = cls(Path(folder), task)
        log._seq = loaded.last_seq + 1
        log._stored = set(loaded.sources)
        if loaded.lost_bytes:
            # The partial line a crash left must not glue itself to the next record.
            with open(log.path, "rb+") as fh:
                fh.truncate(loaded.good_bytes)
        log._append({"r": RESUMED, "at": time.time(), "origin": origin})
        return log

    def _copy_task_files(self) -> None:
        """The reference and task description as they were: replay and re-verify need no other copy."""
        dest = self.folder / TASK_DIR
        names = set(self.task.source_files())
        for extra in ("task.toml", "task.yml", "task.yaml"):
            if (self.task.root / extra).is_file():
                names.add(extra)
        for name in sorted(names):
            # Files a task pulls from outside its folder (GPU MODE's files:) are saved under their names.
            linked = self.task.linked_files.get(name)
            src = Path(linked) if linked else self.task.root / name
            if not src.is_file():
                continue
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)

    # -- writing ----------------------------------------------------------------------------------

    def _append(self, record: dict[str, Any]) -> None:
        line = json.dumps(redact_tree(record), ensure_ascii=False, allow_nan=False, default=str, separators=(",", ":"))
        with self._lock:
            if self.closed:
                return
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the session
            self._file.write(line + "\n")
            self._file.flush()

    def write(self, event: Event) -> None:
        """Record one event (and, before it, any kernel text it refers to). Never raises."""
        try:
            self._sources_for(event)
            data = _finite(event_to_dict(event))
            with self._lock:
                seq = self._seq
                self._seq += 1
            self._append({"r": EVENT, "seq": seq, "event": data})
            self.eventful = self.eventful or _eventful(event)
            self._count(event)
        except Exception as exc:  # noqa: BLE001 - the log must never take the session down; it says so instead
            self.lost_events += 1
            self.error = self.error or f"{type(exc).__name__}: {exc}"

    __call__ = write

    def write_context(self, messages_json: str) -> None:
        """The agent's conversation after a turn (no keys: it is what the model was sent and said)."""
        try:
            self._append({"r": CONTEXT, "at": time.time(), "messages": messages_json})
        except OSError as exc:
            self.lost_events += 1
            self.error = self.error or f"{type(exc).__name__}: {exc}"

    def store_source(self, text: str, why: str) -> str:
        digest = source_hash(text)
        if digest in self._stored:
            return digest
        suffix = Path(self.task.kernel_file).suffix or ".txt"
        rel = f"{SOURCES_DIR}/{digest}{suffix}"
        target = self.folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        self._stored.add(digest)
        self._append({"r": SOURCE, "hash": digest, "file": rel, "path": self.task.kernel_file, "why": why})
        return digest

    def _sources_for(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._run_hash[event.run_id] = event.source_hash
        elif isinstance(event, RunFinished) and not event.cancelled:
            digest = self._run_hash.get(event.run_id)
            if digest and digest not in self._stored:
                checked = self.task.version_dir(digest) / Path(self.task.kernel_file).name
                text = _read(checked)
                if text is not None and source_hash(text) == digest:
                    self.store_source(text, "checked")
        elif isinstance(event, FileChanged) and event.source_hash not in self._stored:
            if Path(event.path).name == Path(self.task.kernel_file).name:
                text = _read(Path(event.path))
                if text is not None and source_hash(text) == event.source_hash:
                    self.store_source(text, "saved")
        elif isinstance(event, ProposalEvent):
            text = event.proposal.get("new_source")
            if isinstance(text, str) and source_hash(text) not in self._stored:
                self.store_source(text, "proposed")
            applied = event.proposal.get("applied_source")  # some hunks, or the person's edit of it
            if isinstance(applied, str) and source_hash(applied) not in self._stored:
                self.store_source(applied, "accepted")

    def _count(self, event: Event) -> None:
        """Keep ``summary.json`` (what ``kerneltui sessions`` lists) up to date with the file's verdict,
        its versions and the proposals; written whole and replaced, so a kill leaves the last one."""
        if isinstance(event, RunStarted):
            self._run_origin[event.run_id] = event.origin
            return
        if isinstance(event, RunFinished) and not event.cancelled:
            if self._run_origin.get(event.run_id, "manual") in TRIAL_RUN_ORIGINS:
                return  # a trial checked a proposal's text, not the file
            digest = self._run_hash.get(event.run_id, "")
            if digest:
                self._file_hashes.add(digest)
            self._summary = SessionSummary(verdict="PASS" if event.ok else "FAIL", versions=len(self._file_hashes),
                                           proposals=self._summary.proposals, accepted=self._summary.accepted)
        elif isinstance(event, ProposalEvent):
            self._proposal_ids.add(event.proposal_id)
            if event.state == "accepted":
                self._accepted_ids.add(event.proposal_id)
            self._summary = SessionSummary(verdict=self._summary.verdict, versions=self._summary.versions,
                                           proposals=len(self._proposal_ids), accepted=len(self._accepted_ids))
        else:
            return
        target = self.folder / SUMMARY_NAME
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self._summary)), encoding="utf-8")
        os.replace(tmp, target)

    def discard(self) -> None:
        """Remove a session this process created in which nothing happened (a launch and its first run)."""
        self.close()
        if self.created:
            shutil.rmtree(self.folder, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            if self._file is not None and not self.closed:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
            self.closed = True


# Runs that check a proposal's text on a scratch copy: they say nothing about the file's verdict.
TRIAL_RUN_ORIGINS = frozenset({"proposal", "auto"})


def _eventful(event: Event) -> bool:
    """Whether ``event`` is worth a session: the person or the agent did something, or a run other
    than the one every launch makes (origin "start"). Edits kept when a save failed or the app was
    closed by a signal are: ``--resume`` finds them through the session."""
    if isinstance(event, RunStarted):
        return event.origin != "start"
    return isinstance(event, (UserMessage, ProposalEvent, FileChanged, EditsKept))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such numbers are written as null (a metric that was not a number)."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
