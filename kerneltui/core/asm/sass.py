"""SASS: disassemble a cubin with nvdisasm (or cuobjdump) and read the listing.

``nvdisasm -g -c`` prints the code sections with ``//## File "path", line N`` comments before the
instructions each source line produced (``-gi`` adds ``inlined at`` chains when the cubin has them).
``nvdisasm -gp -c`` prints the same instructions annotated with lines of the PTX embedded in the
cubin (``.nv_debug_ptx_txt``) instead; with that, SASS inherits PTX's full inlining chains.
``cuobjdump -sass`` is the fallback when only cuobjdump exists: no line info, same instructions.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.asm.srcmap import Frame, LineMap
from kerneltui.core.asm.tools import Tool

_LINE_INFO = re.compile(r'^\s*//##\s*File\s+"([^"]*)",\s*line\s+(\d+)(.*)$')
_INLINED = re.compile(r'inlined at\s+"([^"]*)",\s*line\s+(\d+)')
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;?\s*(?:/\*[^*]*\*/\s*)?$")
_FUNC_HEADER = re.compile(r"^//-+\s+\.text\.(\S+)\s+-+")
_CUOBJ_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
PTX_PSEUDO_FILE = ".nv_debug_ptx_txt"

DISASSEMBLE_TIMEOUT_S = 120.0


class DisassemblyError(RuntimeError):
    pass


@dataclass
class SassInstruction:
    line: int  # 1-based line in the listing
    offset: int
    opcode: str  # "LDG.E.128" (mnemonic with its modifiers)
    operands: str
    predicate: str = ""
    function: str = ""

    @property
    def mnemonic(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def modifiers(self) -> list[str]:
        return self.opcode.split(".")[1:]


@dataclass
class SassListing:
    instructions: list[SassInstruction] = field(default_factory=list)
    functions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (first line, last line)
    line_map: LineMap = field(default_factory=LineMap)
    ptx_lines: dict[int, int] = field(default_factory=dict)  # listing line -> PTX line (from -gp)

    def for_function(self, name: str) -> list[SassInstruction]:
        return [i for i in self.instructions if i.function == name]


@dataclass
class Disassembly:
    text: str
    tool: Tool
    command: list[str]
    ptx_annotated: str | None = None  # the -gp listing, when the cubin embeds its PTX
    warnings: list[str] = field(default_factory=list)


def disassemble(cubin: bytes, tool: Tool, timeout: float = DISASSEMBLE_TIMEOUT_S) -> Disassembly:
    """SASS text for a cubin, with source line info when the tool and the cubin allow it."""
    with tempfile.TemporaryDirectory(prefix="kerneltui-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        if tool.name != "nvdisasm":
            cmd = [tool.path, "-sass", str(path)]
            text, warnings = _finish(cmd, _start(cmd), timeout)
            return Disassembly(text=text, tool=tool, command=cmd, warnings=warnings)
        # One run with both annotations (-g: the source's lines, -gp: the embedded PTX's), split into
        # the two listings each flag alone prints (checked line for line on Triton and CUDA C++
        # cubins): nvdisasm takes ~0.3 s of CPU to start whatever the cubin. Where the pair fails
        # (a cubin without .nv_debug_line_sass), -g alone.
        cmd = [tool.path, "-g", "-c", str(path)]
        both_cmd = [tool.path, "-g", "-gp", "-c", str(path)]
        try:
            both, warnings = _finish(both_cmd, _start(both_cmd), timeout)
        except DisassemblyError:
            text, warnings = _finish(cmd, _start(cmd), timeout)
            return Disassembly(text=text, tool=tool, command=[*cmd[:-1], path.name], warnings=warnings)
        text, gp_text = split_annotations(both)
        ptx_annotated = gp_text if PTX_PSEUDO_FILE in gp_text else None
        return Disassembly(text=text, tool=tool, command=[*both_cmd[:-1], path.name], ptx_annotated=ptx_annotated,
                           warnings=warnings)


def split_annotations(listing: str) -> tuple[str, str]:
    """An ``nvdisasm -g -gp`` listing as the ``-g`` listing and the ``-gp`` listing: each keeps its
    own ``//## File`` lines (the PTX's name the pseudo-file ``.nv_debug_ptx_txt``) and every other line."""
    source: list[str] = []
    ptx: list[str] = []
    for line in listing.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith('//## File "'):
            (ptx if stripped.startswith(f'//## File "{PTX_PSEUDO_FILE}"') else source).append(line)
        else:
            source.append(line)
            ptx.append(line)
    return "".join(source), "".join(ptx)


