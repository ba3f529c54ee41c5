"""The status line: what is running and since when, the last verdict, the agent's token cost."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from kerneltui.core import events as ev
from kerneltui.ui.themes import rich_colour


@dataclass
class StatusState:
    task: str = ""
    running_since: float | None = None  # monotonic seconds
    running_rung: str = ""
    origin: str = ""
    last_ok: bool | None = None
    last_cancelled: bool = False
    cancel_reason: str = ""  # why the last run was cancelled (RunFinished.cancel_reason)
    environment: str = ""  # the machine stopped the last run: what to do (RunFinished.environment)
    last_duration_s: float = 0.0
    last_at: str = ""  # wall-clock time of the last verdict, "14:02:11"
    failed_rung: str = ""
    cost: str = ""  # "1.2k in · 300 out · $0.004"
    message: str = ""  # the latest notice
    agent: str = ""  # provider, model, server, key source (the agent's label)
    # The run in progress's verdict (VerdictReached), once the rungs that decide it have ended (the
    # dump may still run); a PASS before the benchmark has ended on a GPU is a PASS so far.
    verdict_ok: bool | None = None
    verdict_failed: str = ""
    verdict_final: bool = True


def usage_text(event: ev.TokenUsage) -> str:
    """The session's tokens and cost: "≈" where the last count is an estimate (the server sent no
    usage: a reply cut off or interrupted), "cost unknown" where a model had no price (never $0)."""
    mark = "" if event.reported else "≈"
    cost = f"${event.session_cost_usd:.3f}" if event.session_cost_usd is not None else "cost unknown"
    return (f"{mark}{event.session_input_tokens / 1000:.1f}k in · {mark}{event.session_output_tokens / 1000:.1f}k out"
            f" · {cost}")


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.state = StatusState()
        self.now = 0.0

    def show_usage(self, event: ev.TokenUsage) -> None:
        self.state.cost = usage_text(event)
        self.show()

    def show_notice(self, event: ev.Notice) -> None:
        self.state.message = event.message
        self.show()

    def show(self, now: float | None = None) -> None:
        if now is not None:
            self.now = now
        self.update(self.render_state())

    def render_state(self) -> Text:
        s = self.state
        variables = self.app.theme_variables
        text = Text()
        if s.task:
            text.append(s.task, style="bold")
            text.append("  ")
        if s.running_since is not None and s.verdict_ok is not None:
            elapsed = max(0.0, self.now - s.running_since)
            colour = rich_colour(variables, "pass" if s.verdict_ok else "fail")
            text.append("PASS" if s.verdict_ok else "FAIL", style=f"bold {colour}")
            if not s.verdict_final:
                text.append(" so far")
            if s.verdict_failed:
                text.append(f" · {s.verdict_failed} failed")
            text.append(f" · still running {s.running_rung or 'the rest'} · {elapsed:.1f} s", style="dim")
        elif s.running_since is not None:
            elapsed = max(0.0, self.now - s.running_since)
            text.append("● running ", style=f"bold {rich_colour(variables, 'running')}")
            text.append(f"{s.running_rung or 'starting'}", style="bold")
            text.append(f" · {elapsed:.1f} s")
            if s.origin:
                text.append(f" · {s.origin}", style="dim")
        elif s.environment:
            text.append("ERROR (environment): ", style=f"bold {rich_colour(variables, 'fail')}")
            text.append(s.environment)
        elif s.last_cancelled:
            text.append(f"cancelled: {s.cancel_reason or 'overtaken by a newer save'}", style="dim")
        elif s.last_ok is not None:
            colour = rich_colour(variables, "pass" if s.last_ok else "fail")
            text.append("PASS" if s.last_ok else "FAIL", style=f"bold {colour}")
            detail = f" · {s.failed_rung} failed" if not s.last_ok and s.failed_rung else ""
            text.append(f"{detail} · {s.last_duration_s:.1f} s")
            if s.last_at:
                text.append(f" · {s.last_at}", style="dim")
        else:
            text.append("idle · save the kernel or press ctrl+r to run", style="dim")
        # What fits, in order of use: the latest notice, the cost, then the agent's label (the chat's
        # header shows it whole). A part that does not fit is left out; a long notice keeps its start.
        width = self.content_region.width
        for part, style in ((s.message, ""), (s.cost, "dim"), (s.agent, "dim")):
            if not part:
                continue
            if width and len(text) + 4 + len(part) > width:
                if part is s.message and width - len(text) - 5 > 20:
                    part = part[: width - len(text) - 5] + "…"  # a notice is what just happened: keep its start
                else:
                    continue
            text.append("  │ ", style="dim")
            text.append(part, style=style)
        return text
