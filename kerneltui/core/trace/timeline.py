"""A text-cell timeline of one traced launch: a row per SM (or per CTA), a column per time bin.

A cell shows the letter of the region running there; where several regions' spans cover the
same bin (nested or overlapping regions, e.g. load and compute in a pipelined loop), the one that
is busy for the larger part of its span wins, and an upper-case letter marks a bin where two or
more regions overlap (the region table's overlap column says by how much). ``·`` is an SM with nothing
of this kernel running. Pure text: the TUI colours it, the CLI prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.trace.buffer import RegionRecord, TraceBuffer
from kerneltui.core.trace.stats import analyse

IDLE = "·"


@dataclass(frozen=True)
class TimelineRow:
    label: str
    cells: str


@dataclass(frozen=True)
class Timeline:
    kernel: str
    rows: tuple[TimelineRow, ...]
    legend: tuple[tuple[str, str], ...]  # (letter, region name)
    start_ns: int
    end_ns: int
    hidden_rows: int  # rows beyond max_rows, not shown
    by: str  # "sm" or "cta"

    @property
    def width(self) -> int:
        return len(self.rows[0].cells) if self.rows else 0

    def text(self) -> str:
        label_w = max((len(r.label) for r in self.rows), default=0)
        lines = [f"{self.kernel}: {(self.end_ns - self.start_ns) / 1000:.1f} µs across, one cell = "
                 f"{(self.end_ns - self.start_ns) / max(self.width, 1):.0f} ns"]
        lines += [f"{r.label:>{label_w}} │{r.cells}│" for r in self.rows]
        if self.hidden_rows:
            lines.append(f"… {self.hidden_rows} more {'SMs' if self.by == 'sm' else 'CTAs'}")
        lines.append("  ".join(f"{letter.lower()} {name}" for letter, name in self.legend)
                     + "   (upper case: regions overlap)")
        return "\n".join(lines)


def letters(regions: tuple[str, ...]) -> dict[int, str]:
    """A distinct lower-case letter per region: its first free letter, else the next free one."""
    used: set[str] = set()
    out: dict[int, str] = {}
    for i, name in enumerate(regions):
        candidates = [c for c in name.lower() if c.isalpha()] + list("abcdefghijklmnopqrstuvwxyz")
        letter = next((c for c in candidates if c not in used), str(i % 10))
        used.add(letter)
        out[i] = letter
    return out


def build(buffer: TraceBuffer, *, width: int = 64, by: str = "sm", max_rows: int = 32) -> Timeline:
    if by not in ("sm", "cta"):
        raise ValueError(f"timeline rows are 'sm' or 'cta', not {by!r}")
    width = max(8, width)
    ran = buffer.ran
    marks = letters(buffer.regions)
    legend = tuple((marks[i], name) for i, name in enumerate(buffer.regions))
    if not ran:
        return Timeline(buffer.kernel, (), legend, 0, 0, 0, by)
    start = min(r.first_begin_ns for r in ran)
    end = max(r.last_end_ns for r in ran)
    length = max(end - start, 1)
    stats = analyse(buffer)
    # Where regions overlap, the one busy for more of its span wins the cell (records accumulate
    # over a loop's iterations, so the interleaving itself is not in the buffer).
    rank = {i: (-(s.median_ns / s.span_median_ns if s.span_median_ns else 0.0), i) for i, s in enumerate(stats.regions)}
    groups: dict[int, list[RegionRecord]] = {}
    for r in ran:
        groups.setdefault(r.smid if by == "sm" else r.cta, []).append(r)
    keys = sorted(groups)
    rows = []
    for key in keys[:max_rows]:
        cells = []
        for col in range(width):
            lo = start + length * col / width
            hi = start + length * (col + 1) / width
            active = {r.region for r in groups[key] if r.first_begin_ns < hi and r.last_end_ns > lo}
            if not active:
                cells.append(IDLE)
                continue
            best = min(active, key=lambda i: rank[i])
            cells.append(marks[best].upper() if len(active) > 1 else marks[best])
        rows.append(TimelineRow(f"SM {key}" if by == "sm" else f"CTA {key}", "".join(cells)))
    return Timeline(buffer.kernel, tuple(rows), legend, start, end, max(0, len(keys) - max_rows), by)
