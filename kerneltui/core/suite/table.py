"""The suite's table and summary as text (``kerneltui suite`` without ``--json``)."""

from __future__ import annotations

from collections.abc import Callable

from kerneltui.core.suite.record import ItemResult
from kerneltui.core.suite.score import SuiteSummary, ranked, ranks

NOTE_WIDTH = 90
# The verdict words of the table, and of the progress line as each item lands.
VERDICTS = {"correct": "correct", "failed": "FAILED", "task error": "TASK ERROR", "no candidate": "missing",
            "environment": "ERROR (environment)"}


def progress_line(result: ItemResult, colour: Callable[[str, str], str] = lambda text, code: text) -> str:
    """The line printed as an item lands: the table's verdict word ("ok" for a correct one)."""
    mark = colour("ok  ", "32") if result.correct else colour(VERDICTS[result.status], "31")
    note = f"  {result.failure.splitlines()[0][:120]}" if result.failure else ""
    return f"  {mark} {result.problem} · {result.candidate}  ({result.where}, {result.duration_s:.1f} s){note}"


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1e3:.1f} µs" if value < 1 else f"{value:.2f} ms"


def format_table(results: list[ItemResult]) -> str:
    """One row per item, problems in suite order, candidates ranked within each (GPU MODE style)."""
    place = ranks(results)
    several = len(results) > len({r.problem for r in results})
    header = ("problem", "candidate", "#", "verdict", "kernel", "reference", "speedup", "score", "note")
    rows = [header]
    for r in ranked(results):
        score = f"{r.score_us:.1f} µs ({r.ranking_by})" if r.score_us is not None else "—"
        speed = f"{r.speedup:.2f}×" if r.speedup is not None else "—"
        verdict = VERDICTS[r.status]
        note = (r.failure or "").splitlines()[0][:NOTE_WIDTH] if r.failure else ""
        rows.append((r.problem, r.candidate, str(place[r.key]) if several else "", verdict, _ms(r.candidate_ms),
                     _ms(r.reference_ms), speed, score, note))
    keep = [i for i in range(len(header) - 1) if i != 2 or several]
    widths = {i: max(len(row[i]) for row in rows) for i in keep}
    lines = []
    for row in rows:
        cells = "  ".join(row[i].ljust(widths[i]) for i in keep)
        lines.append((cells + ("  " + row[-1] if row[-1] else "")).rstrip())
    return "\n".join(lines)


def format_summary(summary: SuiteSummary, wall_s: float) -> str:
    parts = [f"{summary.correct}/{summary.items} correct"]
    if summary.failed:
        parts.append(f"{summary.failed} failed")
    if summary.task_errors:
        parts.append(f"{summary.task_errors} task error{'s' if summary.task_errors != 1 else ''}")
    if summary.missing:
        parts.append(f"{summary.missing} without a candidate")
    if summary.environment:
        parts.append(f"{summary.environment} stopped by the machine (no verdict; not counted in fast_p)")
    lines = [" · ".join(parts) + f" · {summary.problems} problems · {wall_s:.1f} s wall"]
    if not summary.timed:
        lines.append("correctness only: no GPU ran this suite, so there are no times, speedups or fast_p")
        return "\n".join(lines)
    fast = "  ".join(f"fast_{p}={v:.2f}" if v is not None else f"fast_{p}=—" for p, v in summary.fast_p.items())
    which = "its first sample" if summary.sample == "first" else "its best correct sample"
    lines.append(f"{fast}   (KernelBench's fast_p: correct and speedup > p, over all {summary.problems} problems, "
                 f"each counted by {which}; --sample)")
    geo = f"{summary.geomean_speedup:.2f}×" if summary.geomean_speedup is not None else "—"
    lines.append(f"geometric-mean speedup over the {summary.correct_problems} correct problems: {geo} "
                 f"(kerneltui times: medians, L2 flushed)")
    return "\n".join(lines)
