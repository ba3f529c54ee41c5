"""``kerneltui device``: this machine's GPU and its measured peaks (what the roofline rung uses), and
whether its workers run in the full sandbox (``kerneltui doctor`` has the details)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, print_json
from kerneltui.core.worker.contract.replies import DeviceInfo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("device", help="show the GPU and its measured peaks (memory bandwidth, matmul rates)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--remeasure", action="store_true", help="measure the peaks again even if they are cached")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    return asyncio.run(_main(args))


async def _main(args: argparse.Namespace) -> int:
    from kerneltui.core.bench import device_peaks as device
    from kerneltui.core.loop_factory import PoolKind, new_pool
    from kerneltui.core.sandbox.policy import sandbox_note
    from kerneltui.core.worker.parent.process import WorkerFailure

    pool = new_pool(PoolKind.ONE_RUN, "torch")
    try:
        worker = await pool.acquire()
        info = worker.info.copy()
        box = worker.sandbox.to_dict() if worker.sandbox else None
        box_line = "sandbox: " + (sandbox_note(worker.sandbox) or "on (kerneltui doctor shows each part)")
        if not info.get("gpu"):
            message = (f"no GPU: torch {info.get('torch')} sees no CUDA device on {info.get('host')}. The benchmark "
                       "and roofline rungs are skipped here; the checks still run (Triton under its interpreter).")
            if args.json:
                print_json({"gpu": False, "message": message, "device": info, "sandbox": box})
            else:
                print(message)
                print(box_line)
            return EXIT_OK
        peaks = None if args.remeasure else device.load_cached(info)
        source = f"cached in {device.peaks_path(info)}"
        if peaks is None:
            if not args.json:
                print(f"measuring the peaks of {info.get('name')} (once per device; takes a few seconds)…",
                      file=sys.stderr, flush=True)
            raw = await worker.request("device_peaks", {}, timeout=300.0)
            peaks = device.from_measurement(info, raw)
            try:
                source = f"measured now in {raw.get('seconds', 0):.1f} s, cached in {device.save(peaks)}"
            except OSError as exc:
                source = f"measured now; not cached ({exc.strerror})"
    except WorkerFailure as exc:
        print(f"kerneltui device: {exc.message}", file=sys.stderr)
        if exc.stderr:
            print(exc.stderr, file=sys.stderr)
        return EXIT_FAIL
    finally:
        await pool.close()
    if args.json:
        print_json({"gpu": True, "device": info, "peaks": peaks.to_dict(), "source": source, "sandbox": box})
        return EXIT_OK
    for line in describe(info, peaks.to_dict(), source):
        print(line)
    print(box_line)
    return EXIT_OK


def describe(info: DeviceInfo, peaks: dict[str, Any], source: str) -> list[str]:
    """The text ``kerneltui device`` prints (a pure function of the device facts and the peaks)."""
    from kerneltui.core.bench.device_peaks import MATMUL_DTYPES, MATMUL_TITLES

    gib = (info.get("memory_bytes") or 0) / 2**30
    l2 = (peaks.get("l2_bytes") or info.get("l2_bytes") or 0) / 2**20
    lines = [
        f"{info.get('name')} · {info.get('arch')} · {peaks.get('sm_count') or info.get('sm_count')} SMs · "
        f"{gib:.1f} GiB · L2 {l2:.1f} MiB",
        f"driver {info.get('driver') or '?'} · max clocks SM {info.get('sm_clock_max_mhz') or '?'} MHz, memory "
        f"{info.get('mem_clock_max_mhz') or '?'} MHz · torch {info.get('torch')} (CUDA {info.get('cuda_runtime')}) · "
        f"triton {info.get('triton')}",
        f"peaks measured {time.strftime('%Y-%m-%d %H:%M', time.localtime(peaks.get('measured_at') or 0))} ({source})",
    ]
    methods = peaks.get("methods") or {}
    for key, title in (("copy_gbps", "memory copy"), ("read_gbps", "memory read"), ("write_gbps", "memory write")):
        if peaks.get(key):
            lines.append(f"  {title:<30} {peaks[key]:>9.0f} GB/s      {methods.get(key, '')}")
    rates = peaks.get("matmul_tflops") or {}
    unsupported = peaks.get("unsupported") or {}
    for name in MATMUL_DTYPES:
        if rates.get(name):
            lines.append(f"  {MATMUL_TITLES[name]:<30} {rates[name]:>9.1f} TFLOP/s  {methods.get(f'matmul_{name}', '')}")
        elif name in unsupported:
            lines.append(f"  {MATMUL_TITLES[name]:<30} {'—':>9}          not measured: {unsupported[name]}")
    if rates.get("bf16") and peaks.get("copy_gbps"):
        ridge = rates["bf16"] * 1e12 / (peaks["copy_gbps"] * 1e9)
        lines.append(f"ridge point (bf16 matmul / copy bandwidth): {ridge:.0f} FLOP per byte")
    return lines
