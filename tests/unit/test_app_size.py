"""``ui/app.py`` stays the app's routing (screens, bindings, messages to panes and controllers): at most
400 lines. What grows past that is a piece with a job of its own, and goes to a module of its own
(a controller behind ``ui/app_ports.py``, as ``agent_attach`` and ``pane_app`` went)."""

from __future__ import annotations

from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "kerneltui" / "ui" / "app.py"
MOST_LINES = 400


def test_the_app_module_stays_within_its_limit() -> None:
    lines = len(APP.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, f"ui/app.py has {lines} lines, more than {MOST_LINES}: move a piece with one job out"
