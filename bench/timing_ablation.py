"""Where kerneltui's benchmark median differs from ``triton.testing.do_bench``'s, and why.

One process, one kernel, one benchmark case: the same function timed under the benchmark
protocol (``kerneltui.core.worker.child.timing.CallTimer``: device sync, persisting-L2 reset, L2 flush, CUDA
events) with one part changed at a time, next to do_bench:

* ``do_bench``            triton.testing.do_bench(return_mode="median"), same inputs every call
* ``same inputs``         the protocol on one input set (what do_bench and ncu time)
* ``same inputs + trap``  plus the NaN lattice armed and restored during the flush
* ``N fresh sets``        the protocol rotating over N input sets (new addresses every call, as the
                          benchmark's input pool does), without the trap
* ``N fresh sets + trap`` both
* ``... + pad``           with the spin kernel that keeps the stream busy until the host has
                          launched the call: the benchmark's own protocol, minus the recheck

Rows without "pad" leave the GPU waiting for the host's launch after the start event, as the
protocol did before the pad; they show how much of a gap that was.

Usage (GPU machine, repository root):
    python bench/timing_ablation.py [--example softmax] [--sets 16] [--calls 300] [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import statistics
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_example(name: str) -> tuple[Any, Any, dict[str, Any]]:
    task_dir = ROOT / "kerneltui" / "examples" / name
    sys.path.insert(0, str(task_dir))
    modules = []
    for file in ("reference", "kernel"):
        spec = importlib.util.spec_from_file_location(f"ablation_{file}", task_dir / f"{file}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    case = tomllib.loads((task_dir / "task.toml").read_text())["benchmarks"][0]
    return modules[0], modules[1], {k: v for k, v in case.items() if k != "seed"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="softmax")
    parser.add_argument("--sets", type=int, default=16)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    args = parser.parse_args()

    import torch
    import triton.testing

    if not torch.cuda.is_available():
        print("timing_ablation: no CUDA GPU here; nothing to measure", file=sys.stderr)
        return 2
    from kerneltui.core.worker.child.timing import CallTimer, InputTrap, L2Flusher, PersistingL2

    ref, ker, params = load_example(args.example)
    if "device" in inspect.signature(ref.generate_input).parameters:
        params["device"] = "cuda"

    def inputs(seed: int) -> tuple[Any, ...]:
        made = ref.generate_input(seed=seed, **params)
        return made if isinstance(made, tuple) else (made,)

    def call(item: tuple[Any, ...]) -> Any:
        return ker.custom_kernel(*item)

    props = torch.cuda.get_device_properties(0)
    flusher = L2Flusher(torch, int(getattr(props, "L2_cache_size", 0)))
    persisting = PersistingL2()
    trap = InputTrap(_Tensors(torch))
    one = inputs(1)
    sets = [inputs(100 + i) for i in range(args.sets)]
    for item in [one, *sets]:
        call(item)  # compile and warm every specialisation
    torch.cuda.synchronize()

    def protocol(pool: list[tuple[Any, ...]], with_trap: bool, pad: bool) -> list[float]:
        timer = CallTimer(torch, flusher, persisting, trap if with_trap else None, pad=pad)
        times = []
        for i in range(args.calls + 10):
            _, sample = timer.call(call, pool[i % len(pool)])
            if i >= 10:
                times.append(sample.ms)
        return times

    rows: list[tuple[str, float, float]] = []
    started = time.time()
    db = [triton.testing.do_bench(lambda: call(one), warmup=100, rep=500, return_mode="median") for _ in range(3)]
    rows.append(("do_bench", statistics.median(db), (max(db) - min(db)) / statistics.median(db)))
    fresh = f"{args.sets} fresh sets"
    for label, pool, with_trap, pad in (("same inputs", [one], False, False), ("same inputs + trap", [one], True, False),
                                        (fresh, sets, False, False), (f"{fresh} + trap", sets, True, False),
                                        ("same inputs + pad", [one], False, True),
                                        (f"{fresh} + trap + pad", sets, True, True)):
        times = protocol(pool, with_trap, pad)
        q1, _, q3 = statistics.quantiles(times, n=4)
        med = statistics.median(times)
        rows.append((label, med, (q3 - q1) / med))
        print(f"{label:>22}: median {med * 1e3:.1f} µs  IQR {100 * (q3 - q1) / med:.1f}%", flush=True)
    base = rows[0][1]
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} · timing_ablation · {props.name} · "
             f"torch {torch.__version__} · triton {triton.__version__}", "",
             f"Command: `python bench/timing_ablation.py {' '.join(sys.argv[1:])}`; example {args.example} "
             f"({' '.join(f'{k}={v}' for k, v in params.items() if k != 'device')}), {args.calls} timed calls per row, "
             f"L2 flush {flusher.nbytes >> 20} MiB.", "",
             "| protocol | median | vs do_bench | spread (IQR / median; do_bench: range of 3) |", "|---|---|---|---|"]
    for label, med, spread in rows:
        lines.append(f"| {label} | {med * 1e3:.1f} µs | {100 * (med - base) / base:+.1f}% | {100 * spread:.1f}% |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.results, "a") as fh:
        fh.write("\n" + text)
    return 0


class _Tensors:
    """The one TaskRuntime method InputTrap uses: the tensors in an input tuple."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def tensors(self, inputs: Any) -> list[tuple[str, Any]]:
        return [(str(i), t) for i, t in enumerate(inputs) if isinstance(t, self.torch.Tensor)]


if __name__ == "__main__":
    sys.exit(main())
