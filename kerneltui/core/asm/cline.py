"""Source maps for generated CUDA C++ from its ``#line`` directives (TileLang's generated source).

``#line N "file"`` says that the next line of the text came from ``file:N``. The compiler counts
on from there (the line after it is ``N + 1``, …), but a code generator emits a directive before
each statement it has a span for, and the lines it adds in between (braces, declarations of its
own) belong to no source line; so each directive maps only the line that follows it.
"""

from __future__ import annotations

import re

from kerneltui.core.asm.srcmap import Frame, LineMap

_LINE = re.compile(r'^\s*#\s*line\s+(\d+)(?:\s+"([^"]*)")?')


def parse_line_directives(text: str) -> LineMap:
    out = LineMap()
    pending: Frame | None = None
    current_file = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        m = _LINE.match(raw)
        if m:
            current_file = m.group(2) if m.group(2) is not None else current_file
            pending = Frame(current_file or "<unknown>", int(m.group(1)))
            continue
        if pending is not None and raw.strip():
            out.add(number, (pending,))
            pending = None
    return out
