"""The folders searched, and what in them is indexed, skipped (and why), and safe to read.

Three kinds of folder are searched, in this order (the order ``context/…`` paths are resolved in):
the task's own ``context/`` folder, the configured one (``[agent] context_dir``, by default the
source checkout's ``context/``), and the notes shipped with kerneltui (package data); then the
installed DSL packages' own language, examples and docs (``installed``), named ``installed/<name>/…``. Symbolic
links are never followed out of a folder: a link to a file elsewhere is skipped and said so, a
linked folder is not entered, and every read checks the real path again.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui import paths
from kerneltui.core.agent.search.installed import InstalledPackage

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 16 * 1024 * 1024  # outputs (images) make notebooks large; only their sources are indexed
TEXT_SUFFIXES = frozenset({
    ".md", ".markdown", ".rst", ".txt", ".py", ".pyi", ".ipynb", ".h", ".hpp", ".hh", ".cuh", ".cu", ".cc",
    ".cpp", ".cxx", ".c", ".inl", ".ptx", ".mlir", ".td", ".cmake", ".toml", ".yaml", ".yml", ".sh", ".ll",
    ".sass",
})
TEXT_NAMES = frozenset({"README", "LICENSE", "Makefile", "CMakeLists.txt"})
TOOL_DIRS = frozenset({"__pycache__", "node_modules", "venv", "site-packages"})
# A build tree or a virtual environment (copies and generated files) is known by two marks, not one: a file
# that marks one alone may be a stray committed by mistake (triton's include/triton/Dialect/Gluon/ holds a
# CMakeCache.txt and its sources). Per kind: the mark, what else such a folder holds (a name ending in "/" is
# a folder), and what it is.
BUILD_MARKERS: tuple[tuple[str, frozenset[str], str], ...] = (
    ("CMakeCache.txt", frozenset({"CMakeFiles/", "Makefile", "build.ninja", "cmake_install.cmake"}),
     "a CMake build folder"),
    ("build.ninja", frozenset({".ninja_log", ".ninja_deps", "CMakeFiles/", "CMakeCache.txt"}), "a Ninja build folder"),
    ("pyvenv.cfg", frozenset({"bin/", "Scripts/", "lib/", "Lib/"}), "a Python virtual environment"),
)


def build_folder(entries: list[os.DirEntry[str]]) -> str:
    """What kind of build tree or virtual environment a folder's entries make, or "" when they make none."""
    names = {e.name for e in entries}
    for mark, beside, why in BUILD_MARKERS:
        if mark not in names:
            continue
        for other in beside:
            name = other.rstrip("/")
            entry = next((e for e in entries if e.name == name), None)
            if entry is not None and (not other.endswith("/") or entry.is_dir(follow_symlinks=False)):
                return why
    return ""


@dataclass(frozen=True)
class ContextFolder:
    path: Path
    origin: str  # "task", "configured", "notes" or "installed"
    # An installed DSL package (origin "installed"): only its language, examples and docs are searched, its
    # files are named installed/<name>/…, and its hits carry its version.
    package: InstalledPackage | None = None

    def describe(self) -> str:
        if self.package is not None:
            return f"the installed {self.package.label} ({self.path}: {', '.join(p + '/' for p in self.package.parts)})"
        return {"task": "the task's context/", "configured": "the context folder",
                "notes": "kerneltui's notes"}.get(self.origin, self.origin) + f" ({self.path})"

    @property
    def label(self) -> str:
        """The package and version of an installed package's folder ("triton 3.6.0"), else ""."""
        return self.package.label if self.package is not None else ""


def notes_dir() -> Path:
    """The notes kerneltui ships (package data), searched like any other folder."""
    return paths.package_dir() / "data" / "notes"


def context_folders(task_root: Path | None, configured: Path,
                    installed: Sequence[InstalledPackage] = ()) -> list[ContextFolder]:
    """The folders a session searches: the task's context/ (when it is a real folder), the configured
    one, kerneltui's notes; each once; then the ``installed`` DSL packages' folders."""
    found: list[ContextFolder] = []
    if task_root is not None:
        own = Path(task_root) / "context"
        if own.is_dir() and not own.is_symlink():
            found.append(ContextFolder(own.resolve(), "task"))
    found.append(ContextFolder(Path(configured).expanduser().resolve(), "configured"))
    found.append(ContextFolder(notes_dir().resolve(), "notes"))
    unique: list[ContextFolder] = []
    for folder in found:
        if all(folder.path != seen.path for seen in unique):
            unique.append(folder)
    return unique + [ContextFolder(p.root, "installed", p) for p in installed]


