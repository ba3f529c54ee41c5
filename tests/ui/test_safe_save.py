"""A save that fails (a full disk, a read-only kernel) keeps the file as it was and the text in the
editor and in an unsaved copy, says why, and the app keeps running."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kerneltui.core import events as ev
from kerneltui.paths import data_dir
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
from tests.conftest import EXAMPLES, copy_tree, fill_disk
from tests.ui import fixed_data

SIZE = (120, 40)
EDIT = "# a long edit that does not fit\n" + "# padding line\n" * 2000


def _app(task: Path, settings):
    options = AppOptions(watch=False, run_on_start=False, prestart_worker=False, watch_themes=False)
    return create_app(task, settings=settings, options=options, parts=fixed_data.parts())


def _messages(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def _type_and_save(app, pilot) -> None:
    await pilot.pause()
    app.editor.move_cursor((0, 0))
    app.editor.insert(EDIT)
    await pilot.press("ctrl+s")
    await pilot.pause()


async def test_full_disk_keeps_the_file_and_the_text(full_disk: Path, settings) -> None:
    task = copy_tree(EXAMPLES / "vector_add", full_disk / "vector_add")
    before = (task / "kernel.py").read_text()
    fill_disk(full_disk)
    app = _app(task, settings)
    async with app.run_test(size=SIZE) as pilot:
        await _type_and_save(app, pilot)
        assert app.is_running
        assert app.editor.dirty and app.editor.text.startswith(EDIT)
        assert (task / "kernel.py").read_text() == before
        said = [
            m for m in _messages(app) if m.startswith("could not save kernel.py: no space left on device")
        ]
        assert said, _messages(app)
        # The task's disk is full: the copy went to the data folder, and the message says where.
        kept = list((data_dir() / "unsaved").rglob("kernel.py.*"))
        assert len(kept) == 1 and kept[0].read_text().startswith(EDIT)
        assert str(kept[0]) in said[0]


async def test_read_only_kernel_keeps_the_text_in_the_task(example_task, settings) -> None:
    task = example_task("vector_add")
    kernel = task / "kernel.py"
    before = kernel.read_text()
    if subprocess.run(["chattr", "+i", str(kernel)], capture_output=True).returncode != 0:
        kernel.chmod(0o444)
        if os.access(kernel, os.W_OK):
            pytest.skip("cannot make the kernel read-only here")
    try:
        app = _app(task, settings)
        async with app.run_test(size=SIZE) as pilot:
            await _type_and_save(app, pilot)
            assert app.is_running and app.editor.dirty
            assert any(m.startswith("could not save kernel.py:") for m in _messages(app)), _messages(app)
            # The session log says where the text is: a resume brings it back (tests/ui/test_signals.py).
            kept_event = app.bridge.log[-1]
            assert isinstance(kept_event, ev.EditsKept) and kept_event.reason == "a failed save"
    finally:
        subprocess.run(["chattr", "-i", str(kernel)], capture_output=True)
    assert kernel.read_text() == before
    kept = list((task / ".kerneltui" / "unsaved").iterdir())
    assert len(kept) == 1 and kept[0].read_text().startswith(EDIT)


async def test_a_bad_byte_on_disk_keeps_the_unsaved_text(example_task, settings) -> None:
    from tests.ui.conftest import wait_for

    task = example_task("vector_add")
    options = AppOptions(watch=True, run_on_start=False, prestart_worker=False, watch_themes=False)
    app = create_app(task, settings=settings, options=options, parts=fixed_data.parts())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        app.editor.move_cursor((0, 0))
        await pilot.press(*"# mine", "enter")
        with open(task / "kernel.py", "ab") as handle:
            handle.write(b"# caf\xe9\n")
        await wait_for(pilot, lambda: any("cannot be read" in m for m in _messages(app)), 30, "the message")
        assert app.is_running and app.editor.dirty and app.editor.text.startswith("# mine\n")
        said = next(m for m in _messages(app) if "cannot be read" in m)
        assert "kernel.py:" in said and "not UTF-8" in said and "stays in the editor" in said
