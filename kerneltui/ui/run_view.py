"""The loop's runs: started on the file on disk (a newer request cancels the run in flight), shown in
the panes as events land (rung rows, the status line), then the history chart and the asm view of
the version a run checked; and the profile and trace views of a rung's result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kerneltui.core import events as ev
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.rungs.result import RungResult

# Runs of a proposal's text on a scratch copy: the proposal's card shows them, never the rung pane or
# the status line, which describe the kernel file on disk.
from kerneltui.core.session.timeline import TRIAL_ORIGINS
from kerneltui.core.task import TaskError, source_hash
from kerneltui.ui.messages import AsmLoaded

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import AppHost

RUN_EVENTS = (ev.RungStarted, ev.RungProgress, ev.RungFinished, ev.VerdictReached, ev.RunFinished)  # the events of one run, after its start


class RunView:
    def __init__(self, app: AppHost) -> None:
        self.app = app
        self.requested: dict[str, str] = {}  # path -> content hash of the last run we started for it
        self.current_run: str | None = None
        self.run_digest = ""  # source hash of the run in flight, from its RunStarted
        self.run_hashes: dict[str, str] = {}  # run id -> source hash (replay shows each run's own version)
        self.accepted_dirs: list[Path] = []  # version folders of passing runs, oldest first
        self.last_report_dir: Path | None = None
        self.trial_runs: set[str] = set()  # run ids of trials (their events stay out of the panes)

    def forget(self) -> None:
        """Another task: its runs and versions are not this one's."""
        self.requested.clear()
        self.accepted_dirs.clear()

    def request(self, origin: str, rungs: list[str] | None = None, override_folder: str | None = None,
                author: str = "") -> None:
        """Start a run of the file on disk now; a run in flight is cancelled (its workers killed).
        ``author``: who made the text, when the caller knows (an accepted proposal; core.history)."""
        app = self.app
        if app.replay is not None:
            app.notify("a replay is read-only: nothing runs (resume the session to continue it)", timeout=4)
            return
        task = app.kernel_task
        try:
            text = task.kernel_source()
        except TaskError as exc:
            app.notify(str(exc), severity="error")
            return
        self.requested[str(task.kernel_path.resolve())] = source_hash(text)
        options = app.options
        app.bench.request_run(RunOptions(rungs=rungs if rungs is not None else options.rungs, origin=origin,
                                         timeout_s=options.run_timeout_s, seeds=options.seeds, override_folder=override_folder,
                                         author=author))

    def expect(self, path: Path, text: str) -> None:
        """``text`` was written to ``path`` by the app itself: the watcher's echo is not a new run."""
        self.requested[str(path.resolve())] = source_hash(text)

    def started_for(self, path: Path, text: str) -> bool:
        """Whether the last run requested for ``path`` checked ``text``."""
        return self.requested.get(str(path)) == source_hash(text)

    def tick(self) -> None:
        app = self.app
        if app.ready and app.status.state.running_since is not None:
            now = app.options.clock()
            app.rungs.tick(now)
            app.status.show(now)

    def show(self, event: ev.Event) -> None:
        app = self.app
        now = app.options.clock()
        status = app.status
        if isinstance(event, ev.RunStarted) and event.origin in TRIAL_ORIGINS:
            self.trial_runs.add(event.run_id)
            return
        if isinstance(event, RUN_EVENTS) and event.run_id in self.trial_runs:
            return
        if isinstance(event, ev.RunStarted):
            self.current_run = event.run_id
            self.run_digest = event.source_hash  # the version folder's name (an override's differs from the file's)
            self.run_hashes[event.run_id] = event.source_hash
            app.rungs.run_started(event.rungs, now)
            s = status.state
            s.running_since, s.running_rung, s.origin, s.last_cancelled = now, "", event.origin, False
            s.environment = ""
            s.verdict_ok, s.verdict_failed, s.verdict_final = None, "", True
            status.show(now)
            return
        if not isinstance(event, RUN_EVENTS) or (event.run_id != self.current_run and not app.replaying):
            return  # a late event of a cancelled run
        if isinstance(event, ev.RungStarted):
            app.rungs.rung_started(event.rung, now)
            status.state.running_rung = event.rung
            status.show(now)
        elif isinstance(event, ev.RungProgress):
            app.rungs.rung_progress(event.rung, event.message, event.fraction)
        elif isinstance(event, ev.RungFinished):
            app.rungs.rung_finished(event.result)
            self._maybe_jump(event.result)
        elif isinstance(event, ev.VerdictReached):
            s = status.state
            s.verdict_ok, s.verdict_failed, s.verdict_final = event.ok, event.failed_rung, event.final
            status.show(now)
        elif isinstance(event, ev.RunFinished):
            self._run_finished(event, now)

    def _maybe_jump(self, result: RungResult) -> None:
        """A failure with a place in the kernel moves the cursor there, unless you are mid-edit."""
        app = self.app
        loc = result.location
        if result.status != "fail" or loc is None or app.editor.dirty:
            return
        if Path(loc.file).name != app.kernel_task.kernel_path.name:
            return
        app.editor.goto_line(loc.line, loc.column)
        app.rungs.select(result.name)

    def _run_finished(self, event: ev.RunFinished, now: float) -> None:
        app = self.app
        app.rungs.run_finished(event.cancelled, event.device)
        s = app.status.state
        s.running_since, s.running_rung = None, ""
        s.verdict_ok, s.verdict_failed, s.verdict_final = None, "", True
        s.last_cancelled, s.cancel_reason = event.cancelled, event.cancel_reason
        s.environment = event.environment
        if not event.cancelled and not event.environment:
            s.last_ok, s.last_duration_s = event.ok, event.duration_s
            s.last_at = app.options.wall_time(event.at)
            failed = next((r for r in event.results if r.status == "fail"), None)
            s.failed_rung = failed.name if failed else ""
            self._after_run(event)
        app.status.show(now)

    def _after_run(self, event: ev.RunFinished) -> None:
        app = self.app
        digest = self.run_digest or self.requested.get(str(app.kernel_task.kernel_path.resolve()), "")
        if app.replay is not None:
            digest = self.run_hashes.get(event.run_id, "")
        app.bench.history.record(digest, event.results, event.device)
        app.load_history()
        version_dir = app.bench.version_dir(digest) if digest else None
        previous = self.accepted_dirs[-1] if self.accepted_dirs else None
        if event.ok and version_dir is not None and previous != version_dir:
            self.accepted_dirs.append(version_dir)
        self.last_report_dir = version_dir
        app.load_asm(version_dir, previous if previous != version_dir else None)

    async def show_asm(self, message: AsmLoaded) -> None:
        app = self.app
        try:
            await app.asm_pane.show(message.listing, message.previous)
        except ValueError:
            if app.is_running:
                raise
            return  # the app closed while the stage tabs were being mounted
        app.asm_pane.link_source_line(app.editor.cursor_location[0] + 1)

    # -- views of one rung's result -------------------------------------------------------------

    def _result_or_run(self, rung: str) -> RungResult | None:
        """The on-demand rung's result for the version shown; without one, the rung is run now."""
        result = self.app.rungs.rows[rung].result
        if result is None:
            self.app.notify(f"no {rung} of this version yet: running the {rung} rung", timeout=4)
            self.request("manual", [rung])
        return result

    def open_profile(self) -> None:
        from kerneltui.ui.screens.profile import ProfileScreen

        result = self._result_or_run("profile")
        if result is None:
            return
        table = self.app.bench.profile.table(result)
        if table is None:
            self.app.notify(f"profile: {result.summary}", severity="warning")
            return
        self.app.push_screen(ProfileScreen(table))

    def open_trace(self) -> None:
        from kerneltui.ui.adapters.trace import trace_data
        from kerneltui.ui.screens.trace import TraceScreen

        result = self._result_or_run("trace")
        if result is None:
            return
        data = trace_data(result)
        if isinstance(data, str):
            self.app.notify(data, severity="warning")
            return
        self.app.push_screen(TraceScreen(data))
