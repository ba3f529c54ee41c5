"""Where sessions live, finding one by name, and listing them (newest first).

``[sessions] dir`` (or ``KERNELTUI_SESSIONS_DIR``) names the folder; empty means
``<data dir>/sessions``. ``[sessions] record = false`` turns recording off. A session is named by
its folder path, its log file, or its folder name under the sessions folder or under the example
sessions shipped with kerneltui (``sessions/`` of the source checkout).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltui import paths
from kerneltui.config import Config
from kerneltui.core.session.record import LOG_NAME, SUMMARY_NAME, SessionError, SessionSummary
from kerneltui.settings.sessions import SessionSettings


def _settings(config: Config | None) -> SessionSettings:
    return config.read(SessionSettings) if config is not None else SessionSettings()


def sessions_dir(config: Config | None = None) -> Path:
    folder = _settings(config).dir
    return Path(folder).expanduser() if folder else paths.data_dir() / "sessions"


def recording_enabled(config: Config | None) -> bool:
    return _settings(config).record


def example_sessions_dir() -> Path:
    """The example sessions of the source checkout (next to the package)."""
    return paths.package_dir().parent / "sessions"


@dataclass(frozen=True)
class SessionInfo:
    name: str
    folder: Path
    task: str
    task_root: str
    origin: str
    created_at: float
    size_bytes: int
    summary: SessionSummary | None = None  # None for sessions written before kerneltui kept one


def describe_session(info: SessionInfo, listed: list[SessionInfo] | None = None) -> str:
    """One line of the listing (the kernel file's last verdict, versions, proposals); the task's folder is shown when another listed session has a task of
    the same name in another folder (every example copy is "vector_add")."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created_at)) if info.created_at else "?"
    roots = {s.task_root for s in listed or [] if s.task == info.task}
    task = f"{info.task} ({_home_short(info.task_root)})" if len(roots) > 1 and info.task_root else info.task
    s = info.summary
    if s is None:  # a session written before kerneltui kept a summary
        what = f"{'(no summary)':<34}"
    else:
        versions = f"{s.versions} version{'s' if s.versions != 1 else ''}"
        proposals = f"{s.proposals} proposal{'s' if s.proposals != 1 else ''}" + (
            f" ({s.accepted} accepted)" if s.accepted else "")
        what = f"{s.verdict or '—':<4} {versions:<11} {proposals:<18}"
    return f"{when}  {task:<16} {info.origin:<6} {what} {info.size_bytes / 1024:7.1f} KiB  {info.name}"


def _home_short(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + "/") else path


def resolve_session(name: str, config: Config | None = None) -> Path:
    """The folder of the session called ``name`` (a path, a log file or a folder name)."""
    given = Path(name).expanduser()
    if given.is_file() and given.name.endswith(".jsonl"):
        return given.parent if given.name == LOG_NAME else given
    if given.is_dir() and (given / LOG_NAME).is_file():
        return given
    for root in (sessions_dir(config), example_sessions_dir()):
        candidate = root / name
        if (candidate / LOG_NAME).is_file():
            return candidate
    if name == "latest":
        found = list_sessions(config)
        if found:
            return found[0].folder
    raise SessionError(f"no session {name!r}: give a session folder, or a name from `kerneltui sessions` "
                       f"(looked in {sessions_dir(config)} and {example_sessions_dir()})")


def read_header(folder: Path) -> dict[str, Any] | None:
    try:
        # As bytes: reading text decodes ahead of the first line, and a damaged record further on (bytes
        # that are not UTF-8) would hide the whole session.
        with open(folder / LOG_NAME, "rb") as fh:
            first = fh.readline()
        header = json.loads(first)
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) and header.get("r") == "session" else None


def read_summary(folder: Path) -> SessionSummary | None:
    try:
        data = json.loads((folder / SUMMARY_NAME).read_text(encoding="utf-8"))
        return SessionSummary(verdict=str(data.get("verdict") or ""), versions=int(data.get("versions") or 0),
                              proposals=int(data.get("proposals") or 0), accepted=int(data.get("accepted") or 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def list_sessions(config: Config | None = None, *, include_examples: bool = False,
                  task_root: Path | None = None) -> list[SessionInfo]:
    """Sessions found (reading only each header line), newest first."""
    roots = [sessions_dir(config)] + ([example_sessions_dir()] if include_examples else [])
    found: list[SessionInfo] = []
    for root in roots:
        if not root.is_dir():
            continue
        for folder in root.iterdir():
            header = read_header(folder) if folder.is_dir() else None
            if header is None:
                continue
            task = header.get("task") or {}
            if task_root is not None and str(task.get("root")) != str(task_root.resolve()):
                continue
            try:
                size = (folder / LOG_NAME).stat().st_size
            except OSError:
                size = 0
            found.append(SessionInfo(name=folder.name, folder=folder, task=str(task.get("name", "?")),
                                     task_root=str(task.get("root", "")), origin=str(header.get("origin", "")),
                                     created_at=float(header.get("created_at") or 0.0), size_bytes=size,
                                     summary=read_summary(folder)))
    found.sort(key=lambda s: s.created_at, reverse=True)
    return found


def open_log_for(task: Any, origin: str, config: Config | None) -> Any:
    """A new SessionLog for a front end, or None when recording is off or impossible (with why)."""
    from kerneltui.core.session.log import SessionLog

    if not recording_enabled(config):
        return None
    return SessionLog.create(sessions_dir(config), task, origin)
