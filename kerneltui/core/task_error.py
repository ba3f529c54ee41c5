"""The error of a task that cannot be used as it is; its own module so that the loaders and the
task model share it without importing each other."""

from __future__ import annotations

from pathlib import Path


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
