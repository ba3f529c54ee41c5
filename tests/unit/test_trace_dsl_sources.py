"""The DSLs' own tracers as trace sources: which one a kernel gets and why, and their output read
into kerneltui's per-CTA records (the same region table, trace screen and Perfetto export).

The Proton documents follow the Chrome trace Triton's Proton writes for ``data="trace"``
(``pid`` "<kernel> Core<sm> CTA<cta>", ``tid`` "warp <w> (line <l>)", ``ts``/``dur`` in µs). The
IKET documents follow the names nvidia-cutlass-dsl 4.8's decoder uses (``ranges`` with ``startTs``/
``endTs``/``rangeNameIdx``/``warpLocIdxs`` under launches with ``kernelName``, tables of names and
of warp locations); the GPU tests read the real files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.core.rungs.trace import NO_BUFFER, build_result
from kerneltui.core.trace import buffer as trace_buffer
from kerneltui.core.trace import iket, proton, sources
from kerneltui.core.trace.regions import RegionEvent, fold
from kerneltui.core.trace.stats import analyse
from kerneltui.ui.adapters.trace import TraceData, trace_data

TRITON_PROTON = """
import triton
import triton.language as tl
import triton.profiler.language as pl

@triton.jit
def k(x):
    with pl.scope("load"):
        v = tl.load(x)
