"""The benchmark's baselines (the reference, torch.compile of it), cached by what they depend on.

A baseline is the reference's time, measured in the judge, and depends only on the task's files
other than the kernel (reference, task.toml, shared files), the benchmark cases, the device, the
software and the measurement's method (L2 flush, how inputs are made). Those go into the key; the
measurement goes into the task's history store (``<task>/.kerneltui/history.sqlite``), so the second
check of a kernel, from the shell or through the engine, times only the kernel. A baseline cut
short by the benchmark's wall-time bound is not kept: the next run measures it again in full (an
error, torch.compile failing on this reference, is kept: it would fail the same way).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import cast

from kerneltui.core.bench import device_peaks as device
from kerneltui.core.bench.stats import STOP_WALL_BOUND
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.worker.replies import DeviceInfo, SeriesReply
from kerneltui.settings.bench import BenchSettings

METHOD_SETTINGS = ("flush", "fresh_inputs")  # settings that change what a baseline measures


def baseline_key(ctx: RunContext, info: DeviceInfo, target: str, settings: BenchSettings) -> str:
    """What a cached baseline depends on: the reference and task files, the benchmark cases, the
    device, the software that ran it and the measurement's method."""
    task = ctx.task
    files = {name: ctx.files.get(name, "") for name in sorted(ctx.files) if name != task.kernel_file}
    parts = {
        "target": target,
        "files": hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
        "benchmarks": [c.to_dict() for c in task.benchmarks],
        "device": device.device_key(info),
        "torch": info.get("torch"), "triton": info.get("triton"), "cuda": info.get("cuda_runtime"),
        "method": {k: getattr(settings, k) for k in METHOD_SETTINGS},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def cached(ctx: RunContext, key: str) -> tuple[SeriesReply, str] | None:
    """A baseline measured before for the same key, and a note saying when."""
    from kerneltui.core.history import HistoryError, HistoryStore

    try:
        found = HistoryStore.for_task(ctx.task).get_baseline(key)
    except (HistoryError, OSError, ValueError):
        return None
    if found is None:
        return None
    data, when = found
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
    return cast(SeriesReply, data), f"cached from {stamp} (same reference, cases, device and versions)"


def keep(ctx: RunContext, key: str, target: str, raw: SeriesReply) -> str:
    """Store a baseline when it is whole; the note says what happened."""
    from kerneltui.core.history import HistoryError, HistoryStore

    why_not = incomplete(raw)
    if why_not:
        return f"measured now; not cached ({why_not})"
    try:
        HistoryStore.for_task(ctx.task).put_baseline(key, target, raw)
    except (HistoryError, OSError) as exc:
        return f"measured now; not cached ({exc})"
    return "measured now"


def incomplete(raw: SeriesReply) -> str | None:
    """Why a baseline should be measured again next time (None: it is whole)."""
    cases = raw.get("cases") or []
    if not cases:
        return "no cases"
    # A case's error (torch.compile failing on this reference) is kept: it would fail again.
    if any(case.get("stopped") == STOP_WALL_BOUND for case in cases):
        return "cut short by the wall-time bound"
    return None
