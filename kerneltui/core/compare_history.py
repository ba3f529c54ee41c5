"""Interleaved comparisons kept in the task's history (``history.sqlite``), for the chart.

A table of its own, ``comparisons``, beside ``core.history``'s: one row per benchmark case compared,
keyed by the two versions' source hashes (A, then B) and the device. It is made on first use in a
history of any age (``CREATE TABLE IF NOT EXISTS``): nothing else in the file changes, and a kerneltui
that does not know the table ignores it, so the history's schema number stays. The chart reads, for
each version, the comparison with the version before it (``between``): the ratio's interval, drawn
where one was made (docs/compare.md).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kerneltui.core.bench import compare
from kerneltui.core.bench.device_peaks import device_key
from kerneltui.core.redact import redact
from kerneltui.core.worker.contract.replies import DeviceInfo

SCHEMA = """
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL,
    a_hash TEXT NOT NULL, b_hash TEXT NOT NULL, device_key TEXT NOT NULL, case_label TEXT NOT NULL,
    direction TEXT NOT NULL, change REAL, low REAL, high REAL, calls_each INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS comparisons_by_pair ON comparisons(device_key, case_label, a_hash, b_hash);
"""


@dataclass(frozen=True)
class RecordedComparison:
    """One case of B compared with A: B's time over A's minus one, and its interval (None: not compared)."""

    a_hash: str
    b_hash: str
    case_label: str
    direction: str
    change: float | None
    low: float | None
    high: float | None
    calls_each: int
    text: str


@contextmanager
def _connect(path: Path, write: bool) -> Iterator[sqlite3.Connection]:
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=15.0)
    try:
        conn.row_factory = sqlite3.Row
        if write:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(SCHEMA)
        yield conn
        conn.commit()
    finally:
        conn.close()


def record(path: Path, a_hash: str, b_hash: str, device: DeviceInfo,
           cases: list[tuple[str, compare.Verdict]]) -> int:
    """Store each case's verdict of B against A on ``device``; returns the rows written."""
    key = device_key(device)
    now = time.time()
    with _connect(path, write=True) as conn:
        for label, found in cases:
            conn.execute("INSERT INTO comparisons(created_at, a_hash, b_hash, device_key, case_label, direction, change, "
                         "low, high, calls_each, text) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         (now, a_hash, b_hash, key, label, found.direction, found.change, found.low, found.high,
                          found.calls_each, redact(found.text)))
    return len(cases)


def between(path: Path, device: str | None, case_label: str | None) -> dict[tuple[str, str], RecordedComparison]:
    """The latest comparison of each (A, B) pair on one device and case; empty where none was recorded
    (or the history has no such table yet)."""
    if device is None or case_label is None or not path.exists():
        return {}
    with _connect(path, write=False) as conn:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'comparisons'").fetchone() is None:
            return {}
        rows = conn.execute("SELECT * FROM comparisons WHERE device_key = ? AND case_label = ? ORDER BY id",
                            (device, case_label)).fetchall()
    return {(r["a_hash"], r["b_hash"]): RecordedComparison(r["a_hash"], r["b_hash"], r["case_label"], r["direction"],
                                                           r["change"], r["low"], r["high"], int(r["calls_each"]),
                                                           r["text"])
            for r in rows}
