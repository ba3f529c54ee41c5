"""The watcher reports every change of a task file: bytes that are not UTF-8 included, and the target
of a kernel file that is a symbolic link."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.watcher import watch_task
from tests.conftest import EXAMPLES, copy_tree


async def _first_batch(task_root: Path, change, kernel: str | None = None) -> list[Path]:
    task = load_task(str(task_root), kernel)
    stop = asyncio.Event()
    seen: list[Path] = []

    async def watch() -> None:
        async for batch in watch_task(task, stop_event=stop):
            seen.extend(path for path, _ in batch)
            stop.set()

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0.5)  # the watch is set up
    change()
    await asyncio.wait([watcher], timeout=10)
    stop.set()  # nothing came: the watch ends and the test says so
    await watcher
    return seen


def test_a_byte_that_is_not_utf8_is_a_change(tmp_path: Path) -> None:
    root = copy_tree(EXAMPLES / "vector_add", tmp_path / "task")

    def append() -> None:
        with open(root / "kernel.py", "ab") as handle:
            handle.write(b"# caf\xe9\n")

    assert asyncio.run(_first_batch(root, append)) == [(root / "kernel.py").resolve()]


def test_an_edit_of_a_symlinked_kernels_target_is_a_change(tmp_path: Path) -> None:
    root = copy_tree(EXAMPLES / "vector_add", tmp_path / "task")
    drafts = root / ".drafts"
    drafts.mkdir()
    (root / "kernel.py").rename(drafts / "kernel_v2.py")
    (root / "kernel.py").symlink_to(Path(".drafts") / "kernel_v2.py")

    def edit() -> None:
        target = drafts / "kernel_v2.py"
        target.write_text(target.read_text().replace("BLOCK = 1024", "BLOCK = 256"))

    assert asyncio.run(_first_batch(root, edit)) == [(drafts / "kernel_v2.py").resolve()]
