"""Units of source code: Python by indentation, C/C++/CUDA by braces, both read lexically.

Regular expressions over the whole text rather than a parser: they never fail on code a parser
rejects (templates, macros, decorated DSL code, half-written files), and they are fast: cutting the
clones' C++ takes half the CPU time tree-sitter's CUDA grammar needs only to parse it (13 against
6.4 MB/s, bench/RESULTS.md).

A unit is a top-level definition with the comments right above it (a function, a class or struct, a
namespace-level declaration), or a run of other top-level statements; a unit longer than
``MAX_LINES`` is cut at the definitions or statements one level in (a class's methods, a function's
statements), and so on down. Comments and docstrings are a file's prose, the rest its code.
"""

from __future__ import annotations

import bisect
import re
from functools import cache, partial

from kerneltui.core.agent.search.chunks import (
    MAX_LINES,
    TITLE_CHARS,
    SpanLayout,
    Unit,
    line_matches,
    line_starts,
)

# -- Python -------------------------------------------------------------------------------------------

_PY_COMMENT_LINE = r"[ \t]*#[^\n]*"
_PY_TRIPLE = re.compile(r"(\"\"\"|''')")
_PREFIXES = frozenset({"", "r", "u", "b", "f", "rb", "br", "rf", "fr"})
_PY_DEF = re.compile(r"(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)")
_PY_CELL = re.compile(r"[ \t]*#[ \t]*%%")