def _start(cmd: list[str]) -> subprocess.Popen[str]:
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        raise DisassemblyError(f"cannot run {cmd[0]}: {exc.strerror}") from exc


def _finish(cmd: list[str], proc: subprocess.Popen[str], timeout: float) -> tuple[str, list[str]]:
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate()
        raise DisassemblyError(f"{Path(cmd[0]).name} gave no answer after {timeout:.0f} s: {' '.join(cmd)}") from exc
    warnings = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if proc.returncode != 0:
        detail = "\n".join(warnings[-5:]) or f"exit code {proc.returncode}"
        raise DisassemblyError(f"{Path(cmd[0]).name} failed on the cubin: {detail}\n(command: {' '.join(cmd)})")
    return stdout, warnings


def parse_sass(text: str, ptx_annotated: str | None = None) -> SassListing:
    """Instructions, functions and the source map of an nvdisasm (or cuobjdump -sass) listing."""
    out = SassListing()
    current: tuple[Frame, ...] = ()
    function = ""
    for n, raw in enumerate(text.splitlines(), start=1):
        if m := _FUNC_HEADER.match(raw):
            function = m.group(1)
            current = ()
            continue
        if m := _CUOBJ_FUNC.match(raw):
            function = m.group(1)
            current = ()
            continue
        if m := _LINE_INFO.match(raw):
            chain = [Frame(m.group(1), int(m.group(2)))]
            chain += [Frame(f, int(line)) for f, line in _INLINED.findall(m.group(3))]
            current = tuple(chain)
            continue
        m = _INSTR.match(raw)
        if not m:
            stripped = raw.strip()
            if stripped.endswith(":") and not stripped.startswith((".L_", ".text.", "//")) and not function:
                function = stripped[:-1]
            continue
        body = m.group(2).strip().rstrip(";").strip()
        body = body.strip("{} ").strip()
        if not body:
            continue
        predicate = ""
        if body.startswith("@"):
            predicate, _, body = body.partition(" ")
            body = body.strip()
        opcode, _, operands = body.partition(" ")
        inst = SassInstruction(line=n, offset=int(m.group(1), 16), opcode=opcode, operands=operands.strip(),
                               predicate=predicate, function=function)
        out.instructions.append(inst)
        first, _last = out.functions.get(function, (n, n))
        out.functions[function] = (first, n)
        out.line_map.add(n, current)
    if ptx_annotated:
        by_key = _ptx_lines_by_offset(ptx_annotated)
        for inst in out.instructions:
            ptx_line = by_key.get((inst.function, inst.offset))
            if ptx_line is not None:
                out.ptx_lines[inst.line] = ptx_line
    return out


def _ptx_lines_by_offset(text: str) -> dict[tuple[str, int], int]:
    """(function, instruction offset) -> line of the embedded PTX, from an ``nvdisasm -gp`` listing."""
    out: dict[tuple[str, int], int] = {}
    current: int | None = None
    function = ""
    for raw in text.splitlines():
        if m := _FUNC_HEADER.match(raw):
            function = m.group(1)
            current = None
            continue
        if m := _LINE_INFO.match(raw):
            current = int(m.group(2)) if m.group(1) == PTX_PSEUDO_FILE else None
            continue
        m = _INSTR.match(raw)
        if m and current is not None:
            out[(function, int(m.group(1), 16))] = current
    return out


def link_to_ptx(listing: SassListing, ptx_map: LineMap) -> LineMap:
    """SASS source map with PTX's inlining chains where -gp linked an instruction to a PTX line,
    and nvdisasm's own -g frames elsewhere."""
    merged = LineMap(dict(listing.line_map.frames))
    for sass_line, ptx_line in listing.ptx_lines.items():
        chain = ptx_map.frames.get(ptx_line)
        if chain:
            merged.frames[sass_line] = chain
    return merged
