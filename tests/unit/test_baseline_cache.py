"""The benchmark's baselines are measured once per reference, cases, device, driver, settings and
versions: a second run reuses them from the task's history store (real SQLite) and says when they
were kept, a change of any of those measures again, a baseline cut short by the wall-time bound is
not kept, and a run whose workers could write the task folder (no filesystem box) neither reads nor
writes the keep.

The judge's ``judge_benchmark`` needs a GPU; a stand-in plays it here with the reply's shape (its
own tests run on the GPU machine), so what runs is the rung's caching and its notes.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from kerneltui.core.bench.stats import STOP_WALL_BOUND
from kerneltui.core.rungs import benchmark
from kerneltui.core.rungs.baselines import Provenance
from kerneltui.core.rungs.bench_bound import WallBound
from kerneltui.core.rungs.context import RunContext, RunOptions
from kerneltui.core.sandbox.policy import SandboxPart, SandboxState
from kerneltui.core.task_loaders.load import load_task
from kerneltui.settings.bench import BenchSettings

INFO = {"gpu": True, "name": "NVIDIA H200", "driver": "580", "torch": "2.11.0", "triton": "3.6.0",
        "cuda_runtime": "13.0"}


class Judge:
    def __init__(self, stopped: str = "converged", error: str | None = None, info: dict[str, Any] | None = None,
                 sandbox: SandboxState | None = None) -> None:
        self.info = info or INFO
        self.sandbox = sandbox
        self.asked: list[str] = []
        self.stopped = stopped
        self.error = error

    async def request(self, op: str, args: dict[str, Any], timeout: float = 0, on_progress: Any = None) -> dict[str, Any]:
        assert op == "judge_benchmark"
        self.asked.append(args["target"])
        if self.error and args["target"] == "torch_compile":
            return {"target": args["target"], "cases": [{"index": 0, "label": "n=67108864", "error": self.error}]}
        return {"target": args["target"], "cases": [{"index": 0, "label": "n=67108864", "times_ms": [0.2] * 20,
                                                     "stopped": self.stopped, "failure": None}]}


def baselines(task_dir: Path, judge: Judge, settings: BenchSettings | None = None
              ) -> dict[str, tuple[Any, Provenance]]:
    task = load_task(str(task_dir))
    ctx = RunContext(task=task, source="", files=task.read_sources(), options=RunOptions(), pool=None,  # type: ignore[arg-type]
                     run_id="r1", emit=lambda event: None, source_hash="h", version_dir=task_dir / ".kerneltui")
    settings = settings or BenchSettings()
    timings: dict[str, float] = {}
    out = asyncio.run(benchmark._baselines(ctx, judge, settings, 7, WallBound(settings.max_wall_s),  # type: ignore[arg-type]
                                           lambda *a, **k: None, timings))
    assert set(timings) == {f"{t}_s" for t in judge.asked} | {"reference_s"} | (
        {"torch_compile_s"} if settings.torch_compile else set())
    return out


def test_the_second_run_reuses_both_baselines(example_task):
    task = example_task("vector_add")
    first = Judge()
    out = baselines(task, first)
    assert first.asked == ["reference", "torch_compile"]
    assert out["reference"][1] == Provenance() and out["torch_compile"][1] == Provenance()
    assert not out["reference"][1].kept and out["reference"][1].to_dict()["kept_at"] is None
    second = Judge()
    before = time.time()
    out = baselines(task, second)
    assert second.asked == []
    for target in ("reference", "torch_compile"):
        origin = out[target][1]
        assert origin.kept and origin.kept_at is not None and origin.kept_at <= before
        assert origin.label == f"kept from {time.strftime('%H:%M', time.localtime(origin.kept_at))}"
        assert origin.describe().startswith("kept from ")
        assert origin.to_dict()["kept"] is True and origin.to_dict()["kept_at"].startswith(time.strftime("%Y-"))
    assert out["reference"][0]["cases"][0]["times_ms"] == [0.2] * 20


def test_a_changed_reference_or_method_measures_again(example_task):
    task = example_task("vector_add")
    baselines(task, Judge())
    ref = task / "reference.py"
    ref.write_text(ref.read_text().replace("return x + y", "return y + x"))
    again = Judge()
    baselines(task, again)
    assert again.asked == ["reference", "torch_compile"]
    # the kernel is not part of the key: a new kernel still reuses them
    (task / "kernel.py").write_text((task / "kernel.py").read_text() + "\n# tuned\n")
    kernel_changed = Judge()
    baselines(task, kernel_changed)
    assert kernel_changed.asked == []
    # the task's own text (a comment in task.toml too) and its benchmark cases are part of the key
    toml = task / "task.toml"
    toml.write_text(toml.read_text() + "\n# a note\n")
    task_text = Judge()
    baselines(task, task_text)
    assert task_text.asked == ["reference", "torch_compile"]
    toml.write_text(toml.read_text().replace("n = 67108864", "n = 33554432"))
    case = Judge()
    baselines(task, case)
    assert case.asked == ["reference", "torch_compile"]
    # another way of making inputs is another measurement
    generated = Judge()
    baselines(task, generated, BenchSettings(fresh_inputs="generate"))
    assert generated.asked == ["reference", "torch_compile"]


def test_a_baseline_cut_by_the_bound_is_not_kept(example_task):
    task = example_task("vector_add")
    cut = Judge(stopped=STOP_WALL_BOUND)
    out = baselines(task, cut)
    assert "not kept (cut short by the wall-time bound)" in out["reference"][1].note
    later = Judge()
    baselines(task, later)
    assert later.asked == ["reference", "torch_compile"]


def test_the_cache_and_torch_compile_can_be_switched_off(example_task):
    task = example_task("vector_add")
    baselines(task, Judge())
    off = Judge()
    out = baselines(task, off, BenchSettings(baseline_cache=False, torch_compile=False))
    assert off.asked == ["reference"]
    assert out["torch_compile"] == (None, Provenance(note="not measured ([benchmark] torch_compile = false)"))
    assert out["reference"][1].note == "measured now; not kept ([benchmark] baseline_cache = false)"


def test_a_torch_compile_that_fails_on_this_reference_is_not_tried_again(example_task):
    task = example_task("vector_add")
    baselines(task, Judge(error="torch.compile of the reference failed: BackendCompilerFailed"))
    later = Judge()
    out = baselines(task, later)
    assert later.asked == []
    assert out["torch_compile"][0]["cases"][0]["error"].startswith("torch.compile of the reference failed")


def test_a_new_driver_kerneltui_version_or_series_setting_measures_again(example_task, monkeypatch):
    task = example_task("vector_add")
    baselines(task, Judge())
    other_driver = Judge(info={**INFO, "driver": "590"})
    baselines(task, other_driver)
    assert other_driver.asked == ["reference", "torch_compile"]
    baselines(task, kept := Judge())
    assert kept.asked == []
    # a setting that shapes the series (the stopping rule) is part of what was measured
    longer = Judge()
    baselines(task, longer, BenchSettings(min_runs=50))
    assert longer.asked == ["reference", "torch_compile"]
    # one that only bounds the rung's wall time, or decides the kernel's side-work threshold, is not
    bound = Judge()
    baselines(task, bound, BenchSettings(max_wall_s=30.0, straggle_us=40.0))
    assert bound.asked == []
    from kerneltui.core.rungs import baselines as keep_module

    monkeypatch.setattr(keep_module, "__version__", "99.0.0")
    upgraded = Judge()
    baselines(task, upgraded)
    assert upgraded.asked == ["reference", "torch_compile"]


def _box(enabled: bool, filesystem: bool) -> SandboxState:
    return SandboxState(enabled, (SandboxPart("filesystem", filesystem, "Landlock" if filesystem else "off"),))


def _kept_rows(task: Path) -> list[tuple[str, float]]:
    import sqlite3

    from kerneltui.core.history import HistoryStore

    with sqlite3.connect(HistoryStore.for_task(load_task(str(task))).path) as conn:
        return sorted(conn.execute("SELECT key, created_at FROM baselines").fetchall())


def test_a_run_whose_kernel_could_write_the_task_folder_neither_reads_nor_writes_the_keep(example_task):
    task = example_task("vector_add")
    boxed = Judge(sandbox=_box(True, True))
    baselines(task, boxed)
    assert boxed.asked == ["reference", "torch_compile"]
    rows = _kept_rows(task)
    assert len(rows) == 2
    for box, why in ((_box(True, False), "the sandbox's filesystem part is off"), (_box(False, False), "the sandbox is off")):
        open_box = Judge(sandbox=box)
        out = baselines(task, open_box)
        assert open_box.asked == ["reference", "torch_compile"], why  # the keep is there, and not read
        assert out["reference"][1].note == f"measured now; not kept: {why}, so a kernel could write the task folder"
        assert not out["reference"][1].kept
    assert _kept_rows(task) == rows  # nor written
    again = Judge(sandbox=_box(True, True))
    baselines(task, again)
    assert again.asked == []
