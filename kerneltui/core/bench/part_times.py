"""Where a benchmark series' wall time goes, by part (the kernel's calls, their outputs' export, the
judge's recheck and renewal, the round trips between the processes).

A timed call of a 250 µs kernel costs the series several milliseconds of wall time; which part costs
them decides what to make faster, and the answer differs between machines. Each side measures its own
parts with ``PartTimes`` and sends the sums; the parent adds them up per case (``add_parts``), and the
report carries them (``spent_s`` of the kernel's series).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


class PartTimes:
    """Seconds spent per named part, summed over a batch."""

    def __init__(self, *parts: str) -> None:
        self._seconds = dict.fromkeys(parts, 0.0)

    @contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, time.perf_counter() - began)

    def add(self, part: str, seconds: float) -> None:
        self._seconds[part] = self._seconds.get(part, 0.0) + seconds

    def seconds(self) -> dict[str, float]:
        return {part: round(s, 6) for part, s in self._seconds.items()}


def add_parts(total: dict[str, float], more: Mapping[str, float] | None, prefix: str = "") -> None:
    """Add ``more``'s parts into ``total`` (keys prefixed, e.g. ``judge.verify``)."""
    for part, seconds in (more or {}).items():
        key = prefix + part
        total[key] = round(total.get(key, 0.0) + float(seconds), 6)
