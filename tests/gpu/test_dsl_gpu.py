"""TileLang, the DSLs' own tracers and the CuTe DSL example on a real GPU.

* the TileLang GEMM example is correct and benchmarks (bench/tilelang_vs_triton.py compares it with
  the Triton matmul example on the same shapes and records the numbers);
* a Triton kernel marked with Proton scopes is traced by Proton, and a CuTe DSL kernel marked with
  IKET ranges by run-iket, and both arrive in the trace screen's data as per-CTA regions;
* the CuTe DSL example passes its check and its dump, whose ptxas run may have to lower the PTX
  header the DSL writes (its .version) for the toolkit's ptxas.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.core.asm.store import Dump
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.trace.summary import overhead_of
from kerneltui.ui.adapters.trace import TraceData, trace_data
from tests.conftest import copy_tree, run_cli
from tests.gpu.examples import needs_dsl

pytestmark = pytest.mark.gpu
TASKS = Path(__file__).resolve().parent / "trace_tasks"


def _check(task: Path, *args: str) -> dict:
    proc = run_cli("check", str(task), "--json", "--no-history", "--seeds", "2", *args, timeout=900)
    assert proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def _copy(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    copy_tree(TASKS / name, dest)
    return dest


@needs_dsl("tilelang")
def test_tilelang_gemm_is_correct_and_benchmarks(example_task) -> None:
    task = example_task("tilelang_gemm")
    report = _check(task, "--rungs", "correctness,benchmark,dump")
    assert report["device"]["gpu"] is True
    correctness = _rung(report, "correctness")
    assert correctness["status"] == "ok", correctness
    assert correctness["metrics"]["launches"] >= correctness["metrics"]["checks"]
    benchmark = _rung(report, "benchmark")
    assert benchmark["status"] in ("ok", "warn"), benchmark
    assert benchmark["metrics"]["median_ms"] > 0
    dump_rung = _rung(report, "dump")
    assert dump_rung["status"] == "ok" and dump_rung["metrics"]["on_gpu"] is True, dump_rung
    t = load_task(str(task))
    dump = Dump.load(t.version_dir(source_hash(t.kernel_source())))
    primary = dump.primary()
    assert primary.label.startswith("A 4096x4096") and primary.stage_names == ["cuda", "ptx", "sass"]
    if dump.arch.startswith("sm_90"):
        assert "HGMMA" in dump.stage_text(primary, "sass")


def _trace(task: Path) -> tuple[dict, TraceData]:
    report = _check(task, "--rungs", "trace")
    rung = _rung(report, "trace")
    assert rung["status"] in ("ok", "warn"), rung
    result = RungResult.from_dict(rung)
    data = trace_data(result)
    assert isinstance(data, TraceData), data
    return rung["metrics"], data


@pytest.mark.runs_long(70)
def test_proton_traces_a_triton_kernel_into_the_trace_screen(tmp_path: Path) -> None:
    metrics, data = _trace(_copy("softmax_proton", tmp_path))
    assert metrics["source"] == "proton" and metrics["source_fallback"] is None, metrics
    [kernel] = metrics["kernels"]
    assert kernel["kernel"] == "softmax_kernel" and kernel["ctas_traced"] == 4096 and kernel["sms"] > 1
    assert {r["name"] for r in kernel["regions"]} == {"load", "reduce", "store"}
    assert all(r["ctas"] == 4096 and r["median_ns"] > 0 for r in kernel["regions"])
    assert metrics["traced_output_matches"] is True
    # Under Proton the traced calls' events hold its buffer read-back (~100 ms a call): no overhead %.
    assert metrics["overhead_pct"] is None
    assert "traced kernel spans" in overhead_of(metrics) and "%" not in overhead_of(metrics)
    # Proton's times are nanoseconds: the traced grid spans about as long as the kernel takes
    # untraced. Not the traced call's time: with Proton's session open a call took 138 ms on the H200
    # against a 46 µs grid (its per-call host work), a ratio that says nothing about units.
    untraced_ns = 1e6 * metrics["untraced_ms"]
    assert 0.05 * untraced_ns < kernel["kernel_ns"] < 20 * untraced_ns, (kernel["kernel_ns"], untraced_ns)
    assert data.traces[0].source == "proton" and data.traces[0].regions == ("load", "reduce", "store")
    assert json.loads(Path(metrics["chrome_trace"]).read_text())["traceEvents"]


def test_iket_traces_a_cute_kernel_into_the_trace_screen(tmp_path: Path) -> None:
    pytest.importorskip("iket", reason="IKET ships with nvidia-cutlass-dsl 4.8")
    task = _copy("cute_iket", tmp_path)
    metrics, data = _trace(task)
    assert metrics["source"] == "iket", metrics
    [kernel] = metrics["kernels"]
    assert kernel["ctas_traced"] == 16777216 // 4096 and kernel["sms"] > 1
    assert {r["name"] for r in kernel["regions"]} == {"load", "compute", "store"}
    assert data.traces[0].source == "iket"
    kept = sorted(p.name for p in (Path(metrics["buffers"]).parent).glob("iket.*"))
    assert "iket.trace.json" in kept and "iket.pftrace" in kept


@needs_dsl("cute")
def test_cute_example_check_and_dump_pass_on_the_gpu(example_task) -> None:
    task = example_task("cute_elementwise")
    report = _check(task, "--rungs", "correctness,dump")
    assert _rung(report, "correctness")["status"] == "ok"
    dump_rung = _rung(report, "dump")
    assert dump_rung["status"] == "ok", dump_rung  # a ptxas that refused the PTX header would make it warn
    t = load_task(str(task))
    dump = Dump.load(t.version_dir(source_hash(t.kernel_source())))
    v = dump.primary()
    assert v.resources is not None and v.resources.registers and v.resources.spill_store_bytes is not None
    # Either ptxas took the DSL's PTX as it is, or its .version was lowered and the cubins agree.
    assert "could not assemble" not in " ".join(v.problems)
    assert v.resources.spills_source.startswith("ptxas -v"), v.resources.spills_source
