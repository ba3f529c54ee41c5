"""Units of documents: sections under headings (Markdown, reST), cells (notebooks), paragraphs.

A section's title is the chain of headings above it ("CuTe Layouts > Coalesce"), so a hit says where
in the document it is. Code blocks are the code of a document, the rest is prose. A notebook's units
are its cells, read from the JSON; a chunk's lines are those of the ``.ipynb`` file itself (where the
cell's source lines are written), so ``read_file`` shows the same lines.
"""

from __future__ import annotations

import json
import re

from kerneltui.core.agent.search.chunks import TITLE_CHARS, LineLayout, SpanLayout, Unit, paragraphs

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*", re.M)
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$", re.M)
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`*+#:.])\1{2,}\s*$")
_RST_LITERAL = re.compile(r"^\s*\.\. (?:code-block|code|sourcecode|literalinclude)::|::\s*$")

Headings = list[tuple[int, str]]  # (level, title) from the outermost in
OPENING_LEVEL = 2  # a section under a heading this high or higher is not merged into the one before


def _chain(stack: Headings, level: int, title: str) -> Headings:
    return [(lv, t) for lv, t in stack if lv < level] + [(level, title.strip())]


def _title(stack: Headings) -> str:
    return " > ".join(t for _, t in stack)[:TITLE_CHARS]


def _complement(spans: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    at = 0
    for s, e in spans:
        if s > at:
            out.append((at, s))
        at = e
    if at < size:
        out.append((at, size))
    return out


def markdown_layout(text: str) -> SpanLayout:
    code: list[tuple[int, int]] = []
    open_at, marker = -1, ""
    for m in _FENCE.finditer(text):
        if open_at < 0:
            open_at, marker = m.start(), m.group(1)
        elif m.group(1) == marker:
            code.append((open_at, m.end()))
            open_at = -1
    if open_at >= 0:
        code.append((open_at, len(text)))
    layout = SpanLayout(text, _complement(code, len(text)))
    units: list[Unit] = []
    stack: Headings = []
    start, opens = 0, False
    fences = iter(code)
    fence = next(fences, None)
    for m in _MD_HEADING.finditer(text):
        while fence is not None and fence[1] <= m.start():
            fence = next(fences, None)
        if fence is not None and fence[0] <= m.start():
            continue  # a "# comment" inside a code block
        line = layout.line_of(m.start())
        if line > start:
            units.append(Unit(start, line, _title(stack), opens))
        stack = _chain(stack, len(m.group(1)), m.group(2))
        start, opens = line, len(m.group(1)) <= OPENING_LEVEL
    units.append(Unit(start, layout.line_count(), _title(stack), opens))
    layout.units = units
    return layout


def rst_layout(text: str) -> SpanLayout:
    layout = SpanLayout(text, [])
    lines = text.split("\n")
    code_lines: list[int] = []
    units: list[Unit] = []
    stack: Headings = []
    levels: list[str] = []  # underline characters in the order they first appear: reST's heading levels
    start, opens = 0, False
    literal_indent = -1  # inside a literal or code block: lines indented more than this are code
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent >= 0:
            if not stripped or indent > literal_indent:
                if stripped:
                    code_lines.append(i)
                continue
            literal_indent = -1
        if _RST_LITERAL.search(line):
            literal_indent = indent
        if i + 1 < len(lines) and stripped and not _RST_UNDERLINE.match(line):
            under = _RST_UNDERLINE.match(lines[i + 1])
            if under and len(lines[i + 1].strip()) >= len(stripped):
                mark = under.group(1)
                if mark not in levels:
                    levels.append(mark)
                head = i - 1 if i > 0 and _RST_UNDERLINE.match(lines[i - 1]) else i  # an overline
                if head > start:
                    units.append(Unit(start, head, _title(stack), opens))
                stack = _chain(stack, levels.index(mark) + 1, stripped)
                start, opens = head, levels.index(mark) + 1 <= OPENING_LEVEL
    units.append(Unit(start, len(lines), _title(stack), opens))
    code = [(layout.starts[i], layout.starts[i + 1]) for i in code_lines]
    layout = SpanLayout(text, _complement(_join(code), len(text)), starts=layout.starts)
    layout.units = units
    return layout


def _join(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def notebook_layout(text: str) -> LineLayout:
    """Cells of a Jupyter notebook, placed on the lines of the JSON file that hold their source."""
    lines = text.split("\n")
    layout = LineLayout([""] * len(lines), [""] * len(lines))
    cells = json.loads(text).get("cells", [])  # a ValueError here: the file is read as plain text
    cursor = 0
    stack: Headings = []
    units: list[Unit] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        parts = [str(p) for p in source] if isinstance(source, list) else str(source).splitlines(keepends=True)
        if not "".join(parts).strip():
            continue
        first = _find_source_line(lines, cursor, parts[0])
        if first is None:
            continue
        markdown = cell.get("cell_type") == "markdown"
        at = first
        for part in parts:
            found = _find_source_line(lines, at, part, window=3)
            if found is None:  # a source kept as one string: all of it on its one line
                found = first
            line = part.rstrip("\n")
            heading = _MD_HEADING.match(line) if markdown else None
            if heading:
                stack = _chain(stack, len(heading.group(1)), heading.group(2))
            if markdown or line.lstrip().startswith("#"):
                layout.doc[found] = (layout.doc[found] + " " + line.strip().lstrip("#").strip()).strip()
            else:
                layout.code_lines[found] = (layout.code_lines[found] + "\n" + line).lstrip("\n")
            at = max(at, found + 1)
        units.append(Unit(first, min(at, len(lines)), _title(stack)))
        cursor = min(at, len(lines) - 1)
    layout.units = units
    return layout


def _find_source_line(lines: list[str], start: int, part: str, window: int = 100_000) -> int | None:
    """The line (from ``start``) on which the JSON string of this source line is written."""
    wanted = {json.dumps(part, ensure_ascii=False), json.dumps(part)}
    for i in range(start, min(len(lines), start + window)):
        if any(w in lines[i] for w in wanted):
            return i
    return None


def plain_layout(text: str) -> SpanLayout:
    layout = SpanLayout(text, [(0, len(text))])
    layout.units = paragraphs(layout)
    return layout
