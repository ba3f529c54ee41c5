"""The per-task history: every version checked, with every rung's result (SQLite).

One file per task, ``task.state_dir / "history.sqlite"``, written by the loop's observer after each
run (``observer_for``) and read by ``kerneltui history`` and the TUI's benchmark chart. Every text a
worker produced (summaries, errors, details, metrics) is stored through ``core.redact``.

Tables:
  sources    the text of every kernel version, by its hash
  runs       one row per verification run: when, origin, who made the text (``author``), verdict,
             device and software versions
  rungs      every rung's status, summary, error, metrics (JSON) and details of each run
  bench      the benchmark numbers per run, case, measured function and mode, with the roofline
             floor and percentage: what the chart draws
  baselines  torch.compile baselines, reused while the reference, device and software are unchanged

The query side returns dataclasses: :meth:`HistoryStore.entries` (the listing),
:meth:`HistoryStore.series` (one benchmark case over versions, with the baselines and the floor).
Schema 2 added ``runs.author``: "agent p4", "agent p4, edited by you", "agent p4, 1 of 2 hunks"
(``core.agent.written``) or "you"; a file of schema 1 gets the column on its first write, its old rows
saying "unknown", and is read as it is until then (every row "unknown").
Writes use WAL mode and a busy timeout, so the TUI and a ``kerneltui check`` in another terminal can
record into the same file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from kerneltui.core.bench.device_peaks import device_key
from kerneltui.core.redact import redact, redact_tree
from kerneltui.core.rungs.result import RungResult, SourceLocation
from kerneltui.core.rungs.rung_metrics import (
    BenchmarkMetrics,
    RooflineMetrics,
    benchmark_metrics,
    roofline_metrics,
)
from kerneltui.core.worker.contract.replies import DeviceInfo

if TYPE_CHECKING:
    from kerneltui.core.loop import RunObserver, RunReport
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import Task

SCHEMA_VERSION = 2
UNKNOWN_AUTHOR = "unknown"  # rows recorded before the history kept who made the text
PERSON = "you"  # text the person wrote or handed to kerneltui, not an agent's proposal
DETAILS_KEEP = 20_000  # characters of a rung's details kept (worker output can be long)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    hash TEXT PRIMARY KEY, text TEXT NOT NULL, kernel_file TEXT NOT NULL, first_seen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_hash TEXT NOT NULL REFERENCES sources(hash),
    run_id TEXT NOT NULL, task TEXT NOT NULL, created_at REAL NOT NULL, origin TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT 'unknown', ok INTEGER NOT NULL, duration_s REAL NOT NULL,
    gpu INTEGER NOT NULL, device_name TEXT, device_key TEXT NOT NULL,
    torch TEXT, triton TEXT, driver TEXT, cuda TEXT, device_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_hash ON runs(source_hash);
CREATE INDEX IF NOT EXISTS runs_by_run_id ON runs(run_id);
CREATE TABLE IF NOT EXISTS rungs (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, position INTEGER NOT NULL,
    name TEXT NOT NULL, status TEXT NOT NULL, summary TEXT NOT NULL, error TEXT,
    metrics TEXT NOT NULL, details TEXT NOT NULL, duration_s REAL NOT NULL, file TEXT, line INTEGER,
    PRIMARY KEY (run, name));
CREATE TABLE IF NOT EXISTS bench (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_index INTEGER NOT NULL, case_label TEXT NOT NULL, target TEXT NOT NULL, mode TEXT NOT NULL,
    median_ms REAL, q1_ms REAL, q3_ms REAL, mean_ms REAL, stderr_ms REAL, min_ms REAL, runs INTEGER,
    floor_ms REAL, pct_roofline REAL, speedup_vs_reference REAL, speedup_vs_compile REAL,
    valid INTEGER NOT NULL,
    PRIMARY KEY (run, case_index, target, mode));
CREATE TABLE IF NOT EXISTS baselines (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, created_at REAL NOT NULL, data TEXT NOT NULL);
"""


class HistoryError(Exception):
    """The history file cannot be used (corrupt, from a newer kerneltui, not writable)."""


