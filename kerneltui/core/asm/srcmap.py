"""Source-line ↔ asm-line maps: which kernel source line produced which line of a compiler stage.

Every parser (PTX ``.loc``, nvdisasm's ``//## File`` comments, MLIR ``loc(...)``, LLVM ``!dbg``)
produces a :class:`LineMap`: for each line of the stage's text, the chain of source frames that
produced it, innermost first. A helper inlined into the kernel gives a chain such as
``standard.py:170 → kernel.py:14`` so that the kernel's line 14 finds the instructions of the
``tl.max`` it calls. Paths are task-relative when the file belongs to the task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict


class LineMapData(TypedDict):
    """``LineMap.to_json()``: a file table, and per asm line its [file index, line, column] frames."""

    files: list[str]
    lines: dict[str, list[list[int]]]


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f":{self.column}" if self.column else "")


@dataclass
class LineMap:
    """asm line (1-based) → source frames, innermost first."""

    frames: dict[int, tuple[Frame, ...]] = field(default_factory=dict)

    def add(self, asm_line: int, chain: Iterable[Frame]) -> None:
        chain = tuple(chain)
        if chain:
            self.frames[asm_line] = chain

    def __len__(self) -> int:
        return len(self.frames)

    def source_of(self, asm_line: int, files: Iterable[str] | None = None) -> Frame | None:
        """The frame to show for an asm line: the outermost one in ``files`` (the task's own
        sources) when given, else the innermost."""
        chain = self.frames.get(asm_line)
        if not chain:
            return None
        if files is not None:
            wanted = set(files)
            for frame in reversed(chain):
                if frame.file in wanted:
                    return frame
        return chain[0]

    def asm_lines_for(self, file: str, line: int) -> list[int]:
        """Every asm line whose chain passes through ``file:line`` (sorted)."""
        return self.inverse().get((file, line), [])

    def inverse(self) -> dict[tuple[str, int], list[int]]:
        out: dict[tuple[str, int], list[int]] = {}
        for asm_line in sorted(self.frames):
            seen: set[tuple[str, int]] = set()
            for frame in self.frames[asm_line]:
                key = (frame.file, frame.line)
                if key in seen:
                    continue
                seen.add(key)
                out.setdefault(key, []).append(asm_line)
        return out

    def source_lines(self, file: str) -> list[int]:
        """Source lines of ``file`` that produced at least one asm line."""
        return sorted({line for (f, line) in self.inverse() if f == file})

    def files(self) -> list[str]:
        return sorted({frame.file for chain in self.frames.values() for frame in chain})

    def relabel(self, rename: dict[str, str]) -> LineMap:
        return LineMap({n: tuple(Frame(rename.get(f.file, f.file), f.line, f.column) for f in chain)
                        for n, chain in self.frames.items()})

    # -- JSON: a file table and [file index, line, column] triples keep it small -------------------

    def to_json(self) -> LineMapData:
        files = self.files()
        index = {name: i for i, name in enumerate(files)}
        lines = {str(n): [[index[f.file], f.line, f.column] for f in chain] for n, chain in sorted(self.frames.items())}
        return {"files": files, "lines": lines}

    @classmethod
    def from_json(cls, data: LineMapData) -> LineMap:
        files = list(data.get("files") or [])
        frames = {}
        for key, chain in (data.get("lines") or {}).items():
            frames[int(key)] = tuple(Frame(files[i], int(line), int(col)) for i, line, col in chain)
        return cls(frames)


def relative_to_root(path: str, roots: Iterable[str]) -> str:
    """``/tmp/kerneltui-worker-x/task/kernel.py`` → ``kernel.py`` for any of ``roots``."""
    for root in roots:
        if not root:
            continue
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix):]
    return path
