"""Benchmark history for the chart, read from the task's history store (``core.history``).

The loop's history observer records every checked version; this adapter reads one benchmark case
over the versions (``HistoryStore.series``): the candidate's median with its quartiles, the
reference and the roofline floor, converted to µs. Where a version was compared interleaved with the
one before it (``core.compare_history``), its interval is that comparison's instead. The version
being shown is marked current.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace

from kerneltui.core import compare_history
from kerneltui.core.history import BenchPoint, HistoryError, HistoryStore
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.task import Task
from kerneltui.core.worker.contract.replies import DeviceInfo
from kerneltui.ui.ports import HistoryPoint, HistorySeries


@dataclass
class StoreHistory:
    task: Task
    current: str | None = None  # source hash of the version on screen
    has_gpu: bool | None = None

    def record(self, source_hash: str, results: list[RungResult], device: DeviceInfo) -> None:
        """Called after each run: which version is current, and whether timing was possible."""
        self.current = source_hash or self.current
        if device:
            self.has_gpu = bool(device.get("gpu"))

    def load(self) -> HistorySeries:
        try:
            series = HistoryStore.for_task(self.task).series()
        except (HistoryError, OSError) as exc:
            return HistorySeries(note=f"cannot read the history: {exc}")
        try:
            compared = compare_history.between(HistoryStore.for_task(self.task).path, series.device_key,
                                               series.case_label)
        except (sqlite3.Error, OSError):
            compared = {}  # the chart still draws each version's own spread
        valid = [p for p in series.points if p.valid]
        points = [with_interval(HistoryPoint(version=p.source_hash[:7], median_us=p.median_ms * 1000,
                                             low_us=(p.q1_ms if p.q1_ms is not None else p.median_ms) * 1000,
                                             high_us=(p.q3_ms if p.q3_ms is not None else p.median_ms) * 1000,
                                             current=p.source_hash == self.current),
                                prev, compared.get((prev.source_hash, p.source_hash)) if prev else None)
                  for prev, p in zip([None, *valid], valid, strict=False)]
        if points and not any(p.current for p in points):
            points[-1] = replace(points[-1], current=True)
        note = ""
        if not points:
            note = ("no benchmark numbers: timing needs a GPU (CPU times are never shown as performance)"
                    if self.has_gpu is False else "no benchmark of this task yet: the benchmark rung times each "
                    "version on the GPU")
        return HistorySeries(points=points, baseline_us=series.reference_ms * 1000 if series.reference_ms else None,
                             floor_us=series.floor_ms * 1000 if series.floor_ms else None, note=note)


def with_interval(point: HistoryPoint, previous: BenchPoint | None,
                  compared: compare_history.RecordedComparison | None) -> HistoryPoint:
    """``point`` with the interval of its interleaved comparison against ``previous``: the previous
    median times the ratio's bounds, where the time would lie measured side by side with it."""
    if previous is None or compared is None or None in (compared.change, compared.low, compared.high):
        return point
    assert compared.change is not None and compared.low is not None and compared.high is not None
    base = previous.median_ms * 1000
    if compared.high < 0:
        what = f"{abs(compared.change) * 100:.1f} % faster (95 % CI {abs(compared.high) * 100:.1f}–{abs(compared.low) * 100:.1f} %)"
    elif compared.low > 0:
        what = f"{compared.change * 100:.1f} % slower (95 % CI {compared.low * 100:.1f}–{compared.high * 100:.1f} %)"
    else:
        what = f"no difference found ({compared.low * 100:+.1f} % to {compared.high * 100:+.1f} %)"
    return replace(point, low_us=base * (1 + compared.low), high_us=base * (1 + compared.high), vs_previous=what)