def task_context_refusal(task_root: Path) -> str:
    """Why the task's context/ is not searched, or "" when it is (or there is none)."""
    own = Path(task_root) / "context"
    if own.is_symlink():
        return (f"{own} is a symbolic link (to {os.path.realpath(own)}); links are not followed out of the task: "
                f"name that folder in [agent] context_dir instead")
    return ""


@dataclass
class Scan:
    """One walk of a folder: the files to index and what was left out."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # relative path → (mtime_ns, size)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why): worth naming
    counts: Counter[str] = field(default_factory=Counter)  # why → how many, for everything left out


def _kind_skip(name: str) -> str:
    """"" when a file's name says it is text worth indexing, else why not."""
    if name in TEXT_NAMES:
        return ""
    dot = name.rfind(".")
    suffix = name[dot:].lower() if dot > 0 else ""
    return "" if suffix in TEXT_SUFFIXES else f"not a text kind that is indexed ({suffix or 'no suffix'})"


def scan_folder(folder: ContextFolder) -> Scan:
    """What of a context folder is indexed: all of it, or an installed package's searched folders."""
    if folder.package is None:
        return scan(folder.path)
    result = Scan()
    for part in folder.package.parts:
        found = scan(folder.path / part)
        result.files.update({f"{part}/{rel}": sig for rel, sig in found.files.items()})
        result.skipped += [(f"{part}/{rel}", why) for rel, why in found.skipped]
        result.counts.update(found.counts)
    return result


def scan(root: Path) -> Scan:
    """Every text file under ``root`` that is indexed, and what is skipped, without leaving ``root``."""
    result = Scan()
    if not root.is_dir():
        return result
    real_root = os.path.realpath(root)
    pending = [("", str(root))]
    while pending:
        rel_dir, full_dir = pending.pop()
        try:
            with os.scandir(full_dir) as it:
                entries = list(it)
        except OSError as exc:
            result.skipped.append((rel_dir or ".", f"cannot be listed: {exc.strerror}"))
            continue
        marker = build_folder(entries)
        if marker and rel_dir:
            result.skipped.append((rel_dir.rstrip("/"), f"skipped: {marker}"))
            result.counts[marker] += 1
            continue
        for entry in entries:
            name, rel = entry.name, rel_dir + entry.name
            try:
                if entry.is_symlink():
                    _symlink(entry, rel, real_root, result)
                    continue
                if entry.is_dir():
                    if name.startswith(".") or name in TOOL_DIRS:
                        result.counts["hidden or tool folder (.git, __pycache__, node_modules …)"] += 1
                    else:
                        pending.append((rel + "/", entry.path))
                    continue
                why = _kind_skip(name)
                if why:
                    result.counts[why] += 1
                    continue
                st = entry.stat()
            except OSError as exc:
                result.skipped.append((rel, f"cannot be read: {exc.strerror}"))
                continue
            limit = MAX_NOTEBOOK_BYTES if name.endswith(".ipynb") else MAX_FILE_BYTES
            if st.st_size > limit:
                result.skipped.append((rel, f"larger than {limit // (1024 * 1024)} MB ({st.st_size / 1e6:.1f} MB)"))
                result.counts["too large"] += 1
                continue
            result.files[rel] = (st.st_mtime_ns, st.st_size)
    return result


def _symlink(entry: os.DirEntry[str], rel: str, real_root: str, result: Scan) -> None:
    target = os.path.realpath(entry.path)
    if entry.is_dir():
        if _inside(target, real_root):
            result.counts["link to a folder inside this one (indexed there)"] += 1
            return
        result.skipped.append((rel, f"a link to a folder ({target}), not followed: name that folder in "
                                    f"[agent] context_dir or copy it here"))
        result.counts["linked folder, not followed"] += 1
        return
    if not _inside(target, real_root):
        result.skipped.append((rel, f"a link to a file outside the folder ({target}), not followed"))
        result.counts["link out of the folder, not followed"] += 1
        return
    if _kind_skip(entry.name):
        result.counts[_kind_skip(entry.name)] += 1
        return
    st = os.stat(target)
    if st.st_size <= MAX_FILE_BYTES:
        result.files[rel] = (st.st_mtime_ns, st.st_size)


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def read_inside(root: Path, rel: str) -> bytes | None:
    """The bytes of ``root/rel`` when its real path (every link resolved) is inside ``root``; else None."""
    real = os.path.realpath(root / rel)
    if not _inside(real, os.path.realpath(root)):
        return None
    try:
        with open(real, "rb") as f:
            return f.read()
    except OSError:
        return None
