"""Source maps for MLIR text (Triton's TTIR/TTGIR, CuTe DSL's MLIR) from its ``loc(...)`` info.

Operations end with a location: ``loc(#loc12)`` (an alias defined as ``#loc12 = loc(...)``
elsewhere in the file) or an inline one. Locations nest: ``"file":line:col``, a named location
``"x"(#loc3)``, a call site ``callsite(#callee at #caller)`` (an inlined helper), ``fused[...]``
and ``unknown``. Each resolves to a chain of frames, innermost first.
"""

from __future__ import annotations

import re

from kerneltui.core.asm.srcmap import Frame, LineMap

_ALIAS_DEF = re.compile(r"^\s*(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)(?:\s+to\s+(?:\d+:)?\d+)?')


class _Parser:
    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.resolved: dict[str, tuple[Frame, ...]] = {}
        self.active: set[str] = set()

    def alias(self, name: str) -> tuple[Frame, ...]:
        if name in self.resolved:
            return self.resolved[name]
        if name in self.active or name not in self.aliases:
            return ()
        self.active.add(name)
        chain, _ = self.expr(self.aliases[name], 0)
        self.active.discard(name)
        self.resolved[name] = chain
        return chain

    def expr(self, s: str, pos: int) -> tuple[tuple[Frame, ...], int]:
        pos = _skip(s, pos)
        if s.startswith("#loc", pos):
            m = re.compile(r"#loc\d*").match(s, pos)
            assert m is not None
            return self.alias(m.group(0)), m.end()
        if s.startswith("loc(", pos):
            chain, pos = self.expr(s, pos + 4)
            return chain, _close(s, pos, ")")
        if s.startswith("unknown", pos):
            return (), pos + len("unknown")
        if s.startswith("callsite(", pos):
            callee, pos = self.expr(s, pos + len("callsite("))
            pos = _skip(s, pos)
            if s.startswith("at", pos):
                pos += 2
            caller, pos = self.expr(s, pos)
            return callee + caller, _close(s, pos, ")")
        if s.startswith("fused", pos):
            pos += len("fused")
            if s.startswith("<", pos):  # fused<metadata>[...]
                pos = _matching(s, pos, "<", ">")
            pos = _skip(s, pos)
            chains: list[tuple[Frame, ...]] = []
            if s.startswith("[", pos):
                pos += 1
                while True:
                    chain, pos = self.expr(s, pos)
                    chains.append(chain)
                    pos = _skip(s, pos)
                    if s.startswith(",", pos):
                        pos += 1
                        continue
                    break
                pos = _close(s, pos, "]")
            return next((c for c in chains if c), ()), pos
        if s.startswith('"', pos):
            m = _FILE_LOC.match(s, pos)
            if m:
                if m.group(1) == "-":  # a position in IR text read from stdin (CuTe DSL's passes), not a source file
                    return (), m.end()
                return (Frame(m.group(1), int(m.group(2)), int(m.group(3))),), m.end()
            end = _string_end(s, pos)
            pos = _skip(s, end)
            if s.startswith("(", pos):  # a named location: "name"(inner)
                chain, pos = self.expr(s, pos + 1)
                return chain, _close(s, pos, ")")
            return (), pos
        # Anything else (an opaque location): skip to the next delimiter.
        m = re.compile(r"[^,)\]]*").match(s, pos)
        return (), m.end() if m else len(s)


def _skip(s: str, pos: int) -> int:
    while pos < len(s) and s[pos] in " \t":
        pos += 1
    return pos


def _close(s: str, pos: int, ch: str) -> int:
    pos = _skip(s, pos)
    return pos + 1 if s.startswith(ch, pos) else pos


def _string_end(s: str, pos: int) -> int:
    i = pos + 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == '"':
            return i + 1
        i += 1
    return len(s)


def _matching(s: str, pos: int, open_ch: str, close_ch: str) -> int:
    depth = 0
    i = pos
    while i < len(s):
        if s[i] == '"':
            i = _string_end(s, i)
            continue
        if s[i] == open_ch:
            depth += 1
        elif s[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(s)


def matching_paren(s: str, pos: int) -> int:
    """Index just past the ``)`` that closes the ``(`` at ``pos`` (strings skipped)."""
    return _matching(s, pos, "(", ")")


def trailing_loc(line: str) -> str | None:
    """The ``loc(...)`` that ends an operation's line, if there is one."""
    stripped = line.rstrip()
    if not stripped.endswith(")"):
        return None
    start = stripped.rfind(" loc(")
    while start >= 0:
        end = _matching(stripped, start + 4, "(", ")")
        if end == len(stripped):
            return stripped[start + 1:]
        start = stripped.rfind(" loc(", 0, start)
    return None


def parse_mlir_locations(text: str) -> LineMap:
    lines = text.splitlines()
    aliases: dict[str, str] = {}
    for raw in lines:
        m = _ALIAS_DEF.match(raw)
        if m:
            aliases[m.group(1)] = m.group(2)
    parser = _Parser(aliases)
    out = LineMap()
    for n, raw in enumerate(lines, start=1):
        if raw.lstrip().startswith("#loc") or "loc(" not in raw:
            continue
        loc = trailing_loc(raw)
        if loc is None:
            continue
        chain, _ = parser.expr(loc, 0)
        out.add(n, chain)
    return out
