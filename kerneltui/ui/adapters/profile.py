"""The profile rung's result as the compact table of the profile view.

The profile rung keeps its full outcome as JSON in the version folder (``metrics["summary_file"]``):
the table is ``core.profile.render.summary_rows`` of its main kernel, with ncu's findings and the
source hotspots as notes. Without that file (an older run, a skipped or failed profile) the rung's
own metrics are shown as name/value rows, with its error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import profile_metrics
from kerneltui.ui.ports import ProfileTable


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _from_outcome(data: dict[str, Any]) -> ProfileTable | None:
    from kerneltui.core.profile.render import headline, render_brief, summary_rows
    from kerneltui.core.profile.summary import ProfileResult

    if not isinstance(data.get("result"), dict):
        return None
    summary = ProfileResult.from_dict(data["result"]).summary
    notes = [line for line in render_brief(summary).splitlines() if line.strip()]
    for spot in (data.get("hotspots") or [])[:5]:
        if isinstance(spot, dict):
            where = f"{spot.get('file', '')}:{spot.get('line', '')}"
            notes.append(f"hotspot {where} " + " ".join(f"{k}={_cell(v)}" for k, v in spot.items()
                                                          if k not in ("file", "line", "source", "text")))
    return ProfileTable(title=headline(summary), columns=["", ""], rows=[[a, b] for a, b in summary_rows(summary)],
                        notes=notes)


class RungMetricsProfile:
    def table(self, result: RungResult) -> ProfileTable | None:
        if result.status == "skip" and not result.metrics:
            return None
        metrics = profile_metrics(result)
        summary_file = metrics.get("summary_file")
        if isinstance(summary_file, str) and Path(summary_file).is_file():
            try:
                table = _from_outcome(json.loads(Path(summary_file).read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError):
                table = None
            if table is not None:
                return table
        data = metrics.get("table")
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
