"""Where accepted edits land, and how undo takes them back.

``KernelFile`` writes the real kernel file (atomically: a watcher or an editor never reads half a
file); ``KernelInMemory`` keeps the text in memory (auto mode without ``--apply``). Every applied
edit pushes a checkpoint (the text before and after) onto a stack kept in
``<task>/.kerneltui/agent/checkpoints.json`` with the texts beside it, so undo works across
restarts, and an edit made by hand after the checkpoint is saved before undo overwrites it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from kerneltui.core.task import source_hash
from kerneltui.files import write_text_atomic


class KernelTarget(Protocol):
    label: str

    def read(self) -> str: ...

    def write(self, text: str) -> None: ...


class KernelFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.label = str(path)

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def write(self, text: str) -> None:
        write_text_atomic(self.path, text)


class KernelInMemory:
    def __init__(self, text: str, label: str = "kernel (in memory)") -> None:
        self.text = text
        self.label = label

    def read(self) -> str:
        return self.text

    def write(self, text: str) -> None:
        self.text = text


@dataclass
class Checkpoint:
    proposal_id: str | None
    file: str
    before_hash: str
    after_hash: str
    label: str
    at: float


class CheckpointStore:
    def __init__(self, folder: Path, persist: bool = True) -> None:
        self.folder = folder
        self.persist = persist
        self.stack: list[Checkpoint] = []
        self._texts: dict[str, str] = {}
        if persist:
            self._load()

    @property
    def index_path(self) -> Path:
        return self.folder / "checkpoints.json"

    def _text_path(self, digest: str) -> Path:
        return self.folder / "texts" / f"{digest}.txt"

    def _load(self) -> None:
        if not self.index_path.exists():
            return
        try:
            data = json.loads(self.index_path.read_text(encoding="utf-8"))
            self.stack = [Checkpoint(**entry) for entry in data]
        except (OSError, ValueError, TypeError):
            self.stack = []  # an unreadable stack means nothing to undo, never a crash

    def _save(self) -> None:
        if not self.persist:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self.index_path.write_text(json.dumps([asdict(c) for c in self.stack], indent=1), encoding="utf-8")

    def keep_text(self, text: str) -> str:
        """Store a text by its hash (returns the hash)."""
        digest = source_hash(text)
        self._texts[digest] = text
        if self.persist:
            path = self._text_path(digest)
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        return digest

    def text(self, digest: str) -> str:
        if digest in self._texts:
            return self._texts[digest]
        return self._text_path(digest).read_text(encoding="utf-8")

    def text_path(self, digest: str) -> Path:
        return self._text_path(digest)

    def push(self, proposal_id: str | None, file: str, before: str, after: str, label: str) -> Checkpoint:
        cp = Checkpoint(proposal_id=proposal_id, file=file, before_hash=self.keep_text(before),
                        after_hash=self.keep_text(after), label=label, at=time.time())
        self.stack.append(cp)
        self._save()
        return cp

    def pop(self) -> Checkpoint | None:
        if not self.stack:
            return None
        cp = self.stack.pop()
        self._save()
        return cp

    def peek(self) -> Checkpoint | None:
        return self.stack[-1] if self.stack else None
