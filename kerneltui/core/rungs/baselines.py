"""The benchmark's baselines (the reference, torch.compile of it), kept by what they depend on.

A baseline is the reference's time, measured in the judge, and depends only on the task's files
other than the kernel (reference, task.toml, shared files), the benchmark cases, the device (its
name, driver, clocks and size: ``device_peaks.device_key``), the software that ran it (kerneltui,
torch, Triton, the CUDA runtime) and the settings that shape a series (the L2 flush, how inputs are
made, warm-up, the stopping rule, the input pool). Those go into the key; the measurement, with its
own side-work calibration (the idle and busy gaps of the series), goes into the task's history
store (``<task>/.kerneltui/history.sqlite``), so the second check of a kernel, from the shell or
through the engine, times only the kernel. A baseline cut short by the benchmark's wall-time bound
is not kept: the next run measures it again in full (an error, torch.compile failing on this
reference, is kept: it would fail the same way).

Only the parent reads and writes the keep; no worker can (the box's filesystem part grants writes to
the scratch folder, the compile caches and ``/dev/shm`` alone, ``docs/sandbox.md``). A run whose
workers have no filesystem box could write the task folder, so such a run neither reads nor writes
the keep: it measures the baselines now and says why.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import cast

from kerneltui import __version__
from kerneltui.core.bench import device_peaks as device
from kerneltui.core.bench.stats import STOP_WALL_BOUND
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.rung_metrics import BaselineProvenance
from kerneltui.core.sandbox.policy import SandboxState
from kerneltui.core.worker.contract.replies import DeviceInfo, SeriesReply
from kerneltui.settings.bench import BenchSettings

# The settings that change what a baseline's series measures or how long it runs.
METHOD_SETTINGS = ("flush", "fresh_inputs", "warmup_runs", "warmup_ms", "min_runs", "min_kernel_ms", "rel_stderr",
                   "max_seconds", "max_runs", "pool_fraction", "max_pool")


@dataclass(frozen=True)
class Provenance:
    """Where a baseline of this run came from: measured now, or kept from an earlier run (and when)."""

    kept_at: float | None = None  # seconds since the epoch when the kept series was measured
    note: str = "measured now"  # what a person reads: why it was (not) kept, or what the keep matched

    @property
    def kept(self) -> bool:
        return self.kept_at is not None

    @property
    def label(self) -> str:
        """"kept from HH:MM" (with the date when it is not today's) or "" for a baseline measured now."""
        if self.kept_at is None:
            return ""
        when = time.localtime(self.kept_at)
        same_day = time.strftime("%Y-%m-%d", when) == time.strftime("%Y-%m-%d")
        return f"kept from {time.strftime('%H:%M' if same_day else '%Y-%m-%d %H:%M', when)}"

    def describe(self) -> str:
        return f"{self.label} ({self.note})" if self.kept else self.note

    def to_dict(self) -> BaselineProvenance:
        """The JSON form in the rung's metrics (``baselines``)."""
        stamp = (time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.kept_at))
                 if self.kept_at is not None else None)
        return {"kept": self.kept, "kept_at": stamp, "note": self.describe()}


def baseline_key(ctx: RunContext, info: DeviceInfo, target: str, settings: BenchSettings) -> str:
    """What a kept baseline depends on: the reference and task files, the benchmark cases, the
    device, the software that ran it and the measurement's method."""
    task = ctx.task
    files = {name: ctx.files.get(name, "") for name in sorted(ctx.files) if name != task.kernel_file}
    parts = {
        "target": target,
        "files": hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
        "benchmarks": [c.to_dict() for c in task.benchmarks],
        "device": device.device_key(info),
        "driver": info.get("driver"),
        "kerneltui": __version__,
        "torch": info.get("torch"), "triton": info.get("triton"), "cuda": info.get("cuda_runtime"),
        "method": {k: getattr(settings, k) for k in METHOD_SETTINGS},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def unkeepable(sandbox: SandboxState | None) -> str | None:
    """Why this run may not use the keep (None: it may): a worker of this machine without the
    filesystem box could have written the task's history store. The run's workers share one runner
    and one box policy, so the judge's box stands for the candidate's."""
    if sandbox is None or sandbox.where != "this machine":
        return None  # a worker on another host (SSH) cannot reach this machine's task folder
    if not sandbox.enabled:
        return "not kept: the sandbox is off, so a kernel could write the task folder"
    part = sandbox.part("filesystem")
    if part is not None and not part.on:
        return "not kept: the sandbox's filesystem part is off, so a kernel could write the task folder"
    return None


def cached(ctx: RunContext, key: str) -> tuple[SeriesReply, Provenance] | None:
    """A baseline measured before for the same key, and when."""
    from kerneltui.core.history import HistoryError, HistoryStore

    try:
        found = HistoryStore.for_task(ctx.task).get_baseline(key)
    except (HistoryError, OSError, ValueError):
        return None
    if found is None:
        return None
    data, when = found
    return cast(SeriesReply, data), Provenance(kept_at=when, note="same reference, cases, device, settings and versions")


def keep(ctx: RunContext, key: str, target: str, raw: SeriesReply) -> Provenance:
    """Store a baseline when it is whole; the provenance says what happened."""
    from kerneltui.core.history import HistoryError, HistoryStore

    why_not = incomplete(raw)
    if why_not:
        return Provenance(note=f"measured now; not kept ({why_not})")
    try:
        HistoryStore.for_task(ctx.task).put_baseline(key, target, raw)
    except (HistoryError, OSError) as exc:
        return Provenance(note=f"measured now; not kept ({exc})")
    return Provenance()


def incomplete(raw: SeriesReply) -> str | None:
    """Why a baseline should be measured again next time (None: it is whole)."""
    cases = raw.get("cases") or []
    if not cases:
        return "no cases"
    # A case's error (torch.compile failing on this reference) is kept: it would fail again.
    if any(case.get("stopped") == STOP_WALL_BOUND for case in cases):
        return "cut short by the wall-time bound"
    return None
