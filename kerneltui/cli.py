"""The ``kerneltui`` command. Subcommands live in ``kerneltui.commands`` (one module each).

With no subcommand (or with a task path) it opens the TUI. Exit codes: 0 when every rung that
ran passed, 1 when the kernel failed, 2 for usage or task errors, 141 (128 + SIGPIPE, as coreutils)
when the reader of the output went away (``kerneltui history | head``), said nowhere.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from kerneltui import __version__
from kerneltui.commands import remote_options

# Modules under kerneltui.commands; each defines register(subparsers) and sets args.func.
COMMAND_MODULES = (
    "check",
    "watch",
    "new",
    "demo",
    "tui",
    "config",
    "device",
    "doctor",
    "history",
    "compare",
    "profile",
    "asm",
    "ask",
    "context",
    "trace",
    "suite",
    "engine",
    "replay",
    "export",
)

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_PIPE = 128 + 13  # SIGPIPE: what a shell shows for `yes | head`


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit 2 with a hint, as argparse does, but say what to run
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n(try `{self.prog} --help`)\n")


def build_parser(commands: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The command line with ``commands`` (default: all of them; each is a module imported here)."""
    parser = _Parser(prog="kerneltui", description="Write GPU kernels with an LLM agent against a harness you can trust.")
    parser.add_argument("--version", action="version", version=f"kerneltui {__version__}")
    remote_options.add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in commands:
        importlib.import_module(f"kerneltui.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    lead, argv = remote_options.split_leading(argv)
    known = {name.replace("_", "-") for name in COMMAND_MODULES} | {"-h", "--help", "--version", "sessions"}
    if not argv or (argv[0] not in known and not argv[0].startswith("-")) or (argv and argv[0].startswith("--") and argv[0] not in known):
        # `kerneltui` or `kerneltui TASK [options]` opens the TUI.
        if "tui" in COMMAND_MODULES:
            argv = ["tui", *argv]
        elif not argv:
            build_parser().print_help()
            return EXIT_USAGE
    # Opening the app needs its own command only: importing the other commands' modules would delay its
    # first paint (``kerneltui --help`` and every other command still build the whole line).
    parser = build_parser(("tui",) if argv[0] == "tui" else COMMAND_MODULES)
    args = parser.parse_args([*lead, *argv])
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        # `config` runs no worker, and reports the config file's problems itself (`config --path` names the
        # file even when it is malformed)
        runner = None if args.command == "config" else remote_options.configure(args)
    except ValueError as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe is caught, rather than at exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        remote_options.close(runner)


def _reader_gone() -> int:
    """stdout's reader closed the pipe (``| head``): stop quietly, as coreutils do. Python's own flush of
    stdout at exit would fail again; stdout now points at /dev/null instead."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(main())
