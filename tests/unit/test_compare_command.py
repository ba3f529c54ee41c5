"""``kerneltui compare``: which versions it compares, its errors and exit codes, its JSON (CPU only).

The history is a real SQLite file written by ``HistoryStore.record``; the command runs in a real
subprocess. The timing itself needs a GPU (tests/gpu/test_compare_gpu.py).
"""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pytest

from kerneltui.commands.compare import EXIT_NO_GPU, lines
from kerneltui.core.bench import compare
from kerneltui.core.compare_run import CompareReport, KernelVersion
from kerneltui.core.compare_versions import VersionError, pick, resolve
from kerneltui.core.history import HistoryStore
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.compare_series import CompareSettings
from kerneltui.core.rungs.result import fail, ok
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import run_cli

NO_GPU_HERE = not os.path.exists("/dev/nvidiactl")


def _record(store: HistoryStore, task, source: str, passed: bool) -> int:
    results = [ok("correctness", "12 checks")] if passed else [fail("correctness", "case 0 differs")]
    report = RunReport(run_id="r" + source_hash(source)[:6], task=task.name, ok=passed, results=results,
                       device={"gpu": False}, source_hash=source_hash(source), duration_s=1.0)
    return store.record(task, source, report)


@pytest.fixture
def task_with_history(example_task):
    task = load_task(example_task("vector_add"))
    store = HistoryStore.for_task(task)
    disk = (task.root / task.kernel_file).read_text()
    numbers = [_record(store, task, disk + f"\n# version {i}\n", passed=i != 3) for i in range(1, 4)]
    return task, store, numbers


def test_default_versions_are_the_last_passing_one_against_the_file_on_disk(task_with_history) -> None:
    task, store, numbers = task_with_history
    a, b = pick(task, store, None, None)
    assert a.number == numbers[1]  # #3 failed its checks: #2 is the last passing
    assert a.source.endswith("# version 2\n") and a.name.startswith(f"#{numbers[1]} (")
    assert b.source == (task.root / task.kernel_file).read_text() and b.name == "kernel.py (on disk)"


def test_versions_by_number_hash_prefix_and_file(task_with_history, tmp_path: Path) -> None:
    task, store, numbers = task_with_history
    first = store.entry(numbers[0])
    assert first is not None
    assert resolve(task, store, str(numbers[0])).number == numbers[0]
    assert resolve(task, store, f"#{numbers[2]}").number == numbers[2]
    assert resolve(task, store, first.source_hash[:10]).number == numbers[0]
    (tmp_path / "other.py").write_text("def custom_kernel(x, y):\n    return x + y\n")
    by_file = resolve(task, store, "other.py", cwd=tmp_path)
    assert by_file.number is None and "return x + y" in by_file.source
    a, b = pick(task, store, str(numbers[0]), "other.py", cwd=tmp_path)
    assert (a.number, b.name) == (numbers[0], "other.py")


def test_unknown_versions_say_what_to_give(task_with_history) -> None:
    task, store, numbers = task_with_history
    with pytest.raises(VersionError, match=r"no version 99 .*versions: #1–#3"):
        resolve(task, store, "99")
    with pytest.raises(VersionError, match="unknown version 'nope'"):
        resolve(task, store, "nope")
    with pytest.raises(VersionError, match="unknown version 'ffffffffff'"):
        resolve(task, store, "ffffffffff")


def test_no_history_means_no_default_a(example_task) -> None:
    task = load_task(example_task("vector_add"))
    with pytest.raises(VersionError, match="no history for vector_add yet"):
        pick(task, HistoryStore.for_task(task), None, None)


def test_cli_unknown_version_exits_2_with_json(task_with_history) -> None:
    task, _, _ = task_with_history
    done = run_cli("compare", str(task.root), "42", "--json", timeout=60)
    assert done.returncode == 2, done.stderr
    out = json.loads(done.stdout)
    assert out["ok"] is False and out["error"]["kind"] == "usage" and "no version 42" in out["error"]["message"]


def test_cli_bad_target_or_level_exits_2(task_with_history) -> None:
    task, _, _ = task_with_history
    done = run_cli("compare", str(task.root), "--target", "0", timeout=60)
    assert done.returncode == 2 and "target half-width" in done.stderr
    done = run_cli("compare", str(task.root), "--level", "100", timeout=60)
    assert done.returncode == 2 and "confidence level must be at least 50 % and below 100 %" in done.stderr


@pytest.mark.skipif(not NO_GPU_HERE, reason="this machine has a GPU")
def test_cli_without_a_gpu_says_so_and_exits_3(task_with_history) -> None:
    task, _, _ = task_with_history
    done = run_cli("compare", str(task.root), "--json", timeout=120)
    assert done.returncode == EXIT_NO_GPU, done.stderr
    out = json.loads(done.stdout)
    assert out["error"]["kind"] == "no_gpu" and "needs a CUDA GPU" in out["error"]["message"]
    assert "ms" not in done.stdout.replace("message", "")  # no CPU numbers, ever


def test_json_shape_and_text_of_a_report() -> None:
    rng = random.Random(4)
    cases = []
    for label, shift in (("n=4096", 0.03), ("n=65536", 0.0)):
        ks = compare.BlockOrder(len(label)).kernels(0, 400)
        ts = [(1 + shift if k == "b" else 1.0) * math.exp(rng.gauss(0, 0.01)) for k in ks]
        cases.append(compare.compare_case(label, compare.blocks_from_calls(ks, ts), compare.STOP_PLANNED, 1.5))
    report = CompareReport(task="vector_add", a=KernelVersion("#2 (abcd1234)", "a", 2),
                           b=KernelVersion("kernel.py (on disk)", "b"), settings=CompareSettings(),
                           cases=cases, mean=compare.geometric_mean(cases), device={"gpu": True, "name": "H100"})
    data = json.loads(json.dumps(report.to_dict()))
    assert data["a"] == {"name": "#2 (abcd1234)", "source_hash": source_hash("a"), "history_number": 2}
    assert (data["target"], data["max_seconds"], data["level"]) == (0.005, 10.0, 0.95)
    first = data["cases"][0]
    assert set(first) >= {"label", "blocks", "calls_each", "stopped", "wall_s", "ratio", "direction", "change",
                          "low", "high", "text"}
    assert (first["direction"], first["calls_each"], data["cases"][1]["direction"]) == ("slower", 200, "same")
    assert first["ratio"]["low"] < first["ratio"]["estimate"] < first["ratio"]["high"]
    assert data["geometric_mean"]["calls_each"] == 400
    text = lines(data)
    assert text[0] == "A: #2 (abcd1234)" and text[2].startswith("  n=4096: B is ") and "% slower than A" in text[2]
    assert text[-1].startswith("geometric mean over 2 cases: B is ") and text[-1].endswith(", 2 cases)")


@pytest.mark.skipif(not NO_GPU_HERE, reason="this machine has a GPU")
def test_a_proposals_trial_comparison_needs_a_gpu_too(example_task) -> None:
    import asyncio

    from kerneltui.core.compare_run import CompareError, trial_comparison

    task = load_task(example_task("vector_add"))
    with pytest.raises(CompareError) as caught:
        asyncio.run(trial_comparison(task, task.kernel_source().replace("1024", "512")))
    assert caught.value.kind == "no_gpu"
