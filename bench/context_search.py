"""Context search: relevance on real cutlass and triton clones, and speed on a generated 30,000-file folder.

``relevance`` asks the questions of ``bench/context_questions.toml`` (a kernel engineer's questions,
each with the files that answer it, read and checked by hand) of an index over a folder holding
clones of NVIDIA/cutlass and triton-lang/triton, plus kerneltui's shipped notes, and reports:

- precision@5: of the first 5 hits, the share that name a file answering the question (a file named
  twice counts once: the second hit adds no answer; fewer than 5 hits count as misses);
- recall@10: of the files that answer, the share found in the first 10 hits;
- best in top 5: the share of questions with one of their ``best`` files in the first 5 hits;
- the cold index build time (wall clock, and CPU seconds of the process and its worker processes,
  which the machine's load does not inflate), the index size on disk (the SQLite file with its WAL),
  and the query latency (every question 5 times, limit 10; median and 95th percentile).

Each half of the questions is reported on its own: ranking choices were made on ``tune`` only,
``held-out`` was not looked at while tuning. Each code version is measured in its own process:
``--baseline DIR`` names a copy of an older kerneltui (the ``kerneltui`` package folder's parent) to
compare with, indexed over the same files (its single context folder then holds the clones and the
notes under ``notes/``, hard-linked so nothing is copied).

``synthetic`` generates a folder of N text files shaped like a cutlass clone (C++ headers, CUDA
sources, Python, Markdown; identifiers from the CuTe/CUTLASS vocabulary, sizes log-normal around a few
kB) and times the cold build, a refresh with nothing changed and one after touching 50 files, and
queries (median and worst; very common words; the first query of a new process).

``ablation`` turns each ranking and index choice off (or its alternative on) in turn and scores the
questions again (the index variants are built in one process, so their build times compare).

Usage:
  python bench/context_search.py relevance --clones /work/context-clones [--baseline DIR] [--repeats N] [--show N]
  python bench/context_search.py ablation --clones /work/context-clones
  python bench/context_search.py chunkers --clones /work/context-clones
  python bench/context_search.py cutting --clones /work/context-clones --baseline DIR [--repeats N]
  python bench/context_search.py synthetic [--files 30000] [--mean-kb 5] [--dir DIR] [--keep]
Both print a table and append it to bench/RESULTS.md (``--no-record`` not to).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "bench" / "context_questions.toml"
RESULTS = ROOT / "bench" / "RESULTS.md"
REPEATS = 5  # each question is timed this many times
HALVES = ("tune", "held-out", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7")  # in the order they were written (context_questions.toml)
LIMIT = 10


# -- the questions and the scores --------------------------------------------------------------------

@dataclass(frozen=True)
class Question:
    query: str
    half: str
    best: tuple[str, ...]
    also: tuple[str, ...]
    judged: tuple[str, ...] = ()  # answers found while reading hits (see context_questions.toml)
    not_answers: tuple[str, ...] = ()  # hits read and judged not to answer

    @property
    def written(self) -> frozenset[str]:
        """The answers written down before any search was run."""
        return frozenset(self.best) | frozenset(self.also)

    @property
    def relevant(self) -> frozenset[str]:
        return self.written | frozenset(self.judged)


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    with open(path, "rb") as f:
        rows = tomllib.load(f)["question"]
    return [Question(r["query"], r["half"], tuple(r["best"]), tuple(r.get("also", ())), tuple(r.get("judged", ())),
                     tuple(r.get("not_answers", ()))) for r in rows]


@dataclass
class Scores:
    precision_at_5: float
    precision_at_5_written: float  # counting only the answers written before any search
    recall_at_10: float
    best_in_top_5: float
    questions: int
    unread_in_top_5: int = 0  # top-5 files never judged (neither an answer nor read and found not one): misses
    precision_at_5_of_known: float = 0.0  # answers in the top 5 / min(5, the question's known answers)
    ceiling_at_5: float = 0.0  # the precision@5 the known answers allow: min(5, known answers) / 5
    open_slots: int = 0  # top-5 slots without an answer that a known answer could fill
    waiting_in_6_to_10: int = 0  # … of them, fillable by an answer already at places 6-10 (a reordering's reach)


def _new_answers(hits: list[str], answers: frozenset[str]) -> int:
    """Hits that name an answer not named by an earlier hit (a file twice is one answer, the other a miss)."""
    seen: set[str] = set()
    for f in hits:
        if f in answers:
            seen.add(f)
    return len(seen)


def score(questions: list[Question], ranked: dict[str, list[str]]) -> Scores:
    p5, p5w, p5cap, r10, b5, ceiling = [], [], [], [], [], []
    unread = open_slots = waiting = 0
    for q in questions:
        files = ranked[q.query]
        top5 = files[:5]
        unread += len(set(top5) - q.relevant - set(q.not_answers))
        ceiling.append(min(5, len(q.relevant)) / 5)
        slots = min(5, len(q.relevant)) - _new_answers(top5, q.relevant)
        open_slots += slots
        waiting += min(slots, len((set(files[5:10]) & q.relevant) - set(top5)))
        p5.append(_new_answers(top5, q.relevant) / 5)
        # A question with fewer than five known answers cannot fill five slots: the share of what it could.
        p5cap.append(_new_answers(top5, q.relevant) / min(5, len(q.relevant)))
        p5w.append(_new_answers(top5, q.written) / 5)
        r10.append(len(q.relevant & set(files[:10])) / len(q.relevant))
        b5.append(1.0 if set(q.best) & set(top5) else 0.0)
    n = len(questions)
    return Scores(sum(p5) / n, sum(p5w) / n, sum(r10) / n, sum(b5) / n, n, unread, sum(p5cap) / n,
                  sum(ceiling) / n, open_slots, waiting)


# -- measuring one code version (runs in its own process) ---------------------------------------------

def _hardlink_tree(src: Path, dst: Path) -> None:
    """A copy of ``src`` whose files are hard links (instant, no space), skipping what cannot be linked."""
    for dirpath, _dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            try:
                os.link(Path(dirpath) / name, dst / rel / name)
            except OSError:
                pass


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes): load-independent cost."""
    import resource

    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _file_size(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def measure(code: str, api: str, clones: Path, notes: Path, work: Path) -> dict[str, Any]:
    """Build an index of the clones and the notes with the kerneltui in ``code``; answer every question."""
    sys.path.insert(0, code)
    db = work / "index.sqlite3"
    for old in work.glob("index.sqlite3*"):
        old.unlink()
    if api == "single-folder":
        from kerneltui.core.agent.search import ContextIndex  # type: ignore[attr-defined]

        root = work / "context"
        if not root.exists():
            for name in ("cutlass", "triton"):
                _hardlink_tree(clones / name, root / name)
            shutil.copytree(notes, root / "notes")
        index: Any = ContextIndex(root, db_path=db)

        def name_of(hit: Any) -> str:
            return str(hit.path)
    else:
        from kerneltui.core.agent.search import ContextFolder, ContextIndex

        index = ContextIndex([ContextFolder(clones, "configured"), ContextFolder(notes, "notes")], db_path=db)

        def name_of(hit: Any) -> str:
            return ("notes/" if hit.folder.origin == "notes" else "") + str(hit.path)

    started, cpu = time.perf_counter(), _cpu_seconds()
    stats = index.refresh()
    cold, cold_cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    started = time.perf_counter()
    index.refresh()
    warm = time.perf_counter() - started
    ranked: dict[str, list[str]] = {}
    lines: dict[str, list[str]] = {}
    times: list[float] = []
    for q in load_questions():
        for _ in range(REPEATS):
            t = time.perf_counter()
            hits = index.search(q.query, LIMIT)
            times.append(time.perf_counter() - t)
        ranked[q.query] = [name_of(h) for h in hits]
        lines[q.query] = [f"{name_of(h)}:{h.start_line}-{h.end_line}" for h in hits]
    times.sort()
    return {"cold_s": cold, "cold_cpu_s": cold_cpu, "refresh_s": warm, "files": stats.files, "chunks": stats.chunks_written,
            "index_bytes": _file_size(db), "median_ms": statistics.median(times) * 1000,
            "p95_ms": times[min(len(times) - 1, int(0.95 * len(times)))] * 1000, "ranked": ranked, "lines": lines}


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One version's repeated measurements: the last run's hits, each timing's median and its range."""
    out = dict(runs[-1])
    for key in ("cold_s", "cold_cpu_s", "refresh_s", "median_ms", "p95_ms"):
        values = sorted(r[key] for r in runs)
        out[key], out[key + "_range"] = statistics.median(values), (values[0], values[-1])
    out["runs"] = len(runs)
    return out


def _timing(r: dict[str, Any], key: str, scale: float, unit: str, digits: int) -> str:
    """A timing as its median, with its range when it was measured more than once."""
    text = f"{r[key] * scale:.{digits}f} {unit}"
    if r.get("runs", 1) > 1:
        lo, hi = r[key + "_range"]
        text += f" ({lo * scale:.{digits}f}–{hi * scale:.{digits}f})"
    return text


def run_version(code: Path, api: str, clones: Path, notes: Path, work: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "_measure", "--code", str(code), "--api", api, "--clones",
                          str(clones), "--notes", str(notes), "--work", str(work)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"measuring {code} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout)


# -- the relevance report ---------------------------------------------------------------------------

def relevance(args: argparse.Namespace) -> int:
    clones = Path(args.clones).resolve()
    for name in ("cutlass", "triton") if not args.rescore else ():
        if not (clones / name).is_dir():
            raise SystemExit(f"{clones / name} is missing: clone NVIDIA/cutlass and triton-lang/triton into {clones}")
    questions = load_questions()
    notes = ROOT / "kerneltui" / "data" / "notes"
    versions: list[tuple[str, dict[str, Any]]] = []
    if args.rescore:  # the hits of an earlier run (--save), scored against the answers as they are now
        versions = [(label, result) for label, result in json.loads(Path(args.rescore).read_text())]
        return _report(questions, versions, args)
    with tempfile.TemporaryDirectory(prefix="kerneltui-ctx-relevance-") as tmp:
        runs: list[tuple[str, Path, str, Path]] = []
        if args.baseline:
            base = Path(args.baseline).resolve()
            if (base / "kerneltui" / "core" / "agent" / "search" / "folders.py").exists():
                # A version that searches several folders: its own notes as their own folder.
                runs.append((f"before ({args.baseline_label})", base, "folders", base / "kerneltui" / "data" / "notes"))
            else:  # the first search: one folder, its notes under context/
                base_notes = Path(tmp) / "base-notes"
                base_notes.mkdir()
                for note in sorted((base / "context").glob("*.md")):
                    if note.name != "README.md":
                        shutil.copy(note, base_notes / note.name)
                runs.append((f"before ({args.baseline_label})", base, "single-folder", base_notes))
        runs.append(("after (this tree)", ROOT, "folders", notes))
        results: dict[str, list[dict[str, Any]]] = {label: [] for label, *_ in runs}
        for _ in range(args.repeats):  # the versions take turns, so that both see the same load
            for label, code, api, folder_notes in runs:
                work = Path(tmp) / label.split()[0]
                work.mkdir(exist_ok=True)
                results[label].append(run_version(code, api, clones, folder_notes, work))
        versions = [(label, combined(results[label])) for label, *_ in runs]
    if args.save:
        Path(args.save).write_text(json.dumps(versions))
    return _report(questions, versions, args)


def _report(questions: list[Question], versions: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> int:
    halves = [(half, [q for q in questions if q.half == half]) for half in HALVES]
    halves = [(half, qs) for half, qs in halves if qs] + [("all", questions)]
    scored = [(label, half, score(qs, result["ranked"])) for label, result in versions for half, qs in halves]
    rows = ["| version | questions | precision@5 | precision@5, written answers only | precision@5 of what the known "
            "answers allow | recall@10 | best in top 5 | top-5 files never read |", "|---|---|---|---|---|---|---|---|"]
    # Whether a better order of what is found or finding more is what the precision lacks.
    reach = ["| version | questions | precision@5 the known answers allow | top-5 slots an answer could fill | "
             "… of them by an answer at places 6-10 |", "|---|---|---|---|---|"]
    for label, half, s in scored:
        rows.append(f"| {label} | {half} ({s.questions}) | {s.precision_at_5:.2f} | {s.precision_at_5_written:.2f} | "
                    f"{s.precision_at_5_of_known:.2f} | "
                    f"{s.recall_at_10:.2f} | "
                    f"{s.best_in_top_5:.0%} ({round(s.best_in_top_5 * s.questions)} of {s.questions}) | "
                    f"{s.unread_in_top_5} |")
        reach.append(f"| {label} | {half} ({s.questions}) | {s.ceiling_at_5:.2f} | {s.open_slots} | "
                     f"{s.waiting_in_6_to_10} |")
    speed = ["| version | files | chunks | cold build (wall / CPU) | refresh, nothing changed | index size | "
             "query median | query p95 |", "|---|---|---|---|---|---|---|---|"]
    for label, r in versions:
        cpu = f" / {_timing(r, 'cold_cpu_s', 1, 's', 1)}" if "cold_cpu_s" in r else ""
        speed.append(f"| {label} | {r['files']:,} | {r['chunks']:,} | {_timing(r, 'cold_s', 1, 's', 1)}{cpu} | "
                     f"{_timing(r, 'refresh_s', 1000, 'ms', 0)} | {r['index_bytes'] / 1e6:.0f} MB | "
                     f"{_timing(r, 'median_ms', 1, 'ms', 1)} | {_timing(r, 'p95_ms', 1, 'ms', 1)} |")
    runs = max(r.get("runs", 1) for _, r in versions)
    if runs > 1:
        speed.append(f"\nTimings: median of {runs} runs per version, the versions taking turns (min–max in brackets).")
    print("\n".join(rows))
    print()
    print("\n".join(reach))
    print()
    print("\n".join(speed))
    if args.show:
        _show(questions, versions, args.show, args.half)
    if not args.no_record:
        command = "relevance --clones DIR" + (" --baseline DIR" if args.baseline else "") + \
            (f" --repeats {args.repeats}" if args.repeats > 1 else "")
        _record("## Context search relevance on cutlass and triton clones", command, args.clones_note,
                [*rows, "", *reach, "", *speed])
    return 0


def _show(questions: list[Question], versions: list[tuple[str, dict[str, Any]]], n: int, half: str) -> None:
    """Each question's first ``n`` hits, marked: ** a best file, * another answer, ? not listed as one."""
    for q in questions:
        if half != "all" and q.half != half:
            continue
        print(f"\n### {q.query}  [{q.half}]")
        for label, result in versions:
            print(f"  {label}:")
            for shown in result["lines"][q.query][:n]:
                name = shown.rsplit(":", 1)[0]
                mark = "**" if name in q.best else ("* " if name in q.relevant else "? ")
                print(f"    {mark} {shown}")


def _record(heading: str, command: str, note: str, lines: list[str]) -> None:
    """Append a table to bench/RESULTS.md with the date, the command, the machine and its load."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    with open(RESULTS, "a", encoding="utf-8") as f:
        f.write(f"\n{heading} ({datetime.date.today()})\n\n")
        f.write(f"`python bench/context_search.py {command}` on {_machine()} (load average {load} at the end)"
                + (f"; {note}" if note else "") + "\n\n")
        f.write("\n".join(lines) + "\n")


def _machine() -> str:
    return (f"{platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · "
            f"SQLite {sqlite3.sqlite_version}")


# -- what each choice is worth ---------------------------------------------------------------------------

ABLATIONS = [  # (name, what it changes): query-side variants share the chosen index
    ("chosen", {}),
    ("prefix queries (`word*`)", {"terms": {"prefixes": True}}),
    ("no joined neighbour words", {"terms": {"joins": False}}),
    ("no abbreviation table", {"terms": {"vocabulary": False}}),
    ("no search for definitions", {"ranking": {"definition": 0.0}}),
    ("no files named after the question", {"ranking": {"named_file": 0.0}}),
    ("no path and title coverage", {"ranking": {"path_cover": 0.0, "title_cover": 0.0}}),
    ("equal field weights", {"ranking": {"path": 1.0, "title": 1.0, "doc": 1.0, "code": 1.0}}),
    ("no kind-of-file weights", {"ranking": {"docs": 1.0, "examples": 1.0, "tests": 1.0, "build": 1.0,
                                             "history": 1.0, "internals": 1.0, "index_page": 1.0}}),
    ("meta documents and internals weigh as any file", {"ranking": {"history": 1.0, "internals": 1.0,
                                                                    "index_page": 1.0}}),
    ("no preference for a framework the question names", {"ranking": {"framework": 1.0}}),
    ("near-duplicate files weigh as any file", {"ranking": {"family": 1.0}}),
    ("one file per family of near-duplicates", {"ranking": {"family": 0.0}}),
    ("compiler sources weigh as any source", {"ranking": {"internals": 1.0}}),
    ("words required only while 3 chunks hold them all", {"ranking": {"min_matches": 3}}),
    ("names required as any word (by rarity alone)", {"ranking": {"name_rarity": 1.0}}),
    ("no file support (best chunk only)", {"ranking": {"support": 0.0}}),
    ("unicode61 tokenizer (no stemming)", {"index": "unicode61"}),
    ("code identifiers split at camel case", {"index": "camel"}),
]


def ablation(args: argparse.Namespace) -> int:
    """Each choice turned off (or the alternative on) in turn, over the same clones and questions."""
    sys.path.insert(0, str(ROOT))
    import dataclasses

    from kerneltui.core.agent.search import ContextFolder, ContextIndex
    from kerneltui.core.agent.search import index as index_module
    from kerneltui.core.agent.search.ranking import DEFAULT

    clones = Path(args.clones).resolve()
    folders = [ContextFolder(clones, "configured"), ContextFolder(ROOT / "kerneltui" / "data" / "notes", "notes")]
    questions = load_questions()
    chosen_terms, chosen_rows = index_module.query_terms, index_module.chunk_rows
    index_module.PARALLEL_FILES = 1 << 30  # one process, so that the index variants below apply
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kerneltui-ctx-ablation-") as tmp:
        built: dict[str, tuple[Path, float, int]] = {}
        for name, change in ABLATIONS:
            kind = change.get("index", "chosen")
            if kind not in built:
                db = Path(tmp) / f"{kind}.sqlite3"
                schema = index_module._SCHEMA
                if kind == "unicode61":
                    index_module._SCHEMA = schema.replace(index_module.TOKENIZER, "unicode61 remove_diacritics 2")
                if kind == "camel":
                    index_module.CODE_PARTS = True
                started = time.perf_counter()
                ContextIndex(folders, db_path=db).refresh()
                built[kind] = (db, time.perf_counter() - started, _file_size(db))
                index_module._SCHEMA, index_module.chunk_rows, index_module.CODE_PARTS = schema, chosen_rows, False
            db, seconds, size = built[kind]
            terms_kw = change.get("terms", {})
            index_module.query_terms = (lambda q, kw=terms_kw: chosen_terms(q, **kw)) if terms_kw else chosen_terms
            index = ContextIndex(folders, db_path=db, ranking=dataclasses.replace(DEFAULT, **change.get("ranking", {})))
            ranked: dict[str, list[str]] = {}
            times: list[float] = []
            for q in questions:  # once untimed: every variant is timed with warm caches
                index.search(q.query, LIMIT)
            for q in questions:
                t = time.perf_counter()
                hits = index.search(q.query, LIMIT)
                times.append(time.perf_counter() - t)
                ranked[q.query] = [("notes/" if h.folder.origin == "notes" else "") + h.path for h in hits]
            cells = []
            for half in HALVES:
                s = score([q for q in questions if q.half == half], ranked)
                cells.append(f"{s.precision_at_5:.2f} / {s.best_in_top_5:.0%}")
            rows.append(f"| {name} | {' | '.join(cells)} | {statistics.median(times) * 1000:.1f} ms | "
                        f"{size / 1e6:.0f} MB, {seconds:.0f} s |")
            print(rows[-1], flush=True)
    index_module.query_terms = chosen_terms
    header = ["| variant | " + " | ".join(f"{h}: precision@5 / best in top 5" if i == 0 else h for i, h in enumerate(HALVES))
              + " | query median | index, build |", "|---" * (len(HALVES) + 3) + "|"]
    print("\n".join(header + rows))
    if not args.no_record:
        _record("### Context search: what each choice is worth", "ablation --clones DIR", "builds in one process",
                header + rows)
    return 0


# -- reading structure: tree-sitter or the lexical chunkers ----------------------------------------------

def chunkers(args: argparse.Namespace) -> int:
    """CPU seconds to parse the clones' C++/CUDA and Python with tree-sitter (parse only, no walk of the
    tree) and to cut them into chunks with kerneltui's lexical chunkers (everything)."""
    sys.path.insert(0, str(ROOT))
    import tree_sitter_cuda
    import tree_sitter_python
    from tree_sitter import Language, Parser

    from kerneltui.core.agent.search.chunker import chunk_text

    clones = Path(args.clones).resolve()
    kinds = {"C++/CUDA": ({".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl"}, Parser(Language(tree_sitter_cuda.language()))),
             "Python": ({".py"}, Parser(Language(tree_sitter_python.language())))}
    rows = ["| files | MB | tree-sitter parse | kerneltui chunks |", "|---|---|---|---|"]
    for kind, (suffixes, parser) in kinds.items():
        files = [p for p in sorted(clones.rglob("*")) if p.suffix in suffixes and p.is_file()
                 and p.stat().st_size <= 2 * 1024 * 1024]
        data = [p.read_bytes() for p in files]
        texts = [d.decode("utf-8", errors="replace") for d in data]
        mb = sum(map(len, data)) / 1e6
        started = time.process_time()
        for d in data:
            parser.parse(d)
        parse = time.process_time() - started
        started = time.process_time()
        for p, t in zip(files, texts, strict=True):
            chunk_text(p.name, t)
        cut = time.process_time() - started
        rows.append(f"| {kind}: {len(files):,} | {mb:.0f} | {parse:.1f} s CPU ({mb / parse:.1f} MB/s) | "
                    f"{cut:.1f} s CPU ({mb / cut:.1f} MB/s) |")
        print(rows[-1], flush=True)
    if not args.no_record:
        _record("### Context search: reading structure, tree-sitter or lexical", "chunkers --clones DIR", "CPU seconds",
                rows)
    return 0


# -- the lexical chunkers of two versions ---------------------------------------------------------------

CUT_KINDS = {"C++/CUDA": (".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl"), "Python": (".py",)}


def cut_seconds(code: str, clones: Path) -> dict[str, float]:
    """CPU seconds for the kerneltui in ``code`` to cut the clones' C++/CUDA and Python into chunks (in
    this process: run once per version, in its own process)."""
    sys.path.insert(0, code)
    from kerneltui.core.agent.search.chunker import chunk_text

    seconds: dict[str, float] = {}
    for kind, suffixes in CUT_KINDS.items():
        files = [p for p in sorted(clones.rglob("*")) if p.suffix in suffixes and p.is_file()
                 and p.stat().st_size <= 2 * 1024 * 1024]
        texts = [p.read_bytes().decode("utf-8", errors="replace") for p in files]
        started = time.process_time()
        for p, t in zip(files, texts, strict=True):
            chunk_text(p.name, t)
        seconds[kind] = time.process_time() - started
    return seconds


def cutting(args: argparse.Namespace) -> int:
    """The chunkers' CPU seconds, this tree against ``--baseline`` (same files), the versions taking turns."""
    versions = [("before (" + args.baseline_label + ")", Path(args.baseline).resolve()), ("after (this tree)", ROOT)]
    runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in versions}
    for _ in range(args.repeats):
        for label, code in versions:
            out = subprocess.run([sys.executable, __file__, "_cut", "--code", str(code), "--clones", args.clones],
                                 capture_output=True, text=True, check=True)
            runs[label].append(json.loads(out.stdout))
    rows = ["| version | " + " | ".join(CUT_KINDS) + " |", "|---|" + "---|" * len(CUT_KINDS)]
    for label, _ in versions:
        cells = []
        for kind in CUT_KINDS:
            values = sorted(r[kind] for r in runs[label])
            cells.append(f"{statistics.median(values):.2f} s CPU ({values[0]:.2f}–{values[-1]:.2f})")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    rows.append(f"\nMedian of {args.repeats} runs per version, each in its own process, the versions taking turns.")
    print("\n".join(rows))
    if not args.no_record:
        _record("### Context search: CPU time of the chunkers", f"cutting --clones DIR --baseline DIR --repeats "
                f"{args.repeats}", "", rows)
    return 0


# -- the generated 30,000-file folder ------------------------------------------------------------------

VOCAB = """cute layout make_layout make_shape make_stride Tensor make_tensor local_tile local_partition
TiledMMA TiledCopy make_tiled_copy make_tiled_mma SM90_64x128x16_F32BF16BF16_SS GMMA wgmma warpgroup
arrive fence commit_group wait_group cp_async cp_async_wait SM90_TMA_LOAD SM90_TMA_STORE tma_descriptor
make_tma_copy ClusterShape TileShape KernelTmaWarpSpecialized CollectiveMma CollectiveEpilogue
PipelineTmaAsync barrier mbarrier ClusterBarrier smem_ptr gmem_ptr Swizzle composition complement
logical_divide zipped_divide tiled_divide coalesce rank depth size cosize Int Underscore Step
ldmatrix stmatrix mma_sync half_t bfloat16_t float_e4m3_t tfloat32_t uint128_t alignas
__syncthreads __shfl_xor_sync threadIdx blockIdx blockDim gridDim template typename constexpr
CUTLASS_DEVICE CUTLASS_HOST_DEVICE static_assert decltype auto return if for namespace struct
occupancy register spill shared memory bank conflict coalesced vectorized predicate epilogue
pipeline stage producer consumer warp specialization persistent scheduler split_k stream_k
GemmUniversal ArchTag OpClassTensorOp LayoutA LayoutB ElementAccumulator ElementCompute
""".split()
WORDS = """the a of and to in is for that with on by this we be are as it an or from at which can
tile thread block warp element value index shape stride mode copy load store compute result matrix
""".split()


def vocabulary(rng: random.Random, size: int = 40_000) -> list[str]:
    """Words ordered by frequency rank: English glue first, the CUTLASS/CuTe terms spread over ranks
    50-5000 (common but not everywhere), synthetic identifiers for the long tail."""
    syllables = ["ka", "to", "ri", "mu", "ne", "sa", "lo", "pi", "de", "gu", "va", "zo", "bel", "tor", "mex",
                 "qua", "dri", "fen", "lis", "gro"]
    tail: list[str] = []
    seen: set[str] = set()
    while len(tail) < size:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.3:
            word += "_" + "".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
        if word not in seen:
            seen.add(word)
            tail.append(word)
    words = list(WORDS) + tail
    for term in VOCAB:
        words.insert(rng.randint(50, 5000), term)
    return words


def generate(folder: Path, files: int, mean_kb: float, seed: int = 0) -> int:
    import numpy as np

    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    words = np.array(vocabulary(rng))
    ranks = np.arange(1, len(words) + 1)
    weights = 1.0 / ranks ** 1.07  # Zipf's law, as in natural text and source code
    weights /= weights.sum()
    kinds = [(".hpp", 0.45), (".h", 0.1), (".cu", 0.15), (".py", 0.15), (".md", 0.1), (".txt", 0.05)]
    exts = [k for k, _ in kinds]
    kind_weights = [w for _, w in kinds]
    total = 0
    sigma = 1.0
    mu = math.log(mean_kb * 1024) - sigma * sigma / 2
    # About 15 files per folder, as in a cutlass clone (~30k files in ~2k folders).
    dirs: list[tuple[str, ...]] = []
    while len(dirs) < max(1, files // 15):
        depth = rng.randint(1, 4)
        parts = [rng.choice(["include", "examples", "test", "tools", "python", "media", "docs"])]
        parts += [f"{rng.choice(VOCAB).lower().strip('_')[:12] or 'dir'}{rng.randint(0, 9)}" for _ in range(depth - 1)]
        dirs.append(tuple(parts))
    for i in range(files):
        ext = rng.choices(exts, kind_weights)[0]
        path = folder.joinpath(*rng.choice(dirs), f"{rng.choice(VOCAB).lower()}_{i}{ext}")
        path.parent.mkdir(parents=True, exist_ok=True)
        size = min(200_000, int(rng.lognormvariate(mu, sigma)))
        tokens = words[nprng.choice(len(words), size=max(8, size // 8), p=weights)]
        lines = []
        pos = 0
        while pos < len(tokens):
            width = rng.randint(3, 12)
            lines.append("  " * rng.randint(0, 3) + " ".join(tokens[pos:pos + width]))
            pos += width
        text = "\n".join(lines) + "\n"
        path.write_text(text)
        total += len(text)
    return total


COMMON_QUERIES = ["tile thread", "value index shape", "block warp element"]  # the commonest non-stopwords
QUERIES = ["wgmma warpgroup fence", "make_tiled_copy", "TMA descriptor multicast", "swizzle bank conflict",
           "cp_async wait_group pipeline", "bfloat16_t accumulator epilogue", "ldmatrix", "persistent scheduler"]


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - t


def synthetic(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT))
    from kerneltui.core.agent.search import ContextFolder, ContextIndex

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="kerneltui-ctx-bench-"))
    folder = base / "context"
    db = base / "index.sqlite3"
    rows: list[tuple[str, str]] = []
    try:
        if not folder.exists() or sum(1 for _ in folder.rglob("*") if _.is_file()) < args.files:
            shutil.rmtree(folder, ignore_errors=True)
            nbytes, gen_s = timed(generate, folder, args.files, args.mean_kb)
            print(f"generated {args.files:,} files, {nbytes / 1e6:.0f} MB in {gen_s:.1f} s", flush=True)
        nbytes = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        for old in db.parent.glob(db.name + "*"):
            old.unlink()
        index = ContextIndex([ContextFolder(folder, "configured")], db_path=db)
        stats, cold = timed(index.refresh)
        rows.append(("cold build (first use of a folder)",
                     f"{cold:.1f} s ({stats.files:,} files, {nbytes / 1e6:.0f} MB, {stats.chunks_written:,} chunks, "
                     f"index {_file_size(db) / 1e6:.0f} MB)"))
        walks = [timed(index.refresh)[1] for _ in range(3)]
        rows.append(("background refresh, nothing changed", f"{statistics.median(walks) * 1000:.0f} ms (median of 3)"))
        touched = sorted(folder.rglob("*.hpp"))[:50]
        for p in touched:
            p.write_text(p.read_text() + "\n// touched wgmma\n")
        stats2, touch = timed(index.refresh)
        rows.append(("background refresh, 50 files changed", f"{touch * 1000:.0f} ms ({stats2.updated} updated)"))
        times = []
        for q in QUERIES:
            for _ in range(5):
                hits, t = timed(index.search, q, 8)
                times.append(t)
                assert hits, f"no hits for {q!r}"
        times.sort()
        rows.append(("search_context query, median", f"{statistics.median(times) * 1000:.1f} ms over {len(times)}"))
        rows.append(("search_context query, p95", f"{times[int(0.95 * len(times))] * 1000:.1f} ms"))
        rows.append(("search_context query, worst", f"{max(times) * 1000:.1f} ms"))
        common = []
        sampled = 0
        for q in COMMON_QUERIES:
            hits, t = timed(index.search, q, 8)
            common.append(t)
            sampled += any(h.sampled for h in hits)
        rows.append(("very common words only, worst", f"{max(common) * 1000:.0f} ms "
                     f"({sampled} of {len(COMMON_QUERIES)} ranked on a sample of the matches)"))
        code = ("import sys,time; t=time.perf_counter(); sys.path.insert(0, sys.argv[1]);"
                "from pathlib import Path; from kerneltui.core.agent.search import ContextFolder, ContextIndex;"
                "i=ContextIndex([ContextFolder(Path(sys.argv[2]), 'configured')], db_path=Path(sys.argv[3]));"
                "h=i.search('wgmma warpgroup fence', 8); assert h; print(time.perf_counter()-t)")
        firsts = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(folder), str(db)], capture_output=True,
                                 text=True, check=True)
            firsts.append(float(out.stdout))
        rows.append(("first query of a new session (import + open + query)",
                     f"{statistics.median(firsts) * 1000:.0f} ms (median of 3; the refresh runs in the background)"))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    width = max(len(k) for k, _ in rows)
    table = "\n".join(f"| {k:<{width}} | {v} |" for k, v in rows)
    header = f"| {'step':<{width}} | time |\n|{'-' * (width + 2)}|------|"
    print(header)
    print(table)
    if not args.no_record:
        _record(f"## Context search on {args.files:,} generated files", f"synthetic --files {args.files} --mean-kb "
                f"{args.mean_kb}", "target: a query answers in under 100 ms; the refresh walks every file (stat), "
                "sessions run it in the background", [header, table])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("relevance", help="questions over real cutlass and triton clones")
    rel.add_argument("--clones", required=True, help="a folder holding cutlass/ and triton/")
    rel.add_argument("--clones-note", default="", help="where the clones come from (written to RESULTS.md)")
    rel.add_argument("--baseline", help="a folder holding an older kerneltui/ package (and its context/) to compare")
    rel.add_argument("--baseline-label", default="baseline", help="how to name the older version")
    rel.add_argument("--repeats", type=int, default=1, help="measure each version this many times, taking turns")
    rel.add_argument("--show", type=int, default=0, help="print each question's first N hits")
    rel.add_argument("--half", choices=[*HALVES, "all"], default="tune",
                     help="which questions --show prints")
    rel.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    rel.add_argument("--save", help="also write every version's hits and timings to this JSON file")
    rel.add_argument("--rescore", help="score the hits saved by --save instead of running the searches again")
    syn = sub.add_parser("synthetic", help="speed on a generated cutlass-shaped folder")
    syn.add_argument("--files", type=int, default=30_000)
    syn.add_argument("--mean-kb", type=float, default=5.0)
    syn.add_argument("--dir", help="generate into (and keep) this folder")
    syn.add_argument("--keep", action="store_true")
    syn.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    abl = sub.add_parser("ablation", help="each ranking and index choice turned off in turn")
    abl.add_argument("--clones", required=True, help="a folder holding cutlass/ and triton/")
    abl.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    chk = sub.add_parser("chunkers", help="tree-sitter parsing against kerneltui's chunkers, CPU seconds")
    chk.add_argument("--clones", required=True, help="a folder holding cutlass/ and triton/")
    chk.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    cut = sub.add_parser("cutting", help="the chunkers' CPU time, this tree against an older copy")
    cut.add_argument("--clones", required=True, help="a folder holding cutlass/ and triton/")
    cut.add_argument("--baseline", required=True, help="a folder holding an older kerneltui/ package")
    cut.add_argument("--baseline-label", default="baseline", help="how to name the older version")
    cut.add_argument("--repeats", type=int, default=3)
    cut.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    inner_cut = sub.add_parser("_cut")  # one code version's chunkers, in its own process: prints JSON
    inner_cut.add_argument("--code", required=True)
    inner_cut.add_argument("--clones", required=True)
    inner = sub.add_parser("_measure")  # one code version, in its own process: prints JSON
    inner.add_argument("--code", required=True)
    inner.add_argument("--api", choices=["single-folder", "folders"], required=True)
    inner.add_argument("--clones", required=True)
    inner.add_argument("--notes", required=True)
    inner.add_argument("--work", required=True)
    args = ap.parse_args()
    if args.command == "relevance":
        return relevance(args)
    if args.command == "synthetic":
        return synthetic(args)
    if args.command == "ablation":
        return ablation(args)
    if args.command == "chunkers":
        return chunkers(args)
    if args.command == "cutting":
        return cutting(args)
    if args.command == "_cut":
        print(json.dumps(cut_seconds(args.code, Path(args.clones))))
        return 0
    print(json.dumps(measure(args.code, args.api, Path(args.clones), Path(args.notes), Path(args.work))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
