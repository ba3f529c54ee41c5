"""Edits that could not be saved, or were about to be replaced, kept where a person (and ``--resume``)
finds them: ``<task>/.kerneltui/unsaved/<file>.<time>``, else, when the task's disk refuses it too
(full, read-only), ``<data dir>/unsaved/<task name>-<folder hash>/<file>.<time>``.

Nothing here imports Textual: the app's save path and its signal handler both keep text through it.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from kerneltui import paths
from kerneltui.files import os_reason, write_text_atomic


def task_folder(state_dir: Path) -> Path:
    return state_dir / "unsaved"


def fallback_folder(task_root: Path) -> Path:
    """The copy's place off the task's disk, one folder per task folder."""
    digest = hashlib.sha256(str(task_root.resolve()).encode()).hexdigest()[:8]
    return paths.data_dir() / "unsaved" / f"{task_root.resolve().name}-{digest}"


class NotKept(OSError):
    """Neither place took the text: why, for each place."""


def keep(state_dir: Path, task_root: Path, name: str, text: str) -> Path:
    """Write ``text`` as a new file named for ``name`` and the time; its path. Tries the task's
    unsaved folder, then the data folder's; raises ``NotKept`` saying why neither worked."""
    problems: list[str] = []
    for folder in (task_folder(state_dir), fallback_folder(task_root)):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target = _new_name(folder, name)
            write_text_atomic(target, text)
            return target
        except OSError as exc:
            problems.append(f"{folder}: {os_reason(exc)}")
    raise NotKept("; ".join(problems))


def _new_name(folder: Path, name: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"{name}.{stamp}"
    count = 1
    while target.exists():  # two copies in one second: both kept
        count += 1
        target = folder / f"{name}.{stamp}-{count}"
    return target


def newest(state_dir: Path, task_root: Path, name: str, after: float = 0.0) -> Path | None:
    """The most recent kept copy of ``name`` written after ``after`` (a time stamp), in either place."""
    found: list[tuple[float, Path]] = []
    for folder in (task_folder(state_dir), fallback_folder(task_root)):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith(f"{name}.") or not entry.is_file():
                continue
            mtime = entry.stat().st_mtime
            if mtime > after:
                found.append((mtime, Path(entry.path)))
    return max(found)[1] if found else None
