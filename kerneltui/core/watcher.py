"""Watch a task's files and report saves (watchfiles; editors that save by rename included).

A change is told by the content's hash, of whatever bytes the file holds (bytes that are not UTF-8
are a change too: the command reading the file says what is wrong with it). A task file that is a
symbolic link to a file inside the task folder is watched through its target, wherever in the folder
that lies (a hidden folder included)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from kerneltui.core.task import Task, TaskError, source_hash


def _is_task_source(task: Task, path: Path, targets: set[Path]) -> bool:
    if path.resolve() in targets:
        return True
    try:
        rel = path.resolve().relative_to(task.root.resolve())
    except ValueError:
        return False
    if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
        return False
    try:
        names = set(task.source_files())
    except TaskError:
        return True  # a file of the folder now leads outside it: the run says so (containment)
    return rel.as_posix() in names or rel.as_posix() == task.kernel_file


async def watch_task(task: Task, stop_event: object | None = None, debounce_ms: int = 50) -> AsyncIterator[list[tuple[Path, str]]]:
    """Yield batches of (path, content hash) for task files whose content changed."""
    from watchfiles import awatch

    last: dict[Path, str] = {}
    targets = {path.resolve() for path in task.watched_paths()}  # a symlinked kernel: its target
    for path in task.watched_paths():
        try:
            last[path.resolve()] = _digest(path)
        except OSError:
            pass
    async for changes in awatch(task.root, debounce=debounce_ms, step=20, stop_event=stop_event,
                                recursive=True):
        batch: list[tuple[Path, str]] = []
        for _, raw in changes:
            path = Path(raw).resolve()
            if not _is_task_source(task, path, targets):
                continue
            try:
                digest = _digest(path)
            except OSError:
                continue  # deleted or mid-rename; the next event brings the new file
            if last.get(path) == digest:
                continue  # touched but not changed
            last[path] = digest
            batch.append((path, digest))
        if batch:
            yield batch


def _digest(path: Path) -> str:
    return source_hash(path.read_bytes().decode("utf-8", errors="replace"))
