"""What a profile says, condensed: how busy compute and memory were, what bounds the kernel, why.

The bound, in this order (thresholds in :class:`Thresholds`, the same numbers in README's
profile section):

1. **compute** or **memory**: the busier of compute (``sm__throughput``) and memory
   (``gpu__compute_memory_throughput``: the busiest of DRAM, L2, L1 and shared memory) reaches
   ``busy_pct`` (60%) of its peak. 60% is where Nsight Compute's own speed-of-light rule stops
   calling a unit under-used. The busier one is the bound.
2. **under-utilised**: neither reaches 60%, and the launch leaves SMs without work: fewer blocks
   than SMs, or SMs active less than ``active_sm_pct`` (50%) of the elapsed cycles. More blocks
   (a smaller tile, split-K, a persistent grid) is the fix, not faster code.
3. **latency**: neither reaches 60% although the SMs have work: warps spend their time waiting
   (the stall reasons say on what). More warps or more independent work per warp is the fix.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltui.core.profile.csvpages import DetailKernel, RawKernel, RuleResult

BOUNDS = ("compute", "memory", "under-utilised", "latency")


@dataclass(frozen=True)
class Thresholds:
    busy_pct: float = 60.0  # compute or memory at or above this share of peak is the bound
    active_sm_pct: float = 50.0  # SMs active less than this share of the time: under-utilised
    top_stalls: int = 4


THRESHOLDS = Thresholds()

# Warp stall reasons as ncu names them in metric names, with what each means for the person.
STALL_MEANING = {
    "long_scoreboard": "waiting for global/local memory (L1TEX) results",
    "short_scoreboard": "waiting for shared memory or special-function (MIO) results",
    "wait": "a fixed-latency dependency between back-to-back instructions",
    "math_pipe_throttle": "the math pipe is busy (compute saturated)",
    "mio_throttle": "the shared-memory/MIO queue is full",
    "lg_throttle": "the global/local memory queue is full (too many small memory instructions)",
    "tex_throttle": "the texture/L1TEX queue is full",
    "barrier": "waiting at a block barrier (__syncthreads / tl.debug_barrier)",
    "membar": "waiting at a memory fence",
    "branch_resolving": "waiting for a branch target to resolve",
    "no_instruction": "no instruction fetched (instruction cache miss or after a branch)",
    "no_instructions": "no instruction fetched (instruction cache miss or after a branch)",
    "imc_miss": "waiting for an immediate-constant cache miss",
    "dispatch_stall": "the dispatcher could not issue (pipeline conflict)",
    "drain": "waiting for memory stores to drain at exit",
    "sleeping": "the warp is sleeping (nanosleep or all threads yielded)",
    "gmma": "waiting for warpgroup MMA (wgmma) results",
    "warpgroup_arrive": "waiting at a warpgroup arrive/wait",
    "not_selected": "ready but another warp was picked (enough warps: not a problem)",
    "misc": "miscellaneous hardware reasons",
}
# Not stalls: a warp that issued ("selected") is doing work.
_NOT_STALLS = {"selected"}
_STALL_PER_ISSUE = re.compile(r"smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio")
_STALL_SAMPLES = re.compile(r"smsp__pcsamp_warps_issue_stalled_(\w+)")

# Occupancy limits ncu reports (blocks per SM each resource allows) and how to speak of them.
_LIMITS = {
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared memory",
    "launch__occupancy_limit_warps": "warps per SM (block size)",
    "launch__occupancy_limit_blocks": "blocks per SM",
}


@dataclass(frozen=True)
class Stall:
    reason: str
    value: float  # cycles per issued instruction (or samples when only sampling is there)
    share_pct: float  # of all stall cycles (or samples)
    unit: str = "cycles/inst"

    @property
    def meaning(self) -> str:
        return STALL_MEANING.get(self.reason, "")


@dataclass(frozen=True)
class Rule:
    section: str
    name: str
    kind: str
    text: str
    speedup_pct: float | None = None
    speedup_kind: str = ""


@dataclass(frozen=True)
class ProfileSummary:
    kernel: str
    bound: str
    bound_reason: str
    duration_ns: float | None = None
    compute_pct: float | None = None
    memory_pct: float | None = None
    dram_pct: float | None = None
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    occupancy_achieved_pct: float | None = None
    occupancy_theoretical_pct: float | None = None
    occupancy_limiter: str | None = None
    registers_per_thread: float | None = None
    shared_mem_per_block: float | None = None
    block_size: float | None = None
    grid_size: float | None = None
    waves_per_sm: float | None = None
    sm_count: float | None = None
    sm_active_pct: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    dram_bytes_from_rate: float | None = None  # rate × duration, when read/write bytes were not collected
    task_bytes: float | None = None
    task_flops: float | None = None
    stalls: tuple[Stall, ...] = ()
    rules: tuple[Rule, ...] = ()
    other_kernels: tuple[dict[str, Any], ...] = ()  # other profiled launches: name, duration
    case: str = ""

    @property
    def dram_bytes(self) -> float | None:
        if self.dram_read_bytes is None and self.dram_write_bytes is None:
            return self.dram_bytes_from_rate
        return (self.dram_read_bytes or 0.0) + (self.dram_write_bytes or 0.0)

    @property
    def dram_vs_task(self) -> float | None:
        """DRAM bytes over the task's own ``bytes_moved`` (1.0: no byte moved twice, none spared)."""
        if self.dram_bytes is None or not self.task_bytes:
            return None
        return self.dram_bytes / self.task_bytes

    @property
    def achieved_tflops(self) -> float | None:
        if not self.task_flops or not self.duration_ns:
            return None
        return self.task_flops / self.duration_ns / 1e3

    @property
    def dram_gbps(self) -> float | None:
        if self.dram_bytes is None or not self.duration_ns:
            return None
        return self.dram_bytes / self.duration_ns

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["dram_bytes"] = self.dram_bytes
        data["dram_vs_task"] = self.dram_vs_task
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileSummary:
        names = set(cls.__dataclass_fields__)
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["stalls"] = tuple(Stall(**s) for s in data.get("stalls") or ())
        kwargs["rules"] = tuple(Rule(**r) for r in data.get("rules") or ())
        kwargs["other_kernels"] = tuple(data.get("other_kernels") or ())
        return cls(**kwargs)


