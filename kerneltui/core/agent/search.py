"""Ranked text search over the context folder (notes, a cutlass clone, the PTX ISA …).

An SQLite FTS5 index (BM25 ranking) of the folder's text files cut into chunks of ``CHUNK_LINES``
lines, kept in the cache dir and brought up to date by comparing each file's size and mtime, so a
cutlass-sized folder (tens of thousands of files) is indexed once and then answers in milliseconds.
Identifiers split on ``_`` and ``.`` (``make_layout`` is searched as the phrase "make layout"), the
file path is searched too and weighs more than the body, and hits point at a line.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui import paths

SCHEMA_VERSION = "1"
CHUNK_LINES = 40
MAX_FILE_BYTES = 2 * 1024 * 1024
TEXT_SUFFIXES = frozenset({
    ".md", ".markdown", ".rst", ".txt", ".py", ".pyi", ".h", ".hpp", ".hh", ".cuh", ".cu", ".cc", ".cpp",
    ".cxx", ".c", ".inl", ".ptx", ".mlir", ".td", ".cmake", ".toml", ".yaml", ".yml", ".sh", ".ll", ".sass",
})
TEXT_NAMES = frozenset({"README", "LICENSE", "Makefile", "CMakeLists.txt"})
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", "build", ".kerneltui", ".mypy_cache", ".pytest_cache",
                       ".ruff_cache", ".venv", "venv"})
STOPWORDS = frozenset("a an and are as at be by for from how i in is it of on or the this to use using what when "
                      "where which with why do does can".split())
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
RANK_BUDGET_S = 0.35  # per ranked query; past it, rank a sample (see ContextIndex.search)
SAMPLE_ROWS = 4000
_ROWID_SHIFT = 16  # rowid = file id << 16 | chunk number


@dataclass
class Hit:
    path: str  # relative to the context folder, with "/"
    start_line: int  # the chunk's first line
    end_line: int
    line: int  # the best-matching line in the chunk
    score: float  # BM25 (higher is better)
    snippet: list[tuple[int, str]] = field(default_factory=list)
    sampled: bool = False  # ranked among a sample of the matches (the words are very common)


@dataclass
class IndexStats:
    files: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    chunks_written: int = 0
    seconds: float = 0.0

    def describe(self) -> str:
        changed = self.added + self.updated + self.removed
        what = (f"{self.added} added, {self.updated} updated, {self.removed} removed" if changed else "no changes")
        return f"{self.files:,} files indexed ({what}) in {self.seconds:.2f} s"


def default_db_path(root: Path) -> Path:
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return paths.cache_dir() / "context-index" / f"{digest}.sqlite3"


def query_terms(query: str) -> list[list[str]]:
    """Each word of the query as the list of its parts (a phrase when it has several)."""
    terms: list[list[str]] = []
    for word in query.split():
        parts = [p.lower() for p in _WORD.findall(word)]
        if not parts or (len(parts) == 1 and parts[0] in STOPWORDS):
            continue
        if parts not in terms:
            terms.append(parts)
    return terms


def _fts(terms: list[list[str]], op: str) -> str:
    return f" {op} ".join('"' + " ".join(parts) + '"' for parts in terms)


class ContextIndex:
    def __init__(self, root: Path, db_path: Path | None = None) -> None:
        self.root = Path(root).resolve()
        self.db_path = db_path or default_db_path(self.root)
        self._lock = threading.Lock()

    # -- storage ----------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.db_path, timeout=60)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        row = con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            con.executescript("""
                DROP TABLE IF EXISTS files;
                DROP TABLE IF EXISTS chunks;
                CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, mtime_ns INTEGER, size INTEGER,
                                   chunks INTEGER);
                CREATE VIRTUAL TABLE chunks USING fts5(path, body, start_line UNINDEXED, tokenize='unicode61');
                -- BM25 with the path weighing 3x the body; "ORDER BY rank" then uses FTS5's fast path.
                INSERT INTO chunks(chunks, rank) VALUES('rank', 'bm25(3.0, 1.0)');
            """)
            con.execute("INSERT OR REPLACE INTO meta VALUES('schema', ?)", (SCHEMA_VERSION,))
            con.execute("INSERT OR REPLACE INTO meta VALUES('root', ?)", (str(self.root),))
            con.commit()
        return con

    def refreshed_at(self) -> float | None:
        if not self.db_path.exists():
            return None
        con = self._connect()
        try:
            row = con.execute("SELECT value FROM meta WHERE key='refreshed_at'").fetchone()
            return float(row[0]) if row else None
        finally:
            con.close()

    # -- keeping it up to date ----------------------------------------------------------------------

    def scan(self) -> dict[str, tuple[int, int]]:
        """Every text file under the root: relative path → (mtime_ns, size)."""
        found: dict[str, tuple[int, int]] = {}
        if not self.root.is_dir():
            return found
        pending = [("", str(self.root))]
        while pending:
            rel_dir, full_dir = pending.pop()
            try:
                entries = os.scandir(full_dir)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if name not in SKIP_DIRS and not name.startswith("."):
                                pending.append((rel_dir + name + "/", entry.path))
                            continue
                        dot = name.rfind(".")
                        suffix = name[dot:].lower() if dot > 0 else ""
                        if suffix not in TEXT_SUFFIXES and name not in TEXT_NAMES:
                            continue
                        st = entry.stat()
                    except OSError:
                        continue
                    if st.st_size <= MAX_FILE_BYTES:
                        found[rel_dir + name] = (st.st_mtime_ns, st.st_size)
        return found

    def refresh(self) -> IndexStats:
        """Bring the index up to date with the folder (only changed files are read)."""
        with self._lock:
            started = time.perf_counter()
            on_disk = self.scan()
            con = self._connect()
            try:
                known = {path: (fid, mtime, size) for fid, path, mtime, size in
                         con.execute("SELECT id, path, mtime_ns, size FROM files")}
                stats = IndexStats(files=len(on_disk))
                gone = [path for path in known if path not in on_disk]
                changed = [p for p, sig in on_disk.items() if p in known and known[p][1:] != sig]
                added = [p for p in on_disk if p not in known]
                stats.removed, stats.updated, stats.added = len(gone), len(changed), len(added)
                with con:
                    for path in gone + changed:
                        fid = known[path][0]
                        con.execute("DELETE FROM chunks WHERE rowid >= ? AND rowid < ?",
                                    (fid << _ROWID_SHIFT, (fid + 1) << _ROWID_SHIFT))
                        if path in gone:
                            con.execute("DELETE FROM files WHERE id = ?", (fid,))
                    for path in changed + added:
                        mtime, size = on_disk[path]
                        rows = self._chunks(path)
                        if path in known:
                            fid = known[path][0]
                            con.execute("UPDATE files SET mtime_ns=?, size=?, chunks=? WHERE id=?",
                                        (mtime, size, len(rows), fid))
                        else:
                            cur = con.execute("INSERT INTO files(path, mtime_ns, size, chunks) VALUES(?,?,?,?)",
                                              (path, mtime, size, len(rows)))
                            fid = int(cur.lastrowid or 0)
                        base = fid << _ROWID_SHIFT
                        con.executemany("INSERT INTO chunks(rowid, path, body, start_line) VALUES(?,?,?,?)",
                                        [(base + n, path, body, start) for n, (start, body) in enumerate(rows)])
                        stats.chunks_written += len(rows)
                    con.execute("INSERT OR REPLACE INTO meta VALUES('refreshed_at', ?)", (str(time.time()),))
            finally:
                con.close()
            stats.seconds = time.perf_counter() - started
            return stats

    def ensure_fresh(self, max_age_s: float) -> IndexStats | None:
        """Refresh when the index is missing or older than ``max_age_s``; None when it was fresh enough."""
        at = self.refreshed_at()
        if at is not None and time.time() - at < max_age_s:
            return None
        return self.refresh()

    def _chunks(self, rel: str) -> list[tuple[int, str]]:
        try:
            data = (self.root / rel).read_bytes()
        except OSError:
            return []
        if b"\x00" in data[:4096]:
            return []
        lines = data.decode("utf-8", errors="replace").split("\n")
        if (1 << _ROWID_SHIFT) * CHUNK_LINES < len(lines):
            lines = lines[: (1 << _ROWID_SHIFT) * CHUNK_LINES]
        return [(i + 1, "\n".join(lines[i:i + CHUNK_LINES])) for i in range(0, len(lines), CHUNK_LINES)]

    # -- searching --------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 8, under: str | None = None,
               budget_s: float = RANK_BUDGET_S) -> list[Hit]:
        """The best chunks for the query: all words first, then any word (BM25, path weighted 3×).

        Ranking visits every matching chunk; for words found nearly everywhere that could take
        seconds on a large folder, so after ``budget_s`` the ranking is redone over the first
        ``SAMPLE_ROWS`` matches only and the hits say so (``Hit.sampled``).
        """
        terms = query_terms(query)
        if not terms or not self.db_path.exists():
            return []
        prefix = (under or "").strip().strip("/")
        prefix = "" if prefix == "context" else prefix.removeprefix("context/").strip("/")
        con = self._connect()
        try:
            rows: list[tuple[int, str, str, int, float]] = []
            sampled = False
            seen: set[int] = set()
            for op in (("AND", "OR") if len(terms) > 1 else ("AND",)):
                match = _fts(terms, op)
                found, cut = _ranked(con, match, prefix, limit, budget_s)
                sampled = sampled or cut
                for row in found:
                    if row[0] not in seen and len(rows) < limit:
                        seen.add(row[0])
                        rows.append(row)
                if len(rows) >= limit:
                    break
        finally:
            con.close()
        words = [w for parts in terms for w in parts]
        return [_hit(path, body, int(start), -float(score), words, sampled) for _, path, body, start, score in rows]


def _ranked(con: sqlite3.Connection, match: str, prefix: str, limit: int,
            budget_s: float) -> tuple[list[tuple[int, str, str, int, float]], bool]:
    where = "chunks MATCH ?"
    args: list[object] = [match]
    if prefix:
        where += " AND path LIKE ? ESCAPE '\\'"
        args.append(prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%")
    sql = f"SELECT rowid, path, body, start_line, rank FROM chunks WHERE {where} ORDER BY rank LIMIT ?"
    deadline = time.perf_counter() + budget_s
    con.set_progress_handler(lambda: 1 if time.perf_counter() > deadline else 0, 2000)
    try:
        return con.execute(sql, [*args, limit]).fetchall(), False
    except sqlite3.OperationalError as exc:
        if "interrupt" not in str(exc):
            raise
    finally:
        con.set_progress_handler(None, 0)
    # Too many matches to rank in time: rank the first SAMPLE_ROWS of them (in index order).
    last = con.execute(f"SELECT max(rowid) FROM (SELECT rowid FROM chunks WHERE {where} LIMIT ?)",
                       [*args, SAMPLE_ROWS]).fetchone()[0]
    if last is None:
        return [], True
    sql = (f"SELECT rowid, path, body, start_line, rank FROM chunks WHERE {where} AND rowid <= ? "
           f"ORDER BY rank LIMIT ?")
    return con.execute(sql, [*args, last, limit]).fetchall(), True


def _hit(path: str, body: str, start: int, score: float, words: list[str], sampled: bool) -> Hit:
    lines = body.split("\n")
    best, best_score = 0, -1
    for i, line in enumerate(lines):
        low = line.lower()
        s = sum(1 for w in set(words) if w in low)
        if s > best_score:
            best, best_score = i, s
    lo, hi = max(0, best - 2), min(len(lines), best + 3)
    snippet = [(start + i, lines[i][:160]) for i in range(lo, hi)]
    return Hit(path=path, start_line=start, end_line=start + len(lines) - 1, line=start + best, score=score,
               snippet=snippet, sampled=sampled)


def format_hits(hits: list[Hit], query: str) -> str:
    if not hits:
        return (f"no hits for {query!r} in context/. Try other words (identifiers are split on _ and ., "
                f"e.g. 'make layout'), or list_files('context') to see what is there.")
    out = [f"{len(hits)} hits for {query!r} (best first; read one with read_file(path, start_line, end_line)):"]
    if any(h.sampled for h in hits):
        out.append(f"(these words are very common: ranked among the first {SAMPLE_ROWS:,} matches only; "
                   f"add a more specific word for better hits)")
    for n, hit in enumerate(hits, 1):
        out.append(f"{n}. context/{hit.path}:{hit.line}  (lines {hit.start_line}-{hit.end_line}, score {hit.score:.1f})")
        out.extend(f"     {number:>5}  {text}" for number, text in hit.snippet)
    return "\n".join(out)
