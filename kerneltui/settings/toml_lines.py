"""Where each key of a TOML file is written: ``tomllib`` parses values but keeps no line numbers.

:func:`key_lines` scans the text once and maps key paths to 1-based line numbers:
``("inplace",)``, ``("tolerance", "atol")``, ``("tests", 2)`` (the third ``[[tests]]`` table or
inline table), ``("tests", 2, "seed")``. It understands table headers, arrays of tables, dotted
keys, inline tables and arrays of inline tables spread over several lines, and skips multi-line
strings. It is a locator for error messages, not a parser: the values come from ``tomllib``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

KeyPath = tuple[str | int, ...]

_KEY = r'(?:[A-Za-z0-9_-]+|"[^"]*"|\'[^\']*\')'
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_TABLE = re.compile(rf"^\s*\[\s*({_DOTTED})\s*\]")
_ARRAY_TABLE = re.compile(rf"^\s*\[\[\s*({_DOTTED})\s*\]\]")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=\s*(.*)$")
_INLINE_KEY = re.compile(rf"({_DOTTED})\s*=")


def _split_key(dotted: str) -> tuple[str, ...]:
    parts = re.findall(_KEY, dotted)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


def _strip_comment(line: str) -> str:
    """The line without a trailing comment (a ``#`` outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def key_lines(text: str) -> dict[KeyPath, int]:
    lines: dict[KeyPath, int] = {}
    counts: dict[tuple[str, ...], int] = {}
    table: KeyPath = ()
    in_string = ""  # the delimiter of a multi-line string being skipped
    # An array (of inline tables) spread over lines: its key path, bracket depth, element count.
    array_path: KeyPath | None = None
    depth = 0
    element = -1
    for number, raw in enumerate(text.splitlines(), 1):
        if in_string:
            if in_string in raw:
                in_string = ""
            continue
        line = _strip_comment(raw)
        if array_path is not None:
            depth, element = _scan_array(line, array_path, depth, element, number, lines)
            if depth <= 0:
                array_path = None
            continue
        if m := _ARRAY_TABLE.match(line):
            name = _split_key(m.group(1))
            index = counts.get(name, 0)
            counts[name] = index + 1
            table = (*name, index)
            lines.setdefault(table, number)
            lines.setdefault(name, number)
            continue
        if m := _TABLE.match(line):
            table = _split_key(m.group(1))
            lines.setdefault(table, number)
            continue
        m = _ASSIGN.match(line)
        if not m:
            continue
        path = (*table, *_split_key(m.group(1)))
        lines.setdefault(path, number)
        value = m.group(2).strip()
        for delim in ('"""', "'''"):
            if value.startswith(delim) and value.count(delim) == 1:
                in_string = delim
        if value.startswith("{"):
            _inline_keys(value, path, number, lines)
        elif value.startswith("["):
            depth, element = _scan_array(value, path, 0, -1, number, lines)
            if depth > 0:
                array_path = path
    return lines


def _scan_array(text: str, path: KeyPath, depth: int, element: int, number: int,
                lines: dict[KeyPath, int]) -> tuple[int, int]:
    """Follow brackets through one line of an array; note where each inline-table element starts."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth <= 0:
                return 0, element
        elif ch == "{" and depth == 1:
            element += 1
            lines.setdefault((*path, element), number)
            _inline_keys(text[i:], (*path, element), number, lines)
    return depth, element


def _inline_keys(text: str, path: KeyPath, number: int, lines: dict[KeyPath, int]) -> None:
    body = text[1:text.find("}")] if "}" in text else text[1:]
    for m in _INLINE_KEY.finditer(body):
        lines.setdefault((*path, *_split_key(m.group(1))), number)


def locate(lines: dict[KeyPath, int], path: Sequence[str | int]) -> int | None:
    """The line of ``path``, or of the nearest enclosing key that has one."""
    key = tuple(path)
    while key:
        if key in lines:
            return lines[key]
        key = key[:-1]
    return None
