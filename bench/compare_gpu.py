"""Does ``kerneltui compare`` tell the truth? Issue 52's "done when", on a GPU, in one script.

Per example (vector_add, softmax, matmul; their first ``[[benchmarks]]`` case):

* **same**: two copies of the kernel (the same text loaded twice), compared N times: how often
  "no difference" (the target: at least 38 of 40).
* **2 % slower**: the kernel against a variant made about 2 % slower on purpose, N times: how often
  "slower" (target: at least 38 of 40).
* **ladder**: variants about 0.5 / 1 / 2 / 4 % slower, 20 comparisons each within a 10 s cap; the
  smallest difference found slower in at least 19 of 20 (target: ≤ 1 % on vector_add).
* **under load**: the 2 % variant and the two copies, a few times each, while another process
  keeps the GPU busy with matrix products: does compare still tell the truth (or say it cannot)?

A variant is the kernel followed by a one-program Triton spin loop (``SPIN``): its time adds the
launch gap and the loop; the loop's length per target difference is calibrated in this process
first (the base kernel and the variant timed in ABBA/BAAB blocks with kerneltui's ``CallTimer``), and the
difference actually measured is reported beside the nominal one. Every comparison is kerneltui's
own (``core.compare_run.loaded_pair``: both kernels in one worker, the judge rechecking every output,
the stopping rule of ``core.bench.compare``); a pair is loaded once and compared N times, each
comparison with fresh inputs and its own warm-up and stopping rule.

Usage (GPU machine, repository root; torch, triton, numpy and kerneltui only):
    PYTHONPATH=. python3 bench/compare_gpu.py --out OUT_DIR            # about 8 minutes on an H100
    PYTHONPATH=. python3 bench/compare_gpu.py --out OUT_DIR --quick    # about 1 minute
It prints a table and writes OUT_DIR/compare_gpu.json. ``--budget-s`` bounds the whole run: each
example gets its share (same pair 30 %, 2 % pair 20 %, ladder 40 %, under load 10 %) and an
experiment that would overrun its share runs fewer comparisons (the JSON and the table say how many
ran). Every pair costs a judge and a worker start (seconds); for the full counts of one example in
one call, give it the whole budget: ``--examples vector_add --budget-s 560``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kerneltui.core.bench import compare  # noqa: E402

EXAMPLES = ("vector_add", "softmax", "matmul")
LEVELS = (0.005, 0.01, 0.02, 0.04)  # the ladder's nominal slowdowns
SLOWER = 0.02  # the "2 % slower" experiment

# Appended to a kernel's text: the same custom_kernel, then a spin loop of SPIN_ITERS steps on one
# program, writing a scratch value (never an output). torch.empty launches nothing on the GPU.
SPIN = '''

# ---- bench/compare_gpu.py: this variant is slower on purpose ----
_KERNELTUI_SPIN_ITERS = {iters}


@triton.jit
def _kerneltui_spin(scratch_ptr, n_iter):
    acc = tl.program_id(0).to(tl.float32)
    for _ in range(n_iter):
        acc = acc * 0.99990 + 0.00013
    tl.store(scratch_ptr, acc)


_kerneltui_unslowed = custom_kernel


def custom_kernel(*args):
    out = _kerneltui_unslowed(*args)
    scratch = torch.empty(1, device=args[0].device, dtype=torch.float32)
    _kerneltui_spin[(1,)](scratch, _KERNELTUI_SPIN_ITERS)
    return out
'''

# Keeps the GPU busy from another process (the "under load" experiment); it ends itself after the
# seconds given, so a killed bench run leaves nothing behind for long.
LOAD = '''
import sys, time, torch
end = time.time() + float(sys.argv[1])
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
while time.time() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
    time.sleep(0.002)
'''


def slower_variant(source: str, iters: int) -> str:
    """The kernel's text with the spin loop appended (``iters`` steps per call; 0: only its launch)."""
    if "def custom_kernel" not in source:
        raise ValueError("the kernel defines no custom_kernel()")
    for name in ("torch", "triton", "triton.language as tl"):
        if f"import {name}" not in source:
            source = f"import {name}\n" + source
    return source + SPIN.format(iters=int(iters))


