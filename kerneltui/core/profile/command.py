"""The ncu command lines kerneltui runs: one to profile, and one per page to read a report back.

What the profile collects, and why:

* ``--clock-control none``: keep the GPU's own clocks. ncu otherwise locks them to base, which makes
  its durations disagree with the benchmark rung, and fails where clocks may not be changed.
* ``--nvtx --nvtx-include kerneltui/``: only kernels launched inside the ``kerneltui`` push/pop range,
  which the profiling target opens around the one measured call of the candidate (warm-up calls,
  the reference and input generation stay out). The trailing slash selects push/pop ranges.
* ``--launch-count``: a candidate that launches many kernels per call cannot make a profile run
  for ever; ``--kernel-name`` narrows it further when asked.
* The sections a summary needs (speed of light, memory and compute workload, occupancy, launch
  statistics, warp states, source counters) and a few metrics the summary reads directly, so
  it does not depend on what a section version happens to include.
* ``--import-source yes``: the kernel's source goes into the report so it opens anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

NVTX_RANGE = "kerneltui"
SECTIONS = (
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "ComputeWorkloadAnalysis",
    "Occupancy",
    "LaunchStats",
    "WarpStateStats",
    "SourceCounters",
)
# Read directly by the summary (core/profile/summary.py); asking for them explicitly keeps the
# summary working whatever the installed section files contain.
METRICS = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "device__attribute_multiprocessor_count",
)
DEFAULT_LAUNCH_COUNT = 20
REPORT_NAME = "profile"  # <version dir>/profile.ncu-rep


@dataclass(frozen=True)
class ProfileCommand:
    ncu: Path
    report: Path  # the .ncu-rep to write
    target: list[str]  # the program ncu starts
    launch_count: int = DEFAULT_LAUNCH_COUNT
    kernel_name: str | None = None  # a regex over kernel names (ncu's `regex:` form)
    sections: tuple[str, ...] = SECTIONS
    metrics: tuple[str, ...] = METRICS
    extra: list[str] = field(default_factory=list)

    def argv(self) -> list[str]:
        report = str(self.report)
        if report.endswith(".ncu-rep"):
            report = report[: -len(".ncu-rep")]  # ncu appends the suffix itself
        args = [
            str(self.ncu),
            "--clock-control", "none",
            "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
            "--launch-count", str(self.launch_count),
            "--import-source", "yes",
            "--export", report,
            "--force-overwrite",
        ]
        if self.kernel_name:
            args += ["--kernel-name", f"regex:{self.kernel_name}"]
        for section in self.sections:
            args += ["--section", section]
        if self.metrics:
            args += ["--metrics", ",".join(self.metrics)]
        return [*args, *self.extra, *self.target]


def import_argv(ncu: Path, report: Path, page: str, print_source: str | None = None) -> list[str]:
    """Read one page of a saved report as CSV (``raw``, ``details`` or ``source``).

    Base units (bytes, nanoseconds, cycles) so numbers need no unit parsing; ``source`` takes
    ``print_source`` (``sass``, or ``cuda,sass`` for SASS with its source lines).
    """
    args = [str(ncu), "--import", str(report), "--csv", "--page", page, "--print-units", "base"]
    if page == "details":
        args += ["--print-details", "all"]
    if page == "source":
        args += ["--print-source", print_source or "sass"]
    return args
