"""The cheats only a GPU can catch (side streams, lazy results, caches, warm-up switches, L2), and an
honest kernel with a large speedup that must not be flagged. Each runs ``kerneltui check`` through
the benchmark and the roofline on the bundled vector_add.

On the GPU machine: ``python -m pytest -q -m gpu tests/cheats/test_cheats_gpu.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cheats.gallery import GPU_CHEATS, HONEST_ADD, L2_WAIVED, Cheat
from tests.conftest import EXAMPLES, copy_tree, run_cli

# Each check goes through the test process's engine, as a person's checks go through theirs: every
# check still gets fresh workers, only their start is taken out of the wait.
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("commands_share_an_engine")]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kerneltui-cache")  # device peaks measured once for the module


def _env(cache_dir: Path) -> dict[str, str]:
    return {"KERNELTUI_CACHE_DIR": str(cache_dir), "KERNELTUI_BENCHMARK_TORCH_COMPILE": "false",
            "KERNELTUI_BENCHMARK_MAX_SECONDS": "2"}


def _task(tmp_path: Path, name: str, kernel: str, prefix: str = "") -> Path:
    dest = tmp_path / name
    copy_tree(EXAMPLES / "vector_add", dest)
    toml = dest / "task.toml"
    toml.write_text(prefix + toml.read_text())
    (dest / "kernel.py").write_text(kernel)
    return dest


def _check(task: Path, env: dict[str, str]) -> dict:
    proc = run_cli("check", str(task), "--rungs", "roofline", "--seeds", "1", "--json", "--no-history", env=env,
                   timeout=300)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _rungs(report: dict) -> dict[str, dict]:
    return {r["name"]: r for r in report["rungs"]}


@pytest.mark.parametrize("cheat", GPU_CHEATS, ids=[c.name for c in GPU_CHEATS])
def test_gpu_cheat_is_caught_by_the_benchmark(tmp_path, cache_dir, cheat: Cheat) -> None:
    report = _check(_task(tmp_path, cheat.name, cheat.kernel, cheat.task_toml_prefix), _env(cache_dir))
    rungs = _rungs(report)
    if cheat.early and rungs["correctness"]["status"] == "fail":  # the race was lost before any timing
        error = rungs["correctness"]["error"] or ""
        assert any(phrase in error for phrase in cheat.early), error
        assert rungs["benchmark"]["status"] == "skip"
        return
    assert rungs["correctness"]["status"] in ("ok", "warn"), rungs["correctness"]  # it fools the checks
    caught = rungs[cheat.rung]
    assert caught["status"] == "fail", caught
    for phrase in cheat.phrases:
        assert re.search(phrase, caught["error"] or ""), (phrase, caught["error"])
    states = {d["key"]: d["state"] for d in report["integrity"]["defences"]}
    assert "caught" in {states["recheck"], states["side_work"]}, report["integrity"]


def test_pinned_l2_gains_nothing(tmp_path, cache_dir) -> None:
    # The persisting-L2 rule waived: the per-call reset and the flush must leave the kernel a cold call.
    report = _check(_task(tmp_path, L2_WAIVED.name, L2_WAIVED.kernel, L2_WAIVED.task_toml_prefix), _env(cache_dir))
    rungs = _rungs(report)
    bench = rungs["benchmark"]
    assert bench["status"] in ("ok", "warn"), bench
    assert bench["metrics"]["persisting_l2"] == "reset before every call"
    assert bench["metrics"]["flush_bytes"] >= 2 * bench["metrics"]["l2_bytes"] > 0
    roof = rungs["roofline"]
    assert roof["status"] == "ok", roof
    assert not roof["metrics"]["cases"][0]["impossible"]
    assert roof["metrics"]["pct_roofline"] <= 110


def test_large_honest_speedup_is_not_flagged(tmp_path, cache_dir) -> None:
    # A reference three times slower than it needs to be: the honest kernel's speedup is real.
    task = _task(tmp_path, "honest_speedup", HONEST_ADD)
    ref = task / "reference.py"
    ref.write_text(ref.read_text().replace("    return x + y", "    return (x.double() + y.double()).float()"))
    report = _check(task, _env(cache_dir))
    rungs = _rungs(report)
    for name in ("correctness", "benchmark", "roofline"):  # the rungs this check runs
        assert rungs[name]["status"] in ("ok", "warn"), rungs[name]
    assert rungs["benchmark"]["metrics"]["speedup_vs_reference"] > 1.5
    assert not any(d["state"] == "caught" for d in report["integrity"]["defences"]), report["integrity"]
