"""The app's two ways in: live on a task (``kerneltui [TASK]``) and read-only on a saved session
(``kerneltui replay``). Each picks the app's parts (``ui.workbench.Parts``) and options."""

from __future__ import annotations

from pathlib import Path

from kerneltui import config as config_mod
from kerneltui.core.session import Timeline, load_session
from kerneltui.core.task_loaders.load import load_task
from kerneltui.settings.ui import UiSettings
from kerneltui.ui.app import KernelApp
from kerneltui.ui.options import AppOptions
from kerneltui.ui.replay import ReplayAgent, SessionHistory
from kerneltui.ui.workbench import Parts, real_parts


def create_app(task_path: str | Path, *, kernel: str | None = None, settings: config_mod.Config | None = None,
               parts: Parts | None = None, options: AppOptions | None = None) -> KernelApp:
    """The app on a task, with the real parts unless given others (tests pass fixed data)."""
    task = load_task(str(task_path), kernel)
    settings = settings or config_mod.load_config()
    ui = settings.read(UiSettings)
    options = options or AppOptions(watch=ui.watch, run_on_start=ui.run_on_start)
    return KernelApp(task, settings=settings, parts=parts or real_parts(settings), options=options)


def create_replay_app(folder: Path, *, settings: config_mod.Config | None = None,
                      options: AppOptions | None = None) -> KernelApp:
    """The app, read-only, on a saved session: its task (the original folder when it still exists, else
    the copy kept in the session), the session's own history for the chart, a replay agent."""
    loaded = load_session(folder)
    timeline = Timeline(loaded)
    root = Path(str(loaded.task.get("root") or ""))
    kernel_file = str(loaded.task.get("kernel_file") or "")
    task_root = root if root.is_dir() and (root / kernel_file).is_file() else loaded.task_dir
    task = load_task(str(task_root), str(task_root / kernel_file) if kernel_file else None)
    options = options or AppOptions()
    options.watch, options.run_on_start, options.prestart_worker, options.record_session = False, False, False, False
    options.replay = timeline
    parts = Parts(agent=lambda task, pool: ReplayAgent(loaded.id), history=lambda task: SessionHistory(timeline))
    return KernelApp(task, settings=settings or config_mod.load_config(), parts=parts, options=options)
