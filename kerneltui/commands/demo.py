"""``kerneltui demo``: copy a bundled example into a scratch folder and open the app on it."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

EXAMPLE_SESSION = "vector_add_demo"  # sessions/vector_add_demo, recorded by sessions/record_example.py


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="try kerneltui on a bundled example in a scratch folder")
    p.add_argument("--example", default="vector_add", help="which bundled example (kerneltui new --list)")
    p.add_argument("--dir", help="scratch folder to use (default: a new temporary one)")
    p.add_argument("--check", action="store_true", help="run the loop once, headless, instead of opening the app")
    p.add_argument("--replay", action="store_true",
                   help="replay the example session shipped in sessions/ (read-only, with a timeline) instead")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.commands.new import scaffold

    if getattr(args, "replay", False):
        from kerneltui.commands import replay

        return replay.main(argparse.Namespace(session=EXAMPLE_SESSION, verify=False, all=False, json=False,
                                              timeout=None, headless=False))

    target = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="kerneltui-demo-")) / args.example
    scaffold(args.example, target, force=True)
    print(f"demo task copied to {target}")
    if args.check or not sys.stdout.isatty():
        from kerneltui.commands import check

        if not args.check:
            print("(not a terminal: running the loop once instead of opening the app)")
        # Check's own parser gives every option its default (a namespace written here fell behind them).
        parser = argparse.ArgumentParser(prog="kerneltui")
        check.register(parser.add_subparsers())
        return check.main(parser.parse_args(["check", str(target)]))
    from kerneltui.commands import tui

    return tui.main(argparse.Namespace(task=str(target), kernel=None, theme=None, timeout=None, no_watch=False,
                                       resume=None))
