"""The two renderings of a profile summary, on recorded H200 data."""

from __future__ import annotations

from kerneltui.core.profile.render import NEXT_STEPS, headline, render_brief, render_table, summary_rows
from tests.unit.test_profile_parsers import rung_result


def test_table_rows_for_the_tui():
    rows = dict(summary_rows(rung_result("compute_matmul_fp16").summary))
    assert rows["kernel"] == "matmul_kernel  (M=4096 N=4096 K=4096)"
    assert rows["bound"] == "compute"
    assert rows["time"] == "190.0 µs"
    assert rows["compute"] == "86.5% of peak"
    assert rows["occupancy"] == "12.4% achieved / 12.5% theoretical · limited by registers and shared memory (1 block/SM)"
    assert rows["launch"] == "512 blocks × 256 threads · 3.88 waves · 220 regs · 144 KiB smem"
    assert rows["DRAM"] == "214.8 MB (2.13× the task's 100.7 MB)"
    assert rows["stalls"].startswith("barrier 31% · long scoreboard 25%")
    assert "LaunchConfiguration" in rows["ncu says"]


def test_table_text_wraps_under_its_labels():
    text = render_table(rung_result("underutilised_vector_add_4096").summary, width=60)
    lines = text.splitlines()
    assert lines[0].startswith("kernel") and "add_kernel" in lines[0]
    assert all(len(line) <= 60 for line in lines)
    assert any(line.startswith(" " * 11) for line in lines)  # continuation lines are indented


def test_brief_for_the_agent_has_numbers_meanings_findings_and_a_next_step():
    s = rung_result("latency_fma_chain").summary
    brief = render_brief(s)
    assert brief.startswith("Nsight Compute profile of chain_kernel on n=16896 steps=8192: 31.4 µs.")
    assert "Bound: latency" in brief
    assert "wait 2.29 (74%: a fixed-latency dependency between back-to-back instructions)" in brief
    assert "[OPT, est. speedup 55.93% local] CPIStall:" in brief
    assert "0.52× the task's bytes_moved" in brief
    assert brief.rstrip().endswith(NEXT_STEPS["latency"] + ".")


def test_brief_says_when_dram_traffic_exceeds_the_task():
    brief = render_brief(rung_result("compute_matmul_fp16").summary)
    assert "2.13× the task's bytes_moved (100.7 MB): data goes to DRAM more than once" in brief


def test_headline_is_one_line():
    line = headline(rung_result("memory_vector_add").summary)
    assert line == "memory-bound · SM 5.8% · mem 89.4% · occ 84/100% · 182.8 µs · top stall long scoreboard"
