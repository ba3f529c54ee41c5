"""The profile rung end to end on a GPU with ncu: four kernels, four bounds.

    memory          the vector_add example (2^26 floats, 768 MB moved)
    compute         profile_tasks/matmul_fp16 (4096³ on tensor cores)
    latency         profile_tasks/fma_chain (one warp per scheduler, a chain of dependent FMAs)
    under-utilised  vector_add on 4096 elements (4 blocks for all the SMs)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, copy_tree, run_cli

pytestmark = pytest.mark.gpu

TASKS = Path(__file__).resolve().parent / "profile_tasks"
CASES = {
    "memory": (EXAMPLES / "vector_add", None),
    "compute": (TASKS / "matmul_fp16", None),
    "latency": (TASKS / "fma_chain", None),
    "under-utilised": (EXAMPLES / "vector_add", {"n": 4096}),
}


def task_copy(tmp_path: Path, src: Path, bench: dict | None) -> Path:
    dest = tmp_path / src.name
    copy_tree(src, dest)
    if bench:
        toml = dest / "task.toml"
        head = toml.read_text().split("[[benchmarks]]")[0]
        toml.write_text(head + "[[benchmarks]]\n" + "".join(f"{k} = {v}\n" for k, v in bench.items()))
    return dest


def profile_json(root: Path, *extra: str) -> dict:
    proc = run_cli("profile", str(root), "--json", "--seeds", "1", *extra, timeout=600)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, json.dumps(data["run"]["rungs"], indent=1) + proc.stderr[-3000:]
    return data


@pytest.mark.parametrize("bound", list(CASES))
def test_profile_finds_the_bound(tmp_path, bound):
    src, bench = CASES[bound]
    root = task_copy(tmp_path, src, bench)
    data = profile_json(root)
    profile = data["profile"]
    summary = profile["result"]["summary"]
    assert summary["bound"] == bound, summary["bound_reason"]
    assert summary["duration_ns"] > 0 and summary["compute_pct"] is not None and summary["memory_pct"] is not None
    assert summary["occupancy_theoretical_pct"] > 0 and summary["stalls"]
    # The report and its pages are kept in the version's folder, next to the checked source.
    report = Path(profile["report"])
    assert report.name == "profile.ncu-rep" and report.stat().st_size > 0
    version = report.parent
    assert version.parent == root / ".kerneltui" / "versions" and (version / "kernel.py").exists()
    for name in ("profile.json", "profile-raw.csv", "profile-details.csv", "profile-source-sass.csv",
                 "profile-source-cuda-sass.csv"):
        assert (version / name).stat().st_size > 0, name
    # Hot spots are keyed for the SASS viewer: offsets from the kernel start, task-relative lines.
    (spots,) = [h for h in profile["hotspots"] if h["kernel"] == summary["kernel"]]
    assert spots["sass"][0]["offset"] == 0
    assert {s["file"] for s in spots["source"]} >= {"kernel.py"}
    if bound != "under-utilised":  # 4 blocks finish before the sampler fires often
        assert sum(s["samples"] for s in spots["sass"]) > 0
    rung = next(r for r in data["run"]["rungs"] if r["name"] == "profile")
    assert rung["status"] == "ok" and rung["metrics"]["bound"] == bound


def test_profile_prints_the_table_and_the_brief(tmp_path):
    root = task_copy(tmp_path, TASKS / "fma_chain", None)
    table = run_cli("profile", str(root), "--seeds", "1", timeout=600)
    assert table.returncode == 0, table.stderr[-3000:]
    assert "bound      latency" in table.stdout and "hot source lines of chain_kernel" in table.stdout
    assert "kernel.py:13" in table.stdout
    brief = run_cli("profile", str(root), "--seeds", "1", "--brief", timeout=600)
    assert brief.returncode == 0, brief.stderr[-3000:]
    assert brief.stdout.startswith("Nsight Compute profile of chain_kernel") and "What to try:" in brief.stdout


def test_profile_timeout_kills_ncu_and_the_kernel(tmp_path):
    root = task_copy(tmp_path, TASKS / "fma_chain", None)
    proc = run_cli("profile", str(root), "--json", "--seeds", "1", "--timeout", "2", timeout=600)
    data = json.loads(proc.stdout)
    rung = next(r for r in data["run"]["rungs"] if r["name"] == "profile")
    assert proc.returncode == 1 and rung["status"] == "fail" and rung["metrics"]["problem"] == "timeout"
    assert "longer than 2 s" in rung["error"]
    assert not _processes_running("kerneltui.core.profile.target"), "a profiling target outlived its timeout"


def _processes_running(needle: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in text:
            found.append(text)
    return found


def test_kernel_name_filter_that_matches_nothing(tmp_path):
    root = task_copy(tmp_path, EXAMPLES / "vector_add", {"n": 4096})
    proc = run_cli("profile", str(root), "--json", "--seeds", "1", "--kernel-name", "no_such_kernel", timeout=600)
    rung = next(r for r in json.loads(proc.stdout)["run"]["rungs"] if r["name"] == "profile")
    assert proc.returncode == 1 and rung["metrics"]["problem"] == "no_kernels"
    assert "no kernel matching 'no_such_kernel'" in rung["error"]