@dataclass(frozen=True)
class Calibration:
    """Measured in this process: the base kernel's time, the variant's slowdown with 0 and K steps."""

    base_us: float
    gap: float  # slowdown with 0 steps (the second launch alone)
    steps: int  # K
    at_steps: float  # slowdown with K steps

    def iters_for(self, level: float) -> int:
        """Steps that make the variant ``level`` slower (0 where the launch alone already is)."""
        per_step = (self.at_steps - self.gap) / self.steps if self.steps else 0.0
        if per_step <= 0 or level <= self.gap:
            return 0
        return max(0, round((level - self.gap) / per_step))

    def expected(self, iters: int) -> float:
        return self.gap + (self.at_steps - self.gap) * iters / self.steps if self.steps else self.gap


@dataclass
class Experiment:
    """N comparisons of one pair: how many said what."""

    name: str
    nominal: float | None  # the slowdown built in (None: two copies)
    expected: float | None  # the calibration's estimate of it
    wanted: str  # the verdict that is right: "same" or "slower"
    verdicts: list[str] = field(default_factory=list)
    changes: list[float | None] = field(default_factory=list)
    calls_each: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def right(self) -> int:
        return sum(v == self.wanted for v in self.verdicts)

    def pooled_change(self) -> float | None:
        values = [c for c in self.changes if c is not None]
        return math.expm1(sum(math.log1p(c) for c in values) / len(values)) if values else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "right": self.right, "ran": len(self.verdicts), "pooled_change": self.pooled_change()}


def smallest_detected(ladder: list[Experiment], need: float = 19 / 20) -> float | None:
    """The smallest nominal slowdown found slower in at least ``need`` of its comparisons."""
    found = [e.nominal for e in ladder
             if e.nominal is not None and e.verdicts and e.right / len(e.verdicts) >= need]
    return min(found) if found else None


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """The summary table, from the JSON's per-example results (a pure function of them)."""
    lines = ["| example | base | same: no difference | 2 % slower: found slower | smallest found (≥ 95 %) "
             "| under load |", "|---|---|---|---|---|---|"]
    for name, r in results.items():
        if r.get("error"):
            lines.append(f"| {name} | — | {r['error']} | | | |")
            continue
        same, slow = r["same"], r["slower"]
        smallest = r.get("smallest_detected")
        ladder = ", ".join(f"{e['nominal'] * 100:g} %: {e['right']}/{e['ran']}" for e in r["ladder"])
        load = "; ".join(f"{e['name']}: {', '.join(e['verdicts']) or e.get('error') or '—'}" for e in r["load"])
        lines.append(
            f"| {name} | {r['calibration']['base_us']:.1f} µs | {same['right']}/{same['ran']} | "
            f"{slow['right']}/{slow['ran']} (measured {_pct(slow['pooled_change'])}) | "
            f"{_pct(smallest) if smallest is not None else 'none'} ({ladder}) | {load} |")
    return lines


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:+.2f} %"


# ----------------------------------------------------------------------------------------------
# the GPU side
# ----------------------------------------------------------------------------------------------


