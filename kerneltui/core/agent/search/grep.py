"""``grep_context``: a regular expression or a literal over context/ and the installed DSL packages.

The ranked search finds what a question is about; this finds the exact thing: a signature
(``def program_id(``), every use of a name, a constant's value. It searches the context folders as
the index sees them (``folders.scan``: the same text kinds, skips and links) and the installed
DSLs' own language, examples and docs (``installed``), each hit named as ``read_file`` reads it
(``context/…``, ``installed/triton/…``) and labelled with the package and version it comes from.

The matching runs in a process of its own (``grep_child``) under a time limit: ``re`` cannot be
interrupted, and a pattern that backtracks catastrophically would otherwise hold this process (and
the app's event loop) for as long as it takes. Files over ``MAX_FILE_BYTES`` and binary files are
skipped, and what was found before the limit is kept.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.agent.search import folders, grep_child
from kerneltui.core.agent.search.folders import ContextFolder, scan, scan_folder

TIME_LIMIT_S = 4.0  # the whole search; the child stops itself here, and is killed a little after
KILL_GRACE_S = 2.0
MAX_FILE_BYTES = folders.MAX_FILE_BYTES  # as the index: larger files are data, not code
LARGE = f"larger than {MAX_FILE_BYTES // 2**20} MB"
DEFAULT_MAX = 50
MOST_MAX = 500
MOST_AFTER = 10
SOURCES_HELP = "all, context, installed, or one package (triton, cutlass, tilelang)"


class GrepError(Exception):
    """A grep the person or the model can correct: a bad pattern, an unknown source."""


@dataclass(frozen=True)
class GrepQuery:
    pattern: str
    literal: bool = False  # the pattern is text, not a regular expression
    ignore_case: bool = False
    glob: str = ""  # only files whose shown path (or name) matches, e.g. "*.py", "installed/triton/*"
    max_matches: int = DEFAULT_MAX  # matches shown; every match is still counted
    count: bool = False  # only how many matches each file has
    after: int = 0  # lines shown after each match (a signature that continues)
    source: str = "all"  # all | context | installed | a package's name

    def compiled(self) -> re.Pattern[str]:
        flags = re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)
        try:
            return re.compile(re.escape(self.pattern) if self.literal else self.pattern, flags)
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            raise GrepError(
                f"the pattern {self.pattern!r} is not a regular expression: {exc.msg}{where}; escape "
                f"it (\\( for a bracket) or search it as text with literal"
            ) from exc


@dataclass(frozen=True)
class GrepFile:
    path: Path  # the file on disk
    shown: str  # how read_file names it
    label: str  # where it comes from: "context/" or "triton 3.6.0"


@dataclass(frozen=True)
class GrepMatch:
    file: GrepFile
    line: int
    text: str
    after: tuple[str, ...] = ()


@dataclass
class GrepPlan:
    """What a grep searches: the files (context folders first, then the packages), the sources in words, and
    the files the walk left out for their size."""

    files: list[GrepFile]
    sources: list[str]
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass
class GrepResult:
    query: GrepQuery
    sources: list[str]  # what was searched, in words
    files: int = 0  # files searched
    matches: list[GrepMatch] = field(default_factory=list)  # the first query.max_matches
    counts: dict[str, int] = field(default_factory=dict)  # shown path → matches, in search order
    labels: dict[str, str] = field(default_factory=dict)  # shown path → where it comes from
    skipped: Counter[str] = field(default_factory=Counter)  # why → how many files
    stopped: str = ""  # why not every file was searched ("" when all were)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def grep_files(folders: Sequence[ContextFolder], source: str = "all", glob: str = "") -> GrepPlan:
    """The files a grep of ``source`` searches (``search.context_folders``: the context folders, then the
    installed packages'), those ``glob`` keeps."""
    packages = [f.package for f in folders if f.package is not None]
    names = {p.name for p in packages}
    if source not in ("all", "context", "installed") and source not in names:
        installed = ", ".join(sorted(names)) or "none of triton, cutlass, tilelang is installed here"
        raise GrepError(f"unknown source {source!r}: give {SOURCES_HELP} (installed: {installed})")
    files: list[GrepFile] = []
    described: list[str] = []
    large: Counter[str] = Counter()
    if source in ("all", "context"):
        seen: set[str] = set()
        searched = [folder for folder in folders if folder.package is None and folder.path.is_dir()]
        for folder in searched:
            walked = scan(folder.path)
            large[LARGE] += walked.counts["too large"]
            for rel in sorted(walked.files):
                if rel in seen:  # an earlier folder's file of the same name hides this one, as in read_file
                    continue
                seen.add(rel)
                files.append(GrepFile(folder.path / rel, f"context/{rel}", "context/"))
        if searched:
            described.append(f"context/ ({len(searched)} folders)" if len(searched) > 1 else "context/")
    for folder in folders:
        package = folder.package
        if package is None or source not in ("all", "installed", package.name):
            continue
        described.append(f"{package.label} ({', '.join(f'{package.shown}/{p}/' for p in package.parts)})")
        walked = scan_folder(folder)
        large[LARGE] += walked.counts["too large"]
        files += [GrepFile(package.root / rel, f"{package.shown}/{rel}", package.label) for rel in sorted(walked.files)]
    if glob:
        files = [f for f in files if _globbed(f.shown, glob)]
    return GrepPlan(files, described, +large)


def _globbed(shown: str, glob: str) -> bool:
    """A glob with a "/" is matched against the whole shown path, one without against the file's name too."""
    name = shown.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(shown, glob) or ("/" not in glob and fnmatch.fnmatchcase(name, glob))


def grep(query: GrepQuery, plan: GrepPlan, time_limit_s: float = TIME_LIMIT_S) -> GrepResult:
    """Search the plan's files in a child process; what it found before ``time_limit_s`` is kept."""
    pattern = query.compiled()
    files = plan.files
    result = GrepResult(query, plan.sources, files=len(files), skipped=Counter(plan.skipped))
    started = time.perf_counter()
    if not files:
        return result
    job = {
        "pattern": pattern.pattern,
        "flags": int(pattern.flags),
        "max": 0 if query.count else query.max_matches,
        "after": query.after,
        "deadline_s": time_limit_s,
        "max_bytes": MAX_FILE_BYTES,
        "files": [str(f.path) for f in files],
    }
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", grep_child.__file__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    killed = False
    try:
        out, err = proc.communicate(json.dumps(job), timeout=time_limit_s + KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        killed = True
    result.seconds = time.perf_counter() - started
    ended, current = _read(out, files, result)
    if killed:
        stuck = files[current].shown if current is not None else "the first file"
        result.stopped = (
            f"stopped after {time_limit_s + KILL_GRACE_S:.0f} s in {stuck}: the pattern backtracks "
            f"too much there (nested repeats such as (a+)+ or (.*)* take exponential time); "
            f"simplify it or search literal text"
        )
    elif ended == "time":
        done = (current or 0) + 1
        result.stopped = (
            f"stopped at the time limit ({time_limit_s:.0f} s) after {done:,} of {len(files):,} "
            f"files: narrow the search with glob or source"
        )
    elif ended is None:
        raise GrepError(f"the search process failed (exit {proc.returncode}): {err.strip()[-400:]}")
    return result


def _read(out: str, files: list[GrepFile], result: GrepResult) -> tuple[str | None, int | None]:
    """Fill ``result`` from the child's lines; (how it ended, the last file it started)."""
    ended: str | None = None
    current: int | None = None
    for line in out.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            break  # a line cut by the kill
        kind = record[0]
        if kind == "f":
            current = record[1]
        elif kind == "m":
            result.matches.append(GrepMatch(files[record[1]], record[2], record[3], tuple(record[4])))
        elif kind == "c":
            f = files[record[1]]
            result.counts[f.shown] = record[2]
            result.labels[f.shown] = f.label
        elif kind == "s":
            result.skipped[{"binary": "binary", "large": LARGE}.get(record[2], "unreadable")] += 1
        elif kind == "end":
            ended = record[1]
    return ended, current


def format_grep(result: GrepResult) -> str:
    """The result as the model and the person read it: ``path:line: text``, grouped by where it comes from."""
    q = result.query
    kind = "text" if q.literal else "pattern"
    where = "; ".join(result.sources) or "nothing (no context folder and no installed DSL)"
    head = (
        f"{result.total:,} matches of the {kind} {q.pattern!r} in {len(result.counts):,} files "
        f"({result.files:,} files searched{', glob ' + repr(q.glob) if q.glob else ''}) in: {where}"
    )
    out = [head]
    if result.stopped:
        out.append(f"incomplete: {result.stopped}")
    if result.skipped:
        out.append("skipped: " + ", ".join(f"{n} {why}" for why, n in result.skipped.items()))
    if not result.counts:
        out.append(
            "no matches. A regular expression is case-sensitive unless ignore_case; try a shorter "
            "pattern, literal text, or search_context for the words around it."
        )
        return "\n".join(out)
    label = None
    if q.count:
        for shown, n in result.counts.items():
            if result.labels[shown] != label:
                label = result.labels[shown]
                out.append(f"[{label}]")
            out.append(f"{shown}: {n}")
        return "\n".join(out)
    for match in result.matches:
        if match.file.label != label:
            label = match.file.label
            out.append(f"[{label}]")
        out.append(f"{match.file.shown}:{match.line}: {match.text}")
        out.extend(f"{match.file.shown}-{match.line + n}- {text}" for n, text in enumerate(match.after, 1))
    if len(result.matches) < result.total:
        out.append(
            f"(the first {len(result.matches)} of {result.total:,} matches; the counts per file with count, "
            f"fewer with glob or source; read a file with read_file(path, start_line, end_line))"
        )
    return "\n".join(out)
