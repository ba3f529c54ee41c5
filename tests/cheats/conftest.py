"""One warm worker pool and one event loop for the whole gallery: each kernel still gets fresh,
single-use workers from the real pool, through the real loop (``core.loop.Loop``), but nobody
waits for torch and Triton to import more than once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from kerneltui.core.integrity import summarise
from kerneltui.core.loop import Loop, RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from tests.cheats.honest import Honest
from tests.conftest import EXAMPLES, copy_tree

CPU_RUNGS = ["prechecks", "correctness"]


class GalleryChecker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.loop = asyncio.new_event_loop()
        self.pool: WorkerPool | None = None
        self.count = 0

    def prepare(self, name: str, task: str, kernel: str, prefix: str = "",
                edits: tuple[tuple[str, str], ...] = (), suffix: str = "") -> Path:
        self.count += 1
        dest = self.root / f"{self.count:02d}-{name}" / task
        copy_tree(EXAMPLES / task, dest)
        toml = dest / "task.toml"
        text = toml.read_text()
        for old, new in edits:
            assert old in text, f"{task}/task.toml has no {old!r}"
            text = text.replace(old, new)
        toml.write_text(prefix + text + suffix)
        (dest / "kernel.py").write_text(kernel)
        return dest

    def check(self, name: str, task: str, kernel: str, prefix: str = "",
              edits: tuple[tuple[str, str], ...] = (), rungs: list[str] | None = None, seeds: int = 1,
              suffix: str = "") -> RunReport:
        path = self.prepare(name, task, kernel, prefix, edits, suffix)
        return self.loop.run_until_complete(self._run(path, rungs or CPU_RUNGS, seeds))

    async def _run(self, path: Path, rungs: list[str], seeds: int) -> RunReport:
        task = load_task(path)
        if self.pool is None:
            self.pool = WorkerPool(task.backend, spares=1)
        loop = Loop(task, pool=self.pool)
        return await loop.run(RunOptions(rungs=rungs, seeds=seeds, record=False, origin="check"))

    def close(self) -> None:
        if self.pool is not None:
            self.loop.run_until_complete(self.pool.close())
        self.loop.close()


@pytest.fixture(scope="session")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GalleryChecker]:
    checker = GalleryChecker(tmp_path_factory.mktemp("gallery"))
    try:
        yield checker
    finally:
        checker.close()


def rung(report: RunReport, name: str):  # type: ignore[no-untyped-def]
    result = report.result(name)
    assert result is not None, f"{name} did not run: {[r.line() for r in report.results]}"
    return result


def assert_honest_kernel_passes(gallery: GalleryChecker, kernel: Honest) -> None:
    """Every checking rung passes without even a warning, no defence fires, every check passed."""
    report = gallery.check(kernel.name, kernel.task, kernel.kernel, kernel.task_toml_prefix,
                           suffix=kernel.task_toml_suffix)
    lines = [r.line() for r in report.results]
    assert report.ok, lines
    for name in ("prechecks", "compile", "run", "correctness"):
        assert rung(report, name).status == "ok", lines  # not even a warning
    summary = summarise(report.results)
    assert not summary.caught, summary.to_dict()
    assert rung(report, "correctness").metrics["passed"] == rung(report, "correctness").metrics["checks"]