"""
TRITON_MARKERS = "import kerneltui.ktrace.triton as kt\n@triton.jit\ndef k(t, TRACE: tl.constexpr):\n    s = kt.begin(TRACE)\n"
CUTE_IKET = "from cutlass.cute.experimental import iket\n@cute.kernel\ndef k():\n    t = iket.range_start('load')\n"


def test_a_kernel_gets_the_tracer_its_source_uses() -> None:
    assert sources.wanted_source("triton", TRITON_PROTON) == sources.PROTON
    assert sources.wanted_source("triton", TRITON_MARKERS) == sources.MARKERS
    assert sources.wanted_source("cute", CUTE_IKET) == sources.IKET
    assert sources.wanted_source("cuda", "__global__ void k() {}") == sources.MARKERS
    # Proton scopes are a Triton feature: the same words in a CuTe kernel ask for nothing.
    assert sources.wanted_source("cute", TRITON_PROTON) == sources.MARKERS


def test_where_iket_cannot_run_the_markers_are_used_and_the_reason_said() -> None:
    choice = sources.choose("cute", CUTE_IKET, iket_problem="IKET runs only with the GPU on this machine")
    assert choice.source == sources.MARKERS and choice.wanted == sources.IKET and choice.fell_back
    assert choice.note() == ("IKET (CuTe DSL's in-kernel event tracing) cannot trace this kernel here: IKET runs only "
                             "with the GPU on this machine; traced with kerneltui's markers")
    assert sources.choose("cute", CUTE_IKET).source == sources.IKET
    # A problem with IKET does not concern a Proton kernel.
    assert sources.choose("triton", TRITON_PROTON, iket_problem="no run-iket").source == sources.PROTON


def test_without_a_gpu_the_reason_names_the_tracer() -> None:
    assert "Proton" in sources.no_gpu_reason("triton", TRITON_PROTON)
    assert "IKET" in sources.no_gpu_reason("cute", CUTE_IKET)
    assert sources.no_gpu_reason("cuda", "") == "no GPU: the region markers read the GPU's own timers"


def test_fold_keeps_one_record_per_cta_and_region() -> None:
    events = [
        # CTA 0: two warps in "load" (overlapping), one loop body entered twice by warp 0.
        RegionEvent("load", 0, 3, 0, 100, 200), RegionEvent("load", 0, 3, 1, 150, 260),
        RegionEvent("mma", 0, 3, 0, 300, 350), RegionEvent("mma", 0, 3, 0, 400, 470),
        RegionEvent("load", 1, 5, 0, 120, 180),
    ]
    buf = fold(events, kernel="k", source="proton")
    assert buf.regions == ("load", "mma") and buf.ctas == 2 and buf.source == "proton"
    rec = {(r.cta, buf.regions[r.region]): r for r in buf.records}
    assert (rec[(0, "load")].first_begin_ns, rec[(0, "load")].last_end_ns) == (100, 260)
    assert rec[(0, "load")].busy_ns == 160  # the union of [100, 200] and [150, 260]
    assert rec[(0, "mma")].busy_ns == 120 and rec[(0, "mma")].count == 2
    assert rec[(1, "load")].smid == 5 and (1, "mma") not in rec
    # The records survive kerneltui's own buffer format (what buffers.json stores).
    again = trace_buffer.from_dict(buf.to_dict())
    assert again.records == buf.records and again.source == "proton"


def _proton_doc() -> dict:
    def event(name: str, sm: int, cta: int, warp: int, ts_us: float, dur_us: float) -> dict:
        return {"cname": "good", "name": name, "cat": "softmax_kernel", "ph": "X",
                "pid": f"softmax_kernel Core{sm} CTA{cta}", "tid": f"warp {warp} (line 0)", "ts": ts_us, "dur": dur_us,
                "args": {"Init Time (ns)": 1, "Finalization Time (ns)": 2, "call_stack": []}}

    events = []
    for cta in range(4):
        base = 10.0 * cta
        for warp in range(2):
            events.append(event("load", cta % 2, cta, warp, base + 0.1 * warp, 1.0))
            events.append(event("reduce", cta % 2, cta, warp, base + 1.5, 2.0))
            events.append(event("store", cta % 2, cta, warp, base + 4.0, 0.5))
    events.append({"ph": "M", "name": "process_name", "pid": "softmax_kernel Core0 CTA0", "args": {"name": "x"}})
    return {"displayTimeUnit": "ns", "traceEvents": events}


def test_proton_trace_becomes_per_cta_records() -> None:
    [buf] = proton.read_chrome_trace(_proton_doc())
    assert buf.kernel == "softmax_kernel" and buf.regions == ("load", "reduce", "store") and buf.ctas == 4
    report = analyse(buf)
    assert report.ctas_traced == 4 and report.sms == 2 and report.source == "proton"
    load = report.region("load")
    assert load.median_ns == pytest.approx(1100)  # two warps, 0.1 µs apart, 1 µs each: 1.1 µs of union
    assert report.region("reduce").median_ns == pytest.approx(2000)


def test_proton_trace_without_scopes_says_what_to_check() -> None:
    with pytest.raises(trace_buffer.TraceFormatError, match="recorded no scope of any kernel"):
        proton.read_chrome_trace({"traceEvents": [{"ph": "M", "name": "process_name"}]})


def _iket_doc() -> dict:
    locations = [{"smId": 7, "tpcId": 0, "gpcId": 0, "ctaId": [x, 0, 0], "warpId": w} for x in range(2) for w in range(2)]
    ranges = []
    for loc_index, loc in enumerate(locations):
        t = 1_000 * loc["ctaId"][0] + 10 * loc["warpId"]
        ranges.append({"rangeId": 1, "rangeNameIdx": 0, "startTs": t, "endTs": t + 300, "warpLocIdxs": [loc_index]})
        ranges.append({"rangeId": 2, "rangeNameIdx": 1, "startTs": t + 300, "endTs": t + 350, "warpLocIdxs": [loc_index]})
    launch = {"kernelName": "axpb_kernel", "gridDimX": 2, "gridDimY": 1, "gridDimZ": 1, "ranges": ranges, "markers": []}
    warmup = {**launch, "ranges": ranges[:2]}
    return {"meta": {"version": 1}, "names": ["load", "compute"], "locations": locations, "launches": [warmup, launch]}


def test_iket_decoded_trace_becomes_per_cta_records() -> None:
    [buf] = iket.read_decoded(_iket_doc())
    assert buf.kernel == "axpb_kernel" and buf.regions == ("load", "compute") and buf.grid == (2, 1, 1)
    report = analyse(buf)
    assert report.ctas_traced == 2 and report.source == "iket"  # the last launch, not the warm-up
    assert report.region("load").median_ns == pytest.approx(310)  # warps 10 ns apart, 300 ns each


def test_iket_trace_without_ranges_says_what_it_found() -> None:
    with pytest.raises(trace_buffer.TraceFormatError, match=r"holds no ranges \(top-level keys: \['meta'\]\)"):
        iket.read_decoded({"meta": {"version": 1}})


def test_a_proton_trace_reaches_the_trace_screen(tmp_path: Path) -> None:
    buffers = proton.read_chrome_trace(_proton_doc())
    raw = {"case": 0, "case_kind": "benchmark", "untraced_ms": [0.5, 0.5, 0.6], "traced_ms": [0.6, 0.6, 0.7],
           "buffers": [b.to_dict() for b in buffers], "source": "proton", "traced_output_matches": True}
    result = build_result(tmp_path, raw)
    assert result.status == "ok", result.summary
    assert result.metrics["source"] == "proton" and result.metrics["source_fallback"] is None
    assert result.details.startswith("traced by Proton (Triton's instrumentation mode)")
    data = trace_data(result)
    assert isinstance(data, TraceData) and data.traces[0].source == "proton"
    assert data.traces[0].regions == ("load", "reduce", "store")
    assert json.loads(Path(result.metrics["chrome_trace"]).read_text())["traceEvents"]


def test_when_proton_cannot_run_the_marker_path_says_why(tmp_path: Path) -> None:
    raw = {"untraced_ms": [0.5], "traced_ms": None, "buffers": [], "source_note": "this Triton has no Proton"}
    result = build_result(tmp_path, raw)
    assert result.status == "fail"
    assert result.error == ("Proton (Triton's instrumentation mode) cannot trace this kernel here: this Triton has no "
                            f"Proton; traced with kerneltui's markers. {NO_BUFFER}")
