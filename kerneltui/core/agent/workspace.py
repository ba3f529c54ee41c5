"""What the agent may read: the task folder and the context folders, nothing else.

Paths are given relative to the task folder (``kernel.py``) or under ``context/``
(``context/cutlass/include/cute/layout.hpp``); absolute paths are accepted when they fall inside one
of those folders. ``context/`` is the context folders seen as one, in the order they are searched
(``search.folders``): the task's own ``context/``, the configured folder, kerneltui's notes; a name
found in an earlier one hides the same name in a later one. Symbolic links are resolved before the
check, so a link cannot lead outside. ``installed/<package>/…`` is the folder of an installed DSL package
(``search.installed``: ``installed/triton/language/core.py``), read-only like the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 400
MAX_CHARS = 48_000
LIST_LIMIT = 200
_HIDDEN = {".git", "__pycache__", ".kerneltui", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules"}


class WorkspaceError(Exception):
    """A request the workspace refuses, with the reason in words the model and the person can act on."""


def _inside(real: Path, root: Path) -> bool:
    return real == root or real.is_relative_to(root)


@dataclass(frozen=True)
class Workspace:
    task_root: Path
    context_roots: tuple[Path, ...]  # what context/… means, first match wins
    installed: tuple[tuple[str, Path], ...] = ()  # installed/<name>/… → that package's folder

    def _roots(self) -> list[Path]:
        return [Path(os.path.realpath(root)) for root in self.context_roots]

    def resolve(self, path: str) -> tuple[Path, str]:
        """The real file for ``path`` and how to name it to the model, or a WorkspaceError."""
        text = path.strip()
        if not text:
            raise WorkspaceError("give a path: a file of the task (e.g. kernel.py) or under context/")
        raw = Path(text).expanduser()
        task = Path(os.path.realpath(self.task_root))
        roots = self._roots()
        packages = {name: Path(os.path.realpath(root)) for name, root in self.installed}
        if raw.is_absolute():
            candidate = raw
        elif raw.parts[:1] == ("installed",) and len(raw.parts) > 1 and raw.parts[1] in packages:
            candidate = packages[raw.parts[1]].joinpath(*raw.parts[2:])
        elif raw.parts[:1] == ("installed",) and not os.path.lexists(task / raw):
            known = ", ".join(f"installed/{name}" for name in packages) or "none is installed here"
            raise WorkspaceError(f"{text}: installed/ holds the DSL packages' own sources ({known})")
        elif raw.parts and raw.parts[0] == "context":
            rel = Path(*raw.parts[1:]) if len(raw.parts) > 1 else Path(".")
            found = [root / rel for root in roots if os.path.lexists(root / rel)]
            candidate = found[0] if found else (roots[0] / rel if roots else task / raw)
        else:
            candidate = task / raw
        real = Path(os.path.realpath(candidate))
        if not any(_inside(real, root) for root in [task, *roots, *packages.values()]):
            shown_roots = ", ".join(str(r) for r in roots)
            raise WorkspaceError(f"refused: {text} is outside the task folder ({task}) and context/ ({shown_roots}); "
                                 f"only files there (and installed/ DSL sources) can be read")
        return real, self._shown(real, task, roots, packages)

    def _shown(self, real: Path, task: Path, roots: list[Path], packages: dict[str, Path]) -> str:
        """context/<path> when that name leads to this file, else the path in the task, else installed/<name>/…,
        else the real path."""
        for n, root in enumerate(roots):
            if _inside(real, root):
                rel = real.relative_to(root).as_posix()
                if rel == ".":
                    return "context"
                if not any(os.path.lexists(earlier / rel) for earlier in roots[:n]):
                    return f"context/{rel}"
        if _inside(real, task):
            rel = real.relative_to(task).as_posix()
            return rel if rel != "." else "."
        for name, root in packages.items():
            if _inside(real, root):
                rel = real.relative_to(root).as_posix()
                return f"installed/{name}" + ("" if rel == "." else f"/{rel}")
        return str(real)

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> tuple[str, str]:
        """Numbered lines of a file (at most MAX_LINES), and a one-line summary."""
        real, shown = self.resolve(path)
        if real.is_dir():
            raise WorkspaceError(f"{shown} is a folder; list it with list_files")
        if not real.exists():
            raise WorkspaceError(f"{shown} does not exist (list_files shows what is there)")
        try:
            data = real.read_bytes()
        except OSError as exc:
            raise WorkspaceError(f"cannot read {shown}: {exc.strerror}") from exc
        if b"\x00" in data[:8192]:
            raise WorkspaceError(f"{shown} is a binary file ({len(data):,} bytes); only text files can be read")
        lines = data.decode("utf-8", errors="replace").splitlines()
        total = len(lines)
        start = max(1, start_line or 1)
        end = min(total, end_line or (start + MAX_LINES - 1))
        if end - start + 1 > MAX_LINES:
            end = start + MAX_LINES - 1
        if total == 0:
            return f"{shown} is empty", f"{shown}: empty"
        if start > total:
            raise WorkspaceError(f"{shown} has {total} lines; start_line {start} is past the end")
        width = len(str(end))
        out: list[str] = []
        size = 0
        last = start - 1
        for number in range(start, end + 1):
            line = f"{number:>{width}}  {lines[number - 1]}"
            size += len(line) + 1
            if size > MAX_CHARS:
                break
            out.append(line)
            last = number
        header = f"{shown} lines {start}-{last} of {total}"
        if last < total:
            header += f" (more: read again with start_line={last + 1})"
        return header + "\n" + "\n".join(out), f"{shown}:{start}-{last} of {total} lines"

    def list(self, path: str = ".") -> tuple[str, str]:
        real, shown = self.resolve(path or ".")
        if not real.is_dir():
            raise WorkspaceError(f"{shown} is not a folder")
        entries: list[str] = []
        # context/… lists every context folder's entries at that place, an earlier folder's first.
        rel = shown.removeprefix("context").strip("/") if shown == "context" or shown.startswith("context/") else None
        folders = [Path(os.path.realpath(root / rel)) for root in self._roots()] if rel is not None else [real]
        folders = [f for f, root in zip(folders, self._roots(), strict=False) if f.is_dir() and _inside(f, root)] \
            if rel is not None else folders
        by_name: dict[str, Path] = {}
        try:
            for folder in folders:
                for child in folder.iterdir():
                    by_name.setdefault(child.name, child)
        except OSError as exc:
            raise WorkspaceError(f"cannot list {shown}: {exc.strerror}") from exc
        children = sorted(by_name.values(), key=lambda p: (not p.is_dir(), p.name))
        children = [c for c in children if c.name not in _HIDDEN]
        for child in children[:LIST_LIMIT]:
            if child.is_dir():
                entries.append(child.name + "/")
            else:
                try:
                    entries.append(f"{child.name}  ({child.stat().st_size:,} bytes)")
                except OSError:
                    entries.append(child.name)
        more = f"\n… and {len(children) - LIST_LIMIT} more" if len(children) > LIST_LIMIT else ""
        prefix = "" if shown == "." else shown.rstrip("/") + "/"
        return f"{prefix or './'}\n" + "\n".join(entries) + more, f"{shown}: {len(children)} entries"
