"""The loop on a real GPU: every bundled example passes; device faults are contained."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.gpu.examples import example_params

pytestmark = pytest.mark.gpu



@pytest.mark.parametrize("name", example_params())
def test_example_passes_on_gpu(example_task, name):
    task = example_task(name)
    proc = run_cli("check", str(task), "--json", "--rungs", "correctness", "--no-history")
    report = json.loads(proc.stdout)
    assert report["device"]["gpu"] is True
    statuses = {r["name"]: r["status"] for r in report["rungs"]}
    assert report["ok"], report["rungs"]
    assert statuses["correctness"] in ("ok", "warn")
    correctness = next(r for r in report["rungs"] if r["name"] == "correctness")
    assert correctness["metrics"]["launches"] > 0


@pytest.mark.runs_long(35)
def test_illegal_memory_access_fails_run_and_next_run_is_clean(example_task):
    task = example_task("vector_add")
    good = (task / "kernel.py").read_text()
    bad = good.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "tl.store(out_ptr + offs + (1 << 40), x + y, mask=mask)")
    assert bad != good
    (task / "bad.py").write_text(bad)
    proc = run_cli("check", str(task), "--kernel", str(task / "bad.py"), "--json", "--rungs", "correctness", "--no-history")
    report = json.loads(proc.stdout)
    assert not report["ok"]
    failed = [r for r in report["rungs"] if r["status"] == "fail"]
    assert failed and failed[0]["name"] in ("compile", "run")
    text = failed[0]["error"].lower()
    assert "illegal memory access" in text or "cuda error" in text or "illegal address" in text, failed[0]
    proc = run_cli("check", str(task), "--json", "--rungs", "correctness", "--no-history")
    assert json.loads(proc.stdout)["ok"]
