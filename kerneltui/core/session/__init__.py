"""Sessions: every run saved as an append-only event log, resumable, replayable and re-verifiable."""

from kerneltui.core.session.log import SessionLog
from kerneltui.core.session.reader import LoadedSession, load_session
from kerneltui.core.session.record import SCHEMA_VERSION, SessionError
from kerneltui.core.session.store import list_sessions, resolve_session, sessions_dir
from kerneltui.core.session.timeline import Timeline, Version

__all__ = ["SCHEMA_VERSION", "LoadedSession", "SessionError", "SessionLog", "Timeline", "Version", "list_sessions",
           "load_session", "resolve_session", "sessions_dir"]