# ----------------------------------------------------------------------------------------------
# what the queries return
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryEntry:
    """One checked version in the listing (``kerneltui history``)."""

    number: int
    source_hash: str
    created_at: float
    origin: str
    ok: bool
    duration_s: float
    gpu: bool
    device_name: str | None
    device_key: str
    versions: dict[str, str | None]
    statuses: dict[str, str]  # rung -> ok | warn | fail | skip
    median_ms: float | None = None  # geometric mean over cases of the (clamped) medians
    q1_ms: float | None = None  # single-case tasks: the quartiles and spread
    q3_ms: float | None = None
    rel_stderr: float | None = None
    speedup_vs_reference: float | None = None
    speedup_vs_compile: float | None = None
    pct_roofline: float | None = None
    note: str = ""  # why there is no number, or the first failure
    author: str = UNKNOWN_AUTHOR  # who made the text (see the module's docstring)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _EntryNumbers(TypedDict, total=False):
    """A history entry's numbers, from its run's benchmark and roofline rows (``HistoryEntry``'s fields)."""

    median_ms: float | None
    q1_ms: float | None
    q3_ms: float | None
    rel_stderr: float | None
    speedup_vs_reference: float | None
    speedup_vs_compile: float | None
    pct_roofline: float | None


@dataclass(frozen=True)
class BenchPoint:
    """One version's numbers for one benchmark case (a point of the chart, with its spread)."""

    number: int
    source_hash: str
    created_at: float
    median_ms: float
    q1_ms: float | None
    q3_ms: float | None
    mean_ms: float | None
    stderr_ms: float | None
    min_ms: float | None
    runs: int | None
    pct_roofline: float | None
    speedup_vs_reference: float | None
    valid: bool  # False: the run failed later (e.g. the roofline found the time impossible)


@dataclass(frozen=True)
class BenchSeries:
    """One benchmark case over the versions, for the chart: points in order, the baselines (the
    latest measurement of the reference and of torch.compile) and the roofline floor."""

    case_label: str | None
    device_key: str | None
    device_name: str | None
    points: list[BenchPoint] = field(default_factory=list)
    reference_ms: float | None = None
    compile_ms: float | None = None
    floor_ms: float | None = None
    cases: list[str] = field(default_factory=list)  # every case label recorded on this device

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------------------------
# the store
# ----------------------------------------------------------------------------------------------


