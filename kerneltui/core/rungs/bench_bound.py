"""The benchmark rung's wall-time bound (``[benchmark] max_wall_s``), shared among its series.

Every series still to run (a baseline case measured now, a kernel case) gets an equal share of the
time left, never more than its own cap (``max_seconds``) and never less than MIN_SERIES_S, so
there is always a number. A series whose cap was cut by the bound and that stops on it is marked
``STOP_WALL_BOUND``: the report says so and the number is less certain, but an honest kernel is not
failed for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from kerneltui.core.bench.stats import STOP_TIME_CAP, STOP_WALL_BOUND
from kerneltui.settings.bench import BenchSettings

MIN_SERIES_S = 0.5  # the least a series is given, bound or not


@dataclass
class WallBound:
    bound_s: float
    started: float = field(default_factory=time.perf_counter)
    cut: bool = False  # some series got less than its own cap

    def left(self) -> float:
        return self.bound_s - (time.perf_counter() - self.started)

    def settings_for(self, settings: BenchSettings, series_left: int) -> BenchSettings:
        """``settings`` with the timed phase capped at this series' share of the time left."""
        share = max(MIN_SERIES_S, self.left() / max(1, series_left))
        if share >= settings.max_seconds:
            return settings
        self.cut = True
        return replace(settings, max_seconds=share)

    @staticmethod
    def relabel(stopped: str, own: BenchSettings, given: BenchSettings) -> str:
        """The stop reason of a series run under ``given``: a time cap the bound shortened is the bound."""
        if stopped == STOP_TIME_CAP and given.max_seconds < own.max_seconds:
            return STOP_WALL_BOUND
        return stopped
