"""``kerneltui export SESSION``: a Markdown report of a saved session (plus a PNG chart with matplotlib)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kerneltui.commands.common import EXIT_OK, EXIT_USAGE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a Markdown report of a saved session")
    p.add_argument("session", help="a session folder, its log.jsonl, a name from `kerneltui sessions`, or 'latest'")
    p.add_argument("--out", default=".", help="folder for SESSION.md (and SESSION.png); default: here")
    p.add_argument("--stdout", action="store_true", help="print the Markdown instead of writing files")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.config import ConfigError, load_config
    from kerneltui.core.session import SessionError, load_session, resolve_session
    from kerneltui.core.session.export import export_session, render_markdown

    try:
        loaded = load_session(resolve_session(args.session, load_config()))
    except (SessionError, ConfigError) as exc:
        print(f"kerneltui export: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if loaded.lost_bytes:
        print(f"kerneltui export: {loaded.lost_note()}", file=sys.stderr)
    if loaded.damaged_note():
        print(f"kerneltui export: {loaded.damaged_note()}", file=sys.stderr)
    if args.stdout:
        sys.stdout.write(render_markdown(loaded))
        return EXIT_OK
    try:
        result = export_session(loaded, Path(args.out))
    except OSError as exc:
        print(f"kerneltui export: cannot write to {args.out}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {result.markdown}" + (f" and {result.png}" if result.png else f" (no PNG: {result.png_note})"))
    return EXIT_OK
