"""Cutting a file into chunks that follow its structure, whatever its kind.

Each kind of file (``chunk_code`` for Python and C/C++/CUDA, ``chunk_docs`` for Markdown, reST,
notebooks and plain text) is read into a :class:`Layout`: which parts of it are prose (comments,
docstrings, Markdown text) and which are code, and the *units* a person would name (a function with
its comments, a class, a section under a heading, a notebook cell). :func:`pack` then makes chunks
of them: small units are merged up to ``TARGET_LINES``, units longer than ``MAX_LINES`` are cut at
blank lines, blank lines at either end are dropped, and chunks with no text are never made, so every
chunk's line range lies inside the file and starts and ends on a line with a word on it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, count
from operator import add
from typing import Protocol

TARGET_LINES = 50  # merge small units up to this many lines
MIN_LINES = 10  # a unit shorter than this is merged with a neighbour even past TARGET_LINES
MAX_LINES = 100  # a unit longer than this is split
MAX_CHARS = 12_000  # and so is one with very long lines (tables, minified text)
TITLE_CHARS = 160
# A line without a letter or a digit ("}", "////////", "---") says nothing on its own: chunks never
# start or end on one, and a chunk of nothing else is not made.
_ALNUM = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive; always a line with text on it
    end_line: int  # inclusive, <= the file's line count
    title: str  # what the chunk is: "def dot(…)", "Layouts > Swizzles", "struct Swizzle"
    doc: str  # its prose: comments, docstrings, Markdown text
    code: str  # its code


@dataclass(frozen=True)
class Unit:
    start: int  # 0-based line index, inclusive
    end: int  # exclusive
    title: str
    # Starts a new section (a "# %%" cell, a top-level heading): merged into what comes before only
    # when that is a scrap.
    opens: bool = False
    # Reads the title when it is asked for, if ``title`` is not given: a chunk's title keeps only the
    # first TITLE_CHARS of its units' titles, so most of a header's many small declarations are never
    # named (reading every one was a fifth of the time to cut C++).
    namer: Callable[[], str] | None = field(default=None, compare=False)

    def name(self) -> str:
        return self.namer() if self.namer is not None else self.title

    def moved(self, start: int, end: int, opens: bool) -> Unit:
        """The same unit (and title) over other lines."""
        return Unit(start, end, self.title, opens, self.namer)


class Layout(Protocol):
    units: list[Unit]

    def line_count(self) -> int: ...

    def blank(self, i: int) -> bool: ...

    def size(self, start: int, end: int) -> int: ...

    def prose(self, start: int, end: int) -> str: ...

    def code(self, start: int, end: int) -> str: ...


def line_starts(text: str) -> list[int]:
    """The offset of every line's first character, and one past the end (so line i is starts[i]:starts[i+1])."""
    lengths = map(len, text.split("\n"))
    # starts[i] = the lengths of the lines before i, plus their i line breaks (all of it in C).
    return list(map(add, accumulate(lengths, initial=0), count()))


@cache
def _after_line_break(pattern: str) -> re.Pattern[str]:
    return re.compile("\n(?:" + pattern + ")")