def _module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calibrate(task_dir: Path, params: dict[str, Any], blocks: int = 150) -> Calibration:
    """The base kernel and the spin variant in ABBA/BAAB blocks, timed in this process with kerneltui's
    CallTimer (flush, persisting-L2 reset, events); the steps K make the spin about 5 % of the call."""
    import torch

    from kerneltui.core.worker.child.timing import CallTimer, L2Flusher, PersistingL2

    sys.path.insert(0, str(task_dir))
    ref = _module(task_dir / "reference.py", "cmp_bench_reference")
    base = _module(task_dir / "kernel.py", "cmp_bench_kernel")
    (task_dir / "cmp_bench_variant.py").write_text(slower_variant((task_dir / "kernel.py").read_text(), 0))
    variant = _module(task_dir / "cmp_bench_variant.py", "cmp_bench_variant")
    sets = []
    for seed in range(8):
        made = ref.generate_input(seed=seed + 1, **params)
        sets.append(made if isinstance(made, tuple) else (made,))
    props = torch.cuda.get_device_properties(0)
    timer = CallTimer(torch, L2Flusher(torch, int(getattr(props, "L2_cache_size", 0)), "read"), PersistingL2())

    def ratio(iters: int) -> tuple[float, float]:
        variant._KERNELTUI_SPIN_ITERS = iters
        fns = {"a": lambda x: base.custom_kernel(*x), "b": lambda x: variant.custom_kernel(*x)}
        order = compare.BlockOrder(iters)
        for i in range(16):  # compile and warm both
            timer.call(fns[order.kernel(i)], sets[i % len(sets)])
        kernels, times = [], []
        for i in range(16, 16 + blocks * compare.BLOCK_CALLS):
            k = order.kernel(i)
            _, sample = timer.call(fns[k], sets[i % len(sets)])
            kernels.append(k)
            times.append(sample.ms)
        a_times = sorted(t for t, k in zip(times, kernels, strict=True) if k == "a")
        interval = compare.trimmed_interval(compare.blocks_from_calls(kernels, times))
        assert interval is not None
        return math.expm1(interval.estimate), a_times[len(a_times) // 2] * 1e3

    gap, base_us = ratio(0)
    # The spin loop's rate: a first guess of a step (~2.5 ns) sets K near 5 % of the call; once more
    # with K rescaled when the loop's share came out far from that.
    steps = max(64, int(0.05 * base_us / 0.0025))
    at_steps, _ = ratio(steps)
    share = at_steps - gap
    if not 0.02 <= share <= 0.10:
        steps = max(64, int(steps * min(50.0, 0.05 / max(share, 1e-3))))
        at_steps, _ = ratio(steps)
    sets.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    sys.path.remove(str(task_dir))
    for name in ("cmp_bench_reference", "cmp_bench_kernel", "cmp_bench_variant"):
        sys.modules.pop(name, None)
    return Calibration(base_us, gap, steps, at_steps)


async def run_pair(task: Any, a_text: str, b_text: str, experiments: list[tuple[Experiment, int]],
                   max_seconds: float, deadline: float, target_of: Any, level: float = compare.LEVEL) -> None:
    """Load A and B once; run each experiment's comparisons (``count`` of them) until the deadline."""
    from kerneltui.core.compare_run import CompareError, KernelVersion, loaded_pair
    from kerneltui.core.rungs.compare_series import CompareSettings
    from kerneltui.core.worker.parent.pool import WorkerPool

    pool = WorkerPool(task.backend, arch=task.arch, replenish=False)
    try:
        async with loaded_pair(task, pool, KernelVersion("A", a_text), KernelVersion("B", b_text)) as pair:
            took: list[float] = []  # each comparison's whole time (inputs, warm-up, timed calls)
            for experiment, count in experiments:
                settings = CompareSettings(target=target_of(experiment), max_seconds=max_seconds, level=level)
                for _ in range(count):
                    if took and time.time() + max(took[-5:]) > deadline:
                        experiment.error = experiment.error or "stopped early: the time budget ran out"
                        break
                    t0 = time.time()
                    found, _ = await pair.compare_on(0, settings)
                    took.append(time.time() - t0)
                    experiment.verdicts.append(found.verdict.direction)
                    experiment.changes.append(found.verdict.change)
                    experiment.calls_each.append(found.calls_each)
                    experiment.seconds.append(round(found.wall_s, 3))
    except CompareError as exc:
        for experiment, _ in experiments:
            experiment.error = exc.message
    finally:
        await pool.close()


def run_example(name: str, quick: bool, budget_s: float, level: float = compare.LEVEL) -> dict[str, Any]:
    from kerneltui.core.task_loaders.load import load_task

    began = time.time()
    deadline = began + budget_s
    work = Path(tempfile.mkdtemp(prefix=f"compare_gpu_{name}_"))
    task_dir = Path(shutil.copytree(ROOT / "kerneltui" / "examples" / name, work / name))
    case = tomllib.loads((task_dir / "task.toml").read_text())["benchmarks"][0]
    params = {k: v for k, v in case.items() if k != "seed"}
    out: dict[str, Any] = {"params": params}
    try:
        cal = calibrate(task_dir, params, blocks=60 if quick else 150)
    except Exception as exc:  # a broken example or GPU: said in the table, the next example still runs
        return {**out, "error": f"calibration failed: {type(exc).__name__}: {exc}"}
    out["calibration"] = asdict(cal)
    task = load_task(str(task_dir))
    text = (task_dir / "kernel.py").read_text()
    n_main, n_ladder, cap = (8, 5, 3.0) if quick else (40, 20, 10.0)

    same = Experiment("same", None, None, "same")
    slower = Experiment("2 % slower", SLOWER, cal.expected(cal.iters_for(SLOWER)), "slower")
    ladder = [Experiment(f"{level * 100:g} % slower", level, cal.expected(cal.iters_for(level)), "slower")
              for level in (LEVELS[1:3] if quick else LEVELS)]
    default_target = lambda e: compare.DEFAULT_TARGET  # noqa: E731
    # The ladder asks for an interval a third as wide as the difference it looks for (the 10 s cap
    # still bounds it): the default ±0.5 % could not tell 0.5 % from nothing.
    ladder_target = lambda e: max(e.nominal / 3, 0.0005) if e.nominal else compare.DEFAULT_TARGET  # noqa: E731
    # Share the example's time: the same pair, then the 2 % pair, then each ladder rung.
    asyncio.run(run_pair(task, text, text, [(same, n_main)], cap, began + budget_s * 0.3, default_target, level))
    asyncio.run(run_pair(task, text, slower_variant(text, cal.iters_for(SLOWER)), [(slower, n_main)], cap,
                         began + budget_s * 0.5, default_target, level))
    for i, experiment in enumerate(ladder):
        stop = began + budget_s * (0.5 + 0.4 * (i + 1) / len(ladder))
        asyncio.run(run_pair(task, text, slower_variant(text, cal.iters_for(experiment.nominal or 0)),
                             [(experiment, n_ladder)], cap, stop, ladder_target, level))
    load = [Experiment("2 % slower, loaded", SLOWER, slower.expected, "slower"),
            Experiment("same, loaded", None, None, "same")]
    n_load = 2 if quick else 5
    loader = subprocess.Popen([sys.executable, "-c", LOAD, str(max(10.0, deadline - time.time()))])
    try:
        time.sleep(2.0)  # the load has started its products
        asyncio.run(run_pair(task, text, slower_variant(text, cal.iters_for(SLOWER)), [(load[0], n_load)], cap,
                             deadline, default_target, level))
        asyncio.run(run_pair(task, text, text, [(load[1], n_load)], cap, deadline, default_target, level))
    finally:
        loader.terminate()
        loader.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)
    return {**out, "same": same.to_dict(), "slower": slower.to_dict(), "ladder": [e.to_dict() for e in ladder],
            "smallest_detected": smallest_detected(ladder, 19 / 20), "load": [e.to_dict() for e in load],
            "seconds": round(time.time() - began, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out"), help="folder for compare_gpu.json")
    parser.add_argument("--quick", action="store_true", help="fewer comparisons, shorter caps (about 1 minute)")
    parser.add_argument("--examples", default=",".join(EXAMPLES), help="comma-separated examples")
    parser.add_argument("--budget-s", type=float, help="the whole run's time bound (default 450, quick 70)")
    parser.add_argument("--level", type=float, default=95.0, help="the intervals' confidence level in percent")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("compare_gpu: no CUDA GPU here; nothing to measure (kerneltui compare needs one)", file=sys.stderr)
        return 3
    examples = [e.strip() for e in args.examples.split(",") if e.strip()]
    budget = args.budget_s or (70.0 if args.quick else 450.0)
    started = time.time()
    results: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(examples):
        share = (budget - (time.time() - started)) / (len(examples) - i)
        print(f"== {name} ({share:.0f} s)", flush=True)
        results[name] = run_example(name, args.quick, share, args.level / 100)
    props = torch.cuda.get_device_properties(0)
    report = {"device": props.name, "torch": torch.__version__, "quick": args.quick, "budget_s": budget,
              "level": args.level / 100,
              "seconds": round(time.time() - started, 1), "examples": results}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare_gpu.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"compare_gpu on {props.name}, {report['seconds']} s{' (quick)' if args.quick else ''}")
    for line in table(results):
        print(line)
    print(f"written: {out / 'compare_gpu.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
