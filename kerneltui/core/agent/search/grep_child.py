"""The matching half of ``grep_context``, run as a script in a process of its own (standard library only).

Python's ``re`` cannot be interrupted: a pattern that backtracks catastrophically (``(a+)+$``) holds
the interpreter, and the GIL, until it is done. Run here, the parent's deadline can end it with a
kill and keep every line written before; the parent's event loop never waits on it.

Reads one JSON job from stdin::

    {"pattern": "...", "flags": 0, "max": 50, "after": 0, "deadline_s": 3.0, "max_bytes": 2097152,
     "max_line": 4000, "files": ["/abs/path", ...]}

and writes one JSON array per line, flushed as it goes: ``["f", i]`` before file i,
``["m", i, line, text, [lines after]]`` per shown match (the first ``max`` of all), ``["c", i, n]``
the matches of file i, ``["s", i, why]`` a file skipped (``binary``, ``large``, ``unreadable``),
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


def main() -> int:
    job = json.loads(sys.stdin.read())
    pattern = re.compile(job["pattern"], job["flags"])
    deadline = time.monotonic() + float(job["deadline_s"])
    shown_left = int(job["max"])
    after = int(job["after"])
    max_bytes = int(job["max_bytes"])
    max_line = int(job["max_line"])
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
        if not pattern.search(text):  # most files hold no match: one pass over the whole text decides
            continue
        lines = text.splitlines()
        count = 0
        for number, line in enumerate(lines, 1):
            # A long line (minified data) is matched on its start only: its length bounds the backtracking.
            if pattern.search(line[:max_line]):
                count += 1
                if shown_left > 0:
                    shown_left -= 1
                    following = [s[:TEXT_CHARS] for s in lines[number : number + after]]
                    _emit("m", i, number, line[:TEXT_CHARS], following)
            if number % 2000 == 0 and time.monotonic() > deadline:
                break
        _emit("c", i, count)
    _emit("end", "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
