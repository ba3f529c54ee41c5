"""Trace buffers recorded in the device code's layout: parsing, statistics, timeline, Perfetto export,
and the trace rung's result built from a worker reply (tests/data/trace, synthetic until the H200 run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.core.rungs.trace import build_result
from kerneltui.core.trace import buffer, chrome, stats, summary, timeline

DATA = Path(__file__).resolve().parent.parent / "data" / "trace"


@pytest.fixture(scope="module")
def matmul() -> buffer.TraceBuffer:
    return buffer.load(DATA / "matmul_pipelined.json")[0]


def test_recorded_matmul_parses_every_cta(matmul: buffer.TraceBuffer) -> None:
    assert matmul.regions == ("load", "compute", "store")
    assert matmul.ctas == 256 and matmul.grid == (16, 16, 1)
    assert len(matmul.ran) == 256 * 3
    assert {r.count for r in matmul.ran if r.region == 0} == {32}
    # round trip through the file format keeps every word
    again = buffer.from_dict(matmul.to_dict())
    assert again.records == matmul.records


def test_region_statistics(matmul: buffer.TraceBuffer) -> None:
    report = stats.analyse(matmul)
    load, compute, store = report.regions
    assert report.ctas_traced == 256 and report.sms == 132
    assert 12_000 < load.median_ns < 15_000 and 18_000 < compute.median_ns < 21_000
    assert load.p10_ns <= load.median_ns <= load.p90_ns
    assert store.occurrences == 1 and compute.occurrences == 32
    assert compute.median_cycles is not None and compute.median_cycles == pytest.approx(compute.median_ns * 1.98, rel=0.01)
    assert 0.95 < load.share + compute.share + store.share <= 1.0 + 1e-9
    pairs = {(o.first, o.second): o.fraction for o in report.overlaps}
    assert pairs[("load", "compute")] > 0.9  # the pipelined loop: both span it
    assert pairs[("compute", "store")] == 0.0  # the epilogue follows the loop
    assert report.kernel_ns > report.cta_span_median_ns * 2  # two waves on 132 SMs
    table = summary.region_table(report)
    assert "load∩compute 99%" in table and "compute" in table.splitlines()[3]


def test_timeline_rows_per_sm_and_cta(matmul: buffer.TraceBuffer) -> None:
    tl = timeline.build(matmul, width=40, max_rows=10)
    assert len(tl.rows) == 10 and tl.hidden_rows == 122 and tl.width == 40
    assert tl.rows[0].label == "SM 0"
    assert set(tl.rows[1].cells) <= {"l", "c", "s", "L", "C", "S", "·"}
    assert "C" in tl.rows[1].cells and "s" in tl.rows[1].cells.lower()
    assert tl.rows[0].cells.endswith("·")  # SM 0 ran one CTA only and is idle at the end
    by_cta = timeline.build(matmul, width=20, by="cta", max_rows=300)
    assert len(by_cta.rows) == 256 and by_cta.rows[5].label == "CTA 5"
    assert "… 122 more SMs" in tl.text() and "l load" in tl.text()
    with pytest.raises(ValueError, match="'sm' or 'cta'"):
        timeline.build(matmul, by="warp")


def test_perfetto_export(tmp_path: Path) -> None:
    bufs = buffer.load(DATA / "two_kernels.json")
    path = chrome.write(tmp_path / "trace.json", bufs)
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == 256 * 3 + 64
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in complete)
    assert {e["name"] for e in complete} == {"load", "compute", "store", "row"}
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert "matmul_pipelined SM 0" in names and "softmax_kernel SM 0" in names
    pids = {e["pid"] for e in complete if e["name"] == "row"}
    assert min(pids) >= 10_000  # the second kernel's SMs do not collide with the first's
    softmax = [e for e in complete if e["name"] == "row"]
    assert "busy_cycles" not in softmax[0]["args"]  # the Triton markers record no cycles


def test_bad_buffers_are_explained() -> None:
    with pytest.raises(buffer.TraceFormatError, match=r"3 words; 1 CTAs × 1 regions × 8 words = 8"):
        buffer.from_words([1, 2, 3], ["a"], 1)
    with pytest.raises(buffer.TraceFormatError, match="ends before it begins"):
        buffer.from_words([10, 5, 0, 1, 0, 0, 0, 0], ["a"], 1)
    with pytest.raises(buffer.TraceFormatError, match="repeat"):
        buffer.from_words([0] * 16, ["a", "a"], 1)
    with pytest.raises(buffer.TraceFormatError, match="not a kerneltui trace"):
        buffer.from_dict({"format": "other"})


def test_rung_result_from_a_worker_reply(tmp_path: Path, matmul: buffer.TraceBuffer) -> None:
    data = matmul.to_dict()
    raw = {"untraced_ms": [0.070, 0.071, 0.069], "traced_ms": [0.074, 0.075, 0.073], "case": 0,
           "case_kind": "benchmark", "traced_output_matches": True,
           "buffers": [{"kernel": data["kernel"], "regions": data["regions"], "grid": data["grid"], "words": data["words"]}]}
    result = build_result(tmp_path, raw)
    assert result.status == "ok"
    assert result.metrics["overhead_pct"] == pytest.approx(100 * (0.074 / 0.070 - 1))
    assert result.summary.startswith("matmul_pipelined: load 40% compute 57% store 3%")
    assert "overhead +5.7%" in result.summary
    assert "tracing overhead: traced median 74.0 µs vs untraced 70.0 µs" in result.details
    assert json.loads((tmp_path / "trace" / "trace.json").read_text())["traceEvents"]
    assert buffer.load(tmp_path / "trace" / "buffers.json")[0].records == matmul.records
    text = summary.brief(tmp_path)  # what the agent's trace_regions tool reads
    assert text is not None and text.startswith("tracing overhead: traced median 74.0 µs")
    assert "load∩compute 99%" in text and summary.brief(tmp_path / "untraced") is None
    none = build_result(tmp_path, {**raw, "buffers": []})
    assert none.status == "fail" and "ktrace.buffer" in (none.error or "")


def test_a_proton_trace_gives_no_overhead_percentage(tmp_path: Path, matmul: buffer.TraceBuffer) -> None:
    # On an H100 a 60 µs softmax's traced calls took 101 ms each by CUDA events (Proton reads its profile
    # buffer back after every launch) and the rung said "overhead +145301.1%".
    data = matmul.to_dict()
    raw = {"untraced_ms": [0.0695] * 3, "traced_ms": [101.06] * 3, "case": 0, "case_kind": "benchmark",
           "traced_output_matches": True, "source": "proton",
           "buffers": [{"kernel": data["kernel"], "regions": data["regions"], "grid": data["grid"], "words": data["words"],
                        "source": "proton"}]}
    result = build_result(tmp_path, raw)
    assert result.status == "ok"
    assert result.metrics["overhead_pct"] is None and "overhead" not in result.summary
    span_us = max(k["kernel_ns"] for k in result.metrics["kernels"]) / 1e3
    line = (f"tracing overhead: not measured under Proton: its traced calls (101060.0 µs median) include Proton reading "
            f"its profile buffer after every launch; the traced kernel spans {span_us:.1f} µs in the trace, "
            f"an untraced call takes 69.5 µs (CUDA events)")
    assert line in result.details
    assert summary.overhead_of(result.metrics) == line  # the trace screen and `kerneltui trace`
    brief = summary.brief(tmp_path)
    assert brief is not None and brief.startswith(line)  # what the agent reads


def test_cli_shows_a_saved_trace(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    proc = run_cli("trace", "--show", str(DATA / "two_kernels.json"), "--width", "40", "--by", "cta", "--rows", "3",
                   "--chrome", str(tmp_path / "t.json"))
    assert proc.returncode == 0, proc.stderr
    assert "matmul_pipelined: 256/256 CTAs traced on 132 SMs" in proc.stdout
    assert "CTA 2 │" in proc.stdout and "… 253 more CTAs" in proc.stdout and "softmax_kernel" in proc.stdout
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    bad = run_cli("trace", "--show", str(tmp_path / "missing.json"))
    assert bad.returncode == 2 and "cannot read the trace" in bad.stderr
