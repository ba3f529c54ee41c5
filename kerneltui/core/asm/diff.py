"""Compare the compiler's output of two versions, stage by stage.

Raw text differs everywhere once one instruction moves (SASS offsets, ``.loc`` lines, MLIR
location aliases), so by default the diff compares the code only: SASS without its offsets and
line-info comments, PTX without ``.loc``, MLIR without ``loc(...)``, LLVM IR without ``!dbg``.
Besides the text it reports what moved in the numbers: registers, spills, shared memory,
occupancy, and the instruction counts per opcode.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.asm.mlir import matching_paren
from kerneltui.core.asm.store import Dump, Variant

_SASS_OFFSET = re.compile(r"/\*[0-9a-fA-F]{4,}\*/\s*")
_MLIR_LOC_START = re.compile(r"\s*\bloc\(")
_LLVM_DBG = re.compile(r",?\s*!dbg\s+!\d+")


def code_only(stage: str, text: str) -> list[str]:
    """The lines of a stage that carry code, with location noise removed."""
    out = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if stage == "sass":
            if line.lstrip().startswith("//##") or line.lstrip().startswith("//---"):
                continue
            line = _SASS_OFFSET.sub("", line).strip()
        elif stage == "ptx":
            s = line.strip()
            if s.startswith((".loc", ".file", "//")) or s.startswith(".b8") or s.startswith(".b32"):
                continue
            line = s.split("//", 1)[0].rstrip()
        elif stage in ("ttir", "ttgir", "mlir"):
            if line.lstrip().startswith("#loc"):
                continue
            line = strip_mlir_locations(line)
        elif stage == "llir":
            if line.startswith("!") or line.startswith("declare !dbg"):
                continue
            line = _LLVM_DBG.sub("", line)
        if line.strip():
            out.append(line)
    return out


def strip_mlir_locations(line: str) -> str:
    """The line without any ``loc(...)`` (operation and argument locations alike)."""
    out = []
    pos = 0
    while (m := _MLIR_LOC_START.search(line, pos)) is not None:
        out.append(line[pos:m.start()])
        pos = matching_paren(line, m.end() - 1)
    out.append(line[pos:])
    return "".join(out).rstrip()


@dataclass
class StageDiff:
    kernel: str
    stage: str
    old_label: str | None
    new_label: str | None
    lines: list[str] = field(default_factory=list)  # unified diff
    added: int = 0
    removed: int = 0
    opcodes: dict[str, tuple[int, int]] = field(default_factory=dict)  # mnemonic -> (old, new), changed only
    resources: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # changed fields only
    note: str = ""

    @property
    def identical(self) -> bool:
        return not self.added and not self.removed and not self.note

    def headline(self) -> str:
        if self.note:
            return f"{self.kernel}: {self.note}"
        if self.identical:
            return f"{self.kernel} [{self.new_label}] {self.stage}: identical"
        moved = ", ".join(f"{k} {a}→{b}" for k, (a, b) in list(self.resources.items())[:4])
        ops = ", ".join(f"{k} {a}→{b}" for k, (a, b) in list(self.opcodes.items())[:6])
        extra = "; ".join(p for p in (moved, ops) if p)
        return f"{self.kernel} [{self.new_label}] {self.stage}: +{self.added} −{self.removed} lines" + (f" ({extra})" if extra else "")


def diff_text(stage: str, old: str, new: str, old_name: str = "old", new_name: str = "new",
              raw: bool = False, context: int = 3) -> tuple[list[str], int, int]:
    a = old.splitlines() if raw else code_only(stage, old)
    b = new.splitlines() if raw else code_only(stage, new)
    lines = list(difflib.unified_diff(a, b, old_name, new_name, n=context, lineterm=""))
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    return lines, added, removed


_RESOURCE_FIELDS = ("registers", "spill_store_bytes", "spill_load_bytes", "stack_frame_bytes", "static_shared_bytes",
                    "dynamic_shared_bytes", "barriers")


def diff_variants(old_dump: Dump, old: Variant, new_dump: Dump, new: Variant, stage: str,
                  raw: bool = False) -> StageDiff:
    out = StageDiff(kernel=new.kernel, stage=stage, old_label=old.label, new_label=new.label)
    if stage not in old.stages or stage not in new.stages:
        missing = "old" if stage not in old.stages else "new"
        out.note = f"the {missing} version has no {stage} stage"
        return out
    out.lines, out.added, out.removed = diff_text(
        stage, old_dump.stage_text(old, stage), new_dump.stage_text(new, stage),
        f"{old_dump.root.parent.name[:10]}/{old.kernel} [{old.label}].{stage}",
        f"{new_dump.root.parent.name[:10]}/{new.kernel} [{new.label}].{stage}", raw=raw)
    if old.resources and new.resources:
        for name in _RESOURCE_FIELDS:
            a, b = getattr(old.resources, name), getattr(new.resources, name)
            if a != b:
                out.resources[name] = (a, b)
        occ_a = old.resources.occupancy.get("occupancy") if old.resources.occupancy else None
        occ_b = new.resources.occupancy.get("occupancy") if new.resources.occupancy else None
        if occ_a != occ_b:
            out.resources["occupancy"] = (occ_a, occ_b)
    if old.mix and new.mix and old.mix.source == new.mix.source:
        for op in sorted(set(old.mix.opcodes) | set(new.mix.opcodes)):
            a, b = old.mix.opcodes.get(op, 0), new.mix.opcodes.get(op, 0)
            if a != b:
                out.opcodes[op] = (a, b)
    return out


def diff_dumps(old: Dump, new: Dump, stage: str, kernel: str | None = None, raw: bool = False) -> list[StageDiff]:
    """Pair each kernel specialisation of ``new`` with ``old``'s (same kernel and label, else the
    kernel's primary one) and diff ``stage``."""
    out = []
    for nv in new.variants(kernel):
        candidates = old.variants(nv.kernel)
        if not candidates:
            out.append(StageDiff(kernel=nv.kernel, stage=stage, old_label=None, new_label=nv.label,
                                 note=f"kernel {nv.kernel} is new in this version"))
            continue
        ov = next((v for v in candidates if v.label == nv.label), None)
        if ov is None:
            if not nv.primary:
                continue  # a specialisation that only this version has: nothing to compare with
            ov = next((v for v in candidates if v.primary), candidates[0])
        out.append(diff_variants(old, ov, new, nv, stage, raw=raw))
    for gone in sorted(set(old.kernels()) - set(new.kernels())):
        if kernel is None or gone == kernel:
            out.append(StageDiff(kernel=gone, stage=stage, old_label=None, new_label=None,
                                 note=f"kernel {gone} is gone in this version"))
    return out
