"""A suite on a local Ray cluster started here (CPUs standing in for two GPUs): one Ray task per
item, each with its own task bundle (the published files and the load options), every verdict in
the results file as it lands, and a second pass that reuses them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.suite import prepare as suite_prepare
from kerneltui.core.suite import run as suite_run
from kerneltui.core.suite.discover import discover
from kerneltui.core.suite.record import ResultsFile
from kerneltui.core.task import LoadOptions
from tests.conftest import DATA, copy_tree

ray = pytest.importorskip("ray", reason="needs Ray (pip install 'kerneltui[remote]', installed by ./dev setup)")

from kerneltui.core.remote.ray_runner import connect  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster():
    cluster = connect("local", num_cpus=2, num_gpus=2, logging_level="error")
    yield cluster
    ray.shutdown()


def test_suite_on_ray(ray_cluster, tmp_path: Path) -> None:
    root = tmp_path / "kb"
    copy_tree(DATA / "kernelbench", root)
    suite = discover(root / "level1", root / "runs" / "broken")
    settings = {"rungs": ["correctness"], "gpu": True}
    prepared = suite_prepare.prepare(suite, LoadOptions(scale=0.004), settings)
    results = ResultsFile(tmp_path / "results.jsonl")
    seen = []
    final, info = suite_run.run_ray(prepared, "local", RunOptions(rungs=["correctness"], seeds=1), results,
                                    on_result=seen.append)

    assert info["cluster_gpus"] == 2 and info["per_task"]["num_gpus"] == 1
    assert {r.key for r in final} == {i.key for i in suite.items} and len(seen) == 5
    assert all(r.status == "failed" for r in final), [(r.key, r.failure) for r in final]
    assert all(r.where.split()[1:3] in (["gpu", "0"], ["gpu", "1"]) for r in final), [r.where for r in final]
    # The node checked the scaled problem: the failure quotes the scaled softsign's element count.
    softsign = next(r for r in final if r.problem == "30_SoftsignWide")
    assert "of 25088 elements" in (softsign.failure or "")

    again = suite_prepare.prepare(suite, LoadOptions(scale=0.004), settings)
    assert suite_prepare.reuse(again, results).reused == 5
