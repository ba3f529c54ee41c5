"""Where a kernel spends its time, per instruction and per source line (the viewer's heat column).

Nsight Compute's SourceCounters section samples each warp's program counter at a fixed interval.
Its source page (``--page source``) gives the samples per SASS instruction (``--print-source sass``)
and, with line information, per source line with that line's instructions under it
(``--print-source cuda,sass``). This module turns both into :class:`KernelHotSpots`:

* SASS lines are keyed by **offset**: the instruction's address minus the kernel's first
  instruction, the number nvdisasm and cuobjdump print as ``/*0040*/``, so the PTX/SASS viewer
  (``core/asm``) can join on it.
* Source lines are keyed by ``(file, line)`` with the file relative to the task directory
  (``kernel.py``) when it is the task's own, else the path as compiled (Triton's
  ``language/standard.py`` for ``tl.cdiv``, say).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltui.core.profile.csvpages import csv_rows, number

SAMPLES = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
EXECUTED = "Instructions Executed"
STALL_PREFIX = "stall_"


@dataclass(frozen=True)
class SassLine:
    offset: int  # bytes from the kernel's first instruction (nvdisasm's /*0040*/)
    address: int  # as the profiled process saw it
    text: str
    samples: int = 0
    samples_not_issued: int = 0
    executed: int | None = None  # warp-level instructions executed
    stalls: dict[str, int] = field(default_factory=dict)  # reason -> samples (non-zero only)
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int
    text: str
    samples: int = 0
    samples_not_issued: int = 0
    executed: int | None = None
    stalls: dict[str, int] = field(default_factory=dict)


@dataclass
class KernelHotSpots:
    kernel: str
    sass: list[SassLine] = field(default_factory=list)  # in address order
    source: list[SourceLine] = field(default_factory=list)

    @property
    def total_samples(self) -> int:
        return sum(s.samples for s in self.sass) or sum(s.samples for s in self.source)

    def by_offset(self) -> dict[int, SassLine]:
        return {s.offset: s for s in self.sass}

    def by_source(self) -> dict[tuple[str, int], SourceLine]:
        return {(s.file, s.line): s for s in self.source}

    def heat(self, samples: int) -> float:
        """A share of all samples in [0, 1], for colouring."""
        total = self.total_samples
        return samples / total if total else 0.0

    def top_sass(self, n: int = 10) -> list[SassLine]:
        return sorted((s for s in self.sass if s.samples), key=lambda s: -s.samples)[:n]

    def top_source(self, n: int = 10) -> list[SourceLine]:
        return sorted((s for s in self.source if s.samples), key=lambda s: -s.samples)[:n]

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "sass": [asdict(s) for s in self.sass],
                "source": [asdict(s) for s in self.source]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelHotSpots:
        return cls(kernel=data["kernel"], sass=[SassLine(**s) for s in data.get("sass") or []],
                   source=[SourceLine(**s) for s in data.get("source") or []])


def _int(value: str | None) -> int:
    n = number(value)
    return int(n) if n is not None else 0


def _address(value: str) -> int | None:
    try:
        return int(value, 16)
    except (TypeError, ValueError):
        return None


def _metrics(record: dict[str, str]) -> tuple[int, int, int | None, dict[str, int]]:
    stalls = {}
    for key, value in record.items():
        if key.startswith(STALL_PREFIX) and not key.endswith("(Not Issued)") and key != "stall_selected":
            n = _int(value)
            if n:
                stalls[key[len(STALL_PREFIX):]] = n
    executed = number(record.get(EXECUTED))
    return _int(record.get(SAMPLES)), _int(record.get(NOT_ISSUED)), int(executed) if executed is not None else None, stalls


def parse_source_sass(text: str) -> dict[str, list[SassLine]]:
    """``--page source --print-source sass``: per kernel, every instruction in address order."""
    kernels: dict[str, list[SassLine]] = {}
    kernel = ""
    header: list[str] = []
    for row in csv_rows(text):
        if row[0] == "Kernel Name":
            kernel = row[1] if len(row) > 1 else ""
            kernels.setdefault(kernel, [])
            header = []
            continue
        if row[0] == "Address":
            header = row
            continue
        if not header:
            continue
        record = dict(zip(header, row, strict=False))
        address = _address(record.get("Address", ""))
        if address is None:
            continue
        samples, not_issued, executed, stalls = _metrics(record)
        kernels.setdefault(kernel, []).append(SassLine(
            offset=0, address=address, text=record.get("Source", "").strip(), samples=samples,
            samples_not_issued=not_issued, executed=executed, stalls=stalls))
    for name, lines in kernels.items():
        lines.sort(key=lambda s: s.address)
        base = lines[0].address if lines else 0
        kernels[name] = [SassLine(**{**asdict(s), "offset": s.address - base}) for s in lines]
    return kernels


@dataclass
class _CudaSassBlock:
    kernel: str
    lines: list[SourceLine] = field(default_factory=list)
    line_of: dict[int, tuple[str, int]] = field(default_factory=dict)  # address -> (file, line)


def parse_source_cuda_sass(text: str, file_name: Callable[[str], str] = lambda p: p) -> dict[str, _CudaSassBlock]:
    """``--page source --print-source cuda,sass``: per kernel, each source line's samples and the
    addresses of the instructions compiled from it. The page has one block per (file, kernel)."""
    blocks: dict[str, _CudaSassBlock] = {}
    path = ""
    kernel = ""
    header: list[str] = []
    current: tuple[str, int] | None = None
    for row in csv_rows(text):
        head = row[0]
        if head == "File Path":
            path = file_name(row[1] if len(row) > 1 else "")
            header = []
            continue
        if head == "Function Name":
            kernel = row[1] if len(row) > 1 else ""
            blocks.setdefault(kernel, _CudaSassBlock(kernel))
            continue
        if head == "Line No":
            # Columns: Line No, Source (the line's text), Address, Source (the instruction), metrics…
            header = ["Line No", "Line Source", "Address", "Instruction", *row[4:]]
            continue
        if not header:
            continue
        record = dict(zip(header, row, strict=False))
        block = blocks.setdefault(kernel, _CudaSassBlock(kernel))
        line_no = number(record.get("Line No"))
        if line_no is not None:
            current = (path, int(line_no))
            samples, not_issued, executed, stalls = _metrics(record)
            block.lines.append(SourceLine(file=path, line=int(line_no), text=record.get("Line Source", ""),
                                          samples=samples, samples_not_issued=not_issued, executed=executed,
                                          stalls=stalls))
            continue
        address = _address(record.get("Address", ""))
        if address is not None and current is not None:
            block.line_of[address] = current
    return blocks


def build_hotspots(sass_text: str, cuda_sass_text: str = "",
                   file_name: Callable[[str], str] = lambda p: p) -> list[KernelHotSpots]:
    """Hot spots per kernel: SASS lines (with their source line where known) and source lines."""
    sass = parse_source_sass(sass_text)
    blocks = parse_source_cuda_sass(cuda_sass_text, file_name) if cuda_sass_text.strip() else {}
    result = []
    for kernel in list(dict.fromkeys([*sass, *blocks])):
        block = blocks.get(kernel)
        lines = sass.get(kernel, [])
        if block is not None:
            lines = [SassLine(**{**asdict(s), "file": block.line_of.get(s.address, (None, None))[0],
                                 "line": block.line_of.get(s.address, (None, None))[1]}) for s in lines]
        result.append(KernelHotSpots(kernel=kernel, sass=lines, source=block.lines if block else []))
    return result


def task_relative(task_dir: str | None, names: Iterable[str] = ()) -> Callable[[str], str]:
    """Map paths of task copies back to task-relative names (``kernel.py``).

    The line information of a kernel names the file it was *compiled* from. That is the profiled
    process's copy (``task_dir``) unless Triton's cache held the kernel already: then it is the copy
    of the worker that compiled it during the checks (``<tmp>/kerneltui-worker-…/task/kernel.py``).
    Both copies are laid out as ``…/task/<name>``, so a path ending in ``/task/<name>`` for one of
    the task's own files (``names``) is that file too.
    """
    prefix = (task_dir or "").rstrip("/") + "/"
    suffixes = sorted(("/task/" + n for n in names), key=len, reverse=True)

    def name(path: str) -> str:
        if task_dir and path.startswith(prefix):
            return path[len(prefix):]
        for suffix in suffixes:
            if path.endswith(suffix):
                return suffix[len("/task/"):]
        return path

    return name
