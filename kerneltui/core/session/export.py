"""A session as a Markdown report: the task, the versions with their numbers, the final kernel, a chart
(always as text; also as a PNG when matplotlib is installed), token use and cost."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

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


def render_markdown(session: LoadedSession, png_name: str | None = None, png_note: str = "") -> str:
    timeline = Timeline(session)
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
    out += ["", "## Versions", "", "| version | hash | origin | verdict | kept | correctness | median | speedup vs reference |",
            "|---|---|---|---|---|---|---|---|"]
    for v in timeline.versions:
        correct = {True: "pass", False: "fail", None: "not run"}[v.correct]
        speed = f"{v.speedup:.2f}×" if v.speedup is not None else "—"
        out.append(f"| v{v.number} | `{v.source_hash[:10]}` | {v.origin} | {'PASS' if v.ok else 'FAIL'} | "
                   f"{'yes' if v.accepted else ''} | {correct} | {_ms(v.median_ms)} | {speed} |")
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
