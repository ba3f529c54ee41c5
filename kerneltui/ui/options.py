"""How the app runs: what starts by itself, the clocks it reads, the mode (live, replay, resume)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.session import Timeline


@dataclass
class AppOptions:
    """Tests and snapshots turn off what they do not want."""

    watch: bool = True  # rerun on saves seen by the file watcher
    run_on_start: bool = True
    prestart_worker: bool = True
    run_timeout_s: float | None = None  # overrides the task's per-rung timeouts
    seeds: int | None = None
    rungs: list[str] | None = None  # the rungs a save runs (None: the default set)
    theme_folders: list[Path] | None = None
    watch_themes: bool = True
    clock: Callable[[], float] = time.monotonic
    wall_time: Callable[[float], str] = field(default=lambda at: time.strftime("%H:%M:%S", time.localtime(at)))
    record_session: bool = True  # write the session log ([sessions] record = false turns it off too)
    replay: Timeline | None = None  # open read-only on this saved session (kerneltui replay)
    resume: Path | None = None  # a session folder to continue (kerneltui --resume)
    # SIGHUP and SIGTERM keep the unsaved text, close the session log and leave the terminal as it was
    # (``KernelApp.close_on_signal``); the command sets it, tests of the app in-process do not.
    handle_signals: bool = False
