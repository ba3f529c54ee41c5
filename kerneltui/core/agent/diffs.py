"""Unified diffs: applying the model's, computing our own hunks, and applying a chosen subset.

A proposal may arrive as a whole new file or as a unified diff. Either way it is turned into the new
text, and the hunks shown to the person are recomputed from (base, new) so that per-hunk accept and
reject work the same for both. Models get line numbers wrong, so a hunk is located by its context and
removed lines, starting at the stated line and searching outward.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TypedDict

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffError(Exception):
    """A diff that does not apply, with the hunk and the line that did not match."""


class HunkData(TypedDict):
    """``Hunk.to_dict()``: one hunk of a proposal's diff, as its card and the session log carry it."""

    index: int
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[str]
    header: str


@dataclass
class Hunk:
    index: int
    old_start: int  # 1-based, as in a unified diff header
    old_count: int
    new_start: int
    new_count: int
    lines: list[str] = field(default_factory=list)  # " ctx", "-old", "+new" (no line ends)

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@"

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line.startswith("+"))

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line.startswith("-"))

    def text(self) -> str:
        return "\n".join([self.header, *self.lines])

    def to_dict(self) -> HunkData:
        return {"index": self.index, "old_start": self.old_start, "old_count": self.old_count,
                "new_start": self.new_start, "new_count": self.new_count, "lines": list(self.lines),
                "header": self.header}


def _split(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _groups(old: list[str], new: list[str], context: int) -> list[list[tuple[str, int, int, int, int]]]:
    return list(difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context))


def hunks_between(old_text: str, new_text: str, context: int = 3) -> list[Hunk]:
    old, new = _split(old_text), _split(new_text)
    hunks: list[Hunk] = []
    for n, group in enumerate(_groups(old, new, context)):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [" " + s.rstrip("\r\n") for s in old[a1:a2]]
                continue
            lines += ["-" + s.rstrip("\r\n") for s in old[a1:a2]]
            lines += ["+" + s.rstrip("\r\n") for s in new[b1:b2]]
        # Unified diff convention: an empty range is named by the line before it.
        hunks.append(Hunk(index=n, old_start=i1 + 1 if i2 > i1 else i1, old_count=i2 - i1,
                          new_start=j1 + 1 if j2 > j1 else j1, new_count=j2 - j1, lines=lines))
    return hunks


def unified_diff(old_text: str, new_text: str, path: str, context: int = 3) -> str:
    hunks = hunks_between(old_text, new_text, context)
    if not hunks:
        return ""
    return "\n".join([f"--- a/{path}", f"+++ b/{path}", *(h.text() for h in hunks)]) + "\n"


def apply_hunk_subset(old_text: str, new_text: str, selected: set[int], context: int = 3) -> str:
    """``old_text`` with only the chosen hunks of the change to ``new_text`` applied."""
    old, new = _split(old_text), _split(new_text)
    groups = _groups(old, new, context)
    unknown = selected - set(range(len(groups)))
    if unknown:
        raise DiffError(f"no hunk {sorted(unknown)[0]}: the proposal has {len(groups)} hunk(s), numbered from 0")
    out: list[str] = []
    pos = 0
    for n, group in enumerate(groups):
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                continue
            out += old[pos:a1]
            out += new[b1:b2] if n in selected else old[a1:a2]
            pos = a2
    out += old[pos:]
    return "".join(out)


@dataclass
class _ParsedHunk:
    old_start: int | None
    old: list[str]
    new: list[str]


def _parse(diff: str) -> list[_ParsedHunk]:
    hunks: list[_ParsedHunk] = []
    current: _ParsedHunk | None = None
    rows = diff.splitlines()
    skip_next = False
    for i, raw in enumerate(rows):
        if skip_next:
            skip_next = False
            continue
        if raw.startswith("--- ") and i + 1 < len(rows) and rows[i + 1].startswith("+++ "):
            current, skip_next = None, True  # a file header: "--- a/x" then "+++ b/x"
            continue
        if raw.startswith("@@"):
            m = _HEADER.match(raw)
            current = _ParsedHunk(old_start=int(m.group(1)) if m else None, old=[], new=[])
            hunks.append(current)
            continue
        if current is None or raw.startswith("\\"):
            continue  # preamble ("diff --git", "index …"), or "\ No newline at end of file"
        if raw.startswith("+"):
            current.new.append(raw[1:])
        elif raw.startswith("-"):
            current.old.append(raw[1:])
        else:
            # A context line; models often drop the leading space of an empty one.
            line = raw[1:] if raw.startswith(" ") else raw
            current.old.append(line)
            current.new.append(line)
    return hunks


def _matches(lines: list[str], at: int, block: list[str]) -> bool:
    if at < 0 or at + len(block) > len(lines):
        return False
    return all(lines[at + k].rstrip() == block[k].rstrip() for k in range(len(block)))


def _closest_miss(lines: list[str], block: list[str]) -> str:
    best_at, best_len = -1, -1
    for at in range(len(lines)):
        n = 0
        while n < len(block) and at + n < len(lines) and lines[at + n].rstrip() == block[n].rstrip():
            n += 1
        if n > best_len:
            best_at, best_len = at, n
    if best_len <= 0:
        return f"its first line {block[0].strip()!r} is not in the file"
    got = lines[best_at + best_len].rstrip() if best_at + best_len < len(lines) else "(end of file)"
    return (f"lines {best_at + 1}-{best_at + best_len} match, then line {best_at + best_len + 1} is {got.strip()!r} "
            f"where the diff expects {block[best_len].strip()!r}")


def apply_unified_diff(base: str, diff: str, path: str = "the file") -> str:
    """Apply a unified diff to ``base``; raise DiffError naming the hunk and line that do not match."""
    hunks = _parse(diff)
    if not hunks:
        raise DiffError("no hunks found: a unified diff has '@@ -start,count +start,count @@' lines followed by "
                        "' ' (context), '-' (removed) and '+' (added) lines")
    ends_with_newline = base.endswith("\n") or not base
    lines = base.splitlines()
    out: list[str] = []
    pos = 0
    for n, hunk in enumerate(hunks, 1):
        if not hunk.old:
            at = (hunk.old_start or 0) if hunk.old_start is not None else len(lines)
            if at < pos or at > len(lines):
                raise DiffError(f"hunk {n} inserts after line {at}, which is outside {path} or before the previous hunk")
        else:
            hint = (hunk.old_start - 1) if hunk.old_start else pos
            candidates = [at for at in _nearest_first(hint, pos, len(lines)) if _matches(lines, at, hunk.old)]
            if not candidates:
                raise DiffError(f"hunk {n} does not apply to {path}: {_closest_miss(lines, hunk.old)}. "
                                f"Read the current file and send the diff again (or send the whole file)")
            at = candidates[0]
        out += lines[pos:at]
        out += hunk.new
        pos = at + len(hunk.old)
    out += lines[pos:]
    text = "\n".join(out)
    return text + "\n" if ends_with_newline and out else text


def _nearest_first(hint: int, lo: int, n: int) -> list[int]:
    hint = min(max(hint, lo), max(lo, n - 1))
    order = [hint]
    for d in range(1, n + 1):
        for at in (hint - d, hint + d):
            if lo <= at < n:
                order.append(at)
    return order
