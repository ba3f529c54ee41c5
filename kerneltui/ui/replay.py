"""Replay mode: a saved session shown read-only in the app's own panes, with a timeline.

The driver holds a ``core.session.Timeline`` and a cursor (the step: how many events have
happened). Stepping forward feeds the next event through the app's ``EventBridge``, exactly the
path a live event takes; stepping back or jumping clears the panes and feeds the timeline's plan
for that step (the chat so far and the run on screen) the same way. The editor shows the kernel
as it was at the step (from the session's source snapshots), the chart the versions finished by
then (``SessionHistory``). Nothing runs: the loop, the watcher and the agent are off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from textual.binding import Binding
from textual.timer import Timer

from kerneltui.core import events as ev
from kerneltui.core.events import Emit
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import BenchmarkMetrics, benchmark_metrics
from kerneltui.core.session.timeline import Timeline
from kerneltui.core.worker.contract.replies import DeviceInfo
from kerneltui.ui.ports import HistoryPoint, HistorySeries
from kerneltui.ui.widgets.replay_bar import ReplayBar

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import AppHost

CHAT_LIMIT = 200  # chat events rebuilt on a jump: the tail the pane can show, not 10,000 widgets
SPEEDS = (0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 100.0)  # events per second while playing

# The app's bindings in replay mode only (``KernelApp.check_action`` hides them otherwise).
REPLAY_KEYS = [
    Binding("f7", "replay_step(-1)", "Back", priority=True),
    Binding("f8", "replay_step(1)", "Forward", priority=True),
    Binding("f9", "replay_play", "Play/pause", priority=True),
    Binding("f10", "replay_jump", "Jump to version", priority=True),
    Binding("f11", "replay_speed(-1)", "Slower", priority=True),
    Binding("f12", "replay_speed(1)", "Faster", priority=True),
]
REPLAY_ACTIONS = frozenset(b.action.split("(")[0] for b in REPLAY_KEYS)
READ_ONLY = "a replay is read-only: nothing is saved or run (resume the session with kerneltui --resume to change it)"


@dataclass
class SessionHistory:
    """The chart's data from the session itself: versions finished by the replay's step."""

    timeline: Timeline
    step: int = 0

    def record(self, source_hash: str, results: list[RungResult], device: DeviceInfo) -> None:
        pass  # the session is the record; nothing is written during a replay

    def load(self) -> HistorySeries:
        points: list[HistoryPoint] = []
        baseline = floor = None
        for version in self.timeline.versions_until(self.step):
            bench = next((r for r in version.results if r.name == "benchmark" and r.status in ("ok", "warn")), None)
            if bench is None or version.median_ms is None:
                continue
            m = benchmark_metrics(bench)
            median = version.median_ms * 1000
            points.append(HistoryPoint(version=f"v{version.number}", median_us=median,
                                       low_us=float(m.get("q1_ms") or version.median_ms) * 1000,
                                       high_us=float(m.get("q3_ms") or version.median_ms) * 1000))
            ref = _first_case(m, "reference")
            baseline = ref * 1000 if ref else baseline
            fl = _first_floor_ms(m)
            floor = float(fl) * 1000 if fl else floor
        if points:
            last = points[-1]
            points[-1] = HistoryPoint(last.version, last.median_us, last.low_us, last.high_us, current=True)
        note = "" if points else "no benchmark numbers in this session up to here (timing needs a GPU)"
        return HistorySeries(points=points, baseline_us=baseline, floor_us=floor, note=note)


def _first_case(metrics: BenchmarkMetrics, target: Literal["candidate", "reference", "torch_compile"]) -> float | None:
    cases = metrics.get("cases") or []
    stats = cases[0].get(target) if cases and isinstance(cases[0], dict) else None
    value = stats.get("median_ms") if stats else None
    return float(value) if isinstance(value, (int, float)) else None


def _first_floor_ms(metrics: BenchmarkMetrics) -> float | None:
    cases = metrics.get("cases") or []
    return cases[0].get("floor_ms") if cases and isinstance(cases[0], dict) else None


class ReplayAgent:
    """The chat's controller during a replay: says plainly that nothing is sent."""

    def __init__(self, session_name: str) -> None:
        self.label = f"replay of {session_name} · read-only"
        self._emit: Emit = _drop

    def attach(self, emit: Emit) -> None:
        self._emit = emit

    def observe(self, event: ev.Event) -> None:
        return None  # a replay records nothing and runs nothing

    async def send(self, text: str) -> None:
        self._emit(ev.Notice(level="warning", source="replay",
                             message="a replay is read-only: resume the session (kerneltui --resume) to talk to the agent"))

    busy = False  # nothing runs in a replay

    async def decide(self, proposal_id: str, decision: str, feedback: str = "", hunks: list[int] | None = None,
                     edited_source: str | None = None) -> None:
        await self.send("")

    async def undo(self) -> None:
        await self.send("")

    def interrupt(self) -> bool:
        return False

    def conversation(self) -> str | None:
        return None

    def restore(self, conversation: str) -> None:
        return None

    async def close(self) -> None:
        return None


def _drop(event: ev.Event) -> None:
    return None


def missing_text(file: str, digest: str) -> str:
    """What the editor shows at a step whose kernel text the session does not hold."""
    which = f"version {digest}" if digest else "the kernel before any run"
    return (f"# {file}: the session holds no text of {which}\n"
            f"# (it was recorded without it); the task folder's file is today's, so it is not shown here\n")


