"""A session as a Markdown report: the task, the versions with their numbers and where each came from,
the proposals with their trials and decisions, the conversation, the final kernel, a chart (always as
text; also as a PNG when matplotlib is installed), token use and cost."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kerneltui.core import events as ev
from kerneltui.core.agent.written import written_of
from kerneltui.core.redact import redact
from kerneltui.core.session.reader import LoadedSession
from kerneltui.core.session.timeline import Timeline, Version


@dataclass
class ExportResult:
    markdown: Path
    png: Path | None
    png_note: str  # why there is no PNG, when there is none


def text_chart(versions: list[Version], width: int = 40) -> str:
    """One bar per version with a median: the time, proportional to the slowest."""
    timed = [v for v in versions if v.median_ms is not None]
    if not timed:
        return "(no benchmark numbers in this session: timing needs a GPU; CPU times are never shown as performance)"
    top = max(v.median_ms or 0.0 for v in timed) or 1.0
    lines = []
    for v in timed:
        median = v.median_ms or 0.0
        bar = "█" * max(1, round(width * median / top))
        lines.append(f"v{v.number:<4} {bar:<{width}} {median * 1000:10.1f} µs" + ("  (kept)" if v.accepted else ""))
    return "\n".join(lines)


def png_chart(versions: list[Version], target: Path) -> str:
    """Write the chart as a PNG; returns "" on success, else why not."""
    timed = [v for v in versions if v.median_ms is not None]
    if not timed:
        return "no benchmark numbers to plot"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib for a PNG chart)"
    fig, ax = plt.subplots(figsize=(7, 3.5))
    xs = [v.number for v in timed]
    ax.plot(xs, [(v.median_ms or 0.0) * 1000 for v in timed], marker="o")
    ax.set_xlabel("version")
    ax.set_ylabel("median (µs)")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return ""


def _ms(value: float | None) -> str:
    return f"{value * 1000:.1f} µs" if value is not None else "—"


def agent_edits(session: LoadedSession) -> dict[str, str]:
    """Kernel hashes written by an accepted proposal -> its author ("agent p2", "agent p4, edited by
    you", "agent p5, 1 of 2 hunks"), whatever run (the file watcher's "save", the app's "accept")
    checked it afterwards."""
    return {digest: written.author for digest, written in Timeline(session).written.items()}


ORIGIN_WORDS = {"save": "saved by hand", "watch": "saved by hand", "manual": "run by hand", "start": "opened",
                "undo": "undo", "accept": "accepted edit", "verify": "checked by the agent",
                "proposal": "agent trial", "auto": "auto mode"}


def version_origin(origin: str, digest: str, edits: dict[str, str]) -> str:
    author = edits.get(digest)
    if not author:
        return ORIGIN_WORDS.get(origin, origin)
    return author if "," in author else f"{author} (accepted)"  # an edit or some hunks say so already


def _one_line(text: object, limit: int = 200) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def proposals_section(session: LoadedSession) -> list[str]:
    """Each proposal's last state: the trial's verdict and the decision with its reason."""
    last: dict[str, ev.ProposalEvent] = {}
    for event in session.events:
        if isinstance(event, ev.ProposalEvent):
            last[event.proposal_id] = event
    if not last:
        return ["no proposals in this session"]
    out = ["| proposal | change | trial | decision | by | reason or feedback |", "|---|---|---|---|---|---|"]
    for pid, event in last.items():
        p = event.proposal
        trial = p.get("trial") or {}
        verdict = "—" if not trial else ("pass" if trial.get("ok") else "FAIL") + f": {_one_line(trial.get('headline'), 80)}"
        decision = p.get("decision") or {}
        written = written_of(p, pid)
        state = event.state
        if written is not None and not written.trial_covers_it:
            # The trial checked the proposal's text, not the one written: say which was written and its verdict.
            hunks = ", ".join(str(h + 1) for h in written.applied_hunks)
            which = f" (hunks {hunks} of {written.total_hunks})" if written.how == "partial" else ""
            verdict += " (of the proposal's text, not the one written)"
            state = f"{event.state}: {written.label}{which} · {written.verdict}"
        out.append(f"| {pid} | {_one_line(p.get('rationale'), 80)} (+{p.get('added', 0)} −{p.get('removed', 0)}) | "
                   f"{verdict} | {state} | {decision.get('by', '')} | "
                   f"{_one_line(p.get('decision_reason') or decision.get('reason') or '', 120)} |")
    return out


def conversation_section(session: LoadedSession) -> list[str]:
    """What was said: the person's messages, the agent's replies (interrupted ones marked), tool calls."""
    out: list[str] = []
    for event in session.events:
        if isinstance(event, ev.UserMessage):
            out += [f"**you:** {event.text}", ""]
        elif isinstance(event, ev.AgentMessage):
            out += [f"**agent:** {event.text}", ""]
        elif isinstance(event, ev.ToolCallFinished):
            out += [f"- tool `{event.name}`: {'ok' if event.ok else 'failed'} · {_one_line(event.summary, 160)}", ""]
        elif isinstance(event, ev.AgentError):
            out += [f"- agent error ({event.kind}): {_one_line(event.message)}", ""]
    return out or ["no conversation in this session"]


def render_markdown(session: LoadedSession, png_name: str | None = None, png_note: str = "") -> str:
    timeline = Timeline(session)
    edits = agent_edits(session)
    task = session.task
    created = float(session.header.get("created_at") or 0.0)
    out = [f"# Session {session.id}", ""]
    out.append(f"- task: **{task.get('name', '?')}** ({task.get('backend', '?')}, {task.get('format', '?')}), "
               f"kernel `{task.get('kernel_file', '?')}`")
    out.append(f"- started: {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(created))} by `{session.header.get('origin')}` "
               f"(kerneltui {session.header.get('kerneltui')})")
    out.append(f"- {len(session.events)} events, {len(timeline.versions)} versions checked")
    if session.lost_bytes:
        out.append(f"- note: {session.lost_note()}")
    if session.damaged_note():
        out.append(f"- note: {session.damaged_note()}")
    out += ["", "## Versions", "", "| version | hash | origin | verdict | kept | correctness | median | speedup vs reference |",
            "|---|---|---|---|---|---|---|---|"]
    for v in timeline.versions:
        correct = {True: "pass", False: "fail", None: "not run"}[v.correct]
        speed = f"{v.speedup:.2f}×" if v.speedup is not None else "—"
        out.append(f"| v{v.number} | `{v.source_hash[:10]}` | {version_origin(v.origin, v.source_hash, edits)} | "
                   f"{'PASS' if v.ok else 'FAIL'} | "
                   f"{'yes' if v.accepted else ''} | {correct} | {_ms(v.median_ms)} | {speed} |")
    out += ["", "## Proposals", "", *proposals_section(session)]
    out += ["", "## Chart", "", "```", text_chart(timeline.versions), "```", ""]
    if png_name:
        out += [f"![median per version]({png_name})", ""]
    elif png_note:
        out += [f"(no PNG: {png_note})", ""]
    usage = timeline.token_usage()
    out += ["## Tokens and cost", ""]
    if usage is None:
        out.append("no agent requests in this session")
    else:
        cost = f"${usage.session_cost_usd:.4f}" if usage.session_cost_usd is not None else "unknown (no price for this model)"
        out.append(f"{usage.provider} · {usage.model}: {usage.session_input_tokens} input tokens, "
                   f"{usage.session_output_tokens} output tokens, cost {cost}")
    out += ["", "## Conversation", "", *conversation_section(session)]
    final = timeline.final_hash()
    text = session.source(final) if final else None
    out += ["", "## Final kernel", ""]
    if text is None:
        out.append("(the session holds no text of its last version)")
    else:
        lang = "python" if str(task.get("kernel_file", "")).endswith(".py") else ""
        out += [f"`{task.get('kernel_file')}` at `{final[:10]}`:", "", f"```{lang}", text.rstrip("\n"), "```"]
    return "\n".join(out) + "\n"


def export_session(session: LoadedSession, out_dir: Path) -> ExportResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    timeline = Timeline(session)
    png = out_dir / f"{session.id}.png"
    note = png_chart(timeline.versions, png)
    md = out_dir / f"{session.id}.md"
    md.write_text(redact(render_markdown(session, png.name if not note else None, note)), encoding="utf-8")
    return ExportResult(markdown=md, png=None if note else png, png_note=note)
