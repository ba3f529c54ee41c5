"""Benchmark history for the chart, read from the task's history store (``core.history``).

The loop's history observer records every checked version; this adapter reads one benchmark case
over the versions (``HistoryStore.series``): the candidate's median with its quartiles, the
reference and the roofline floor, converted to µs. The version being shown is marked current.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.history import HistoryError, HistoryStore
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.task import Task
from kerneltui.ui.ports import HistoryPoint, HistorySeries


@dataclass
class StoreHistory:
    task: Task
    current: str | None = None  # source hash of the version on screen
    has_gpu: bool | None = None

    def record(self, source_hash: str, results: list[RungResult], device: dict) -> None:
        """Called after each run: which version is current, and whether timing was possible."""
        self.current = source_hash or self.current
        if device:
            self.has_gpu = bool(device.get("gpu"))

    def load(self) -> HistorySeries:
        try:
            series = HistoryStore.for_task(self.task).series()
        except (HistoryError, OSError) as exc:
            return HistorySeries(note=f"cannot read the history: {exc}")
        points = [HistoryPoint(version=p.source_hash[:7], median_us=p.median_ms * 1000,
                               low_us=(p.q1_ms if p.q1_ms is not None else p.median_ms) * 1000,
                               high_us=(p.q3_ms if p.q3_ms is not None else p.median_ms) * 1000,
                               current=p.source_hash == self.current)
                  for p in series.points if p.valid]
        if points and not any(p.current for p in points):
            last = points[-1]
            points[-1] = HistoryPoint(last.version, last.median_us, last.low_us, last.high_us, current=True)
        note = ""
        if not points:
            note = ("no benchmark numbers: timing needs a GPU (CPU times are never shown as performance)"
                    if self.has_gpu is False else "no benchmark of this task yet: the benchmark rung times each "
                    "version on the GPU")
        return HistorySeries(points=points, baseline_us=series.reference_ms * 1000 if series.reference_ms else None,
                             floor_us=series.floor_ms * 1000 if series.floor_ms else None, note=note)