class ReplayDriver:
    def __init__(self, app: AppHost, timeline: Timeline) -> None:
        self.app = app
        self.timeline = timeline
        self.step = 0
        self.playing = False
        self.speed_index = SPEEDS.index(5.0)
        self.bar: ReplayBar | None = None
        self._timer: Timer | None = None
        self._shown_hash = ""

    @property
    def speed(self) -> float:
        return SPEEDS[self.speed_index]

    def mount(self) -> None:
        """Build the bar under the panes and show the session's first step (called once the panes exist)."""
        app = self.app
        app.editor.make_read_only(READ_ONLY)
        app.main.panes["editor"].border_title = f"{app.kernel_task.kernel_path.name} [dim](replay, read-only)[/]"
        self.bar = ReplayBar(id="replay-bar")
        app.main.mount(self.bar, before=app.status)
        app.status.state.message = f"replay: {self.timeline.session.id}"
        if self.timeline.session.lost_bytes:
            app.notify(self.timeline.session.lost_note(), severity="warning", timeout=10)
        for problem in self.timeline.session.problems[:3]:
            app.notify(problem, severity="warning", timeout=10)
        self.go(0, rebuild=True)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.playing = False

    # -- moving -----------------------------------------------------------------------------------

    def go(self, step: int, rebuild: bool = False) -> None:
        step = max(0, min(step, len(self.timeline)))
        app = self.app
        if not rebuild and step == self.step + 1:
            app.bridge.emit(self.timeline.events[self.step], record=False)
        elif rebuild or step != self.step:
            app.chat.clear()
            app.rungs.clear()
            app.runs.current_run = None
            s = app.status.state
            s.running_since, s.running_rung, s.last_ok, s.failed_rung = None, "", None, ""
            omitted = self.timeline.chat_count(step) - CHAT_LIMIT
            if omitted > 0:
                app.chat.render_event(ev.Notice(level="info", source="replay",
                                                message=f"… {omitted} earlier chat events not shown after a jump (jump to an earlier version to see them)"))
            for event in self.timeline.plan(step, chat_limit=CHAT_LIMIT):
                app.bridge.emit(event, record=False)
        self.step = step
        self._show_kernel()
        history = app.bench.history
        if isinstance(history, SessionHistory):
            history.step = step
        app.load_history()
        self._update_bar()

    def kernel_text(self, step: int) -> str:
        """The kernel file at ``step`` from the session; never the task folder's (today's) file."""
        digest = self.timeline.kernel_hash_at(step)
        text = self.timeline.session.source(digest) if digest else None
        return text if text is not None else missing_text(self.app.kernel_task.kernel_path.name, digest)

    def _show_kernel(self) -> None:
        digest = self.timeline.kernel_hash_at(self.step)
        if digest == self._shown_hash:
            return
        text = self.kernel_text(self.step)
        if text != self.app.editor.text:
            self.app.editor.replace_from_disk(text)
        self._shown_hash = digest

    def move(self, delta: int) -> None:
        self.go(self.step + delta)

    def ask_version(self) -> None:
        """Prompt for a version number and jump there."""
        from kerneltui.ui.screens.prompt import PromptScreen

        count = len(self.timeline.versions)

        def chosen(value: str | None) -> None:
            if not value:
                return
            number = value.strip().lstrip("v")
            if not number.isdigit() or not self.jump_to_version(int(number)):
                self.app.notify(f"no version {value!r}: this session has versions 1 to {count}", severity="warning")

        self.app.push_screen(PromptScreen("Jump to version", f"a version number, 1 to {count}"), chosen)

    def jump_to_version(self, number: int) -> bool:
        version = self.timeline.version(number)
        if version is None:
            return False
        self.go(version.step)
        return True

    def toggle_play(self) -> None:
        if self.playing:
            self.stop()
        else:
            if self.step >= len(self.timeline):
                self.go(0)
            self.playing = True
            self._schedule()
        self._update_bar()

    def change_speed(self, delta: int) -> None:
        self.speed_index = max(0, min(len(SPEEDS) - 1, self.speed_index + delta))
        if self.playing:
            self._schedule()
        self._update_bar()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.app.set_interval(1.0 / self.speed, self._tick)

    def _tick(self) -> None:
        if self.step >= len(self.timeline):
            self.stop()
            self._update_bar()
            return
        self.go(self.step + 1)

    def _update_bar(self) -> None:
        if self.bar is None:
            return
        version = self.timeline.version_at(self.step)
        at = self.timeline.events[self.step - 1].at if self.step else None
        self.bar.show(step=self.step, total=len(self.timeline), version=version.number if version else 0,
                      versions=len(self.timeline.versions), playing=self.playing, speed=self.speed, at=at,
                      wall_time=self.app.options.wall_time)


class ReplayActions:
    """The replay keys' actions, for the app (``check_action`` offers them in replay mode only)."""

    replay: ReplayDriver | None

    def _replay(self) -> ReplayDriver:
        assert self.replay is not None
        return self.replay

    def action_replay_step(self, delta: int) -> None:
        self._replay().move(delta)

    def action_replay_play(self) -> None:
        self._replay().toggle_play()

    def action_replay_speed(self, delta: int) -> None:
        self._replay().change_speed(delta)

    def action_replay_jump(self) -> None:
        self._replay().ask_version()