class HistoryStore:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @classmethod
    def for_task(cls, task: Task) -> HistoryStore:
        return cls(task.state_dir / "history.sqlite")

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        if write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.exists():
            raise FileNotFoundError(self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=15.0)
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot open the history: {exc}") from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA foreign_keys = ON")
            if write:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(SCHEMA)
                _migrate(conn)
                conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() if _has_table(conn, "meta") else None
            if row is not None and int(row["value"]) > SCHEMA_VERSION:
                raise HistoryError(f"{self.path} was written by a newer kerneltui (schema {row['value']}); upgrade to read it")
            yield conn
            conn.commit()
        except sqlite3.DatabaseError as exc:
            conn.rollback()
            raise HistoryError(history_fault(self.path, exc)) from exc
        finally:
            conn.close()

    # -- writing --------------------------------------------------------------------------------

    def record(self, task: Task, source: str, report: RunReport, options: RunOptions | None = None) -> int:
        """Store one finished run; returns its number (the version id shown to the person).

        One row per run id: a run recorded again (by a second observer, a retried write, a front end
        writing the report the loop that verified it already recorded) returns the number it has."""
        device = (report.device or DeviceInfo()).copy()
        now = time.time()
        with self._connect(write=True) as conn:
            conn.commit()
            conn.execute("BEGIN IMMEDIATE")  # another process's record of the same run waits for ours
            known = conn.execute("SELECT id FROM runs WHERE run_id = ?", (report.run_id,)).fetchone()
            if known is not None:
                return int(known["id"])
            conn.execute("INSERT OR IGNORE INTO sources(hash, text, kernel_file, first_seen) VALUES (?, ?, ?, ?)",
                         (report.source_hash, source, task.kernel_file, now))
            author = (options.author if options else "") or _earlier_author(conn, report.source_hash)
            cur = conn.execute(
                "INSERT INTO runs(source_hash, run_id, task, created_at, origin, author, ok, duration_s, gpu, "
                "device_name, device_key, torch, triton, driver, cuda, device_json) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (report.source_hash, report.run_id, report.task, now, options.origin if options else "manual", author,
                 int(report.ok), float(report.duration_s), int(bool(device.get("gpu"))), device.get("name"),
                 device_key(device), device.get("torch"), device.get("triton"), device.get("driver"),
                 device.get("cuda_runtime"), redact(json.dumps(device, default=str))),
            )
            number = int(cur.lastrowid or 0)
            for position, result in enumerate(report.results):
                loc = result.location
                conn.execute(
                    "INSERT OR REPLACE INTO rungs(run, position, name, status, summary, error, metrics, details, "
                    "duration_s, file, line) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (number, position, result.name, result.status, redact(result.summary),
                     redact(result.error) if result.error else result.error,
                     json.dumps(redact_tree(result.metrics), default=str), redact((result.details or "")[-DETAILS_KEEP:]),
                     float(result.duration_s), loc.file if loc else None, loc.line if loc else None),
                )
            for row in bench_rows(report.results):
                conn.execute(
                    "INSERT OR REPLACE INTO bench(run, case_index, case_label, target, mode, median_ms, q1_ms, q3_ms, "
                    "mean_ms, stderr_ms, min_ms, runs, floor_ms, pct_roofline, speedup_vs_reference, "
                    "speedup_vs_compile, valid) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (number, row["case_index"], row["case_label"], row["target"], row["mode"], row.get("median_ms"),
                     row.get("q1_ms"), row.get("q3_ms"), row.get("mean_ms"), row.get("stderr_ms"), row.get("min_ms"),
                     row.get("runs"), row.get("floor_ms"), row.get("pct_roofline"), row.get("speedup_vs_reference"),
                     row.get("speedup_vs_compile"), int(row["valid"])),
                )
        return number

    def get_baseline(self, key: str) -> tuple[dict[str, Any], float] | None:
        """A cached baseline measurement and when it was made, or None."""
        if not self.path.exists():
            return None
        with self._connect() as conn:
            if not _has_table(conn, "baselines"):
                return None
            row = conn.execute("SELECT data, created_at FROM baselines WHERE key = ?", (key,)).fetchone()
        return (json.loads(row["data"]), float(row["created_at"])) if row else None

    def put_baseline(self, key: str, kind: str, data: Mapping[str, Any]) -> None:
        with self._connect(write=True) as conn:
            conn.execute("INSERT OR REPLACE INTO baselines(key, kind, created_at, data) VALUES (?, ?, ?, ?)",
                         (key, kind, time.time(), json.dumps(data)))

    # -- reading --------------------------------------------------------------------------------

    def entries(self, limit: int | None = None, device: str | None = None) -> list[HistoryEntry]:
        """Checked versions, oldest first (the last ``limit`` of them)."""
        if not self.path.exists():
            return []
        with self._connect() as conn:
            if not _has_table(conn, "runs"):
                return []
            where, args = ("WHERE device_key = ?", [device]) if device else ("", [])
            sql = f"SELECT * FROM runs {where} ORDER BY id DESC"
            if limit:
                sql += f" LIMIT {int(limit)}"
            runs = list(reversed(conn.execute(sql, args).fetchall()))
            return [self._entry(conn, r) for r in runs]

    def entry(self, number: int) -> HistoryEntry | None:
        if not self.path.exists():
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (number,)).fetchone()
            return self._entry(conn, row) if row else None

    def source(self, number: int) -> str | None:
        """The kernel text checked in run ``number``."""
        if not self.path.exists():
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT s.text FROM runs r JOIN sources s ON s.hash = r.source_hash WHERE r.id = ?",
                               (number,)).fetchone()
        return row["text"] if row else None

    def source_by_hash(self, prefix: str) -> tuple[str, str] | None:
        """(hash, text) of the checked version whose hash starts with ``prefix`` (None: none, or several)."""
        if not self.path.exists() or not prefix:
            return None
        with self._connect() as conn:
            if not _has_table(conn, "sources"):
                return None
            rows = conn.execute("SELECT hash, text FROM sources WHERE hash LIKE ? LIMIT 2",
                                (prefix.replace("%", "").replace("_", "") + "%",)).fetchall()
        return (rows[0]["hash"], rows[0]["text"]) if len(rows) == 1 else None

    def rung_results(self, number: int) -> list[RungResult]:
        if not self.path.exists():
            return []
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM rungs WHERE run = ? ORDER BY position", (number,)).fetchall()
        return [RungResult(name=r["name"], status=r["status"], summary=r["summary"], error=r["error"],
                           metrics=json.loads(r["metrics"]), details=r["details"], duration_s=r["duration_s"],
                           location=SourceLocation(r["file"], r["line"]) if r["file"] and r["line"] else None)
                for r in rows]

    def series(self, case: str | None = None, device: str | None = None) -> BenchSeries:
        """One benchmark case over the versions (default: the latest device's first case)."""
        if not self.path.exists():
            return BenchSeries(case, device, None)
        with self._connect() as conn:
            if not _has_table(conn, "bench"):
                return BenchSeries(case, device, None)
            if device is None:
                row = conn.execute(
                    "SELECT r.device_key FROM bench b JOIN runs r ON r.id = b.run ORDER BY b.run DESC LIMIT 1").fetchone()
                if row is None:
                    return BenchSeries(case, None, None)
                device = str(row["device_key"])
            labels = [r["case_label"] for r in conn.execute(
                "SELECT b.case_label, MIN(b.case_index) AS i FROM bench b JOIN runs r ON r.id = b.run "
                "WHERE r.device_key = ? GROUP BY b.case_label ORDER BY i, b.case_label", (device,))]
            if case is None:
                case = labels[0] if labels else None
            name_row = conn.execute("SELECT device_name FROM runs WHERE device_key = ? ORDER BY id DESC LIMIT 1",
                                    (device,)).fetchone()
            device_name = name_row["device_name"] if name_row else None
            rows = conn.execute(
                "SELECT b.*, r.source_hash, r.created_at FROM bench b JOIN runs r ON r.id = b.run "
                "WHERE r.device_key = ? AND b.case_label = ? ORDER BY b.run", (device, case)).fetchall()
        points = [BenchPoint(number=r["run"], source_hash=r["source_hash"], created_at=r["created_at"],
                             median_ms=r["median_ms"], q1_ms=r["q1_ms"], q3_ms=r["q3_ms"], mean_ms=r["mean_ms"],
                             stderr_ms=r["stderr_ms"], min_ms=r["min_ms"], runs=r["runs"], pct_roofline=r["pct_roofline"],
                             speedup_vs_reference=r["speedup_vs_reference"], valid=bool(r["valid"]))
                  for r in rows if r["target"] == "candidate" and r["mode"] == "eager" and r["median_ms"] is not None]

        def latest(target: str, column: str) -> float | None:
            for r in reversed(rows):
                if r["target"] == target and r["mode"] == "eager" and r[column] is not None:
                    return float(r[column])
            return None

        return BenchSeries(case_label=case, device_key=device, device_name=device_name, points=points,
                           reference_ms=latest("reference", "median_ms"), compile_ms=latest("torch_compile", "median_ms"),
                           floor_ms=latest("candidate", "floor_ms"), cases=labels)

    def _entry(self, conn: sqlite3.Connection, run: sqlite3.Row) -> HistoryEntry:
        rungs = conn.execute("SELECT name, status, summary, error, metrics FROM rungs WHERE run = ? ORDER BY position",
                             (run["id"],)).fetchall()
        statuses = {r["name"]: r["status"] for r in rungs}
        by_name = {r["name"]: r for r in rungs}
        values: _EntryNumbers = {}
        note = ""
        bench = by_name.get("benchmark")
        if bench is not None and bench["status"] in ("ok", "warn"):
            m: BenchmarkMetrics = json.loads(bench["metrics"])
            values.update({"median_ms": m.get("median_ms"), "speedup_vs_reference": m.get("speedup_vs_reference"),
                           "speedup_vs_compile": m.get("speedup_vs_compile"), "q1_ms": m.get("q1_ms"),
                           "q3_ms": m.get("q3_ms")})
            if m.get("stderr_ms") is not None and m.get("mean_ms"):
                values["rel_stderr"] = m["stderr_ms"] / m["mean_ms"]
        roof = by_name.get("roofline")
        if roof is not None and roof["status"] in ("ok", "warn"):
            roof_metrics: RooflineMetrics = json.loads(roof["metrics"])
            values["pct_roofline"] = roof_metrics.get("pct_roofline")
        failed = next((r for r in rungs if r["status"] == "fail"), None)
        if failed is not None:
            note = f"{failed['name']}: {(failed['error'] or failed['summary'] or '').splitlines()[0] if (failed['error'] or failed['summary']) else 'failed'}"
        elif bench is not None and bench["status"] == "skip":
            note = f"benchmark skipped: {bench['summary']}"
        elif bench is None:
            note = "not benchmarked"
        return HistoryEntry(
            number=int(run["id"]), source_hash=run["source_hash"], created_at=float(run["created_at"]),
            origin=run["origin"], ok=bool(run["ok"]), duration_s=float(run["duration_s"]), gpu=bool(run["gpu"]),
            device_name=run["device_name"], device_key=run["device_key"],
            versions={"torch": run["torch"], "triton": run["triton"], "driver": run["driver"], "cuda": run["cuda"]},
            statuses=statuses, note=note, author=run["author"] if "author" in run.keys() else UNKNOWN_AUTHOR,
            **values,
        )


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a file of an earlier schema up to this one (in the write's transaction)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    if "author" not in columns:  # schema 1: who made the text was not kept
        try:
            conn.execute(f"ALTER TABLE runs ADD COLUMN author TEXT NOT NULL DEFAULT '{UNKNOWN_AUTHOR}'")
        except sqlite3.OperationalError as exc:  # another process migrated it since we looked
            if "duplicate column" not in str(exc):
                raise
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema' AND CAST(value AS INTEGER) < ?",
                     (str(SCHEMA_VERSION), SCHEMA_VERSION))


