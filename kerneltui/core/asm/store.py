"""Reading a version's dump: what the PTX/SASS viewer and ``kerneltui asm`` use.

    dump = Dump.load(version_dir)                      # DumpMissing if the version has none
    dump.kernels()                                      # ["add_kernel"]
    v = dump.variant("add_kernel")                      # the primary specialisation (or by label / slug)
    dump.stage_text(v, "sass")
    dump.asm_lines_for(v, "sass", "kernel.py", 11)      # editor cursor -> asm lines to highlight
    dump.source_for(v, "sass", 42)                      # asm line -> Frame(file, line) to jump to
    diff_dumps(old, new, "sass")                        # what changed after a proposal
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from kerneltui.core.asm.artifact import STAGE_ORDER
from kerneltui.core.asm.mix import InstructionMix
from kerneltui.core.asm.resources import ResourceReport
from kerneltui.core.asm.srcmap import Frame, LineMap
from kerneltui.core.asm.writer import INDEX_NAME, StageFile

DUMP_DIR_NAME = "dump"


class DumpMissing(LookupError):
    """The version has no dump (the dump rung has not run on it)."""


class DumpLookupError(LookupError):
    """A kernel, variant or stage that the dump does not have; the message lists what it has."""


@dataclass
class Variant:
    kernel: str
    label: str
    slug: str
    primary: bool
    source_file: str | None
    metadata: dict[str, Any]
    stages: dict[str, StageFile]
    map_file: str
    resources: ResourceReport | None
    mix: InstructionMix | None
    problems: list[str] = field(default_factory=list)

    @property
    def stage_names(self) -> list[str]:
        return [s for s in STAGE_ORDER if s in self.stages]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Variant:
        return cls(
            kernel=data["kernel"], label=data["variant"], slug=data["slug"], primary=bool(data.get("primary")),
            source_file=data.get("source_file"), metadata=dict(data.get("metadata") or {}),
            stages=dict(data.get("stages") or {}), map_file=data["map_file"],
            resources=ResourceReport.from_dict(data["resources"]) if data.get("resources") else None,
            mix=InstructionMix.from_dict(data["mix"]) if data.get("mix") else None,
            problems=list(data.get("problems") or []),
        )


class Dump:
    def __init__(self, root: Path, index: dict[str, Any]) -> None:
        self.root = root
        self.index = index
        self._maps: dict[str, dict[str, LineMap]] = {}

    @classmethod
    def load(cls, version_dir: Path | str) -> Dump:
        """The dump of a version folder (``.kerneltui/versions/<hash>``) or of a dump folder itself."""
        path = Path(version_dir)
        root = path if (path / INDEX_NAME).is_file() else path / DUMP_DIR_NAME
        index_file = root / INDEX_NAME
        if not index_file.is_file():
            raise DumpMissing(f"{path} has no dump yet (run `kerneltui check TASK --rungs dump`)")
        try:
            index = json.loads(index_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DumpMissing(f"cannot read {index_file}: {exc}") from exc
        return cls(root, index)

    # -- what is there --------------------------------------------------------------------------

    @property
    def arch(self) -> str:
        return str(self.index.get("arch", ""))

    @property
    def summary(self) -> str:
        return str(self.index.get("summary", ""))

    @property
    def problems(self) -> list[str]:
        return list(self.index.get("problems") or [])

    @property
    def task_files(self) -> list[str]:
        return list(self.index.get("task_files") or [])

    @cached_property
    def variants_all(self) -> list[Variant]:
        return [Variant.from_json(v) for k in self.index.get("kernels") or [] for v in k.get("variants") or []]

    def kernels(self) -> list[str]:
        return [k["kernel"] for k in self.index.get("kernels") or []]

    def variants(self, kernel: str | None = None) -> list[Variant]:
        return [v for v in self.variants_all if kernel is None or v.kernel == kernel]

    def primary(self) -> Variant:
        """The specialisation the summary describes (the benchmark's first kernel)."""
        if not self.variants_all:
            raise DumpLookupError("the dump holds no kernels")
        return next((v for v in self.variants_all if v.primary and v.metadata.get("primary")),
                    next((v for v in self.variants_all if v.primary), self.variants_all[0]))

    def variant(self, kernel: str | None = None, label: str | None = None) -> Variant:
        """A kernel's specialisation: by label or slug (or a unique prefix), else the primary one."""
        if kernel is not None and kernel not in self.kernels():
            raise DumpLookupError(f"no kernel {kernel!r} in this dump; it has: {', '.join(self.kernels()) or 'none'}")
        pool = self.variants(kernel)
        if not pool:
            raise DumpLookupError("the dump holds no kernels")
        if label is None:
            return self.primary() if kernel is None else next((v for v in pool if v.primary), pool[0])
        exact = [v for v in pool if label in (v.label, v.slug)]
        if exact:
            return exact[0]
        prefixed = [v for v in pool if v.label.startswith(label) or v.slug.startswith(label)]
        if len(prefixed) == 1:
            return prefixed[0]
        options = "; ".join(f"{v.kernel} [{v.label}]" for v in pool)
        raise DumpLookupError(f"no single variant matches {label!r}; there are: {options}")

    # -- stage text and maps ----------------------------------------------------------------------

    def stage_path(self, variant: Variant, stage: str) -> Path:
        info = variant.stages.get(stage)
        if info is None:
            have = ", ".join(variant.stage_names) or "none"
            raise DumpLookupError(f"{variant.kernel} [{variant.label}] has no {stage} stage; it has: {have}")
        return self.root / info["file"]

    def stage_text(self, variant: Variant, stage: str) -> str:
        return self.stage_path(variant, stage).read_text(encoding="utf-8", errors="replace")

    def line_map(self, variant: Variant, stage: str) -> LineMap:
        maps = self._maps.get(variant.map_file)
        if maps is None:
            path = self.root / variant.map_file
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                data = {}
            maps = {name: LineMap.from_json(m) for name, m in (data.get("stages") or {}).items()}
            self._maps[variant.map_file] = maps
        return maps.get(stage, LineMap())

    def asm_lines_for(self, variant: Variant, stage: str, file: str, line: int) -> list[int]:
        """Lines of ``stage`` produced by source ``file:line`` (inlined calls included)."""
        return self.line_map(variant, stage).asm_lines_for(file, line)

    def source_for(self, variant: Variant, stage: str, asm_line: int) -> Frame | None:
        """The task source line behind an asm line (the kernel's own line for inlined helpers)."""
        return self.line_map(variant, stage).source_of(asm_line, self.task_files or None)


def version_dirs(root: Path) -> list[Path]:
    """The task's version folders (under ``Task.versions_dir``), newest first."""
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)


def find_version(versions_dir: Path, ref: str, exclude: Path | None = None) -> Path:
    """A version folder by source-hash prefix, a path, or ``prev`` (the newest other version with a dump)."""
    candidate = Path(ref)
    if candidate.is_dir():
        return candidate
    dirs = version_dirs(versions_dir)
    if ref in ("prev", "previous", "last"):
        for d in dirs:
            if (exclude is None or d.resolve() != exclude.resolve()) and (d / DUMP_DIR_NAME / INDEX_NAME).is_file():
                return d
        raise DumpMissing("no earlier version of this task has a dump")
    matches = [d for d in dirs if d.name.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(d.name[:10] for d in dirs[:8]) or "none"
    if not matches:
        raise DumpMissing(f"no version {ref!r} under {versions_dir} (known: {known})")
    raise DumpMissing(f"{ref!r} matches {len(matches)} versions; give more of the hash (known: {known})")
