"""The profile rung's result as a compact table for the profile view.

A profile result carries ``metrics["table"] = {"title", "columns", "rows", "notes"}`` when the
profiler made one; otherwise its metrics are shown as name/value rows.
"""

from __future__ import annotations

from kerneltui.core.rungs.result import RungResult
from kerneltui.ui.ports import ProfileTable


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class RungMetricsProfile:
    def table(self, result: RungResult) -> ProfileTable | None:
        if result.status == "skip" and not result.metrics:
            return None
        data = result.metrics.get("table")
        if isinstance(data, dict) and data.get("columns"):
            return ProfileTable(
                title=str(data.get("title") or f"{result.name}: {result.summary}"),
                columns=[str(c) for c in data["columns"]],
                rows=[[_cell(v) for v in row] for row in data.get("rows", [])],
                notes=[str(n) for n in data.get("notes", [])],
            )
        rows = [[key, _cell(value)] for key, value in result.metrics.items() if not isinstance(value, (dict, list))]
        notes = [result.error] if result.error else []
        return ProfileTable(title=f"{result.name}: {result.summary}", columns=["metric", "value"], rows=rows,
                            notes=notes)