@cache
def _py_statement(indent: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Lines indented exactly ``indent`` that start a statement (not a comment or a closing bracket): at
    the text's start, and after a line break (see ``chunks.line_matches``)."""
    line = rf"[ \t]{{{indent}}}(?=[^\s#)\]}}])"
    return re.compile(line), re.compile("\n" + line)


def _statement_lines(layout: SpanLayout, lo: int, hi: int, indent: int) -> list[int]:
    at_start, after_break = _py_statement(indent)
    lines = [0] if lo == 0 and at_start.match(layout.text, 0, layout.starts[hi]) else []
    lines += [layout.line_of(m.start() + 1)
              for m in after_break.finditer(layout.text, max(0, layout.starts[lo] - 1), layout.starts[hi])]
    return lines


def python_layout(text: str) -> SpanLayout:
    starts = line_starts(text)

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    comment_spans = line_matches(_PY_COMMENT_LINE, text)
    comment_lines = {line_of(s) for s, _ in comment_spans}
    prose = list(comment_spans)
    blocked: set[int] = set()  # lines inside a multi-line string: never a statement start
    open_at = -1
    delim = ""
    for m in _PY_TRIPLE.finditer(text):
        if open_at < 0:
            if line_of(m.start()) not in comment_lines:
                open_at, delim = m.start(), m.group(1)
        elif m.group(1) == delim:
            first, last = line_of(open_at), line_of(m.end())
            blocked.update(range(first + 1, last + 1))
            if text[starts[first]:open_at].strip().lower() in _PREFIXES:  # a string statement: a docstring
                prose.append((open_at, m.end()))
            open_at = -1
    layout = SpanLayout(text, _merge(sorted(prose)), starts=starts)
    layout.units = _python_units(layout, blocked, comment_lines, 0, layout.line_count(), 0, "")
    return layout


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _python_units(layout: SpanLayout, blocked: set[int], comments: set[int], lo: int, hi: int, indent: int,
                  parent: str) -> list[Unit]:
    """Units of lines lo..hi at one indentation: definitions with their comments, runs of statements."""
    cuts: list[int] = []
    previous = ""  # "def", "decorator" or "stmt": the kind of the last statement at this indentation
    marks = _statement_lines(layout, lo, hi, indent)
    cells = [i for i in comments if lo <= i < hi and _PY_CELL.match(layout.line(i))] if indent == 0 else []
    for i in sorted({*marks, *cells}):
        if i in blocked:
            continue
        if i in comments:  # a "# %%" cell marker (sphinx-gallery tutorials, notebooks saved as scripts)
            cuts.append(i)
            previous = "stmt"
            continue
        stripped = layout.line(i).lstrip()
        kind = "decorator" if stripped.startswith("@") else ("def" if _PY_DEF.match(stripped) else "stmt")
        if kind in ("def", "decorator") and previous != "decorator":
            start = i
            while start > lo and start - 1 in comments:
                start -= 1  # the comments right above a definition belong to it
            cuts.append(start)
        elif kind == "stmt" and previous in ("def", "decorator"):
            cuts.append(i)
        previous = kind
    bounds = sorted({lo, *[c for c in cuts if lo <= c < hi], hi})
    cell_starts = set(cells)
    units: list[Unit] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        title = _python_title(layout, start, end)
        title = f"{parent} > {title}" if parent and title else (title or parent)
        if end - start > MAX_LINES:
            inner = _inner_indent(layout, blocked, start, end, indent)
            if inner is not None:
                units.extend(_python_units(layout, blocked, comments, start, end, inner, title))
                continue
        units.append(Unit(start, end, title, start in cell_starts))
    return units


def _python_title(layout: SpanLayout, start: int, end: int) -> str:
    for i in range(start, min(end, start + 12)):
        line = layout.line(i).strip()
        if _PY_DEF.match(line):
            return line.rstrip(":")[:TITLE_CHARS]
    return ""


def _inner_indent(layout: SpanLayout, blocked: set[int], lo: int, hi: int, indent: int) -> int | None:
    """The indentation of the statements one level inside lines lo..hi, if there are any."""
    for i in range(lo + 1, hi):
        if i in blocked:
            continue
        line = layout.line(i)
        stripped = line.lstrip(" \t")
        width = len(line) - len(stripped)
        if width > indent and stripped and stripped[0] not in "#)]}":
            return width
    return None


# -- C, C++, CUDA -------------------------------------------------------------------------------------

_C_LEX = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*[\s\S]*?\*/')
_C_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_C_BRACE = re.compile(r"[{}]")
_C_SEMI = re.compile(r";")
_C_DIRECTIVE = r"[ \t]*#[^\n]*"  # a line that is a preprocessor directive
# A brace that opens a namespace or extern "C" body: what is inside is read as if at the top level.
# Matched where the keyword starts (found by str.find): a leading \b would make the engine try every offset.
_C_TRANSPARENT_OPEN = {"namespace": re.compile(r'namespace\b[\w\s:]*\{'),
                       "extern": re.compile(r'extern\s+"C(?:\+\+)?"\s*\{')}
_C_HEAD_SKIP = re.compile(r"^(?:template\s*<.*>|#.*|[{}].*|public:|private:|protected:|(?:using )?namespace\b.*)$")
_C_MACRO = re.compile(r"^[A-Z][A-Z0-9_]*(?:\s+[A-Z][A-Z0-9_]*)*$")  # CUTLASS_DEVICE, CUTE_HOST_DEVICE … on a line of their own
_C_NAMED = re.compile(r"[(=]|\b(?:struct|class|union|enum)\b")  # a line that names what it declares
_C_INCLUDE = r"[ \t]*#[ \t]*include\b[^\n]*"


class _CStructure:
    """Where a C-family file's braces are and how deep each part of it is, read from its code alone.

    The clones' C++ has 300,000 braces: each is a plain tuple, and the few that open a namespace are
    found by one search over the file rather than by reading what precedes every brace."""

    def __init__(self, text: str, comments: list[tuple[int, int]]) -> None:
        pieces: list[str] = []
        at = 0
        for s, e in comments:  # comments blanked, their line breaks kept
            pieces.append(text[at:s])
            pieces.append("\n" * text.count("\n", s, e))
            at = e
        pieces.append(text[at:])
        code = self.code = _C_STRING.sub('""', "".join(pieces))  # strings emptied: their braces are not code
        self.starts = line_starts(code)
        namespaces = _transparent_opens(code)
        # Per brace: its offset, the scopes open after it (namespaces and extern "C" not counted), and
        # whether it opens or closes a namespace or extern "C" body.
        self.braces: list[tuple[int, int, bool]] = []
        stack: list[bool] = []
        depth = 0
        for m in _C_BRACE.finditer(code):
            at = m.start()
            if code[at] == "{":
                transparent = at in namespaces
                stack.append(transparent)
                if not transparent:
                    depth += 1
            else:
                transparent = stack.pop() if stack else False
                if not transparent and depth > 0:
                    depth -= 1
            self.braces.append((at, depth, transparent))
        self._offsets = [b[0] for b in self.braces]
        self._directives = line_matches(_C_DIRECTIVE, code)
        self._directive_starts = [s for s, _ in self._directives]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def line(self, i: int) -> str:
        return self.code[self.starts[i]:self.starts[i + 1] - 1]

    def cuts(self, level: int, lo: int, hi: int) -> set[int]:
        """Lines (of lo..hi) after which a statement at depth ``level`` ends: a ';', a '}', a directive."""
        lo_off, hi_off = self.starts[lo], self.starts[hi]
        first = bisect.bisect_left(self._offsets, lo_off)
        last = bisect.bisect_left(self._offsets, hi_off)
        depth = self.braces[first - 1][1] if first > 0 else 0
        lines: set[int] = set()
        at = lo_off
        for offset, after, transparent in self.braces[first:last]:
            if depth == level:
                lines.update(self._statement_ends(at, offset))
            if transparent or (after == level and self.code[offset] == "}"):
                lines.add(self.line_of(offset))
            depth, at = after, offset + 1
        if depth == level:
            lines.update(self._statement_ends(at, hi_off))
        return {i + 1 for i in lines if lo <= i < hi - 1}

    def _statement_ends(self, start: int, end: int) -> set[int]:
        found = {self.line_of(m.start()) for m in _C_SEMI.finditer(self.code, start, end)}
        first = bisect.bisect_left(self._directive_starts, start)
        last = bisect.bisect_left(self._directive_starts, end)
        for s, e in self._directives[first:last]:
            if not self.code[s:min(e, end)].rstrip().endswith("\\"):  # not continued on the next line
                found.add(self.line_of(s))
        return found

    def title(self, start: int, end: int) -> str:
        """The declaration a unit starts with: past template headers, macros and namespaces."""
        angle = 0  # open '<' of a template header still to close
        for i in range(start, min(end, start + 16)):
            text = self.line(i).strip()
            if angle > 0 or text.startswith("template"):
                angle += text.count("<") - text.count(">")
                angle = max(angle, 0)
                continue
            if text and not _C_HEAD_SKIP.match(text) and not _C_MACRO.match(text):
                if not _C_NAMED.search(text) and i + 1 < end:  # "static void" above the function's name
                    text += " " + self.line(i + 1).strip()
                return " ".join(text.split()).rstrip("{ ")[:TITLE_CHARS]
        return ""


def c_layout(text: str) -> SpanLayout:
    comments = [(m.start(), m.end()) for m in _C_LEX.finditer(text) if text[m.start()] == "/"]
    includes = line_matches(_C_INCLUDE, text)
    layout = SpanLayout(text, comments, noise_spans=includes)
    structure = _CStructure(text, comments)
    layout.units = _c_units(structure, 0, layout.line_count(), 0, "")
    return layout


def _transparent_opens(code: str) -> set[int]:
    """The offsets of the braces that open a namespace or an extern "C" body."""
    found: set[int] = set()
    for word, pattern in _C_TRANSPARENT_OPEN.items():
        at = code.find(word)
        while at >= 0:
            if at == 0 or not (code[at - 1].isalnum() or code[at - 1] == "_"):
                m = pattern.match(code, at)
                if m:
                    found.add(m.end() - 1)
            at = code.find(word, at + len(word))
    return found


def _c_units(structure: _CStructure, lo: int, hi: int, level: int, parent: str) -> list[Unit]:
    bounds = sorted({lo, *structure.cuts(level, lo, hi), hi})
    units: list[Unit] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        if end - start > MAX_LINES and level < 3:
            inner = structure.cuts(level + 1, start, end)
            if inner:
                units.extend(_c_units(structure, start, end, level + 1, _c_title(structure, start, end, parent)))
                continue
        units.append(Unit(start, end, "", namer=partial(_c_title, structure, start, end, parent)))
    return units


def _c_title(structure: _CStructure, start: int, end: int, parent: str) -> str:
    title = structure.title(start, end)
    return f"{parent} > {title}" if parent and title else (title or parent)


# Words before a "(" in a C++ declaration that are not the name it declares.
_C_NOT_NAMES = frozenset({"decltype", "sizeof", "alignof", "alignas", "noexcept", "requires", "__attribute__",
                          "__launch_bounds__", "__declspec", "__align__", "static_assert", "if", "for", "while",
                          "switch", "return", "defined", "operator"})
_C_CALLED = re.compile(r"(~?[A-Za-z_]\w*)\s*\(")


def c_definitions(title: str) -> list[str]:
    """The functions a C/C++ chunk's title defines: ``make_tma_copy`` for ``auto make_tma_copy(T const& t)``
    (a Python title says ``def``; C++ only puts a name before its bracket). A declaration or statement that
    ends with ";", a macro call in capitals and a keyword are not definitions."""
    names: list[str] = []
    for piece in title.split("; "):
        unit = piece.rsplit(" > ", 1)[-1].strip()
        if not unit or unit.endswith(";"):
            continue
        for m in _C_CALLED.finditer(unit):
            name = m.group(1).lstrip("~")
            if name in _C_NOT_NAMES or name.isupper():
                continue
            if name not in names:
                names.append(name)
            break
    return names
