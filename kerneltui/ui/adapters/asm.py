"""Compiler stages read from a version's dump folder, with their source-line maps.

The dump rung writes each stage as a file in the version folder (``<version_dir>/**/*.ptx`` …).
Line maps come from the debug information each stage carries:

* PTX: ``.file N "path"`` and ``.loc N line col`` (a ``.loc`` applies to the lines after it);
* SASS from ``nvdisasm -g``/``cuobjdump``: ``//## File "path", line N``;
* TTIR/TTGIR/MLIR: ``loc("path":line:col)`` inline or through ``#locN = loc(...)`` aliases;
* LLIR: ``!dbg !N`` with ``!N = !DILocation(line: L, …)``.

Only locations in the kernel file count: lines from the standard library or the DSL stay unmapped.
"""

from __future__ import annotations

import re
from pathlib import Path

from kerneltui.ui.ports import AsmListing, AsmStage

# Stage name by file suffix, in the order the tabs show them (source → machine code).
STAGE_SUFFIXES: dict[str, str] = {
    ".ttir": "TTIR", ".ttgir": "TTGIR", ".mlir": "MLIR", ".llir": "LLIR", ".ll": "LLIR", ".ptx": "PTX",
    ".sass": "SASS",
}
STAGE_ORDER = ["TTIR", "TTGIR", "MLIR", "LLIR", "PTX", "SASS"]

_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")
_SASS_LOC = re.compile(r'//##\s*File\s+"([^"]+)",\s*line\s+(\d+)')
_MLIR_ALIAS = re.compile(r'^#(loc\d*)\s*=\s*loc\("([^"]+)":(\d+)')
_MLIR_INLINE = re.compile(r'loc\("([^"]+)":(\d+)')
_MLIR_REF = re.compile(r"loc\(#(loc\d*)\)")
_LL_DILOC = re.compile(r"^!(\d+)\s*=.*DILocation\(line:\s*(\d+)")
_LL_DBG = re.compile(r"!dbg !(\d+)")


def _matches(path: str, kernel_name: str) -> bool:
    return Path(path).name == kernel_name


def ptx_line_map(lines: list[str], kernel_name: str) -> tuple[int | None, ...]:
    files: dict[str, str] = {}
    for line in lines:
        m = _PTX_FILE.match(line)
        if m:
            files[m.group(1)] = m.group(2)
    current: int | None = None
    out: list[int | None] = []
    for line in lines:
        m = _PTX_LOC.match(line)
        if m:
            current = int(m.group(2)) if _matches(files.get(m.group(1), ""), kernel_name) else None
            out.append(current)
            continue
        stripped = line.strip()
        if stripped.startswith("}") or stripped.startswith(".visible") or stripped.startswith(".entry"):
            current = None
        out.append(current if stripped else None)
    return tuple(out)


def sass_line_map(lines: list[str], kernel_name: str) -> tuple[int | None, ...]:
    current: int | None = None
    out: list[int | None] = []
    for line in lines:
        m = _SASS_LOC.search(line)
        if m:
            current = int(m.group(2)) if _matches(m.group(1), kernel_name) else None
        out.append(current if line.strip() else None)
    return tuple(out)


def mlir_line_map(lines: list[str], kernel_name: str) -> tuple[int | None, ...]:
    aliases: dict[str, int | None] = {}
    for line in lines:
        m = _MLIR_ALIAS.match(line)
        if m:
            aliases[m.group(1)] = int(m.group(3)) if _matches(m.group(2), kernel_name) else None
    out: list[int | None] = []
    for line in lines:
        if line.startswith("#loc"):
            out.append(None)
            continue
        m = _MLIR_INLINE.search(line)
        if m:
            out.append(int(m.group(2)) if _matches(m.group(1), kernel_name) else None)
            continue
        r = _MLIR_REF.search(line)
        out.append(aliases.get(r.group(1)) if r else None)
    return tuple(out)


def llir_line_map(lines: list[str], kernel_name: str) -> tuple[int | None, ...]:
    # DILocations carry no file directly (their scope does); a kernel file compiled alone is the only
    # file with code in the module, so every DILocation is taken as the kernel's.
    locs: dict[str, int] = {}
    for line in lines:
        m = _LL_DILOC.match(line)
        if m:
            locs[m.group(1)] = int(m.group(2))
    out: list[int | None] = []
    for line in lines:
        m = _LL_DBG.search(line)
        out.append(locs.get(m.group(1)) if m and not line.startswith("!") else None)
    return tuple(out)


_MAPPERS = {"PTX": ptx_line_map, "SASS": sass_line_map, "TTIR": mlir_line_map, "TTGIR": mlir_line_map,
            "MLIR": mlir_line_map, "LLIR": llir_line_map}


def stage_from_text(name: str, text: str, kernel_name: str) -> AsmStage:
    lines = text.splitlines()
    mapper = _MAPPERS.get(name)
    source_lines = mapper(lines, kernel_name) if mapper else tuple(None for _ in lines)
    return AsmStage(name=name, text=text, source_lines=source_lines)


def _from_dump(version_dir: Path, kernel_name: str) -> AsmListing | None:
    """The stages of the dump rung's index (``core.asm.store.Dump``), with its line maps."""
    from kerneltui.core.asm.store import Dump, DumpLookupError, DumpMissing

    try:
        dump = Dump.load(version_dir)
        variant = dump.primary()
    except (DumpMissing, DumpLookupError):
        return None
    task_files = dump.task_files or None
    stages = []
    for stage in variant.stage_names:
        try:
            text = dump.stage_text(variant, stage)
        except (OSError, DumpLookupError):
            continue
        line_map = dump.line_map(variant, stage)
        sources: list[int | None] = []
        for index in range(len(text.splitlines())):
            frame = line_map.source_of(index + 1, task_files)  # the map counts asm lines from 1
            sources.append(frame.line if frame is not None and Path(frame.file).name == kernel_name else None)
        stages.append(AsmStage(name=stage.upper(), text=text, source_lines=tuple(sources)))
    note = "" if stages else "; ".join(variant.problems) or "the dump holds no stages"
    return AsmListing(stages=stages, note=note)


class DumpFolderAsm:
    """Reads the stages the dump rung left in a version folder (its index first, else loose files)."""

    def __init__(self, kernel_file: str, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.kernel_name = Path(kernel_file).name
        self.max_bytes = max_bytes

    def load(self, version_dir: Path | None) -> AsmListing:
        if version_dir is None or not version_dir.is_dir():
            return AsmListing(note="no compiler output yet: the dump rung writes it after a run that compiles")
        listing = _from_dump(version_dir, self.kernel_name)
        if listing is not None:
            return listing
        found: dict[str, Path] = {}
        for path in sorted(version_dir.rglob("*")):
            stage = STAGE_SUFFIXES.get(path.suffix)
            if stage and path.is_file() and stage not in found:
                found[stage] = path
        if not found:
            return AsmListing(note=f"no compiler output for version {version_dir.name[:7]} yet: the dump rung writes it")
        stages = []
        for name in STAGE_ORDER:
            stage_path = found.get(name)
            if stage_path is None:
                continue
            path = stage_path
            if path.stat().st_size > self.max_bytes:
                stages.append(AsmStage(name=name, text=f"{path}: larger than {self.max_bytes >> 20} MiB, not shown"))
                continue
            stages.append(stage_from_text(name, path.read_text(encoding="utf-8", errors="replace"), self.kernel_name))
        return AsmListing(stages=stages)
