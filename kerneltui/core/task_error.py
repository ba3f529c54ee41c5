"""The error of a task that cannot be used as it is; its own module so that the loaders and the
task model share it without importing each other."""

from __future__ import annotations

from pathlib import Path

from kerneltui.files import NotUtf8, utf8_text


class TaskError(Exception):
    """A task that cannot be used as it is, with the place to fix it."""

    def __init__(self, message: str, file: Path | str | None = None, line: int | None = None) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        where = ""
        if self.file:
            where = f"{self.file}:{line}: " if line else f"{self.file}: "
        super().__init__(f"{where}{message}")
        self.message = message


def task_text(path: Path) -> str:
    """A task file's text; bytes that are not UTF-8 are a ``TaskError`` at their line and column (a
    kernel, a reference or a task.toml alike: Python and TOML read UTF-8 only). ``OSError`` as is."""
    return task_utf8(path.read_bytes(), path)


def task_utf8(data: bytes, path: Path) -> str:
    """``data``, read from the task file ``path``, as text; not UTF-8: a ``TaskError`` at its line."""
    try:
        return utf8_text(data, path)
    except NotUtf8 as exc:
        raise TaskError(exc.reason, exc.path, exc.line) from None
