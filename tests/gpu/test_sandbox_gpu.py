"""The sandbox on a GPU machine: every part on, and none of it in the way of CUDA, Triton's JIT and its
cache, torch.compile (the benchmark's baseline), ncu (the profile rung) or the trace buffers. The
escape attempts of the CPU tests are repeated with CUDA initialised.

The rest of tests/gpu runs in the box too (it is on by default); this file asserts that it was."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, copy_tree, run_cli
from tests.integration.sandbox_helpers import (
    VECTOR_ADD,
    escaping_kernel,
    forking_kernel,
    kill_all,
    marked_processes,
    new_marker,
)
from tests.integration.test_sandbox_box import Listener

pytestmark = pytest.mark.gpu

TRACE_TASKS = Path(__file__).resolve().parent / "trace_tasks"
FULL_BOX = {"environment", "processes", "network", "filesystem", "limits", "capabilities"}


def task_copy(tmp_path: Path, src: Path = EXAMPLES / "vector_add") -> Path:
    dest = tmp_path / src.name
    copy_tree(src, dest)
    return dest


def check(task: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    proc = run_cli("check", str(task), "--json", "--no-history", "--seeds", "1", *args, env=env, timeout=900)
    assert proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def parts_on(report: dict) -> set[str]:
    """The parts on. Every part, the filesystem included: kerneltui turns Landlock off on a machine
    where CUDA cannot start inside it (support.gpu_under_landlock), which on the H200 VM happened until
    the own-threads grant included truncating; a GPU run where that guard fires again must fail here."""
    box = rung(report, "compile")["metrics"]["sandbox"]
    assert box["enabled"], box
    return {p["name"] for p in box["parts"] if p["on"]}


def test_doctor_reports_every_part_on() -> None:
    proc = run_cli("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    off = {p["name"]: p["detail"] for p in data["sandbox"]["parts"] if not p["on"]}
    assert off == {}, f"parts off on the GPU machine: {off}"


@pytest.mark.runs_long(35)
def test_cuda_triton_jit_and_its_cache_work_in_the_box(tmp_path: Path) -> None:
    task = task_copy(tmp_path)
    cache = tmp_path / "triton-cache"
    # A kernel no cache has seen (a unique constant), so the first run compiles and the second must hit.
    (task / "kernel.py").write_text(VECTOR_ADD.replace("BLOCK = 1024", f"BLOCK = 1024  # {tmp_path.name}"))
    env = {"TRITON_CACHE_DIR": str(cache)}
    first = check(task, "--rungs", "correctness", env=env)
    assert first["ok"], json.dumps(first["rungs"], indent=1)
    assert first["device"]["gpu"], "the worker saw no GPU inside the box"
    assert parts_on(first) >= FULL_BOX
    entries = sorted(p.name for p in cache.iterdir())
    assert entries and any(cache.rglob("*.cubin")), "the boxed worker wrote nothing into Triton's cache"
    second = check(task, "--rungs", "correctness", env=env)
    assert second["ok"] and sorted(p.name for p in cache.iterdir()) == entries, "the second run missed the cache"


@pytest.mark.runs_long(50)
def test_benchmark_with_torch_compile_baseline_in_the_box(tmp_path: Path) -> None:
    report = check(task_copy(tmp_path))
    assert report["ok"], json.dumps(report["rungs"], indent=1)
    bench = rung(report, "benchmark")
    assert bench["status"] in ("ok", "warn"), bench
    cases = bench["metrics"]["cases"]
    assert cases[0]["candidate"]["median_ms"] > 0
    assert parts_on(report) >= FULL_BOX


@pytest.mark.runs_long(40)
def test_profile_rung_runs_ncu_in_the_box(tmp_path: Path) -> None:
    root = task_copy(tmp_path)
    proc = run_cli("profile", str(root), "--json", "--seeds", "1", timeout=900)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, json.dumps(data.get("run", {}).get("rungs"), indent=1) + proc.stderr[-3000:]
    summary = data["profile"]["result"]["summary"]
    assert summary["bound"] == "memory" and summary["duration_ns"] > 0
    (spots,) = [h for h in data["profile"]["hotspots"] if h["kernel"] == summary["kernel"]]
    # ncu imported the source through the target's own task copy (its private Triton cache).
    assert {s["file"] for s in spots["source"]} >= {"kernel.py"}


def test_trace_buffers_in_the_box(tmp_path: Path) -> None:
    task = tmp_path / "softmax_traced"
    shutil.copytree(TRACE_TASKS / "softmax_traced", task)
    report = check(task, "--rungs", "trace")
    trace = rung(report, "trace")
    assert trace["status"] == "ok", trace
    assert trace["metrics"]["kernels"][0]["regions"]


def test_no_network_and_no_writes_with_cuda_up(tmp_path: Path) -> None:
    listener = Listener()
    home = tmp_path / "home"
    home.mkdir()
    task = task_copy(tmp_path)
    targets = [task.parent / "escaped.txt", home / "escaped.txt"]
    (task / "escapes.py").write_text(escaping_kernel(listener.port, targets))
    try:
        report = check(task, "--kernel", str(task / "escapes.py"), "--rungs", "correctness",
                       env={"HOME": str(home)})
    finally:
        listener.close()
    assert report["ok"], json.dumps(report["rungs"], indent=1)
    assert report["device"]["gpu"] is True
    assert listener.accepted == 0
    assert "filesystem" in parts_on(report)
    assert not any(t.exists() for t in targets)


def test_no_strays_after_a_gpu_run(tmp_path: Path) -> None:
    marker = new_marker()
    task = task_copy(tmp_path)
    (task / "forks.py").write_text(forking_kernel(marker))
    try:
        report = check(task, "--kernel", str(task / "forks.py"), "--rungs", "correctness")
        assert report["ok"], json.dumps(report["rungs"], indent=1)
        assert marked_processes(marker) == []
    finally:
        kill_all(marked_processes(marker))


@pytest.mark.runs_long(45)
def test_sandbox_bench_runs(tmp_path: Path) -> None:
    """The bench script itself works here (its numbers go to bench/RESULTS.md when run by hand); one
    repeat each: the script is what is tested, and two took 85 s of the GPU tests' step alone."""
    out = tmp_path / "results.md"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "sandbox_overhead.py"), "--repeats", "1",
                           "--results", str(out)], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(out.read_text())  # the numbers reach the run's log (-rA), for bench/RESULTS.md
    assert "box on" in out.read_text() and "box off" in out.read_text()


def test_workers_forked_from_a_zygote_run_cuda_and_the_whole_check(tmp_path: Path) -> None:
    """By default (``[sandbox] zygote_on_gpu = true``) the zygote imports torch and Triton without
    initialising CUDA, and every worker it forks (candidate, judge, benchmark) starts CUDA itself and
    passes every rung."""
    report = check(task_copy(tmp_path))
    assert report["ok"], json.dumps(report["rungs"], indent=1)
    assert report["device"]["gpu"] is True
    assert rung(report, "benchmark")["status"] in ("ok", "warn")
    assert parts_on(report) >= FULL_BOX
    processes = next(p for p in rung(report, "compile")["metrics"]["sandbox"]["parts"] if p["name"] == "processes")
    assert "forked from a zygote" in processes["detail"] and "not forked" not in processes["detail"], processes
