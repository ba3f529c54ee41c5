"""Fixtures for driving the real app: isolated config and themes, a task copy, a wait helper."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kerneltui.config import load_config


@pytest.fixture(autouse=True)
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user config, themes or data leak into UI tests."""
    home = tmp_path / "xdg"
    for var, sub in (("KERNELTUI_CONFIG_DIR", "config"), ("KERNELTUI_DATA_DIR", "data"),
                     ("KERNELTUI_CACHE_DIR", "cache")):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.delenv("KERNELTUI_CONFIG", raising=False)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def screen_matches(snap_compare, request):
    """``snap_compare`` that, on a mismatch, fails with the rows that differ."""
    from tests.ui.snapshot_compare import explain_mismatch

    def compare(app, **kwargs) -> bool:
        if snap_compare(app, **kwargs):
            return True
        raise AssertionError(f"the screen differs from its snapshot:\n{explain_mismatch(request)}")

    return compare


@pytest.fixture
def settings():
    import kerneltui.settings.ui  # noqa: F401

    return load_config(env={})


async def wait_for(pilot, predicate: Callable[[], bool], timeout: float = 120.0, what: str = "condition") -> None:
    """Let the app run until ``predicate()`` holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.1)
    await asyncio.sleep(0)
