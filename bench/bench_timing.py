"""How far kerneltui's benchmark numbers can be trusted, measured on a GPU machine.

For three kernels (the vector-add example at 2^26 floats = 256 MiB per vector, the softmax example
and the matmul example turned into bf16) this script:

* runs kerneltui's loop (benchmark + roofline and their prerequisites) RUNS times, each run with
  fresh workers as in the TUI, and records the benchmark median of every run, its spread over the
  runs, the roofline percentage and the time to the benchmark verdict;
* times the same kernel on the same benchmark case with ``triton.testing.do_bench`` (its 256 MB
  cache flush, median of three calls) and with Nsight Compute's ``gpu__time_duration.sum``
  (``--clock-control none``, ncu's own cache flush), in separate processes;
* prints a table and appends it, with the machine, versions and command, to bench/RESULTS.md.

Usage (on the GPU machine, from the repository root):
    python bench/bench_timing.py [--runs 5] [--skip-ncu] [--results bench/RESULTS.md]
It needs the examples vector_add, softmax and matmul under kerneltui/examples, and stops with a
message when one is missing. Plan on about six minutes on an H200 (5 runs of 3 kernels, then do_bench
and ncu for each). Interrupted (Ctrl-C, SIGINT), it still records the kernels it measured in full.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import importlib.util
import io
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "kerneltui" / "examples"
KERNELS = ("vector_add", "softmax", "matmul_bf16")
NCU_SKIP, NCU_COUNT = 3, 15


# ----------------------------------------------------------------------------------------------
# the scratch tasks
# ----------------------------------------------------------------------------------------------


def example(name: str) -> Path:
    path = EXAMPLES / name
    if not (path / "task.toml").exists():
        raise SystemExit(f"bench_timing: the {name} example is missing ({path}); this bench times kerneltui's "
                         f"bundled examples vector_add, softmax and matmul — add it or update the branch")
    return path


def prepare(workdir: Path) -> dict[str, Path]:
    tasks = {}
    for name in ("vector_add", "softmax"):
        tasks[name] = Path(shutil.copytree(example(name), workdir / name,
                                           ignore=shutil.ignore_patterns("__pycache__", ".kerneltui")))
    bf16 = Path(shutil.copytree(example("matmul"), workdir / "matmul_bf16",
                                ignore=shutil.ignore_patterns("__pycache__", ".kerneltui")))
    for file in ("kernel.py", "reference.py"):
        path = bf16 / file
        text = path.read_text()
        text = re.sub(r"\btorch\.float16\b", "torch.bfloat16", text)
        text = re.sub(r"\btl\.float16\b", "tl.bfloat16", text)
        if re.search(r"(?<![b.\w])float16|torch\.half\b", text):
            raise SystemExit(f"bench_timing: could not turn the matmul example's {file} into bf16 (float16 is left "
                             "in a form this script does not rewrite); update prepare() in bench/bench_timing.py")
        path.write_text(text)
    toml = bf16 / "task.toml"
    toml.write_text(toml.read_text().replace('name = "matmul"', 'name = "matmul_bf16"'))
    tasks["matmul_bf16"] = bf16
    return tasks


def benchmark_case(task_dir: Path) -> dict[str, Any]:
    data = tomllib.loads((task_dir / "task.toml").read_text())
    cases = data.get("benchmarks") or []
    if not cases:
        raise SystemExit(f"bench_timing: {task_dir.name} has no [[benchmarks]] case")
    return {k: v for k, v in cases[0].items() if k != "seed"}


def kernel_names(task_dir: Path) -> list[str]:
    text = (task_dir / "kernel.py").read_text()
    return re.findall(r"@triton\.jit[^\n]*\n\s*def\s+(\w+)", text)


# ----------------------------------------------------------------------------------------------
# kerneltui's numbers: the loop, RUNS times, fresh workers each run
# ----------------------------------------------------------------------------------------------


async def kerneltui_runs(task_dir: Path, runs: int) -> list[dict[str, Any]]:
    from kerneltui.core.history import observer_for
    from kerneltui.core.loop import Loop
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task_loaders.load import load_task
    from kerneltui.core.worker.parent.pool import WorkerPool

    task = load_task(task_dir)
    # One spare, as the TUI and `watch` keep: each run takes two workers (checks, then benchmark), so
    # the verdict time includes whatever wait for the benchmark's worker a person would see.
    pool = WorkerPool(task.backend, arch=task.arch, spares=1)
    pool.prestart()
    loop = Loop(task, pool=pool, observers=[observer_for(task)])
    out = []
    try:
        for i in range(runs):
            report = await loop.run(RunOptions(rungs=["roofline"], seeds=1, origin="bench"))
            bench = report.result("benchmark")
            roof = report.result("roofline")
            row: dict[str, Any] = {"run": i + 1, "ok": report.ok, "total_s": report.duration_s}
            if bench is None or bench.status not in ("ok", "warn"):
                failing = next((r for r in report.results if r.status == "fail"), None)
                row["error"] = (failing.line() if failing else (bench.line() if bench else "no benchmark rung"))
                out.append(row)
                print(f"  run {i + 1}: {row['error'][:300]}", flush=True)
                continue
            case = bench.metrics["cases"][0]
            row.update(median_ms=case["candidate"]["median_ms"], runs=case["candidate"]["runs"],
                       rel_stderr=case["candidate"].get("rel_stderr"), bench_s=bench.duration_s,
                       candidate_s=bench.metrics.get("candidate_s"), wait_s=bench.metrics.get("worker_wait_s"),
                       reference_s=bench.metrics.get("reference_s"), torch_compile_s=bench.metrics.get("torch_compile_s"),
                       reference_ms=(case.get("reference") or {}).get("median_ms"),
                       compile_ms=(case.get("torch_compile") or {}).get("median_ms"), bench_status=bench.status,
                       bench_summary=bench.summary, straggle=case.get("straggle"))
            if roof is not None and roof.status in ("ok", "warn"):
                rc = roof.metrics["cases"][0]
                row.update(pct_roofline=rc.get("pct_roofline"), bound=rc.get("bound"), achieved_gbps=rc.get("achieved_gbps"),
                           achieved_tflops=rc.get("achieved_tflops"), copy_gbps=roof.metrics["peaks"]["copy_gbps"],
                           roofline_summary=roof.summary)
            elif roof is not None:
                row["roofline_summary"] = roof.line()
            out.append(row)
            print(f"  run {i + 1}: {bench.line()}", flush=True)
            print(f"         side-work check: {straggle_line(case.get('straggle') or {})}", flush=True)
            if roof is not None:
                print(f"         {roof.line()}", flush=True)
    finally:
        await loop.close()
    return out


def straggle_line(s: dict[str, Any]) -> str:
    """The side-work detector's numbers for one run (its false-alarm margin is what they show)."""
    if not s:
        return "not reported"
    return (f"{s.get('over')} of {s.get('runs')} calls over {s.get('threshold_us', 0):.1f} µs (median gap "
            f"{s.get('median_us', 0):.1f} µs; calibration p90 idle {s.get('idle_p90_us', 0):.1f} µs, "
            f"busy {s.get('busy_p90_us', 0):.1f} µs; median of the controls between the calls "
            f"{s.get('control_median_us') or 0:.1f} µs){' FLAGGED' if s.get('flagged') else ''}")


