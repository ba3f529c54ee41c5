"""The matching half of ``grep_context``, run as a script in a process of its own (standard library only).

Python's ``re`` cannot be interrupted: a pattern that backtracks catastrophically (``(a+)+$``) holds
the interpreter, and the GIL, until it is done. Run here, the parent's deadline can end it with a
kill and keep every line written before; the parent's event loop never waits on it.

Reads one JSON job from stdin::

    {"pattern": "...", "flags": 0, "max": 50, "after": 0, "deadline_s": 3.0, "max_bytes": 2097152,
     "files": ["/abs/path", ...]}

and writes one JSON array per line, flushed as it goes: ``["f", i]`` before file i,
``["m", i, line, text, [lines after]]`` per shown matching line (the first ``max`` of all; a match
that spans lines is shown at its first), ``["c", i, n]`` the matching lines of file i, ``["s", i, why]`` a file skipped (``binary``, ``large``, ``unreadable``),
and last ``["end", why]`` (``""``: every file was searched; ``"time"``: the deadline came first).
"""

from __future__ import annotations

import json
import re
import sys
import time

TEXT_CHARS = 240  # a shown line is cut here


def _emit(*record: object) -> None:
    sys.stdout.write(json.dumps(record) + "\n")


def _lines_after(text: str, stop: int, after: int) -> list[str]:
    """The ``after`` lines that follow the line ending at ``stop``."""
    lines: list[str] = []
    while len(lines) < after and stop < len(text):
        start, stop = stop + 1, text.find("\n", stop + 1)
        stop = len(text) if stop < 0 else stop
        lines.append(text[start:stop].rstrip("\r")[:TEXT_CHARS])
    return lines


def main() -> int:
    job = json.loads(sys.stdin.read())
    pattern = re.compile(job["pattern"], job["flags"])
    deadline = time.monotonic() + float(job["deadline_s"])
    shown_left = int(job["max"])
    after = int(job["after"])
    max_bytes = int(job["max_bytes"])
    for i, path in enumerate(job["files"]):
        if time.monotonic() > deadline:
            _emit("end", "time")
            return 0
        _emit("f", i)
        sys.stdout.flush()  # the parent names the file a kill interrupted by the last of these
        try:
            with open(path, "rb") as f:
                data = f.read(max_bytes + 1)
        except OSError:
            _emit("s", i, "unreadable")
            continue
        if len(data) > max_bytes:
            _emit("s", i, "large")
            continue
        if b"\x00" in data[:8192]:
            _emit("s", i, "binary")
            continue
        text = data.decode("utf-8", errors="replace")
        count = 0
        line = 0  # the line (0-based) of ``at``
        at = 0
        last = -1  # the last line counted: a line with several matches counts once
        # One pass of the pattern over the whole text (its lines found from the offsets) rather than one per
        # line: most of the time goes to files with many matches, and a call per line costs more than the scan.
        for n, m in enumerate(pattern.finditer(text)):
            line += text.count("\n", at, m.start())
            at = m.start()
            if line == last:
                continue
            last = line
            count += 1
            if shown_left > 0:
                shown_left -= 1
                begin = text.rfind("\n", 0, at) + 1
                stop = text.find("\n", at)
                stop = len(text) if stop < 0 else stop
                _emit("m", i, line + 1, text[begin:stop].rstrip("\r")[:TEXT_CHARS], _lines_after(text, stop, after))
            if n % 1000 == 999 and time.monotonic() > deadline:
                break
        if count:
            _emit("c", i, count)
    _emit("end", "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
