"""Two renderings of a :class:`ProfileSummary`: rows for the TUI's profile pane, a brief for the agent."""

from __future__ import annotations

import textwrap

from kerneltui.core.profile.summary import ProfileSummary

# What to try first, per bound: the brief ends with it so the agent's next proposal has a direction.
NEXT_STEPS = {
    "memory": "move fewer bytes (fuse passes, keep data in registers/shared memory, narrower dtypes where the task "
              "allows) or move them better (coalesced, 128-bit vector loads); with DRAM near its peak, only fewer "
              "bytes will help",
    "compute": "do less arithmetic per result or use faster units (tensor cores via tl.dot / wgmma, lower precision "
               "where the tolerance allows); look at which pipe is busiest",
    "latency": "give each SM more independent work to hide the waits: more warps per SM (fewer registers or less "
               "shared memory per block, more blocks), more independent operations per thread (unrolling, several "
               "elements per thread), deeper software pipelining (num_stages)",
    "under-utilised": "launch enough blocks to fill every SM: smaller tiles, split the reduction (split-K), "
                      "a persistent grid of one block per SM, or batch several problems into one launch",
}


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _time(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def _bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _kib(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n:.0f} B"


def _num(v: float | None, fmt: str = "{:.0f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def occupancy_text(s: ProfileSummary) -> str:
    text = f"{_pct(s.occupancy_achieved_pct)} achieved / {_pct(s.occupancy_theoretical_pct)} theoretical"
    if s.occupancy_limiter:
        text += f" · limited by {s.occupancy_limiter}"
    return text


def dram_text(s: ProfileSummary) -> str:
    text = _bytes(s.dram_bytes)
    ratio = s.dram_vs_task
    if ratio is not None:
        text += f" ({ratio:.2f}× the task's {_bytes(s.task_bytes)})"
    return text


def stall_text(s: ProfileSummary) -> str:
    return " · ".join(f"{st.reason.replace('_', ' ')} {st.share_pct:.0f}%" for st in s.stalls) or "n/a"


def summary_rows(s: ProfileSummary) -> list[tuple[str, str]]:
    """(label, value) rows for the compact table in the TUI."""
    rows = [
        ("kernel", s.kernel + (f"  ({s.case})" if s.case else "")),
        ("time", _time(s.duration_ns)),
        ("bound", s.bound),
        ("compute", f"{_pct(s.compute_pct)} of peak"),
        ("memory", f"{_pct(s.memory_pct)} of peak · DRAM {_pct(s.dram_pct)}"),
        ("occupancy", occupancy_text(s)),
        ("launch", f"{_num(s.grid_size)} blocks × {_num(s.block_size)} threads · {_num(s.waves_per_sm, '{:.2f}')} waves"
                   f" · {_num(s.registers_per_thread)} regs · {_kib(s.shared_mem_per_block)} smem"),
        ("caches", f"L1 hit {_pct(s.l1_hit_pct)} · L2 hit {_pct(s.l2_hit_pct)}"),
        ("DRAM", dram_text(s)),
        ("stalls", stall_text(s)),
    ]
    opts = [r for r in s.rules if r.kind in ("OPT", "WRN", "ERR")]
    if opts:
        rows.append(("ncu says", f"{len(opts)} finding{'s' if len(opts) != 1 else ''}: "
                                 + ", ".join(dict.fromkeys(r.name for r in opts))))
    if s.other_kernels:
        rows.append(("also", ", ".join(f"{k['name']} {_time(k.get('duration_ns'))}" for k in s.other_kernels)))
    return rows


def render_table(s: ProfileSummary, width: int = 100) -> str:
    rows = summary_rows(s)
    label_w = max(len(label) for label, _ in rows)
    lines = []
    for label, value in rows:
        wrapped = textwrap.wrap(value, max(20, width - label_w - 2)) or [""]
        lines.append(f"{label.ljust(label_w)}  {wrapped[0]}")
        lines.extend(" " * (label_w + 2) + more for more in wrapped[1:])
    return "\n".join(lines)


def headline(s: ProfileSummary) -> str:
    """The rung's one-line summary."""
    parts = [f"{s.bound}-bound" if s.bound in ("memory", "compute", "latency") else s.bound,
             f"SM {_pct(s.compute_pct)}", f"mem {_pct(s.memory_pct)}",
             f"occ {_num(s.occupancy_achieved_pct)}/{_num(s.occupancy_theoretical_pct)}%", _time(s.duration_ns)]
    if s.stalls:
        parts.append(f"top stall {s.stalls[0].reason.replace('_', ' ')}")
    return " · ".join(parts)


def render_brief(s: ProfileSummary, max_rule_chars: int = 400) -> str:
    """Plain text for the agent: every number with what it means, ncu's findings, what to try."""
    lines = [
        f"Nsight Compute profile of {s.kernel}" + (f" on {s.case}" if s.case else "") + f": {_time(s.duration_ns)}.",
        f"Bound: {s.bound} ({s.bound_reason}).",
        f"- Throughput (% of peak): compute (SM) {_pct(s.compute_pct)}, memory {_pct(s.memory_pct)}, "
        f"DRAM {_pct(s.dram_pct)}.",
        f"- Occupancy: {occupancy_text(s)}. Launch: {_num(s.grid_size)} blocks of {_num(s.block_size)} threads "
        f"({_num(s.waves_per_sm, '{:.2f}')} waves on {_num(s.sm_count)} SMs, SMs active {_pct(s.sm_active_pct)} of the "
        f"time), {_num(s.registers_per_thread)} registers/thread, {_kib(s.shared_mem_per_block)} shared memory/block.",
        f"- Caches: L1 hit rate {_pct(s.l1_hit_pct)}, L2 hit rate {_pct(s.l2_hit_pct)}.",
    ]
    ratio = s.dram_vs_task
    dram = f"- DRAM traffic: {_bytes(s.dram_bytes)} read+written"
    if ratio is not None:
        dram += f", {ratio:.2f}× the task's bytes_moved ({_bytes(s.task_bytes)})"
        if ratio > 1.2:
            dram += ": data goes to DRAM more than once; better reuse (tiling, fusion) would cut it"
        elif ratio < 0.8:
            dram += ": less than the task counts, so caches served part of it"
    if s.dram_gbps is not None:
        dram += f"; {s.dram_gbps:.0f} GB/s"
    lines.append(dram + ".")
    if s.achieved_tflops is not None:
        lines.append(f"- Arithmetic: {s.achieved_tflops:.3g} TFLOP/s by the task's flops count.")
    if s.stalls:
        unit = s.stalls[0].unit
        lines.append(f"- Top warp stalls ({unit}): " + "; ".join(
            f"{st.reason.replace('_', ' ')} {st.value:g} ({st.share_pct:.0f}%: {st.meaning})" for st in s.stalls) + ".")
    findings = [r for r in s.rules if r.text]
    if findings:
        lines.append("- Nsight Compute's findings:")
        for r in findings:
            gain = ""
            if r.speedup_pct is not None:
                gain = f", est. speedup {r.speedup_pct:g}%" + (f" {r.speedup_kind}" if r.speedup_kind else "")
            text = r.text if len(r.text) <= max_rule_chars else r.text[: max_rule_chars - 1] + "…"
            lines.append(f"  * [{r.kind}{gain}] {r.name}: {text}")
    if s.other_kernels:
        lines.append("- Other kernels in the same call: " + ", ".join(
            f"{k['name']} ({_time(k.get('duration_ns'))})" for k in s.other_kernels) + ".")
    lines.append(f"What to try: {NEXT_STEPS.get(s.bound, '')}.")
    return "\n".join(lines)