def classify(compute_pct: float | None, memory_pct: float | None, grid_size: float | None,
             sm_count: float | None, sm_active_pct: float | None,
             thresholds: Thresholds = THRESHOLDS) -> tuple[str, str]:
    """The bound and one sentence saying why (see the module docstring for the rules)."""
    c = compute_pct or 0.0
    m = memory_pct or 0.0
    busy = thresholds.busy_pct
    if max(c, m) >= busy:
        if m >= c:
            both = f" (compute {c:.0f}% too)" if c >= busy else f", compute {c:.0f}%"
            return "memory", f"memory throughput is {m:.0f}% of peak{both}"
        both = f" (memory {m:.0f}% too)" if m >= busy else f", memory {m:.0f}%"
        return "compute", f"compute throughput is {c:.0f}% of peak{both}"
    idle = []
    if grid_size is not None and sm_count and grid_size < sm_count:
        idle.append(f"{grid_size:.0f} block{'s' if grid_size != 1 else ''} for {sm_count:.0f} SMs")
    if sm_active_pct is not None and sm_active_pct < thresholds.active_sm_pct:
        idle.append(f"SMs active {sm_active_pct:.{0 if sm_active_pct >= 10 else 1}f}% of the time")
    if idle:
        return "under-utilised", (f"compute {c:.0f}% and memory {m:.0f}% of peak; the launch leaves SMs idle ("
                                  + ", ".join(idle) + ")")
    return "latency", (f"compute {c:.0f}% and memory {m:.0f}% of peak although the SMs have work: "
                       "warps spend their time waiting")


def stalls_from(raw: RawKernel, top: int = THRESHOLDS.top_stalls) -> tuple[Stall, ...]:
    """The largest warp stall reasons: per-issue cycles from WarpStateStats, else PC samples."""
    per_issue = {k: v for k, v in raw.matching(_STALL_PER_ISSUE).items() if k not in _NOT_STALLS}
    unit = "cycles/inst"
    values = per_issue
    if not any(per_issue.values()):
        samples = {k: v for k, v in raw.matching(_STALL_SAMPLES).items()
                   if k not in _NOT_STALLS and not k.endswith("_not_issued")}
        values, unit = samples, "samples"
    total = sum(values.values())
    if total <= 0:
        return ()
    ranked = sorted(((k, v) for k, v in values.items() if v > 0), key=lambda kv: -kv[1])[:top]
    return tuple(Stall(reason=k, value=round(v, 3), share_pct=round(100.0 * v / total, 1), unit=unit) for k, v in ranked)


def occupancy_limiter(raw: RawKernel) -> str | None:
    """What caps theoretical occupancy below the SM's maximum: the resource allowing the fewest
    blocks per SM (None when theoretical occupancy is already the maximum)."""
    theoretical = raw.get("sm__maximum_warps_per_active_cycle_pct")
    if theoretical is not None and theoretical >= 100.0:
        return None
    limits = {label: raw.get(metric) for metric, label in _LIMITS.items()}
    known = {k: v for k, v in limits.items() if v is not None}
    if not known:
        return None
    lowest = min(known.values())
    return " and ".join(k for k, v in known.items() if v == lowest) + f" ({lowest:.0f} block{'s' if lowest != 1 else ''}/SM)"


