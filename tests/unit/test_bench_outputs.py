"""Text that people read: ``kerneltui device`` on a GPU, and the bench script's ncu parsing and tables."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from kerneltui.commands.device import describe
from tests.conftest import ROOT


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_timing", ROOT / "bench" / "bench_timing.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_timing"] = module
    spec.loader.exec_module(module)
    return module


INFO = {"gpu": True, "name": "NVIDIA H200", "arch": "sm_90a", "sm_count": 132, "memory_bytes": 150_121_938_944,
        "l2_bytes": 62914560, "driver": "570.124.06", "sm_clock_max_mhz": "1980", "mem_clock_max_mhz": "3201",
        "torch": "2.11.0+cu130", "cuda_runtime": "13.0", "triton": "3.6.0"}
PEAKS = {"measured_at": 1796225318.0, "copy_gbps": 4213.4, "read_gbps": 4410.0, "write_gbps": 4390.2,
         "matmul_tflops": {"fp64": 58.1, "fp32": 49.8, "tf32": 371.0, "fp16": 742.5, "bf16": 751.9},
         "unsupported": {"fp8": "torch._scaled_mm failed: RuntimeError: x"}, "l2_bytes": 62914560, "sm_count": 132,
         "methods": {"copy_gbps": "torch copy_ of 1024 MiB float32", "matmul_bf16": "torch.matmul 8192³ bf16"}}


def test_device_text_lists_every_peak_and_says_what_was_not_measured():
    lines = describe(INFO, PEAKS, "cached in /c/x.json")
    assert lines[0] == "NVIDIA H200 · sm_90a · 132 SMs · 139.8 GiB · L2 60.0 MiB"
    assert "driver 570.124.06" in lines[1] and "SM 1980 MHz" in lines[1] and "torch 2.11.0+cu130 (CUDA 13.0)" in lines[1]
    assert "(cached in /c/x.json)" in lines[2]
    text = "\n".join(lines)
    assert "memory copy" in text and "4213 GB/s" in text and "torch copy_ of 1024 MiB float32" in text
    assert "bf16 tensor-core matmul" in text and "751.9 TFLOP/s" in text and "torch.matmul 8192³ bf16" in text
    assert "fp8 e4m3 tensor-core matmul" in text and "not measured: torch._scaled_mm failed" in text
    assert lines[-1] == "ridge point (bf16 matmul / copy bandwidth): 178 FLOP per byte"


def test_ncu_csv_is_read_in_any_time_unit():
    bench = _bench_module()
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    row = '"{i}","1","python3","h","add_kernel","1","7","(128, 1, 1)","(65536, 1, 1)","0","9.0","m","gpu__time_duration.sum","{u}","{v}"'
    text = "\n".join(["==PROF== Connected to process 1", head, row.format(i=0, u="nsecond", v="191,936"),
                      row.format(i=1, u="usecond", v="192.5"), row.format(i=2, u="msecond", v="0.19"),
                      "==PROF== Disconnected from process 1"])
    assert bench.parse_ncu_csv(text) == pytest.approx([0.191936, 0.1925, 0.19])
    assert bench.parse_ncu_csv("==ERROR== nothing profiled") == []
    with pytest.raises(ValueError, match="unknown ncu time unit"):
        bench.parse_ncu_csv("\n".join([head, row.format(i=0, u="cycle", v="12")]))


def test_bench_table_and_notes_state_the_targets():
    bench = _bench_module()
    runs = [{"run": i + 1, "ok": True, "total_s": 9.0, "median_ms": m, "runs": 600, "bench_s": b, "candidate_s": 0.9,
             "pct_roofline": 95.0, "bound": "memory", "achieved_gbps": 4010.0, "copy_gbps": 4213.0}
            for i, (m, b) in enumerate([(0.2012, 4.1), (0.2010, 1.8), (0.2015, 1.7), (0.2011, 1.9), (0.2013, 1.8)])]
    va = bench.summarise("vector_add", {"n": 67108864}, runs, {"do_bench_ms": 0.2000}, {"ncu_ms": 0.1950})
    sm = bench.summarise("softmax", {"rows": 8192, "cols": 8192}, [{"run": 1, "ok": False, "total_s": 3.0,
                                                                     "error": "[benchmark] FAILED  x"}],
                         {"error": "driver failed"}, {"error": "ncu not found"})
    lines = bench.table([va, sm])
    assert lines[0].startswith("| kernel | case | kerneltui median |")
    assert "| vector_add | n=67108864 | 201.2 µs | 0.25% (201.0 µs–201.5 µs) | 200.0 µs | +0.6% | 195.0 µs | +3.2% |" in lines[2]
    assert "95% (memory-bound), 95% of copy BW" in lines[2] and "4.10 s / 1.80 s (of which 0.00 s waiting for a quiet GPU)" in lines[2]
    assert lines[3].startswith("| softmax | rows=8192 cols=8192 | FAILED |")
    notes = "\n".join(bench.notes([va, sm]))
    assert "kerneltui and ncu differ by +3.2% (more than 3%)" in notes
    assert "vector_add reaches 95.2% of the measured copy bandwidth (4213 GB/s): meets the ≥ 90% target" in notes
    assert "softmax: [benchmark] FAILED  x" in notes and "ncu: ncu not found" in notes


def test_check_breakdown_splits_the_benchmark_rung_as_the_report_gives_it():
    # The metrics as the benchmark rung returns them: the report's (core.bench.report.build) plus its timings.
    from kerneltui.core.bench.report import build
    from tests.unit.test_benchreport import PEAKS as BENCH_PEAKS
    from tests.unit.test_benchreport import SETTINGS, _answers, _case

    spec = importlib.util.spec_from_file_location("check_breakdown", ROOT / "bench" / "check_breakdown.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    metrics = {**build(*_answers([_case(0.2)]), BENCH_PEAKS, SETTINGS).metrics, "worker_wait_s": 3.25,
               "reference_s": 0.0, "torch_compile_s": 0.0, "candidate_s": 4.5, "total_s": 5.0,
               "baselines": {"reference": {"kept": True, "kept_at": "2026-12-07T21:40:00+0000",
                                           "note": "kept from 21:40 (same reference)"},
                             "torch_compile": {"kept": False, "kept_at": None, "note": "not measured"}}}
    text = "\n".join(module.benchmark_split(metrics))
    assert "| waiting for spare workers to finish starting | 3.25 |" in text
    assert "| the device's peaks, the reference's set-up and work estimate | 0.50 |" in text
    assert "| reference baseline (kept from 21:40 (same reference)) | 0.00 |" in text
    assert "| torch.compile baseline (not measured) | 0.00 |" in text
    # The case: warm-up 0.05 s and 3 calls, timed 0.5 s, 600 calls of ~0.2 ms (~120 ms of kernel time).
    row = next(line for line in text.splitlines() if line.startswith("| n=67108864 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "0.05, 3" and cells[2] == "0.50" and cells[3] == "600"
    assert abs(float(cells[4]) - 120.0) < 2 and abs(float(cells[5]) - 200.0) < 2 and cells[6] == "converged"
    assert module.benchmark_split({}) == []  # a skipped benchmark (no GPU): nothing to split
    table = module.rung_table({"ok": True, "duration_s": 6.4, "rungs": [{"name": "correctness", "status": "ok",
                                                                           "duration_s": 0.2}],
                               "verdicts": [{"ok": True, "final": False, "after_s": 0.9},
                                            {"ok": True, "final": True, "after_s": 4.8}]})
    assert "| (verdict so far (the checks) announced) | PASS | 0.90 |" in table
    assert "| (final verdict announced) | PASS | 4.80 |" in table


def test_a_gpu_run_step_takes_its_limit_after_the_last_equals_sign(tmp_path):
    # A py: step's own arguments may hold '=' (``--after-env VAR=VALUE``): the limit is the number
    # after the last one, and a step without a number keeps every '=' as an argument; set:VAR=VALUE
    # sets a variable for the steps after it (a number there is the value, not a limit).
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu_all.sh"), str(out),
                           "py:-c,print(__import__('sys').argv[1:]),--env,A=B=7", "set:KERNELTUI_GPU_RUN_PROBE=1",
                           "py:-c,print(__import__('sys').argv[1:]+[__import__('os').environ['KERNELTUI_GPU_RUN_PROBE']]),C=D"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr
    summary = (out / "summary.txt").read_text()
    assert "(limit 7s)" in summary and "(limit 300s)" in summary, summary
    assert "last line: ['--env', 'A=B']" in summary and "last line: ['C=D', '1']" in summary, summary
