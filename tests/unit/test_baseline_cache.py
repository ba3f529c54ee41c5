"""The benchmark's baselines are measured once per reference, cases, device and versions: a second
run reuses them from the task's history store (real SQLite), a changed reference measures again,
and a baseline cut short by the wall-time bound is not kept.

The judge's ``judge_benchmark`` needs a GPU; a stand-in plays it here with the reply's shape (its
own tests run on the GPU machine), so what runs is the rung's caching and its notes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kerneltui.core.bench.stats import STOP_WALL_BOUND
from kerneltui.core.rungs import benchmark
from kerneltui.core.rungs.bench_bound import WallBound
from kerneltui.core.rungs.context import RunContext, RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.settings.bench import BenchSettings

INFO = {"gpu": True, "name": "NVIDIA H200", "driver": "580", "torch": "2.11.0", "triton": "3.6.0",
        "cuda_runtime": "13.0"}


class Judge:
    info = INFO

    def __init__(self, stopped: str = "converged", error: str | None = None) -> None:
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


def baselines(task_dir: Path, judge: Judge, settings: BenchSettings | None = None) -> dict[str, tuple[Any, str]]:
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
    assert out["reference"][1] == "measured now" and out["torch_compile"][1] == "measured now"
    second = Judge()
    out = baselines(task, second)
    assert second.asked == []
    assert out["reference"][1].startswith("cached from") and out["torch_compile"][1].startswith("cached from")
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
    # another way of making inputs is another measurement
    generated = Judge()
    baselines(task, generated, BenchSettings(fresh_inputs="generate"))
    assert generated.asked == ["reference", "torch_compile"]


def test_a_baseline_cut_by_the_bound_is_not_kept(example_task):
    task = example_task("vector_add")
    cut = Judge(stopped=STOP_WALL_BOUND)
    out = baselines(task, cut)
    assert "not cached (cut short by the wall-time bound)" in out["reference"][1]
    later = Judge()
    baselines(task, later)
    assert later.asked == ["reference", "torch_compile"]


def test_the_cache_and_torch_compile_can_be_switched_off(example_task):
    task = example_task("vector_add")
    baselines(task, Judge())
    off = Judge()
    out = baselines(task, off, BenchSettings(baseline_cache=False, torch_compile=False))
    assert off.asked == ["reference"]
    assert out["torch_compile"] == (None, "not measured ([benchmark] torch_compile = false)")


def test_a_torch_compile_that_fails_on_this_reference_is_not_tried_again(example_task):
    task = example_task("vector_add")
    baselines(task, Judge(error="torch.compile of the reference failed: BackendCompilerFailed"))
    later = Judge()
    out = baselines(task, later)
    assert later.asked == []
    assert out["torch_compile"][0]["cases"][0]["error"].startswith("torch.compile of the reference failed")