def summarise(raw: RawKernel, details: DetailKernel | None = None, task_bytes: float | None = None,
              task_flops: float | None = None, case: str = "", others: list[RawKernel] | None = None,
              thresholds: Thresholds = THRESHOLDS) -> ProfileSummary:
    compute = raw.get("sm__throughput.avg.pct_of_peak_sustained_elapsed")
    memory = raw.get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    grid = raw.get("launch__grid_size")
    sm_count = raw.get("device__attribute_multiprocessor_count") or raw.get("launch__sm_count")
    active = raw.get("sm__cycles_active.avg")
    elapsed = raw.get("sm__cycles_elapsed.avg") or raw.get("gpc__cycles_elapsed.max")
    sm_active = 100.0 * active / elapsed if active is not None and elapsed else None
    bound, reason = classify(compute, memory, grid, sm_count, sm_active, thresholds)
    stalls = stalls_from(raw, thresholds.top_stalls)
    if bound == "latency" and stalls:
        reason += f" (mostly {stalls[0].reason.replace('_', ' ')}: {stalls[0].meaning})"
    shared = None
    static, dynamic = raw.get("launch__shared_mem_per_block_static"), raw.get("launch__shared_mem_per_block_dynamic")
    if static is not None or dynamic is not None:
        shared = (static or 0.0) + (dynamic or 0.0)
    rules = tuple(_rule(r) for r in (details.rules if details else []))
    duration = raw.get("gpu__time_duration.sum")
    rate = raw.get("dram__bytes.sum.per_second")
    from_rate = rate * duration * 1e-9 if rate is not None and duration else None
    return ProfileSummary(
        kernel=raw.name, bound=bound, bound_reason=reason, case=case,
        duration_ns=duration, dram_bytes_from_rate=from_rate,
        compute_pct=compute, memory_pct=memory,
        dram_pct=raw.get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        l1_hit_pct=raw.get("l1tex__t_sector_hit_rate.pct"), l2_hit_pct=raw.get("lts__t_sector_hit_rate.pct"),
        occupancy_achieved_pct=raw.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
        occupancy_theoretical_pct=raw.get("sm__maximum_warps_per_active_cycle_pct"),
        occupancy_limiter=occupancy_limiter(raw),
        registers_per_thread=raw.get("launch__registers_per_thread"), shared_mem_per_block=shared,
        block_size=raw.get("launch__block_size"), grid_size=grid,
        waves_per_sm=raw.get("launch__waves_per_multiprocessor"), sm_count=sm_count,
        sm_active_pct=round(sm_active, 2) if sm_active is not None else None,
        dram_read_bytes=raw.get("dram__bytes_read.sum"), dram_write_bytes=raw.get("dram__bytes_write.sum"),
        task_bytes=task_bytes, task_flops=task_flops, stalls=stalls, rules=rules,
        other_kernels=tuple({"id": o.id, "name": o.name, "duration_ns": o.get("gpu__time_duration.sum")}
                            for o in (others or [])),
    )


def _rule(r: RuleResult) -> Rule:
    return Rule(section=r.section, name=r.name, kind=r.kind, text=r.text, speedup_pct=r.speedup,
                speedup_kind=r.speedup_kind)


def main_kernel(kernels: list[RawKernel]) -> RawKernel | None:
    """The launch that took longest: what the summary is about when a call launches several."""
    if not kernels:
        return None
    return max(kernels, key=lambda k: k.get("gpu__time_duration.sum") or 0.0)


@dataclass
class ProfileResult:
    """Everything one profile run produced, as the rung and the CLI hand it on."""

    summary: ProfileSummary
    kernels: list[ProfileSummary] = field(default_factory=list)  # every profiled launch, in order

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary.to_dict(), "kernels": [k.to_dict() for k in self.kernels]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileResult:
        return cls(summary=ProfileSummary.from_dict(data["summary"]),
                   kernels=[ProfileSummary.from_dict(k) for k in data.get("kernels") or []])


def summarise_report(raw: list[RawKernel], details: list[DetailKernel], task_bytes: float | None = None,
                     task_flops: float | None = None, case: str = "",
                     thresholds: Thresholds = THRESHOLDS) -> ProfileResult | None:
    """Summaries of every profiled launch; the headline one is the longest launch.

    The task's bytes and FLOPs are for the whole call, so they are compared only when the call
    launched one kernel.
    """
    head = main_kernel(raw)
    if head is None:
        return None
    by_id = {d.id: d for d in details}
    single = len(raw) == 1
    summaries = []
    for k in raw:
        summaries.append(summarise(
            k, by_id.get(k.id), task_bytes if single else None, task_flops if single else None, case,
            others=[o for o in raw if o is not k] if k is head else None, thresholds=thresholds,
        ))
    return ProfileResult(summary=summaries[raw.index(head)], kernels=summaries)
