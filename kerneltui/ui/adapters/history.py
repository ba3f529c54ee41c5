"""Benchmark history for the chart, gathered from the runs of this session.

The benchmark rung reports its numbers in ``RungResult.metrics``; this adapter reads the median, the
spread and the reference lines from there. Keys read (first present wins): median ``median_us``;
spread ``q1_us``/``q3_us``, else ``min_us``/``max_us``, else the median; baseline
``reference_us``/``baseline_us``; floor ``floor_us``/``roofline_floor_us``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerneltui.core.rungs.result import RungResult
from kerneltui.ui.ports import HistoryPoint, HistorySeries


def _first(metrics: dict, *keys: str) -> float | None:
    for key in keys:
        value = metrics.get(key)
        if isinstance(value, (int, float)) and value == value:
            return float(value)
    return None


def point_from_result(version: str, result: RungResult) -> HistoryPoint | None:
    m = result.metrics
    median = _first(m, "median_us")
    if median is None or not result.passed:
        return None
    low = _first(m, "q1_us", "p25_us", "min_us")
    high = _first(m, "q3_us", "p75_us", "max_us")
    return HistoryPoint(version=version[:7], median_us=median, low_us=low if low is not None else median,
                        high_us=high if high is not None else median)


@dataclass
class SessionHistory:
    """Points from the benchmark results seen since the app opened (one per source version)."""

    points: dict[str, HistoryPoint] = field(default_factory=dict)
    baseline_us: float | None = None
    floor_us: float | None = None
    current: str | None = None
    has_gpu: bool | None = None

    def record(self, source_hash: str, results: list[RungResult], device: dict) -> None:
        self.has_gpu = bool(device.get("gpu")) if device else self.has_gpu
        self.current = source_hash[:7]
        for result in results:
            if result.name != "benchmark":
                continue
            point = point_from_result(source_hash, result)
            if point is not None:
                self.points.pop(point.version, None)  # re-measured: move to the end
                self.points[point.version] = point
            self.baseline_us = _first(result.metrics, "reference_us", "baseline_us") or self.baseline_us
            self.floor_us = _first(result.metrics, "floor_us", "roofline_floor_us") or self.floor_us

    def load(self) -> HistorySeries:
        points = [HistoryPoint(p.version, p.median_us, p.low_us, p.high_us, current=p.version == self.current)
                  for p in self.points.values()]
        note = ""
        if not points:
            if self.has_gpu is False:
                note = "no benchmark numbers: timing needs a GPU (CPU times are never shown as performance)"
            else:
                note = "no benchmark of this task yet: the benchmark rung times each version on the GPU"
        return HistorySeries(points=points, baseline_us=self.baseline_us, floor_us=self.floor_us, note=note)