# ----------------------------------------------------------------------------------------------
# the other clocks: triton.testing.do_bench and ncu, each in its own process
# ----------------------------------------------------------------------------------------------


def driver(mode: str, task_dir: Path) -> int:
    """Runs in a subprocess: import the task's kernel and reference, check once, then time or loop."""
    import inspect

    import torch
    import triton.testing

    sys.path.insert(0, str(task_dir))

    def load(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", task_dir / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    ref, ker = load("reference"), load("kernel")
    params = benchmark_case(task_dir)
    if "device" in inspect.signature(ref.generate_input).parameters:
        params["device"] = "cuda"
    inputs = ref.generate_input(seed=1, **params)
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    out = ker.custom_kernel(*inputs)
    expected = ref.ref_kernel(*inputs)
    torch.cuda.synchronize()
    err = ((out.double() - expected.double()).norm() / expected.double().norm()).item()
    if not err < 3e-2:
        print(json.dumps({"error": f"the kernel's output is wrong here (relative L2 error {err:.3g}); not timed"}))
        return 1
    if mode == "do_bench":
        medians = [triton.testing.do_bench(lambda: ker.custom_kernel(*inputs), warmup=100, rep=500, return_mode="median")
                   for _ in range(3)]
        print(json.dumps({"do_bench_ms": statistics.median(medians), "do_bench_runs": medians}))
        return 0
    for _ in range(NCU_SKIP + NCU_COUNT + 2):
        ker.custom_kernel(*inputs)
    torch.cuda.synchronize()
    print(json.dumps({"ncu_driver": "done"}))
    return 0


def do_bench(task_dir: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--driver", "do_bench", str(task_dir)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": f"do_bench driver failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"}
    return json.loads(lines[-1])


def find_ncu() -> str | None:
    exe = shutil.which("ncu")
    if exe:
        return exe
    for cand in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")) + [Path("/usr/local/cuda/bin/ncu")]:
        if cand.exists():
            return str(cand)
    return None


def parse_ncu_csv(text: str) -> list[float]:
    """gpu__time_duration.sum per profiled kernel, in milliseconds, from ``ncu --csv`` output."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    values = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(str(row.get("Metric Value", "")).replace(",", ""))
        unit = (row.get("Metric Unit") or "").strip().lower()
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
                 "second": 1e3, "s": 1e3}.get(unit)
        if scale is None:
            raise ValueError(f"unknown ncu time unit {unit!r}")
        values.append(value * scale)
    return values


def ncu(task_dir: Path, names: list[str]) -> dict[str, Any]:
    exe = find_ncu()
    if exe is None:
        return {"error": "ncu not found"}
    if not names:
        return {"error": "no @triton.jit kernel found in kernel.py to filter on"}
    cmd = [exe, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
           "-k", f"regex:^({'|'.join(names)})$", "--launch-skip", str(NCU_SKIP), "--launch-count", str(NCU_COUNT),
           sys.executable, __file__, "--driver", "ncu", str(task_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    try:
        values = parse_ncu_csv(proc.stdout)
    except ValueError as exc:
        return {"error": str(exc), "command": " ".join(cmd)}
    if not values:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        return {"error": f"ncu measured nothing (exit {proc.returncode}): {' | '.join(tail)}", "command": " ".join(cmd)}
    return {"ncu_ms": statistics.median(values), "ncu_runs": len(values), "command": " ".join(cmd)}


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------


def fmt_ms(ms: float | None) -> str:
    from kerneltui.core.bench.stats import format_ms

    return format_ms(ms)


def delta(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "—"
    return f"{100 * (a - b) / b:+.1f}%"


def summarise(name: str, case: dict[str, Any], runs: list[dict[str, Any]], db: dict[str, Any],
              nc: dict[str, Any]) -> dict[str, Any]:
    medians = [r["median_ms"] for r in runs if r.get("median_ms")]
    row: dict[str, Any] = {"kernel": name, "case": " ".join(f"{k}={v}" for k, v in case.items()), "runs": runs,
                           "do_bench": db, "ncu": nc}
    if medians:
        mid = statistics.median(medians)
        row.update(median_ms=mid, spread=(max(medians) - min(medians)) / mid, min_ms=min(medians), max_ms=max(medians))
    ok_runs = [r for r in runs if r.get("median_ms")]
    if ok_runs:
        row["pct_roofline"] = statistics.median([r["pct_roofline"] for r in ok_runs if r.get("pct_roofline") is not None] or [0])
        gbps = [r["achieved_gbps"] for r in ok_runs if r.get("achieved_gbps")]
        copy = [r["copy_gbps"] for r in ok_runs if r.get("copy_gbps")]
        if gbps and copy:
            row["pct_copy_bw"] = 100 * statistics.median(gbps) / copy[-1]
            row["copy_gbps"] = copy[-1]
        row["bound"] = ok_runs[-1].get("bound")
        row["verdict_first_s"] = ok_runs[0]["bench_s"]
        steady = [r["bench_s"] for r in ok_runs[1:]] or [ok_runs[0]["bench_s"]]
        row["verdict_s"] = statistics.median(steady)
        row["candidate_s"] = statistics.median([r["candidate_s"] for r in ok_runs[1:] or ok_runs if r.get("candidate_s")] or [0])
        for part in ("wait_s", "reference_s", "torch_compile_s"):
            row[part] = statistics.median([r.get(part) or 0.0 for r in ok_runs[1:] or ok_runs])
        row["run_s"] = statistics.median([r["total_s"] for r in ok_runs[1:] or ok_runs])
    return row


def table(rows: list[dict[str, Any]]) -> list[str]:
    columns = ["kernel", "case", "kerneltui median", "spread over runs", "do_bench", "Δ", "ncu", "Δ", "roofline",
               "benchmark verdict (first / later)", "kernel load + timing", "whole run"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(["---"] * len(columns)) + "|"]
    for r in rows:
        db = r["do_bench"].get("do_bench_ms")
        nc = r["ncu"].get("ncu_ms")
        roof = f"{r['pct_roofline']:.0f}% ({r.get('bound')}-bound)" if r.get("pct_roofline") else "—"
        if r.get("pct_copy_bw") is not None and r.get("bound") == "memory":
            roof += f", {r['pct_copy_bw']:.0f}% of copy BW"
        if r.get("median_ms"):
            cells = [fmt_ms(r["median_ms"]), f"{100 * r['spread']:.2f}% ({fmt_ms(r['min_ms'])}–{fmt_ms(r['max_ms'])})"]
        else:
            cells = ["FAILED", "—"]
        cells += [fmt_ms(db), delta(r.get("median_ms"), db), fmt_ms(nc), delta(r.get("median_ms"), nc), roof]
        if r.get("verdict_s") is not None:
            cells += [f"{r['verdict_first_s']:.2f} s / {r['verdict_s']:.2f} s (of which {r.get('wait_s', 0):.2f} s "
                      "waiting for a quiet GPU)", f"{r['candidate_s']:.2f} s", f"{r['run_s']:.1f} s"]
        else:
            cells += ["—", "—", "—"]
        lines.append("| " + " | ".join([r["kernel"], r["case"], *cells]) + " |")
    return lines


def notes(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        errors = [x.get("error") for x in r["runs"] if x.get("error")]
        for src in ("do_bench", "ncu"):
            if r[src].get("error"):
                errors.append(f"{src}: {r[src]['error']}")
        for e in errors:
            out.append(f"- {r['kernel']}: {e}")
        gaps = [x["straggle"] for x in r["runs"] if x.get("straggle")]
        if gaps:
            worst = max(gaps, key=lambda g: (g.get("over") or 0) / max(g.get("runs") or 1, 1))
            out.append(f"- {r['kernel']}: side-work check, worst of {len(gaps)} runs: {straggle_line(worst)}")
        if r.get("median_ms"):
            for src, key in (("do_bench", "do_bench_ms"), ("ncu", "ncu_ms")):
                other = r[src].get(key)
                if other and abs(r["median_ms"] - other) / other > 0.03:
                    out.append(f"- {r['kernel']}: kerneltui and {src} differ by {delta(r['median_ms'], other)} "
                               "(more than 3%): explain before trusting either")
            if r["median_ms"] >= 0.05 and r["spread"] >= 0.01:
                out.append(f"- {r['kernel']}: the 5-run spread {100 * r['spread']:.2f}% is not under 1%")
    va = next((r for r in rows if r["kernel"] == "vector_add" and r.get("pct_copy_bw") is not None), None)
    if va:
        verdict = "meets" if va["pct_copy_bw"] >= 90 else "does NOT meet"
        out.append(f"- vector_add reaches {va['pct_copy_bw']:.1f}% of the measured copy bandwidth "
                   f"({va['copy_gbps']:.0f} GB/s): {verdict} the ≥ 90% target")
    sm = next((r for r in rows if r["kernel"] == "softmax" and r.get("verdict_s") is not None), None)
    if sm:
        out.append(f"- softmax: benchmark verdict in {sm['verdict_s']:.2f} s once peaks and the torch.compile baseline "
                   f"are cached ({sm['verdict_first_s']:.2f} s the first time); target ≤ 2 s: "
                   f"{'met' if sm['verdict_s'] <= 2 else 'NOT met'}; of it (medians of the later runs): waiting for a "
                   f"quiet GPU {sm['wait_s']:.2f} s, timing the reference {sm['reference_s']:.2f} s, the torch.compile "
                   f"baseline {sm['torch_compile_s']:.2f} s, loading and timing the kernel {sm['candidate_s']:.2f} s")
    return out


def machine() -> str:
    code = ("import json, torch, triton; p = torch.cuda.get_device_properties(0); "
            "print(json.dumps({'gpu': p.name, 'torch': torch.__version__, 'triton': triton.__version__, "
            "'cuda': torch.version.cuda}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return "unknown machine"
    smi = shutil.which("nvidia-smi")
    driver = ""
    if smi:
        driver = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                text=True).stdout.strip().splitlines()[0:1]
        driver = f" · driver {driver[0]}" if driver else ""
    ncu_exe = find_ncu()
    ncu_v = ""
    if ncu_exe:
        out = subprocess.run([ncu_exe, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
        ncu_v = f" · {out[-1]}" if out else ""
    return f"{info['gpu']} · torch {info['torch']} (CUDA {info['cuda']}) · triton {info['triton']}{driver}{ncu_v}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-ncu", action="store_true")
    parser.add_argument("--results", default=str(ROOT / "bench" / "RESULTS.md"))
    parser.add_argument("--only", choices=KERNELS, action="append", help="time only these kernels")
    parser.add_argument("--driver", nargs=2, metavar=("MODE", "TASK_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        return driver(args.driver[0], Path(args.driver[1]))
    sys.path.insert(0, str(ROOT))
    probe = subprocess.run([sys.executable, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
                           capture_output=True, timeout=120)
    if probe.returncode != 0:
        print("bench_timing: no CUDA GPU here; this script measures GPU timings and records nothing without one",
              file=sys.stderr)
        return 2
    started = time.time()
    workdir = Path(tempfile.mkdtemp(prefix="kerneltui-bench-"))
    tasks = prepare(workdir)
    rows = []
    cut_off = ""
    try:
        for name in args.only or KERNELS:
            task_dir = tasks[name]
            case = benchmark_case(task_dir)
            print(f"== {name} ({' '.join(f'{k}={v}' for k, v in case.items())})", flush=True)
            # Each clock's wall time is printed: a run cut off by a time limit says where the minutes went.
            mark = time.time()
            runs = asyncio.run(kerneltui_runs(task_dir, args.runs))
            print(f"  kerneltui: {len(runs)} runs in {time.time() - mark:.1f} s", flush=True)
            mark = time.time()
            db = do_bench(task_dir)
            print(f"  do_bench ({time.time() - mark:.1f} s): {db}", flush=True)
            mark = time.time()
            nc = {"error": "skipped (--skip-ncu)"} if args.skip_ncu else ncu(task_dir, kernel_names(task_dir))
            print(f"  ncu ({time.time() - mark:.1f} s): {nc}", flush=True)
            rows.append(summarise(name, case, runs, db, nc))
    except KeyboardInterrupt:
        # A time limit (bench/gpu_all.sh ends a step with SIGINT) keeps the kernels already measured.
        done = ", ".join(r["kernel"] for r in rows) or "none"
        cut_off = f"Cut off by an interrupt after {time.time() - started:.0f} s; kernels measured in full: {done}."
        print(cut_off, flush=True)
        if not rows:
            return 130
    lines = table(rows)
    extra = notes(rows) + ([f"- {cut_off}"] if cut_off else [])
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    command = "python bench/bench_timing.py " + " ".join(a for a in sys.argv[1:])
    block = [f"## {stamp} · bench_timing · {machine()}", "", f"Command: `{command.strip()}` "
             f"({time.time() - started:.0f} s). kerneltui: median of each run's benchmark (fresh workers per run, "
             "fresh inputs every call, L2 flushed); do_bench: median of 3 × do_bench(return_mode='median'); "
             f"ncu: median gpu__time_duration.sum of {NCU_COUNT} launches, --clock-control none.", "", *lines, "", *extra, ""]
    print("\n".join(block))
    results = Path(args.results)
    if not results.exists():
        results.write_text("# Benchmark results\n\nMeasurements recorded by the scripts in bench/ (newest last).\n\n")
    with results.open("a") as fh:
        fh.write("\n".join(block) + "\n")
    print(f"appended to {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
