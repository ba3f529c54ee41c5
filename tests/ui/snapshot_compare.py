"""Snapshot helpers: wait for a still screen before the picture, and say which rows differ when one
does not match (the SVG report stays on the machine that ran the test; CI's log is all a reader has)."""

from __future__ import annotations

import difflib
import html
import pickle
import re
import time

from pytest_textual_snapshot import node_to_report_path

_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>')
# Each screenshot names its CSS classes after a hash of the run (``terminal-1234-r5``).
_RUN_ID = re.compile(r"terminal-\d+")


def screen_rows(svg: str) -> list[str]:
    """The screen's text, one string per row, as the SVG lays it out."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for match in _TEXT.finditer(svg):
        x, y, text = float(match.group(1)), float(match.group(2)), html.unescape(match.group(3))
        rows.setdefault(y, []).append((x, text))
    return ["".join(text for _, text in sorted(parts)).replace("\xa0", " ").rstrip() for _, parts in sorted(rows.items())]


async def settle(pilot, still_frames: int = 3, timeout: float = 10.0) -> None:
    """Pause until the screen is the same for ``still_frames`` pictures in a row: what thread workers post,
    widgets mounting and Markdown rendering can land after the last pause on a loaded machine."""
    app = pilot.app
    last, same = "", 0
    deadline = time.monotonic() + timeout
    while same < still_frames:
        if time.monotonic() > deadline:
            raise AssertionError(f"the screen was still changing after {timeout:.0f} s")
        await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        shot = _RUN_ID.sub("terminal", app.export_screenshot())
        same = same + 1 if shot == last else 0
        last = shot


def explain_mismatch(request) -> str:
    """The rows that differ between the stored snapshot and this run's picture (from the data the snapshot
    plugin saved for its report)."""
    try:
        data = pickle.loads(node_to_report_path(request.node).read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError) as exc:
        return f"(no snapshot data to compare: {exc})"
    expected, actual = str(data[1]), str(data[2])
    diff = difflib.unified_diff(screen_rows(expected), screen_rows(actual), "stored snapshot", "this run", lineterm="", n=1)
    return "\n".join(diff) or "the text is the same: the difference is in colours or styles"
