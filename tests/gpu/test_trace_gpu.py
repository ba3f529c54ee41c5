"""Tracing and hand-edited PTX on a real GPU: the trace rung on the CUDA C++ header and on the
Triton markers, and a softmax PTX override through correctness. (bench/trace_examples.py adds the
benchmark of the edited version and the matmul's region table and timeline for RESULTS.md.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kerneltui.core import override
from kerneltui.core.asm.store import Dump
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.trace import buffer as trace_buffer
from tests.conftest import run_cli

pytestmark = pytest.mark.gpu

TASKS = Path(__file__).resolve().parent / "trace_tasks"


def _check(task: Path, *args: str) -> dict:
    proc = run_cli("check", str(task), "--json", "--no-history", "--seeds", "1", *args)
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def _rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def test_pipelined_matmul_regions_traced(example_task) -> None:
    task = example_task("matmul_traced")
    report = _check(task, "--rungs", "trace")
    trace = _rung(report, "trace")
    assert trace["status"] == "ok", trace
    m = trace["metrics"]
    assert m["untraced_ms"] > 0 and m["traced_ms"] > 0 and m["overhead_pct"] is not None
    kernel = m["kernels"][0]
    assert kernel["kernel"] == "matmul_pipelined" and kernel["ctas"] == 32 * 32
    assert kernel["ctas_traced"] == kernel["ctas"] and kernel["sms"] > 1
    regions = {r["name"]: r for r in kernel["regions"]}
    assert regions["load"]["occurrences"] == 2048 / 16 and regions["store"]["occurrences"] == 1
    assert all(r["median_ns"] > 0 and r["median_cycles"] for r in regions.values())
    assert m["traced_output_matches"] is True
    buffers = trace_buffer.load(Path(m["buffers"]))
    assert buffers[0].regions == ("load", "compute", "store")
    assert json.loads(Path(m["chrome_trace"]).read_text())["traceEvents"]
    assert "SM " in m["timelines"][0] and "l load" in m["timelines"][0]


def test_triton_markers_trace_softmax(tmp_path: Path) -> None:
    task = tmp_path / "softmax_traced"
    shutil.copytree(TASKS / "softmax_traced", task)
    report = _check(task, "--rungs", "trace")
    trace = _rung(report, "trace")
    assert trace["status"] == "ok", trace
    kernel = trace["metrics"]["kernels"][0]
    assert kernel["ctas_traced"] == 4096
    regions = {r["name"]: r for r in kernel["regions"]}
    assert set(regions) == {"load", "reduce", "store"} and all(r["ctas"] == 4096 for r in regions.values())
    assert kernel["has_cycles"] is False  # the Triton markers record globaltimer only


@pytest.mark.runs_long(35)
def test_softmax_ptx_override_runs_through_correctness(example_task) -> None:
    task_dir = example_task("softmax")
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("[[benchmarks]]", "[[tests]]\nrows = 5\ncols = 8192\n\n[[benchmarks]]", 1))
    base = _check(task_dir, "--rungs", "correctness,dump")
    assert base["ok"], base["rungs"]
    task = load_task(str(task_dir))
    version = task.version_dir(base["source_hash"])
    dump = Dump.load(version)
    variant = dump.primary()
    ptx = dump.stage_text(variant, "ptx")
    key = override.triton_key(version, "PTX", ptx)
    assert key
    edited = override.write(task, version.name, "PTX", ptx, key=key)
    assert ptx.count("ex2.approx.f32") > 0
    edited.file.write_text(ptx.replace("ex2.approx.f32", "ex2.approx.ftz.f32"))
    after = _check(task_dir, "--rungs", "correctness,dump", "--override", edited.rel_folder)
    assert after["ok"], after["rungs"]
    new_version = task.version_dir(after["source_hash"])
    assert new_version != version
    new_dump = Dump.load(new_version)
    assert "ex2.approx.ftz.f32" in new_dump.stage_text(new_dump.variant(variant.kernel, variant.label), "ptx")
    assert _rung(after, "correctness")["status"] in ("ok", "warn")
