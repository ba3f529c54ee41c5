"""The context index: an SQLite FTS5 table of chunks from every folder searched, kept up to date.

One SQLite file per configured context folder, in the cache dir (``context-index/``); the task's
own ``context/`` and kerneltui's notes are folders in the same file, so a cutlass clone is indexed
once for every task. A refresh compares each file's size and mtime and re-reads only what changed.

FTS5 does the matching and the first ranking: the ``porter`` tokenizer (lower case, Unicode-aware,
stemmed, so plural and singular match), ``bm25()`` with a weight per field (path, title, prose,
code). The order of the hits is then refined in Python (``ranking``).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui import paths
from kerneltui.core.agent.search.chunk_code import c_definitions
from kerneltui.core.agent.search.chunker import chunk_text
from kerneltui.core.agent.search.folders import ContextFolder, Scan, read_inside, scan_folder
from kerneltui.core.agent.search.hits import Hit, read_snippet
from kerneltui.core.agent.search.ranking import (
    DEFAULT,
    Candidate,
    Coverage,
    Framework,
    Ranking,
    asked_frameworks,
    asked_kinds,
    file_prior,
    in_framework,
    in_named,
    is_library,
    match_expression,
    named_after,
    named_tops,
    required_terms,
    spread,
    stem,
    title_prior,
)
from kerneltui.core.agent.search.tokens import (
    Term,
    camel_parts,
    definition_match,
    path_text,
    query_terms,
    with_expansion,
)

SCHEMA_VERSION = "5"  # 3, 4: code with its camel-case parts (undone in 5); 4, 5: C++ titles name their definitions
TOKENIZER = "porter unicode61 remove_diacritics 2"
RANK_BUDGET_S = 0.35  # per ranked query; past it, rank a sample (see ContextIndex.search)
SAMPLE_ROWS = 4000
_ROWID_SHIFT = 16  # rowid = file id << 16 | chunk number
# Code keeps its camel-case names whole: with their parts too, the 149 questions over a cutlass clone lost
# (p@5 0.467 → 0.455, best in top 5 88 → 87 of 149, 2026-12-07; and 4 % more index); a query's neighbouring
# words match joined instead ("warp specialize config" → WarpSpecializeConfig). The ablation can turn it on.
CODE_PARTS = False
PARALLEL_FILES = 256  # read and cut files in worker processes when at least this many changed
MAX_WORKERS = 8
_REPOSITORY_MARKERS = (".git", ".github", ".gitignore")  # a folder with one of these at its root is a clone
_SCHEMA = f"""
DROP TABLE IF EXISTS folders;
DROP TABLE IF EXISTS files;
DROP TABLE IF EXISTS skipped;
DROP TABLE IF EXISTS chunks;
CREATE TABLE folders(id INTEGER PRIMARY KEY, path TEXT UNIQUE, origin TEXT, refreshed_at REAL);
CREATE TABLE files(id INTEGER PRIMARY KEY, folder INTEGER, path TEXT, mtime_ns INTEGER, size INTEGER,
                   chunks INTEGER, note TEXT, UNIQUE(folder, path));
-- What the last walk of each folder left out: the files worth naming, and a count per reason.
CREATE TABLE skipped(folder INTEGER, path TEXT, reason TEXT, count INTEGER);
CREATE VIRTUAL TABLE chunks USING fts5(path, title, doc, code, folder UNINDEXED, rel UNINDEXED,
                                       start_line UNINDEXED, end_line UNINDEXED, tokenize='{TOKENIZER}');