@cache
def _at_start(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def line_matches(pattern: str, text: str) -> list[tuple[int, int]]:
    """The spans of ``pattern`` matched at the start of a line, each line's start.

    Found by searching for the line break first: with ``^`` in MULTILINE mode the regex engine tries
    the pattern at every offset of the text, four times slower over the clones' C++."""
    spans: list[tuple[int, int]] = []
    first = _at_start(pattern).match(text)
    if first:
        spans.append((0, first.end()))
    spans.extend((m.start() + 1, m.end()) for m in _after_line_break(pattern).finditer(text))
    return spans


@dataclass
class SpanLayout:
    """A file as its text, the character spans that are prose, and its units."""

    text: str
    prose_spans: list[tuple[int, int]]  # sorted, not overlapping
    units: list[Unit] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    # Text that is neither prose nor code worth indexing (#include lines: every file that includes a
    # header would otherwise match the header's words). Sorted, not overlapping.
    noise_spans: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.starts:
            self.starts = line_starts(self.text)
        self._span_starts = [s for s, _ in self.prose_spans]
        self._not_code = sorted(self.prose_spans + self.noise_spans)
        self._not_code_starts = [s for s, _ in self._not_code]

    def line_count(self) -> int:
        return len(self.starts) - 1

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def line(self, i: int) -> str:
        return self.text[self.starts[i]:self.starts[i + 1] - 1]

    def blank(self, i: int) -> bool:
        return _ALNUM.search(self.line(i)) is None

    def size(self, start: int, end: int) -> int:
        return self.starts[end] - self.starts[start]

    def _spans(self, start: int, end: int, spans: list[tuple[int, int]], starts: list[int]) -> list[tuple[int, int]]:
        lo, hi = self.starts[start], self.starts[end]
        first = max(0, bisect.bisect_right(starts, lo) - 1)
        last = bisect.bisect_left(starts, hi)
        return [(max(s, lo), min(e, hi)) for s, e in spans[first:last] if e > lo and s < hi]

    def prose(self, start: int, end: int) -> str:
        # Comment markers and quotes stay: the tokenizer skips them.
        return "\n".join(self.text[s:e] for s, e in self._spans(start, end, self.prose_spans, self._span_starts))

    def code(self, start: int, end: int) -> str:
        lo, hi = self.starts[start], self.starts[end]
        pieces: list[str] = []
        at = lo
        for s, e in self._spans(start, end, self._not_code, self._not_code_starts):
            if s > at:
                pieces.append(self.text[at:s])
            at = max(at, e)
        pieces.append(self.text[at:hi])
        return "".join(pieces)


@dataclass
class LineLayout:
    """A file as, per line, its prose and its code (for notebooks, whose text is not the file's)."""

    doc: list[str]
    code_lines: list[str]
    units: list[Unit] = field(default_factory=list)

    def line_count(self) -> int:
        return len(self.doc)

    def blank(self, i: int) -> bool:
        return _ALNUM.search(self.doc[i]) is None and _ALNUM.search(self.code_lines[i]) is None

    def size(self, start: int, end: int) -> int:
        return sum(len(self.doc[i]) + len(self.code_lines[i]) + 1 for i in range(start, end))

    def prose(self, start: int, end: int) -> str:
        return "\n".join(t for t in self.doc[start:end] if t.strip())

    def code(self, start: int, end: int) -> str:
        return "\n".join(t for t in self.code_lines[start:end] if t.strip())


def _split_long(layout: Layout, unit: Unit) -> list[Unit]:
    """Cut a unit longer than MAX_LINES (or MAX_CHARS) into pieces, at blank lines where there are some."""
    pieces: list[Unit] = []
    start = unit.start
    while start < unit.end:
        end = min(unit.end, start + MAX_LINES)
        while end > start + 1 and layout.size(start, end) > MAX_CHARS:
            end = start + max(1, (end - start) // 2)
        if end < unit.end:
            lowest = start + (end - start) // 2
            for i in range(end - 1, lowest, -1):
                if layout.blank(i):
                    end = i + 1
                    break
        pieces.append(unit.moved(start, end, unit.opens and not pieces))
        start = end
    return pieces


def pack(layout: Layout) -> list[Chunk]:
    """Chunks from the layout's units: merged while small, split while large, trimmed, never empty."""
    units: list[Unit] = []
    for unit in layout.units:
        if unit.end - unit.start > MAX_LINES or layout.size(unit.start, unit.end) > MAX_CHARS:
            units.extend(_split_long(layout, unit))
        elif unit.end > unit.start:
            units.append(unit)
    groups: list[list[Unit]] = []
    for unit in units:
        if groups:
            last = groups[-1]
            span = unit.end - last[0].start
            # A scrap (an #endif, a closing brace with its comment) joins its neighbour even past the target:
            # alone it would be a chunk that wins on length alone.
            scrap = last[-1].end - last[0].start < MIN_LINES
            small = unit.end - unit.start < MIN_LINES or scrap
            if (not unit.opens or scrap) and (span <= TARGET_LINES or (small and span <= MAX_LINES)) and \
                    layout.size(last[0].start, unit.end) <= MAX_CHARS:
                last.append(unit)
                continue
        groups.append([unit])
    chunks: list[Chunk] = []
    for group in groups:
        start, end = group[0].start, group[-1].end
        while start < end and layout.blank(start):
            start += 1
        while end > start and layout.blank(end - 1):
            end -= 1
        prose, code = layout.prose(start, end), layout.code(start, end)
        if start >= end or not (_ALNUM.search(prose) or _ALNUM.search(code)):
            continue  # nothing but blank lines, punctuation or #include lines
        titles: list[str] = []
        length = -2  # of the titles joined with "; "
        for unit in group:
            if length >= TITLE_CHARS:
                break  # what follows would be cut off
            title = unit.name()
            if title and title not in titles:
                titles.append(title)
                length += len(title) + 2
        chunks.append(Chunk(start + 1, end, "; ".join(titles)[:TITLE_CHARS], prose, code))
    return chunks


_LICENSE = re.compile(r"copyright|spdx-license|licensed under|redistribution and use", re.I)


def drop_license(layout: SpanLayout) -> None:
    """Leave out a licence comment at the top of a file (every cutlass file opens with 30 lines of one):
    it says nothing about the code and its words are in every file."""
    if not layout.prose_spans:
        return
    first_start, end = layout.prose_spans[0]
    if layout.text[:first_start].strip():
        return
    for s, e in layout.prose_spans[1:]:  # a licence written as a run of line comments
        if layout.text[end:s].strip() or not layout.text.startswith(("//", "#"), s):
            break
        end = e
    if not _LICENSE.search(layout.text[first_start:end]):
        return
    cut = layout.line_of(end) + 1
    layout.units = [u.moved(max(u.start, cut), u.end, u.opens) for u in layout.units if u.end > cut]


def paragraphs(layout: Layout, lo: int = 0, hi: int | None = None, title: str = "") -> list[Unit]:
    """Units made of the paragraphs (runs of lines between blank lines) of lines lo..hi."""
    hi = layout.line_count() if hi is None else hi
    units: list[Unit] = []
    start: int | None = None
    for i in range(lo, hi):
        if layout.blank(i):
            if start is not None:
                units.append(Unit(start, i, title))
                start = None
        elif start is None:
            start = i
    if start is not None:
        units.append(Unit(start, hi, title))
    return units
