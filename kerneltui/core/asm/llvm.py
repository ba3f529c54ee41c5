"""Source maps for LLVM IR (Triton's LLIR, NVVM IR) from its ``!dbg`` debug metadata.

An instruction ends with ``, !dbg !N``; ``!N = !DILocation(line:, column:, scope: !S, inlinedAt: !M)``;
the scope (a ``DISubprogram`` or a ``DILexicalBlock[File]``) names its ``DIFile``, which has a
``filename`` and a ``directory``. ``inlinedAt`` links to the call site's location, giving the chain.
"""

from __future__ import annotations

import re

from kerneltui.core.asm.srcmap import Frame, LineMap

_META = re.compile(r"^\s*(!\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_FIELD = re.compile(r'(\w+):\s*("(?:[^"\\]|\\.)*"|!\d+|[\w.-]+)')
_DBG = re.compile(r",\s*!dbg\s+(!\d+)")


def parse_llvm_locations(text: str) -> LineMap:
    lines = text.splitlines()
    nodes: dict[str, tuple[str, dict[str, str]]] = {}
    for raw in lines:
        m = _META.match(raw)
        if m:
            fields = {k: v.strip('"') for k, v in _FIELD.findall(m.group(3))}
            nodes[m.group(1)] = (m.group(2), fields)

    def file_of(scope: str | None, depth: int = 0) -> str:
        if scope is None or depth > 32 or scope not in nodes:
            return ""
        kind, fields = nodes[scope]
        if kind == "DIFile":
            name, directory = fields.get("filename", ""), fields.get("directory", "")
            if name.startswith("/") or not directory:
                return name
            return f"{directory.rstrip('/')}/{name}"
        if "file" in fields:
            return file_of(fields["file"], depth + 1)
        return file_of(fields.get("scope"), depth + 1)

    cache: dict[str, tuple[Frame, ...]] = {}

    def chain_of(ref: str, depth: int = 0) -> tuple[Frame, ...]:
        if ref in cache:
            return cache[ref]
        node = nodes.get(ref)
        if node is None or node[0] != "DILocation" or depth > 64:
            return ()
        fields = node[1]
        try:
            line = int(fields.get("line", "0"))
        except ValueError:
            line = 0
        try:
            col = int(fields.get("column", "0"))
        except ValueError:
            col = 0
        head: tuple[Frame, ...] = (Frame(file_of(fields.get("scope")) or "<unknown>", line, col),) if line else ()
        inlined = fields.get("inlinedAt")
        chain = head + (chain_of(inlined, depth + 1) if inlined else ())
        cache[ref] = chain
        return chain

    out = LineMap()
    for n, raw in enumerate(lines, start=1):
        if raw.startswith("!"):
            continue
        m = _DBG.search(raw)
        if m:
            out.add(n, chain_of(m.group(1)))
    return out