"""


Row = tuple[str, str, str, str, int, int]  # path, title, doc, code (the indexed text), start and end line


def chunk_rows(root: Path, rel: str, package: str = "") -> tuple[list[Row], str]:
    """The index rows of one file, and a note when it is not indexed as usual (in a worker process on a
    cold build). An installed package's files have its name in their path ("triton program id")."""
    data = read_inside(root, rel)
    if data is None:
        return [], "not read: it is gone, unreadable, or a link out of the folder"
    if b"\x00" in data[:4096]:
        return [], "not indexed: a binary file"
    chunks, note = chunk_text(rel.rsplit("/", 1)[-1], data.decode("utf-8", errors="replace"))
    if len(chunks) > 1 << _ROWID_SHIFT:
        chunks = chunks[:1 << _ROWID_SHIFT]
        note = note or f"only its first {1 << _ROWID_SHIFT} chunks are indexed"
    where = path_text(f"{package}/{rel}" if package else rel)
    c_family = rel.rsplit(".", 1)[-1].lower() in C_SUFFIXES
    # Code keeps its CamelCase words whole (CODE_PARTS); titles and prose get their parts.
    return [(where, with_expansion(_definitions_named(c.title) if c_family else c.title), with_expansion(c.doc),
             with_expansion(c.code) if CODE_PARTS else c.code, c.start_line, c.end_line) for c in chunks], note


C_SUFFIXES = frozenset({"h", "hpp", "hh", "cuh", "cu", "cc", "cpp", "cxx", "c", "inl"})


def _definitions_named(title: str) -> str:
    """A C/C++ chunk's title, with a line "def NAME" per function it defines, so that the definition rule
    (``tokens.definition_match``: ``def make_tma_copy``) finds C++ definitions as it finds Python's. Only the
    first line of a title is shown."""
    names = c_definitions(title)
    return title + "".join(f"\ndef {name}" for name in names)


def _chunk_rows_of(job: tuple[Path, str, str]) -> tuple[list[Row], str]:
    return chunk_rows(*job)


def rows_of(jobs: list[tuple[Path, str, str]]) -> Iterator[tuple[list[Row], str]]:
    """Each file's rows, in order. Many files (a first index) are read and cut by worker processes while
    this one writes to SQLite: cutting is pure Python and would otherwise take most of the time.

    One worker per core, not one fewer: this process spends much of a build waiting for their rows
    (writing takes a quarter of the CPU time that cutting does), so a core left to it would idle."""
    workers = min(MAX_WORKERS, os.cpu_count() or 1)
    if len(jobs) < PARALLEL_FILES or workers < 2:
        yield from map(_chunk_rows_of, jobs)
        return
    # spawn, not fork: the app has threads running, and a forked child could inherit a held lock.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(_chunk_rows_of, jobs, chunksize=16)


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


@dataclass
class FolderReport:
    """What the index holds of one folder, and what it left out and why."""

    folder: ContextFolder
    exists: bool
    files: int = 0
    chunks: int = 0
    refreshed_at: float | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why), the ones worth naming
    counts: dict[str, int] = field(default_factory=dict)  # why → how many files or folders
    notes: list[tuple[str, str]] = field(default_factory=list)  # (path, note): e.g. read as plain text


def default_db_path(folders: Sequence[ContextFolder]) -> Path:
    """One index per configured folder (the task's context/ and the notes live in the same file)."""
    key = next((f for f in folders if f.origin == "configured"), folders[0] if folders else None)
    digest = hashlib.sha256(str(key.path if key else "").encode()).hexdigest()[:16]
    return paths.cache_dir() / "context-index" / f"{digest}.sqlite3"


