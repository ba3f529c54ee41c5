"""Which L2 flush makes kerneltui's times agree with ``ncu --cache-control all``.

ncu invalidates L2 before each profiled launch: the kernel starts with no line of its data cached
and nothing dirty to write back. A flush that *writes* a buffer of twice the L2 (kerneltui's and
do_bench's) leaves L2 full of dirty lines, and the timed kernel pays their write-back when it
evicts them. Each variant below is timed on the same kernel, inputs and events; the table gives
each median next to ncu's and do_bench's:

* ``warm``          no flush at all (the kernel's own data may still be in L2)
* ``write``         ``buf.zero_()`` over 2× L2 (what kerneltui does today)
* ``write+read``    the write flush, then a read of a second, clean 2× L2 buffer (L2 left clean)
* ``read``          only the read of the clean buffer (dirty lines of the previous call are written
                    back during the flush, not the timed call)

Each variant: a spin kernel keeps the stream busy while the host launches (as the benchmark does),
CUDA events around the call, 200 calls after 20 warm-ups, median and IQR.

Usage (GPU): python bench/l2_flush_study.py [--examples vector_add,softmax,matmul] [--calls 200]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def load_example(name: str) -> tuple[Any, Any, dict[str, Any]]:
    task_dir = ROOT / "kerneltui" / "examples" / name
    sys.path.insert(0, str(task_dir))
    mods = []
    for file in ("reference", "kernel"):
        spec = importlib.util.spec_from_file_location(f"flush_{name}_{file}", task_dir / f"{file}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        mods.append(module)
    case = tomllib.loads((task_dir / "task.toml").read_text())["benchmarks"][0]
    params = {k: v for k, v in case.items() if k != "seed"}
    if "device" in inspect.signature(mods[0].generate_input).parameters:
        params["device"] = "cuda"
    return mods[0], mods[1], params


def inputs_for(ref: Any, params: dict[str, Any], seed: int) -> tuple[Any, ...]:
    made = ref.generate_input(seed=seed, **params)
    made = made if isinstance(made, tuple) else (made,)
    return tuple(x.cuda() if hasattr(x, "cuda") else x for x in made)


def driver(name: str, launches: int) -> int:
    """Under ncu: call the kernel ``launches`` times on one input set."""
    import torch

    ref, ker, params = load_example(name)
    item = inputs_for(ref, params, 1)
    for _ in range(launches):
        ker.custom_kernel(*item)
    torch.cuda.synchronize()
    return 0


def study(name: str, calls: int) -> dict[str, Any]:
    import torch
    import triton.testing

    ref, ker, params = load_example(name)
    item = inputs_for(ref, params, 1)
    out = ker.custom_kernel(*item)
    expect = ref.ref_kernel(*item)
    torch.cuda.synchronize()
    err = float((out.double() - expect.double()).norm() / expect.double().norm())
    assert err < 3e-2, f"{name}: wrong output (rel L2 {err:.3g})"
    from kerneltui.core.worker.child.timing import L2Flusher

    l2 = int(torch.cuda.get_device_properties(0).L2_cache_size)
    # The harness's own flusher in each of its modes: what is measured is what the benchmark runs.
    flushers = {mode: L2Flusher(torch, l2, mode) for mode in ("write", "write_read", "read")}
    variants = {
        "warm": lambda: None,
        "write": flushers["write"].flush,
        "write+read": flushers["write_read"].flush,
        "read": flushers["read"].flush,
    }
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # spin-kernel rate, as the benchmark's pad measures it
    torch.cuda._sleep(1 << 20)
    torch.cuda.synchronize()
    start.record()
    torch.cuda._sleep(1 << 20)
    end.record()
    end.synchronize()
    cycles_per_ms = (1 << 20) / start.elapsed_time(end)
    stream = torch.cuda.current_stream()
    result: dict[str, Any] = {"example": name, "params": {k: v for k, v in params.items() if k != "device"}}
    for label, flush in variants.items():
        times = []
        for i in range(calls + 20):
            torch.cuda.synchronize()
            flush()
            torch.cuda._sleep(int(cycles_per_ms * 0.05))  # 50 µs: the host has launched by then
            start.record(stream)
            ker.custom_kernel(*item)
            end.record(stream)
            end.synchronize()
            if i >= 20:
                times.append(start.elapsed_time(end))
        q1, _, q3 = statistics.quantiles(times, n=4)
        result[label] = {"median_ms": statistics.median(times), "iqr_ms": q3 - q1}
        print(f"  {name} {label:>10}: {statistics.median(times) * 1e3:8.1f} µs  IQR {(q3 - q1) * 1e3:.1f} µs", flush=True)
    db = [triton.testing.do_bench(lambda: ker.custom_kernel(*item), warmup=50, rep=300, return_mode="median")
          for _ in range(3)]
    result["do_bench"] = {"median_ms": statistics.median(db)}
    return result


def ncu_median(name: str) -> float | None:
    from bench_timing import find_ncu, parse_ncu_csv

    exe = find_ncu()
    if exe is None:
        return None
    cmd = [exe, "--clock-control", "none", "--cache-control", "all", "--metrics", "gpu__time_duration.sum", "--csv",
           "--print-units", "base", "--launch-skip", "3", "--launch-count", "15",
           sys.executable, __file__, "--driver", name]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    values = parse_ncu_csv(proc.stdout)
    if not values:
        print(f"  ncu failed: {(proc.stdout + proc.stderr)[-400:]}")
        return None
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", default="vector_add,softmax,matmul")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--driver", default=None)
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    args = parser.parse_args()
    if args.driver:
        return driver(args.driver, 20)
    import torch
    import triton

    rows = []
    for name in args.examples.split(","):
        res = study(name, args.calls)
        res["ncu"] = ncu_median(name)
        rows.append(res)
    props = torch.cuda.get_device_properties(0)
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · l2_flush_study · {props.name} · "
             f"torch {torch.__version__} · triton {triton.__version__}", "",
             f"Command: `python bench/l2_flush_study.py {' '.join(sys.argv[1:])}`; {args.calls} timed calls per "
             "variant (median); ncu: `--cache-control all --clock-control none`, median of 15 launches.", "",
             "| example | warm | write | write+read | read | do_bench | ncu | write vs ncu | write+read vs ncu | read vs ncu |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        nc = r["ncu"]

        def us(ms: float | None) -> str:
            return f"{ms * 1e3:.1f} µs" if ms else "—"

        def rel(label: str, ncu_ms: float | None = nc, res: dict[str, Any] = r) -> str:
            return f"{100 * (res[label]['median_ms'] - ncu_ms) / ncu_ms:+.1f}%" if ncu_ms else "—"

        lines.append(f"| {r['example']} | {us(r['warm']['median_ms'])} | {us(r['write']['median_ms'])} | "
                     f"{us(r['write+read']['median_ms'])} | {us(r['read']['median_ms'])} | "
                     f"{us(r['do_bench']['median_ms'])} | {us(nc)} | {rel('write')} | {rel('write+read')} | {rel('read')} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.results, "a") as fh:
        fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
