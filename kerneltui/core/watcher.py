"""Watch a task's files and report saves (watchfiles; editors that save by rename included)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from kerneltui.core.task import Task, TaskError, source_hash


def _is_task_source(task: Task, path: Path) -> bool:
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
    for path in task.watched_paths():
        try:
            last[path.resolve()] = source_hash(path.read_text(encoding="utf-8"))
        except OSError:
            pass
    async for changes in awatch(task.root, debounce=debounce_ms, step=20, stop_event=stop_event,  # type: ignore[arg-type]
                                recursive=True):
        batch: list[tuple[Path, str]] = []
        for _, raw in changes:
            path = Path(raw).resolve()
            if not _is_task_source(task, path):
                continue
            try:
                digest = source_hash(path.read_text(encoding="utf-8"))
            except OSError:
                continue  # deleted or mid-rename; the next event brings the new file
            if last.get(path) == digest:
                continue  # touched but not changed
            last[path] = digest
            batch.append((path, digest))
        if batch:
            yield batch
