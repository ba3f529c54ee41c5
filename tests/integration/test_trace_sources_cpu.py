"""The DSLs' tracers on a machine without a GPU, through the real loop and workers.

A Triton kernel marked with Proton scopes runs under the interpreter (the scopes record nothing
there) and passes; its trace rung says that Proton, like kerneltui's markers, needs a GPU. A CuTe
DSL kernel marked with IKET ranges compiles plainly, and with IKET switched on its cubin carries
the ranges by name, as IKET's own reader lists them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import HAS_GPU, copy_tree, run_cli

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the no-GPU path; tests/gpu/test_trace_sources_gpu.py covers a GPU")
TASKS = Path(__file__).resolve().parents[1] / "gpu" / "trace_tasks"


def _copy(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    copy_tree(TASKS / name, dest)
    return dest


def _rungs(proc) -> dict[str, dict]:
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON report (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return {r["name"]: r for r in report["rungs"]}


def test_proton_scopes_run_under_the_interpreter_and_the_trace_rung_says_why_not(tmp_path: Path) -> None:
    task = _copy("softmax_proton", tmp_path)
    proc = run_cli("check", str(task), "--rungs", "trace", "--json", "--no-history", "--seeds", "1")
    rungs = _rungs(proc)
    assert proc.returncode == 0, rungs
    assert rungs["correctness"]["status"] == "ok"
    assert rungs["trace"]["status"] == "skip"
    assert rungs["trace"]["summary"] == ("no GPU: Proton (Triton's instrumentation mode) records on the GPU and cannot "
                                         "run here; neither can kerneltui's markers, which read the GPU's own timers")


def test_iket_ranges_compile_into_the_cubin(tmp_path: Path) -> None:
    iket = pytest.importorskip("iket", reason="IKET ships with nvidia-cutlass-dsl 4.8")
    task = _copy("cute_iket", tmp_path)
    # run-iket turns this option on for the program it traces; here it is set by hand.
    proc = run_cli("check", str(task), "--rungs", "dump", "--json", "--no-history",
                   env={"CUTE_DSL_COMPILER_OPT": "iket"})
    rungs = _rungs(proc)
    assert proc.returncode == 0 and rungs["dump"]["status"] == "ok", rungs
    [cubin] = list(task.glob(".kerneltui/versions/*/dump/*/*.cubin"))
    context = iket.Context(cubin.read_bytes())
    assert context.is_instrumented()
    assert sorted(r.range_name for r in context.get_all_ranges()) == ["compute", "load", "store"]
    # Without the option the ranges are stripped: the plain build is what the loop checks.
    plain = _copy("cute_iket", tmp_path / "plain")
    assert run_cli("check", str(plain), "--rungs", "dump", "--json", "--no-history").returncode == 0
    [plain_cubin] = list(plain.glob(".kerneltui/versions/*/dump/*/*.cubin"))
    assert not iket.Context(plain_cubin.read_bytes()).is_instrumented()