def _earlier_author(conn: sqlite3.Connection, source_hash: str) -> str:
    """Who made this text, for a run whose caller does not say (a `check` of the file an accepted
    proposal wrote): the newest known author of the same text, else the person."""
    row = conn.execute("SELECT author FROM runs WHERE source_hash = ? AND author != ? ORDER BY id DESC LIMIT 1",
                       (source_hash, UNKNOWN_AUTHOR)).fetchone()
    return str(row["author"]) if row is not None else PERSON


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


class BenchRow(TypedDict):
    """One row of the bench table: one target's times on one case of a run (the chart's points)."""

    case_index: int
    case_label: str
    target: str  # "candidate", "reference" or "torch_compile"
    mode: str  # "eager" or "graph" (the candidate replayed in a CUDA graph)
    valid: bool  # False when the roofline rung failed the run's numbers
    median_ms: float | None
    q1_ms: float | None
    q3_ms: float | None
    mean_ms: float | None
    stderr_ms: float | None
    min_ms: float | None
    runs: int | None
    # The candidate's eager row only:
    floor_ms: NotRequired[float | None]
    pct_roofline: NotRequired[float | None]
    speedup_vs_reference: NotRequired[float | None]
    speedup_vs_compile: NotRequired[float | None]


def bench_rows(results: list[RungResult]) -> list[BenchRow]:
    """The bench table's rows from a run's benchmark and roofline results (nothing from a failed
    benchmark: a number the harness rejected must not reach the chart)."""
    by_name = {r.name: r for r in results}
    bench = by_name.get("benchmark")
    if bench is None or bench.status not in ("ok", "warn"):
        return []
    roof = by_name.get("roofline")
    roof_cases = {c.get("label", ""): c for c in ((roofline_metrics(roof).get("cases") if roof else None) or [])}
    valid = roof is None or roof.status != "fail"
    rows: list[BenchRow] = []
    for case in benchmark_metrics(bench).get("cases") or []:
        roof_case = roof_cases.get(case.get("label", ""))
        for target, mode, stats in (("candidate", "eager", case.get("candidate")), ("candidate", "graph", case.get("graph")),
                                    ("reference", "eager", case.get("reference")),
                                    ("torch_compile", "eager", case.get("torch_compile"))):
            if not stats or stats.get("median_ms") is None:
                continue
            row: BenchRow = {
                "case_index": case.get("index", 0), "case_label": case.get("label", ""), "target": target,
                "mode": mode, "valid": valid, "median_ms": stats.get("median_ms"), "q1_ms": stats.get("q1_ms"),
                "q3_ms": stats.get("q3_ms"), "mean_ms": stats.get("mean_ms"), "stderr_ms": stats.get("stderr_ms"),
                "min_ms": stats.get("min_ms"), "runs": stats.get("runs"),
            }
            if target == "candidate" and mode == "eager":
                row.update({"floor_ms": roof_case.get("floor_ms", case.get("floor_ms")) if roof_case else case.get("floor_ms"),
                            "pct_roofline": roof_case.get("pct_roofline") if roof_case else None,
                            "speedup_vs_reference": case.get("speedup_vs_reference"),
                            "speedup_vs_compile": case.get("speedup_vs_compile")})
            rows.append(row)
    return rows


def observer_for(task: Task) -> RunObserver:
    """The loop observer that records every finished run of ``task`` (unless the run says not to)."""
    store = HistoryStore.for_task(task)

    def observe(task_: Task, source: str, report: RunReport, options: RunOptions) -> int | None:
        if not options.record:
            return None
        number = store.record(task_, source, report, options)
        report.version_id = str(number)
        return number

    return observe


def history_fault(path: Path | str, exc: sqlite3.DatabaseError) -> str:
    """What went wrong with the history file, and what to do. SQLite says "operational" for a fault of
    the machine (a full disk, a read-only folder, a lock, an I/O error): the file is then as intact as
    it was, and throwing it away would lose every version for nothing. Only a file SQLite cannot read
    as a database is damaged."""
    if isinstance(exc, sqlite3.OperationalError):
        return (f"{path}: {exc} — the history itself is not damaged: free space on its disk, or make the "
                f"file and its folder writable, then run again (keep the file)")
    return f"{path}: {exc} (the file is damaged: move it away to start a new history)"
