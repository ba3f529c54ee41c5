"""The Ray executor against a local Ray cluster started here, CPUs standing in for two GPUs.

A batch with a correct, a wrong and a segfaulting candidate: the crash fails only its own run (the
kernel ran in a child of the Ray worker, which survives and takes the next task), each task held a
"GPU" of its own while it ran, and the table ranks correct first. A KernelBench problem run scaled:
the node loads it with the same --set/--scale, so a candidate's own copy of a size constant follows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kerneltui.core.batch import find_candidates, format_table
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import LoadOptions
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import DATA

ray = pytest.importorskip("ray", reason="needs Ray (pip install 'kerneltui[remote]', installed by ./dev setup)")

from kerneltui.core.remote.ray_runner import connect, verify_ray  # noqa: E402

GOOD = (Path(__file__).resolve().parents[2] / "kerneltui" / "examples" / "vector_add" / "kernel.py").read_text()
WRONG = "import torch\n\n\ndef custom_kernel(x, y):\n    return x - y\n"
CRASH = "import ctypes\n\n\ndef custom_kernel(x, y):\n    ctypes.string_at(0)  # SIGSEGV\n    return x + y\n"


@pytest.fixture(scope="module")
def ray_cluster():
    # Two fake GPUs: Ray hands one to each task and sets CUDA_VISIBLE_DEVICES as on a GPU node.
    cluster = connect("local", num_cpus=2, num_gpus=2, logging_level="error")
    yield cluster
    ray.shutdown()


def test_batch_with_a_crashing_candidate(ray_cluster, example_task, tmp_path: Path) -> None:
    task = load_task(example_task("vector_add"))
    kernels = tmp_path / "candidates"
    kernels.mkdir()
    for name, text in {"a_good.py": GOOD, "b_crash.py": CRASH, "c_wrong.py": WRONG}.items():
        (kernels / name).write_text(text)
    candidates = find_candidates(str(kernels), task)
    results, info = verify_ray(task, candidates, "local", RunOptions(rungs=["correctness"], seeds=1))

    assert info["cluster_gpus"] == 2 and info["per_task"]["num_gpus"] == 1
    by_name = {Path(r.name).name: r for r in results}
    assert by_name["a_good.py"].correct, by_name["a_good.py"].failure
    crash = by_name["b_crash.py"]
    assert not crash.correct and "SIGSEGV" in (crash.failure or "")
    assert not by_name["c_wrong.py"].correct and "correctness" in (by_name["c_wrong.py"].failure or "")
    assert Path(results[0].name).name == "a_good.py"  # correct first
    # Every run came back through a live Ray worker (none was lost to the crash), each holding one GPU.
    assert all(r.placement.get("gpu") in ("0", "1") for r in results)
    spans = [(r.placement["started_at"], r.placement["finished_at"], r.placement["gpu"]) for r in results]
    for i, (s1, e1, g1) in enumerate(spans):
        for s2, e2, g2 in spans[i + 1:]:
            assert not (g1 == g2 and s1 < e2 and s2 < e1), "two verifications held the same GPU at once"
    # The Ray worker that ran the crashing candidate still serves tasks.
    pid = crash.placement["pid"]

    @ray_cluster.remote(num_gpus=1)
    def whoami() -> int:
        return os.getpid()

    alive = {ray_cluster.get(whoami.remote()) for _ in range(4)}
    assert any(p == pid for p in alive) or _pid_alive(pid)
    assert "FAILED" in format_table(results)


def test_candidates_own_copy_of_a_constant_follows_scale_on_the_node(ray_cluster, tmp_path: Path) -> None:
    # Before, the node loaded the problem already scaled but without the load options, so the
    # candidate ran at its own N = 4096 on inputs of 1024 and failed.
    # A problem whose N = 4096 the candidate copies into its own launch.
    for name in ("double.py", "double_new.py"):
        shutil.copy(DATA / "kernelbench" / "copied_constant" / name, tmp_path / name)
    task = load_task(tmp_path / "double.py", None, LoadOptions(scale=0.25))
    candidates = find_candidates(str(tmp_path / "double_new.py"), task)
    results, _ = verify_ray(task, candidates, "local", RunOptions(rungs=["correctness"], seeds=1))

    assert results[0].correct, results[0].failure
    run = next(r for r in results[0].report["rungs"] if r["name"] == "run")
    assert run["summary"].startswith("out (1024,) float32"), run


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
