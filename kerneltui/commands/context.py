"""``kerneltui context``: what the agent's context search holds, and a search from the shell.

Without a query it lists the folders searched (the task's context/, the configured folder,
kerneltui's notes), how many files and chunks each has in the index, and what was skipped and why.
With a query it prints the hits exactly as the agent's ``search_context`` tool returns them. The
index is brought up to date first (``--no-refresh`` shows it as it is). With ``--grep PATTERN`` it
runs the agent's ``grep_context`` instead: a regular expression (or ``--literal`` text) over the
context folders and the installed DSL packages' sources, no index needed; it exits 1 when nothing matches.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, load_or_report, print_json

SKIPPED_SHOWN = 12  # files named per folder (the counts cover all of them)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("context", help="show what the agent's context search indexes, or search it")
    p.add_argument("query", nargs="*", help="words to search for, as the agent would (none: show the index)")
    p.add_argument("--task", help="include this task's own context/ folder")
    p.add_argument("--context", help="the configured context folder (default: [agent] context_dir)")
    p.add_argument("--limit", type=int, default=8, help="hits to show (default 8)")
    p.add_argument("--under", help="only search below this folder, e.g. context/cutlass")
    p.add_argument("--no-refresh", action="store_true", help="do not bring the index up to date first")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    grep = p.add_argument_group("exact search (the agent's grep_context)")
    grep.add_argument("--grep", metavar="PATTERN", help="a regular expression over context/ and the installed DSLs")
    grep.add_argument("--literal", action="store_true", help="the pattern is plain text")
    grep.add_argument("--ignore-case", action="store_true", help="match either case")
    grep.add_argument("--glob", default="", help="only files whose path or name matches, e.g. '*.py'")
    grep.add_argument("--source", default="all", help="all, context, installed, or triton / cutlass / tilelang")
    grep.add_argument("--max", type=int, default=50, help="matches shown (default 50; all are counted)")
    grep.add_argument("--after", type=int, default=0, help="lines shown after each match")
    grep.add_argument("--count", action="store_true", help="only the number of matches per file")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.config import ConfigError, load_config
    from kerneltui.core.agent.search import ContextIndex, context_folders
    from kerneltui.core.agent.search.folders import task_context_refusal
    from kerneltui.core.agent.search.installed import installed_packages
    from kerneltui.core.agent.settings import AgentSettings, context_dir

    if args.limit < 1:
        print("kerneltui context: --limit must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        settings = AgentSettings.from_config(load_config())
    except ConfigError as exc:
        print(f"kerneltui context: {exc}", file=sys.stderr)
        return EXIT_USAGE
    task_root: Path | None = None
    if args.task:
        task = load_or_report(args, args.task, None)
        if isinstance(task, int):
            return task
        task_root = task.root
    configured = Path(args.context).expanduser().resolve() if args.context else context_dir(settings)
    if args.context and not configured.is_dir():
        print(f"kerneltui context: --context {args.context} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    folders = context_folders(task_root, configured, installed_packages() if settings.search_installed else [])
    if args.grep is not None:
        return _grep(folders, args)
    index = ContextIndex(folders)
    refusal = task_context_refusal(task_root) if task_root else ""
    stats = None
    if not args.no_refresh:
        if index.refreshed_at() is None and not args.json:
            print("indexing the context folders for the first time (a cutlass clone takes a minute or so) …",
                  file=sys.stderr, flush=True)
        stats = index.refresh()
    query = " ".join(args.query).strip()
    if query:
        return _search(index, query, args)
    reports = index.report()
    if args.json:
        print_json({"index": str(index.db_path), "refresh": stats.describe() if stats else None, "refused": refusal,
                    "folders": [_report_dict(r) for r in reports]})
        return EXIT_OK
    for line in describe(reports, str(index.db_path), stats.describe() if stats else None, refusal):
        print(line)
    return EXIT_OK


def _search(index: Any, query: str, args: argparse.Namespace) -> int:
    from kerneltui.core.agent.search import format_hits

    started = time.perf_counter()
    hits = index.search(query, args.limit, args.under)
    took = time.perf_counter() - started
    if args.json:
        print_json({"query": query, "seconds": round(took, 4), "hits": [
            {"path": h.shown, "file": str(h.folder.path / h.path), "folder": h.folder.origin, "line": h.line,
             "start_line": h.start_line, "end_line": h.end_line, "title": h.title, "also": h.also,
             "snippet": [{"line": n, "text": t} for n, t in h.snippet]} for h in hits]})
        return EXIT_OK
    print(format_hits(hits, query))
    print(f"({took * 1000:.0f} ms)")
    return EXIT_OK


def _grep(folders: Any, args: argparse.Namespace) -> int:
    from kerneltui.core.agent.search.grep import GrepError, GrepQuery, format_grep, grep, grep_files

    if args.query:
        print("kerneltui context: give either words to search (ranked) or --grep PATTERN, not both", file=sys.stderr)
        return EXIT_USAGE
    if args.max < 1 or args.after < 0:
        print("kerneltui context: --max must be at least 1 and --after at least 0", file=sys.stderr)
        return EXIT_USAGE
    query = GrepQuery(args.grep, literal=args.literal, ignore_case=args.ignore_case, glob=args.glob,
                      max_matches=args.max, count=args.count, after=args.after, source=args.source)
    try:
        query.compiled()
        result = grep(query, grep_files(folders, args.source, args.glob))
    except GrepError as exc:
        print(f"kerneltui context: --grep: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print_json({"pattern": query.pattern, "literal": query.literal, "sources": result.sources,
                    "files_searched": result.files, "total": result.total, "stopped": result.stopped,
                    "skipped": dict(result.skipped), "seconds": round(result.seconds, 4),
                    "counts": [{"path": p, "from": result.labels[p], "matches": n} for p, n in result.counts.items()],
                    "matches": [{"path": m.file.shown, "file": str(m.file.path), "from": m.file.label, "line": m.line,
                                 "text": m.text, "after": list(m.after)} for m in result.matches]})
    else:
        print(format_grep(result))
        print(f"({result.seconds * 1000:.0f} ms)")
    return EXIT_OK if result.counts else EXIT_FAIL


def _report_dict(report: Any) -> dict[str, Any]:
    return {"origin": report.folder.origin, "path": str(report.folder.path), "exists": report.exists,
            "files": report.files, "chunks": report.chunks, "refreshed_at": report.refreshed_at,
            "skipped_counts": report.counts, "skipped": [{"path": p, "why": w} for p, w in report.skipped],
            "notes": [{"path": p, "note": n} for p, n in report.notes]}


def describe(reports: list[Any], db: str, refresh: str | None, refusal: str) -> list[str]:
    """The index as text lines (a pure function of the reports)."""
    lines = [f"context index: {db}"]
    if refresh:
        lines.append(f"refreshed: {refresh}")
    if refusal:
        lines.append(f"not searched: {refusal}")
    for n, r in enumerate(reports, 1):
        lines.append("")
        if not r.exists:
            lines.append(f"{n}. {r.folder.describe()}: missing (nothing to search there)")
            continue
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.refreshed_at)) if r.refreshed_at else "never"
        lines.append(f"{n}. {r.folder.describe()}: {r.files:,} files, {r.chunks:,} chunks (refreshed {when})")
        for why, count in sorted(r.counts.items(), key=lambda kv: -kv[1]):
            lines.append(f"     skipped {count:>6,}  {why}")
        for path, why in r.skipped[:SKIPPED_SHOWN]:
            lines.append(f"     skipped  {path}: {why}")
        if len(r.skipped) > SKIPPED_SHOWN:
            lines.append(f"     … and {len(r.skipped) - SKIPPED_SHOWN} more (--json lists them all)")
        for path, note in r.notes[:SKIPPED_SHOWN]:
            lines.append(f"     note     {path}: {note}")
    lines.append("")
    lines.append("context/… names the folders above as one, in this order (an earlier folder's file hides a later "
                 "one's of the same name); an installed package's files are installed/<name>/…. Search from here "
                 "with: kerneltui context WORDS, or exactly with kerneltui context --grep PATTERN")
    return lines
