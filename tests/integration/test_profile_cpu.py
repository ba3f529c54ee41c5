"""The profile path on a machine without a GPU or ncu: the real target process, the real CLI, and
ncu's recorded failure output replayed by a stand-in ``ncu`` (ncu itself cannot run here)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerneltui.core.profile.locate import NCU_ENV, NcuNotFound, find_ncu
from kerneltui.core.profile.runner import load_hotspots, load_profile, profile_task
from kerneltui.core.profile.spec import choose_case, make_spec, target_env
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import copy_tree, run_cli

DATA = Path(__file__).resolve().parent.parent / "data" / "ncu"


def small_vector_add(example_task) -> Path:
    """The vector add example with a benchmark case small enough for the Triton interpreter."""
    root = example_task("vector_add")
    toml = root / "task.toml"
    toml.write_text(toml.read_text().split("[[benchmarks]]")[0] + "[[benchmarks]]\nn = 3000\n")
    return root


def fake_ncu(folder: Path, body: str) -> Path:
    path = folder / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def replay(folder: Path, recorded: Path, status: int) -> Path:
    return fake_ncu(folder, f"cat '{recorded}'\nexit {status}\n")


def test_target_loads_the_task_like_a_worker(example_task, tmp_path):
    task = load_task(small_vector_add(example_task))
    case = choose_case(task)
    assert case == {"kind": "benchmark", "index": 0, "params": {"n": 3000}, "seed": None, "label": "n=3000"}
    workdir = tmp_path / "work"
    workdir.mkdir()
    spec = make_spec(task, task.read_sources(), case, workdir / "result.json", workdir=workdir)
    (workdir / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-m", "kerneltui.core.profile.target", str(workdir / "spec.json")],
                          capture_output=True, text=True, env=target_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((workdir / "result.json").read_text())
    assert result["ok"] is True and result["gpu"] is False
    assert result["kernels"] == ["add_kernel"] and result["launches"] == 1
    assert result["warmup_kernels"] == ["add_kernel"]
    assert result["case"] == "n=3000" and result["bytes_moved"] == 3 * 4 * 3000 and result["flops"] == 3000
    # The task copy stays where the caller said, for ncu to read the source from.
    assert (workdir / "task" / "kernel.py").read_text() == (task.root / "kernel.py").read_text()
    assert result["task_dir"] == str(workdir / "task")


def test_target_reports_a_failing_kernel_with_its_line(example_task, tmp_path):
    root = small_vector_add(example_task)
    kernel = root / "kernel.py"
    kernel.write_text(kernel.read_text().replace("    out = torch.empty_like(x)\n",
                                                 "    out = torch.empty_like(x)\n    raise ValueError('broken on purpose')\n"))
    task = load_task(root)
    spec = make_spec(task, task.read_sources(), choose_case(task), tmp_path / "result.json", workdir=tmp_path)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-m", "kerneltui.core.profile.target", str(tmp_path / "spec.json")],
                          capture_output=True, text=True, env=target_env(), timeout=300)
    assert proc.returncode == 3
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["ok"] is False
    assert (result["error"]["file"], result["error"]["line"]) == ("kernel.py", 18)
    assert "kernel.py:18: ValueError: broken on purpose" in proc.stderr


@pytest.mark.parametrize("recorded, status, kind, words", [
    ("errors/err_nvgpuctrperm.txt", 1, "counter_permission", "NVreg_RestrictProfilingToAdminUsers=0"),
    ("errors/library_not_loaded.txt", 1, "profiler_unavailable", "sandbox"),
    ("errors/dcgm_conflict.txt", 1, "counters_busy", "dcgmi profile --pause"),
    ("errors/no_kernels_profiled.txt", 0, "no_kernels", "launched no GPU kernel"),
])
def test_recorded_ncu_failures_become_problems(example_task, tmp_path, recorded, status, kind, words):
    task = load_task(small_vector_add(example_task))
    ncu = replay(tmp_path, DATA / recorded, status)
    version = tmp_path / "version"
    version.mkdir()
    (version / "profile.json").write_text("{}")  # from an earlier run: must not survive a failed one
    env = dict(os.environ, **{NCU_ENV: str(ncu)})
    outcome = asyncio.run(profile_task(task, task.read_sources(), version, timeout_s=60, env=env))
    assert outcome.problem is not None and outcome.problem.kind == kind
    assert words in outcome.problem.message + outcome.problem.fix
    assert outcome.command[0] == str(ncu) and "--clock-control" in outcome.command
    assert not (version / "profile.json").exists() and load_profile(version) is None and load_hotspots(version) == []


def test_a_missing_ncu_is_a_problem_not_a_crash(example_task, tmp_path):
    task = load_task(small_vector_add(example_task))
    env = {"PATH": "", NCU_ENV: str(tmp_path / "no-ncu-here")}
    outcome = asyncio.run(profile_task(task, task.read_sources(), tmp_path, timeout_s=60, env=env))
    assert outcome.problem is not None and outcome.problem.kind == "no_ncu" and outcome.problem.environment
    assert outcome.command == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def hanging_ncu(folder: Path) -> tuple[Path, Path]:
    """A stand-in that hangs with a child, like ncu waiting on a kernel that never returns. It writes
    its pids into the version folder ``v``: besides its scratch folder, the one place ncu may write."""
    pids = folder / "v" / "pids"
    return fake_ncu(folder, f"sleep 300 &\necho $$ $! > '{pids}'\nwait\n"), pids


def _wait_for(path: Path) -> list[int]:
    for _ in range(100):
        if path.exists() and path.read_text().strip():
            return [int(p) for p in path.read_text().split()]
        time.sleep(0.05)
    raise AssertionError("the stand-in never started")


def test_timeout_kills_the_whole_process_group(example_task, tmp_path):
    task = load_task(small_vector_add(example_task))
    ncu, pids = hanging_ncu(tmp_path)
    env = dict(os.environ, **{NCU_ENV: str(ncu)})
    started = time.monotonic()
    outcome = asyncio.run(profile_task(task, task.read_sources(), tmp_path / "v", timeout_s=1.5, env=env))
    assert time.monotonic() - started < 30
    assert outcome.problem is not None and outcome.problem.kind == "timeout"
    assert "longer than 2 s" in outcome.problem.message and "--case" in outcome.problem.fix
    assert not any(_alive(pid) for pid in _wait_for(pids))


def test_cancel_kills_the_whole_process_group(example_task, tmp_path):
    task = load_task(small_vector_add(example_task))
    ncu, pids = hanging_ncu(tmp_path)
    env = dict(os.environ, **{NCU_ENV: str(ncu)})

    async def cancel_midway() -> None:
        run = asyncio.create_task(profile_task(task, task.read_sources(), tmp_path / "v", timeout_s=300, env=env))
        while not pids.exists():
            await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(cancel_midway())
    assert not any(_alive(pid) for pid in _wait_for(pids))


def test_cli_without_ncu_says_how_to_get_it(example_task):
    if not isinstance(find_ncu({"PATH": "/usr/bin:/bin"}), NcuNotFound):
        pytest.skip("this machine has ncu in a standard place")
    env = {k: v for k, v in os.environ.items() if k != NCU_ENV}
    env["PATH"] = "/usr/bin:/bin"
    task = example_task("vector_add")
    proc = run_cli("profile", str(task), env=env)
    assert proc.returncode == 1
    assert "ncu (Nsight Compute) was not found on PATH, in /usr/local/cuda/bin or in /opt/nvidia/nsight-compute/*" in proc.stderr
    assert "Fix: install Nsight Compute" in proc.stderr and NCU_ENV in proc.stderr
    proc = run_cli("profile", str(task), "--json", env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["ok"] is False and data["problem"]["kind"] == "no_ncu"


def test_cli_without_a_gpu_checks_then_says_the_profile_needs_one(example_task, tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU machine profiles for real (tests/gpu)")
    ncu = replay(tmp_path, DATA / "errors" / "err_nvgpuctrperm.txt", 1)  # never reached: no GPU
    proc = run_cli("profile", str(small_vector_add(example_task)), "--seeds", "1", env={NCU_ENV: str(ncu)})
    assert proc.returncode == 1
    assert "[correctness] ok" in proc.stderr
    assert "[profile] skipped  no GPU" in proc.stderr


def test_cli_rejects_a_case_that_does_not_exist(example_task, tmp_path):
    ncu = replay(tmp_path, DATA / "errors" / "no_kernels_profiled.txt", 0)
    proc = run_cli("profile", str(example_task("vector_add")), "--case", "-1", env={NCU_ENV: str(ncu)})
    assert proc.returncode == 2 and "--case must be ≥ 0" in proc.stderr


@pytest.mark.slow  # keeps the GPU tests' own tasks correct; no CPU behaviour of its own
@pytest.mark.parametrize("name", ["matmul_fp16", "fma_chain"])
def test_the_gpu_profile_tasks_pass_their_checks(tmp_path, name):
    """tests/gpu profiles these; a kernel that fails its checks would never reach the profile."""
    src = Path(__file__).resolve().parent.parent / "gpu" / "profile_tasks" / name
    root = tmp_path / name
    copy_tree(src, root)
    proc = run_cli("check", str(root), "--json", "--seeds", "1", "--no-history")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"], json.dumps(report["rungs"], indent=1)
    assert next(r for r in report["rungs"] if r["name"] == "correctness")["status"] == "ok"
