"""``kerneltui [TASK]``: open the TUI on a task (the current directory when none is given)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kerneltui.commands.common import EXIT_OK, EXIT_USAGE
from kerneltui.core.worker.contract.start import NICE_ENV as WORKER_NICE_ENV

WORKER_NICE = 10  # the app's workers yield the CPU to it

if TYPE_CHECKING:
    from kerneltui.config import Config
    from kerneltui.ui.app import KernelApp


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the app on a task (the default command)")
    p.add_argument("task", nargs="?", default=".", help="a task directory, KernelBench file or GPU MODE directory")
    p.add_argument("--kernel", help="edit this kernel file instead of the task's own")
    p.add_argument("--theme", help="a theme name (see the command palette, or themes/)")
    p.add_argument("--timeout", type=float, help="seconds each rung may take (overrides the task's timeouts)")
    p.add_argument("--no-watch", action="store_true", help="do not rerun on saves made outside the app")
    p.add_argument("--resume", nargs="?", const="latest", metavar="SESSION",
                   help="continue a saved session (default: the newest): its task, kernel, chat and agent context")
    p.add_argument("--provider", help="the agent: anthropic, openai, openai-compatible (vllm, ollama, llamacpp) or "
                                      "scripted (default: [agent] provider)")
    p.add_argument("--model", help="the agent's model (default: [agent] model, else the provider's default)")
    p.add_argument("--base-url", help="the agent's server, e.g. http://localhost:8000/v1 for vLLM")
    p.set_defaults(func=main)


# Flags that set a [ui] key, as (flag, attribute of the parsed args, key); the [agent] ones are AGENT_FLAGS.
UI_FLAGS = (("--theme", "theme", "theme"),)


def load_settings(args: argparse.Namespace) -> Config:
    """Defaults, the config file, KERNELTUI_* variables, then the flags: the order of every command.

    Every section is known to ``load_config`` (``config.SECTIONS``), so KERNELTUI_AGENT_* and
    KERNELTUI_UI_* are read as every other command reads them. Raises ConfigError.
    """
    from kerneltui.config import flags_from_args, load_config
    from kerneltui.core.agent.settings import AGENT_FLAGS

    return load_config(flags=[*flags_from_args(args, "ui", UI_FLAGS), *flags_from_args(args, "agent", AGENT_FLAGS)])


def main(args: argparse.Namespace) -> int:
    from kerneltui.config import ConfigError
    from kerneltui.core.task import TaskError
    from kerneltui.core.task_loaders.load import load_task

    try:
        settings = load_settings(args)
    except ConfigError as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    resume = None
    if args.resume:
        from kerneltui.core.session import SessionError, load_session, resolve_session

        try:
            resume = resolve_session(args.resume, settings)
            root = str(load_session(resume).task.get("root") or "")
        except (SessionError, ConfigError) as exc:
            print(f"kerneltui --resume: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not Path(root).is_dir():
            print(f"kerneltui --resume: the session's task folder {root} is gone; replay it instead: "
                  f"kerneltui replay {resume}", file=sys.stderr)
            return EXIT_USAGE
        args.task = root
    try:
        load_task(args.task, args.kernel).kernel_source()  # the editor opens it: a bad byte is said here
    except TaskError as exc:
        hint = "" if Path(args.task, "task.toml").exists() else " (give a task directory, or try `kerneltui demo`)"
        print(f"kerneltui: task error: {exc}{hint}", file=sys.stderr)
        return EXIT_USAGE
    if not sys.stdout.isatty():
        print("kerneltui: the app needs a terminal; for scripts use `kerneltui check TASK` or `kerneltui watch TASK`",
              file=sys.stderr)
        return EXIT_USAGE
    # The app's workers run below its priority (core.worker.child.serve): keystrokes first.
    os.environ.setdefault(WORKER_NICE_ENV, str(WORKER_NICE))
    try:
        app = open_app(Path(args.task), kernel=args.kernel, settings=settings, timeout=args.timeout,
                       watch=not args.no_watch, resume=resume)
    except TaskError as exc:
        print(f"kerneltui: task error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    app.run()
    kept = app.recorder.kept
    if kept is not None:
        # The shell is where the person looks after quitting: name the session and how to go on.
        print(f"kerneltui: session {kept.name} saved in {kept.parent}\n"
              f"  resume it:  kerneltui --resume {kept.name}\n"
              f"  replay it:  kerneltui replay {kept.name}")
    if app.closed_by_signal:
        # The app is closed and the terminal restored: die of the signal as before, so the shell sees
        # 128 + its number (129 SIGHUP, 143 SIGTERM).
        signal.signal(app.closed_by_signal, signal.SIG_DFL)
        os.kill(os.getpid(), app.closed_by_signal)
    return EXIT_OK


def open_app(task: Path, *, settings: Config, kernel: str | None = None, timeout: float | None = None,
             watch: bool = True, resume: Path | None = None) -> KernelApp:
    from kerneltui.settings.ui import UiSettings
    from kerneltui.ui.launch import create_app
    from kerneltui.ui.options import AppOptions

    ui = settings.read(UiSettings)
    options = AppOptions(watch=watch and ui.watch, run_on_start=ui.run_on_start, run_timeout_s=timeout, resume=resume,
                         handle_signals=True)
    return create_app(task, kernel=kernel, settings=settings, options=options)