def _make_schema(con: sqlite3.Connection) -> None:
    """Make the tables, deciding under the write lock: the TUI's background build and a first search
    (or another kerneltui) open a new index at once, and a connection that saw no schema while the
    other was making it would make it again once the other committed ("table folders already
    exists"; the background build that failed so left the index empty)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        row = con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            # One statement at a time: executescript would commit first and give up the lock.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    con.execute(statement)
            con.execute("INSERT OR REPLACE INTO meta VALUES('schema', ?)", (SCHEMA_VERSION,))
        con.commit()
    except BaseException:
        con.rollback()
        raise


class ContextIndex:
    def __init__(self, folders: Sequence[ContextFolder] | Path, db_path: Path | None = None,
                 ranking: Ranking = DEFAULT) -> None:
        # A single folder is a shorthand for searching that folder alone (no task folder, no notes).
        self.folders = [ContextFolder(folders.resolve(), "configured")] if isinstance(folders, Path) else list(folders)
        self.db_path = db_path or default_db_path(self.folders)
        self.ranking = ranking
        self._lock = threading.Lock()
        self._readers = threading.local()
        self._clone_names: tuple[tuple[float | None, tuple[int, ...]], frozenset[str]] | None = None

    def searchable(self) -> bool:
        """Whether any of the folders exists (kerneltui's notes always do in an installed copy)."""
        return any(f.path.is_dir() for f in self.folders)

    # -- storage ----------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.db_path, timeout=60)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        row = con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            _make_schema(con)
        return con

    def _reader(self) -> sqlite3.Connection:
        """This thread's connection for searching, opened once (searches run in worker threads)."""
        con: sqlite3.Connection | None = getattr(self._readers, "con", None)
        if con is None:
            con = self._readers.con = self._connect()
        return con

    def _folder_ids(self, con: sqlite3.Connection) -> dict[Path, int]:
        rows = con.execute("SELECT id, path FROM folders").fetchall()
        known = {Path(path): fid for fid, path in rows}
        return {f.path: known[f.path] for f in self.folders if f.path in known}

    def refreshed_at(self) -> float | None:
        """When the least recently refreshed folder was refreshed; None if one never was."""
        if not self.db_path.exists():
            return None
        con = self._connect()
        try:
            stamps = {Path(p): t for p, t in con.execute("SELECT path, refreshed_at FROM folders")}
        finally:
            con.close()
        times = [stamps.get(f.path) for f in self.folders]
        return None if any(t is None for t in times) else min(t for t in times if t is not None)

    # -- keeping it up to date ----------------------------------------------------------------------

    def refresh(self) -> IndexStats:
        """Bring the index up to date with every folder (only changed files are read)."""
        with self._lock:
            started = time.perf_counter()
            stats = IndexStats()
            con = self._connect()
            try:
                with con:
                    for folder in self.folders:
                        self._refresh_folder(con, folder, scan_folder(folder), stats)
                    self._forget_missing_folders(con)
                    total = con.execute("SELECT coalesce(sum(chunks), 0) FROM files").fetchone()[0]
                    con.execute("INSERT OR REPLACE INTO meta VALUES('chunks', ?)", (str(total),))
            finally:
                con.close()
            stats.seconds = time.perf_counter() - started
            return stats

    def _refresh_folder(self, con: sqlite3.Connection, folder: ContextFolder, found: Scan, stats: IndexStats) -> None:
        con.execute("INSERT OR IGNORE INTO folders(path, origin) VALUES(?, ?)", (str(folder.path), folder.origin))
        folder_id = con.execute("SELECT id FROM folders WHERE path = ?", (str(folder.path),)).fetchone()[0]
        if folder.label:  # an installed package: another version is other files, whatever their mtimes say
            key = f"label {folder.path}"
            row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] != folder.label:
                stats.removed += _drop_files(con, folder_id)
                con.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (key, folder.label))
        known = {path: (fid, mtime, size) for fid, path, mtime, size in
                 con.execute("SELECT id, path, mtime_ns, size FROM files WHERE folder = ?", (folder_id,))}
        on_disk = found.files
        gone = [p for p in known if p not in on_disk]
        changed = [p for p, sig in on_disk.items() if p in known and known[p][1:] != sig]
        added = [p for p in on_disk if p not in known]
        stats.files += len(on_disk)
        stats.removed += len(gone)
        stats.updated += len(changed)
        stats.added += len(added)
        for path in gone + changed:
            fid = known[path][0]
            con.execute("DELETE FROM chunks WHERE rowid >= ? AND rowid < ?",
                        (fid << _ROWID_SHIFT, (fid + 1) << _ROWID_SHIFT))
            if path in gone:
                con.execute("DELETE FROM files WHERE id = ?", (fid,))
        todo = changed + added
        for path, (rows, note) in zip(todo, rows_of([(folder.path, p, folder.package.name if folder.package else "") for p in todo]), strict=True):
            mtime, size = on_disk[path]
            if path in known:
                fid = known[path][0]
                con.execute("UPDATE files SET mtime_ns=?, size=?, chunks=?, note=? WHERE id=?",
                            (mtime, size, len(rows), note, fid))
            else:
                cur = con.execute("INSERT INTO files(folder, path, mtime_ns, size, chunks, note) VALUES(?,?,?,?,?,?)",
                                  (folder_id, path, mtime, size, len(rows), note))
                fid = int(cur.lastrowid or 0)
            base = fid << _ROWID_SHIFT
            con.executemany("INSERT INTO chunks(rowid, path, title, doc, code, folder, rel, start_line, end_line) "
                            "VALUES(?,?,?,?,?,?,?,?,?)", [(base + n, *row[:4], folder_id, path, *row[4:])
                                                          for n, row in enumerate(rows)])
            stats.chunks_written += len(rows)
        con.execute("DELETE FROM skipped WHERE folder = ?", (folder_id,))
        con.executemany("INSERT INTO skipped VALUES(?, ?, ?, 1)", [(folder_id, p, why) for p, why in found.skipped])
        con.executemany("INSERT INTO skipped VALUES(?, NULL, ?, ?)",
                        [(folder_id, why, n) for why, n in found.counts.items()])
        con.execute("UPDATE folders SET refreshed_at = ?, origin = ? WHERE id = ?", (time.time(), folder.origin, folder_id))

    def _forget_missing_folders(self, con: sqlite3.Connection) -> None:
        """Drop folders that no longer exist (a task deleted, a clone moved) so the file does not grow forever."""
        for fid, path in con.execute("SELECT id, path FROM folders").fetchall():
            if Path(path).is_dir():
                continue
            _drop_files(con, fid)
            for table, column in (("skipped", "folder"), ("folders", "id")):
                con.execute(f"DELETE FROM {table} WHERE {column} = ?", (fid,))
            con.execute("DELETE FROM meta WHERE key = ?", (f"label {path}",))

    def ensure_fresh(self, max_age_s: float) -> IndexStats | None:
        """Refresh when the index is missing or older than ``max_age_s``; None when it was fresh enough."""
        at = self.refreshed_at()
        if at is not None and time.time() - at < max_age_s:
            return None
        return self.refresh()

    # -- what is in it ------------------------------------------------------------------------------

    def report(self) -> list[FolderReport]:
        """Per folder: files and chunks indexed, when, and what was skipped and why (as of the last refresh)."""
        reports = [FolderReport(f, f.path.is_dir()) for f in self.folders]
        if not self.db_path.exists():
            return reports
        con = self._connect()
        try:
            ids = self._folder_ids(con)
            for report in reports:
                fid = ids.get(report.folder.path)
                if fid is None:
                    continue
                report.files, report.chunks = con.execute(
                    "SELECT count(*), coalesce(sum(chunks), 0) FROM files WHERE folder = ?", (fid,)).fetchone()
                report.refreshed_at = con.execute("SELECT refreshed_at FROM folders WHERE id = ?", (fid,)).fetchone()[0]
                for path, why, n in con.execute("SELECT path, reason, count FROM skipped WHERE folder = ?", (fid,)):
                    if path is None:
                        report.counts[why] = n
                    else:
                        report.skipped.append((path, why))
                report.notes = list(con.execute(
                    "SELECT path, note FROM files WHERE folder = ? AND note != '' ORDER BY path", (fid,)))
        finally:
            con.close()
        return reports

    # -- searching --------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 8, under: str | None = None,
               budget_s: float = RANK_BUDGET_S) -> list[Hit]:
        """The best chunks for the query, one per file, best first (see ``ranking``).

        Ranking visits every chunk that has all the required words; for words found nearly everywhere
        that could take seconds on a large folder, so past ``budget_s`` (for the whole search) a query
        is ranked over its first ``SAMPLE_ROWS`` matches only and the hits say so (``Hit.sampled``),
        and looser queries are not tried.
        """
        terms = query_terms(query)
        if not terms or not self.db_path.exists():
            return []
        con = self._reader()
        ids = self._folder_ids(con)
        if not ids:
            return []
        packages = self._named_packages(terms, ids)
        where = _Filter(list(ids.values()), _under_prefix(under), named=named_tops(terms, self._clones(con, ids)),
                        named_folders=frozenset(packages), package_names=frozenset(packages.values()),
                        frameworks=asked_frameworks(query), asked=asked_kinds(query),
                        package_of={ids[f.path]: f.package.name for f in self.folders
                                    if f.package is not None and f.path in ids})
        candidates, sampled = self._candidates(con, terms, where, limit, budget_s)
        words = [p.lower() for t in terms for p in _words(t.word)]
        by_id = {ids[f.path]: f for f in self.folders if f.path in ids}
        hits: list[Hit] = []
        for best, others, similar in spread(candidates, limit * 2, self.ranking):
            folder = by_id[best.folder]
            hit = Hit(folder, best.rel, best.start_line, best.end_line, best.start_line, best.score, best.title,
                      also=[(o.start_line, o.end_line) for o in sorted(others, key=lambda o: o.start_line)],
                      shown=self._shown(folder, best.rel), sampled=SAMPLE_ROWS if sampled else 0,
                      similar=similar)
            if read_snippet(hit, words):
                hits.append(hit)
            if len(hits) == limit:
                break
        shown = {(h.folder.path, h.path) for h in hits}
        for hit in hits:  # a family's files that are hits of their own need no naming
            hit.similar = [self._shown(hit.folder, rel) for rel in hit.similar if (hit.folder.path, rel) not in shown]
        return hits

    def _candidates(self, con: sqlite3.Connection, terms: list[Term], where: _Filter, limit: int,
                    budget_s: float) -> tuple[list[Candidate], bool]:
        counts = [con.execute("SELECT count(*) FROM chunks WHERE chunks MATCH ?", (t.fts(),)).fetchone()[0]
                  for t in terms]
        least = self.ranking.min_matches

        def enough(expression: str) -> bool:  # stops counting at ``least``: cheap even for common words
            return con.execute("SELECT count(*) FROM (SELECT 1 FROM chunks WHERE chunks MATCH ? LIMIT ?)",
                               (expression, least)).fetchone()[0] >= least

        required = required_terms(terms, counts, enough, self.ranking.name_rarity)
        if not required:
            return [], False
        row = con.execute("SELECT value FROM meta WHERE key = 'chunks'").fetchone()
        total = int(row[0]) if row else max(counts)
        where.cover = Coverage.of(terms, counts, total)
        candidates: list[Candidate] = []
        sampled = False
        # All the required words first; then, while there are fewer files than asked for, the rarest
        # words only, one fewer at a time, then any word, each after every hit of the stricter queries.
        levels = [match_expression(required[:keep], terms) for keep in range(len(required), 0, -1)]
        # Last: any of the words, but not a folder's name alone (every file in it has that in its path).
        loose = [t for t in terms if t.word.lower() not in where.named | where.package_names] or terms
        if len(terms) > 1:
            levels.append(" OR ".join(t.fts() for t in loose))
        deadline = time.perf_counter() + budget_s  # for the whole search, not for each level
        for match in levels:
            left = deadline - time.perf_counter()
            if left <= 0 and candidates:
                break
            found, cut = self._ranked(con, match, where, max(left, 0.0))
            seen = {c.rowid for c in candidates}
            candidates += _after(candidates, [c for c in found if c.rowid not in seen])
            sampled = sampled or cut
            if len({(c.folder, c.rel) for c in candidates if where.in_scope(c.folder, c.rel)}) >= limit:
                break
        if self.ranking.definition > 0:
            candidates = self._with_definitions(con, terms, where, candidates, deadline)
        if self.ranking.named_file > 0:
            candidates = self._with_named_files(con, terms, required[0], where, candidates, deadline)
        if where.named or where.named_folders:  # the folder the query names first, whatever level its hits came from
            inside = [c for c in candidates if where.in_scope(c.folder, c.rel)]
            candidates = inside + _after(inside, [c for c in candidates if not where.in_scope(c.folder, c.rel)])
        return candidates, sampled

    def _with_definitions(self, con: sqlite3.Connection, terms: list[Term], where: _Filter,
                          candidates: list[Candidate], deadline: float) -> list[Candidate]:
        """The chunks that define a name the query asks for, among the candidates with their score times
        ``Ranking.definition`` (a reference file's definition of ``load`` holds few of a question's other
        words, and would otherwise rank below every example that calls it)."""
        named = [m for m in (definition_match(t.word) for t in terms) if m]
        if not named:
            return candidates
        anything = " OR ".join(t.fts() for t in terms)
        match = f"({' OR '.join(named)}) AND ({anything})"
        found, _ = self._ranked(con, match, where, max(deadline - time.perf_counter(), 0.05))
        return _boosted(candidates, [c for c in found if is_library(c.rel)], self.ranking.definition, scale_known=True)

    def _with_named_files(self, con: sqlite3.Connection, terms: list[Term], rarest: Term, where: _Filter,
                          candidates: list[Candidate], deadline: float) -> list[Candidate]:
        """The files named after the query's words (``ranking.named_after``), their chunks among the
        candidates with their score times ``Ranking.named_file``, wherever the required words left
        them: ``swizzle.hpp`` defines the swizzle but says neither "shared memory" nor "layout"."""
        words = frozenset(w for t in terms for w in _stems(t))
        match = f"path : {rarest.fts()} AND ({' OR '.join(t.fts() for t in terms)})"
        found, _ = self._ranked(con, match, where, max(deadline - time.perf_counter(), 0.05))
        rarest_stems = frozenset(_stems(rarest))
        files: set[str] = set()
        named: list[Candidate] = []
        for c in sorted(found, key=lambda c: -c.score):
            if c.rel in files or named_after(c.rel, words, rarest_stems):
                if c.rel not in files and len(files) == self.ranking.named_files:
                    continue
                files.add(c.rel)
                named.append(c)
        return _boosted(candidates, named, self.ranking.named_file, scale_known=False)

    def _ranked(self, con: sqlite3.Connection, match: str, where: _Filter, budget_s: float) -> tuple[
            list[Candidate], bool]:
        r = self.ranking
        sql = (f"SELECT rowid, folder, rel, start_line, end_line, title, "
               f"bm25(chunks, {r.path}, {r.title}, {r.doc}, {r.code}) AS score FROM chunks "
               f"WHERE chunks MATCH ? {where.sql} ORDER BY score LIMIT ?")
        args = [match, *where.args, r.candidates]
        deadline = time.perf_counter() + budget_s
        con.set_progress_handler(lambda: 1 if time.perf_counter() > deadline else 0, 2000)
        sampled = False
        try:
            rows = con.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "interrupt" not in str(exc):
                raise
            rows, sampled = [], True
        finally:
            con.set_progress_handler(None, 0)
        if sampled:  # too many matches to rank in time: rank the first SAMPLE_ROWS of them (index order)
            last = con.execute(f"SELECT max(rowid) FROM (SELECT rowid FROM chunks WHERE chunks MATCH ? {where.sql} "
                               f"LIMIT ?)", [match, *where.args, SAMPLE_ROWS]).fetchone()[0]
            if last is not None:
                rows = con.execute(sql.replace("ORDER BY", "AND rowid <= ? ORDER BY"),
                                   [match, *where.args, last, r.candidates]).fetchall()
        found: list[Candidate] = []
        for rowid, folder, rel, start, end, title, score in rows:
            heading = title.split("\n", 1)[0]
            if rel not in where.path_shares:
                where.path_shares[rel] = where.cover.share(rel)
            boost = 1 + r.path_cover * where.path_shares[rel] + r.title_cover * where.cover.share(heading)
            if where.frameworks and in_framework(where.frameworks, rel, where.package_of.get(folder, "")):
                boost *= r.framework
            found.append(Candidate(rowid, folder, rel, int(start), int(end), heading,
                                   -float(score) * file_prior(rel, r, where.asked) * title_prior(heading, r, where.asked)
                                   * boost))
        return found, sampled

    def _named_packages(self, terms: list[Term], ids: dict[Path, int]) -> dict[int, str]:
        """The folders of the installed packages the query names ("triton", "cutlass", "tilelang"): id → name."""
        words = {t.word.lower() for t in terms}
        return {ids[f.path]: f.package.name for f in self.folders
                if f.package is not None and f.path in ids and f.package.name in words}

    def _clones(self, con: sqlite3.Connection, ids: dict[Path, int]) -> frozenset[str]:
        """The names, lower case, of the top-level folders of the folders searched that are repositories
        of their own (a clone: ``.git``, ``.github`` or ``.gitignore`` at its root), not of other tasks'
        folders in the same file. With a clone as the folder itself its own ``python/`` or ``docs/``
        name no repository, so "… python example" is not narrowed to ``python/``. Read again only after
        a refresh."""
        folder_ids = list(ids.values())
        marks = ",".join("?" * len(folder_ids))
        stamp = con.execute(f"SELECT max(refreshed_at) FROM folders WHERE id IN ({marks})", folder_ids).fetchone()[0]
        key = (stamp, tuple(folder_ids))
        if self._clone_names is None or self._clone_names[0] != key:
            by_id = {fid: path for path, fid in ids.items()}
            tops = con.execute(f"SELECT DISTINCT folder, substr(path, 1, instr(path, '/') - 1) FROM files "
                               f"WHERE folder IN ({marks}) AND instr(path, '/') > 0", folder_ids).fetchall()
            names = frozenset(top.lower() for fid, top in tops
                              if any((by_id[fid] / top / marker).exists() for marker in _REPOSITORY_MARKERS))
            self._clone_names = (key, names)
        return self._clone_names[1]

    def _shown(self, folder: ContextFolder, rel: str) -> str:
        """How read_file names a hit: context/<path>, unless an earlier folder has a file of that name; an
        installed package's file installed/<name>/<path>."""
        if folder.package is not None:
            return f"{folder.package.shown}/{rel}"
        for earlier in self.folders:
            if earlier is folder:
                return f"context/{rel}"
            if (earlier.path / rel).exists():
                break
        return str(folder.path / rel)


