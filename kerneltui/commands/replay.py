"""``kerneltui replay SESSION``: the session in the app, read-only, with a timeline; ``--verify`` reruns
every accepted version on this machine and prints then vs now; ``kerneltui sessions`` lists them."""

from __future__ import annotations

import argparse
import asyncio
import sys

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a saved session in the app (read-only); --verify reruns its versions")
    p.add_argument("session", help="a session folder, its log.jsonl, a name from `kerneltui sessions`, or 'latest'")
    p.add_argument("--verify", action="store_true", help="rerun every accepted version here and compare with then")
    p.add_argument("--all", action="store_true", help="with --verify: every checked version, not only accepted ones")
    p.add_argument("--json", action="store_true", help="with --verify: one JSON object instead of the table")
    p.add_argument("--timeout", type=float, help="with --verify: seconds each rung may take")
    p.add_argument("--headless", action="store_true", help="print the timeline instead of opening the app")
    p.set_defaults(func=main)
    s = sub.add_parser("sessions", help="list saved sessions, newest first")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=list_main)


def _config():
    from kerneltui.config import ConfigError, load_config

    try:
        return load_config()
    except ConfigError as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from exc


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.session import SessionError, Timeline, load_session, resolve_session

    config = _config()
    try:
        folder = resolve_session(args.session, config)
        loaded = load_session(folder)
    except SessionError as exc:
        print(f"kerneltui replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if loaded.lost_bytes:
        print(f"kerneltui replay: {loaded.lost_note()}", file=sys.stderr)
    for problem in loaded.problems:
        print(f"kerneltui replay: {problem}", file=sys.stderr)
    if args.verify:
        from kerneltui.core.session.verify import render_table, verify_session

        try:
            report = asyncio.run(verify_session(loaded, accepted_only=not args.all, timeout_s=args.timeout,
                                                progress=None if args.json else lambda line: print(line, flush=True)))
        except SessionError as exc:
            print(f"kerneltui replay --verify: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if args.json:
            print_json(report.to_dict())
        else:
            print(render_table(report))
        return EXIT_OK if report.all_pass else EXIT_FAIL
    timeline = Timeline(loaded)
    if args.headless or not sys.stdout.isatty():
        if not args.headless:
            print("(not a terminal: printing the timeline instead of opening the app)")
        print(f"session {loaded.id} · task {loaded.task.get('name')} · {len(loaded.events)} events · "
              f"{len(timeline.versions)} versions")
        for v in timeline.versions:
            median = f"{v.median_ms * 1000:.1f} µs" if v.median_ms is not None else "no timing"
            author = timeline.author(v)
            print(f"  v{v.number} {v.source_hash[:10]} step {v.step:>5} {v.origin:<9} {'PASS' if v.ok else 'FAIL'} "
                  f"{'accepted' if v.accepted else '':<8} {median}" + (f" · {author}" if author else ""))
        return EXIT_OK
    from kerneltui.ui.launch import create_replay_app

    create_replay_app(folder, settings=config).run()
    return EXIT_OK


def list_main(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from kerneltui.core.session import list_sessions, sessions_dir

    config = _config()
    found = list_sessions(config, include_examples=True)
    if args.json:
        print_json([{"name": s.name, "folder": str(s.folder), "task": s.task, "task_root": s.task_root,
                     "origin": s.origin, "created_at": s.created_at, "size_bytes": s.size_bytes,
                     "summary": asdict(s.summary) if s.summary is not None else None} for s in found])
        return EXIT_OK
    if not found:
        print(f"no sessions in {sessions_dir(config)}")
        return EXIT_OK
    from kerneltui.core.session.store import describe_session

    for info in found:
        print(describe_session(info, found))
    return EXIT_OK
