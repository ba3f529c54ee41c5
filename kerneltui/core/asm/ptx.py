"""PTX: the ``.file`` table, ``.loc`` line info (with inlining) and the instructions.

Two producers write inlining differently and both are read:

* nvcc/NVVM: ``.loc 1 25 3, function_name $L__info_string0, inlined_at 1 40 5``;
* Triton/LLVM: ``.loc 2 170 27  // standard.py:170:27 @[ standard.py:191:40 @[ kernel.py:14:21 ] ]``,
  where the comment carries the whole call chain with base names only; they are resolved against
  the ``.file`` table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kerneltui.core.asm.srcmap import Frame, LineMap

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_CHAIN_ITEM = re.compile(r"@\[\s*([^:\s@\[\]]+):(\d+):(\d+)")
_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)")
_TARGET = re.compile(r"^\s*\.target\s+([\w,\s]+)")
_VERSION = re.compile(r"^\s*\.version\s+([\d.]+)")
_LABEL = re.compile(r"^\s*[\w$.]+:\s*(//.*)?$")
_PRED = re.compile(r"^@!?%\w+\s+")


@dataclass
class PtxInstruction:
    line: int  # 1-based line in the PTX text
    opcode: str  # "ld.global.v4.b32", "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
    text: str


@dataclass
class PtxEntry:
    name: str
    kind: str  # "entry" (a kernel) or "func"
    start: int
    end: int = 0


@dataclass
class PtxListing:
    files: dict[int, str] = field(default_factory=dict)
    entries: list[PtxEntry] = field(default_factory=list)
    instructions: list[PtxInstruction] = field(default_factory=list)
    line_map: LineMap = field(default_factory=LineMap)
    target: str = ""
    version: str = ""

    @property
    def kernels(self) -> list[str]:
        return [e.name for e in self.entries if e.kind == "entry"]


def parse_ptx(text: str) -> PtxListing:
    out = PtxListing()
    lines = text.splitlines()
    # The .file table usually sits at the end; read it first so .loc can name files.
    for raw in lines:
        m = _FILE.match(raw)
        if m:
            out.files[int(m.group(1))] = m.group(2)
    by_base: dict[str, list[str]] = {}
    for path in out.files.values():
        by_base.setdefault(PurePosixPath(path).name, []).append(path)

    current: tuple[Frame, ...] = ()
    depth = 0
    entry: PtxEntry | None = None
    for n, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        if not out.target and (m := _TARGET.match(raw)):
            out.target = m.group(1).split(",")[0].strip()
            continue
        if not out.version and (m := _VERSION.match(raw)):
            out.version = m.group(1)
            continue
        if m := _ENTRY.match(raw):
            entry = PtxEntry(name=m.group(2), kind=m.group(1), start=n)
            out.entries.append(entry)
            current = ()
            continue
        if m := _LOC.match(raw):
            current = _loc_chain(m, out.files, by_base)
            continue
        code = stripped.split("//", 1)[0].strip()
        if not code:
            continue
        depth += code.count("{") - code.count("}")
        if entry is not None and depth == 0 and "}" in code:
            entry.end = n
            entry = None
            current = ()
            continue
        if code in ("{", "}", ")", "(") or code.startswith(".") or _LABEL.match(code):
            continue
        body = _PRED.sub("", code.lstrip("{").strip())
        if not body or body.startswith(("}", ".")):
            continue
        opcode = body.split(None, 1)[0].rstrip(";")
        if not opcode or not opcode[0].isalpha():
            continue
        out.instructions.append(PtxInstruction(line=n, opcode=opcode, text=stripped))
        out.line_map.add(n, current)
    return out


def _loc_chain(m: re.Match[str], files: dict[int, str], by_base: dict[str, list[str]]) -> tuple[Frame, ...]:
    file_id, line, col, rest = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
    if line == 0:
        return ()
    chain = [Frame(files.get(file_id, f"<file {file_id}>"), line, col)]
    directive, _, comment = rest.partition("//")
    inl = _INLINED_AT.search(directive)
    if inl:
        chain.append(Frame(files.get(int(inl.group(1)), f"<file {inl.group(1)}>"), int(inl.group(2)), int(inl.group(3))))
    elif comment:
        for base, l2, c2 in _CHAIN_ITEM.findall(comment):
            matches = by_base.get(base, [])
            chain.append(Frame(matches[0] if len(matches) == 1 else base, int(l2), int(c2)))
    return tuple(chain)


def blank_line_info(text: str) -> list[str]:
    """The PTX as ptxas keeps it in ``.nv_debug_ptx_txt``: comments and ``.loc``/``.file`` lines
    emptied, whitespace collapsed. Used to check that a cubin was built from this very PTX."""
    out = []
    for raw in text.split("\n"):
        code = raw.split("//", 1)[0].strip()
        if code.startswith((".loc", ".file")):
            code = ""
        out.append(" ".join(code.split()))
    return out