@dataclass
class _Filter:
    """Which rows a search looks at (folders, a subfolder), and how it scores paths and titles."""

    folder_ids: list[int]
    prefix: str
    cover: Coverage = field(default_factory=lambda: Coverage((), ()))
    path_shares: dict[str, float] = field(default_factory=dict)  # per file, computed once per search
    named: frozenset[str] = frozenset()  # top-level folders the query names (see ranking.named_tops)
    named_folders: frozenset[int] = frozenset()  # installed packages the query names, by folder id
    package_names: frozenset[str] = frozenset()  # … and their names ("triton": kerneltui's note triton.md too)
    frameworks: tuple[Framework, ...] = ()  # the languages and frameworks the query names (ranking.FRAMEWORKS)
    package_of: dict[int, str] = field(default_factory=dict)  # folder id → installed package name
    asked: frozenset[str] = frozenset()  # the kinds of file the query asks for (ranking.asked_kinds)

    def in_scope(self, folder: int, rel: str) -> bool:
        if not self.named and not self.named_folders:
            return True
        return folder in self.named_folders or in_named(rel, self.named | self.package_names)

    @property
    def sql(self) -> str:
        marks = ",".join("?" * len(self.folder_ids))
        text = f"AND folder IN ({marks})"
        if self.prefix:
            text += " AND rel LIKE ? ESCAPE '\\'"
        return text

    @property
    def args(self) -> list[object]:
        args: list[object] = list(self.folder_ids)
        if self.prefix:
            args.append(self.prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%")
        return args


def _drop_files(con: sqlite3.Connection, folder_id: int) -> int:
    """Forget every file of a folder and its chunks; how many files there were."""
    ids = con.execute("SELECT id FROM files WHERE folder = ?", (folder_id,)).fetchall()
    for (file_id,) in ids:
        con.execute("DELETE FROM chunks WHERE rowid >= ? AND rowid < ?",
                    (file_id << _ROWID_SHIFT, (file_id + 1) << _ROWID_SHIFT))
    con.execute("DELETE FROM files WHERE folder = ?", (folder_id,))
    return len(ids)


def _boosted(candidates: list[Candidate], found: list[Candidate], weight: float, scale_known: bool) -> list[Candidate]:
    """``found`` (chunks a rule singles out: a definition, a file named after the question) among the
    candidates, each at its own bm25 over the query's words times ``weight``, not below every hit with
    all the required words (where a looser level put it), and at most level with the best hit before the
    boost. A chunk already there keeps the better of its score (times ``weight`` with ``scale_known``) and that.

    The cap is one factor per file, not a ceiling per chunk: a ceiling would level a file's chunks at the
    top, and whichever came first (its header of imports, often) would stand for the file."""
    by_row = {c.rowid: c for c in candidates}
    top = max((c.score for c in candidates), default=float("inf"))
    file_best: dict[tuple[int, str], float] = {}
    for c in found:
        file_best[(c.folder, c.rel)] = max(file_best.get((c.folder, c.rel), 0.0), c.score)
    for c in found:
        known = by_row.get(c.rowid)
        best = file_best[(c.folder, c.rel)]
        score = c.score * (min(best, top) / best if best > 0 else 0.0) * weight
        if known is None:
            c.score = score
            candidates.append(c)
            by_row[c.rowid] = c
        else:
            known.score = max(known.score * weight if scale_known else known.score, score)
    return candidates


def _under_prefix(under: str | None) -> str:
    prefix = (under or "").strip().strip("/")
    return "" if prefix == "context" else prefix.removeprefix("context/").strip("/")


def _after(first: list[Candidate], then: list[Candidate]) -> list[Candidate]:
    """``then`` scaled to rank after every one of ``first`` (hits without all the required words come
    after every hit with them), in their own order."""
    if not first or not then:
        return then
    floor = min(c.score for c in first)
    top = max(c.score for c in then)
    for c in then:
        c.score = floor * 0.9 * c.score / top if top > 0 else 0.0
    return then


def _stems(term: Term) -> list[str]:
    """A query word's pieces as ``ranking.named_after`` compares them: lower case, crudely stemmed, and
    joined (``split-k`` is ``split``, ``k`` and ``splitk``)."""
    pieces = [p.lower() for p in _words(term.word)]
    return [stem(p) for p in [*pieces, "".join(p for p in pieces if p.isalnum())]]


def _words(word: str) -> list[str]:
    pieces = [p for p in word.replace("_", " ").replace(".", " ").replace("-", " ").split() if p]
    out: list[str] = []
    for piece in pieces:
        out.append(piece)
        out.extend(camel_parts(piece))
    return out
