"""Inside the kernel, on a GPU: trace the pipelined matmul's regions and run a hand-edited softmax PTX.

    python bench/trace_examples.py --out /tmp/trace_results.md [--record tests/data/trace] [--only trace|override]

1. ``matmul_traced`` (CUDA C++, cp.async two-stage pipeline) through the ``trace`` rung: the region
   table (load / compute / store: median per CTA, spread, share, overlap), the per-SM timeline and
   the tracing overhead (traced vs untraced median of the same calls).
2. The bundled softmax (Triton), checked and benchmarked; its PTX written as an override exactly as
   the asm view's ``e`` does (with the specialisation key from the dump), every ``ex2.approx.f32``
   changed to ``ex2.approx.ftz.f32`` (flush subnormals: same results for softmax), then the loop
   reruns on the override: correctness and benchmark of the edited PTX as a version of its own.

Prints everything and writes it as markdown to ``--out`` (for bench/RESULTS.md). ``--record DIR``
also saves the matmul's raw trace buffers there (``matmul_pipelined_h200.json``) for the CPU tests.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.config import benchmark_settings  # noqa: E402
from kerneltui.core import override  # noqa: E402
from kerneltui.core.asm.store import Dump  # noqa: E402
from kerneltui.core.loop_factory import check_once  # noqa: E402
from kerneltui.core.rungs.context import RunOptions  # noqa: E402
from kerneltui.core.task_loaders.load import load_task  # noqa: E402

EXAMPLES = ROOT / "kerneltui" / "examples"
QUICK_BENCH = {"torch_compile": False, "max_seconds": 2.0}


def _copy(name: str, scratch: Path) -> Path:
    dest = scratch / name
    shutil.copytree(EXAMPLES / name, dest, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    return dest


def _run(task_dir: Path, rungs: list[str], override_folder: str | None = None):  # type: ignore[no-untyped-def]
    options = RunOptions(rungs=rungs, record=False, seeds=1, benchmark=benchmark_settings(overrides=QUICK_BENCH),
                         override_folder=override_folder)
    return asyncio.run(check_once(load_task(str(task_dir)), options))


def _rung(report, name: str):  # type: ignore[no-untyped-def]
    return next((r for r in report.results if r.name == name), None)


def trace_matmul(scratch: Path, record: Path | None) -> tuple[list[str], dict]:
    task = _copy("matmul_traced", scratch)
    t0 = time.perf_counter()
    report = _run(task, ["trace"])
    seconds = time.perf_counter() - t0
    lines = ["## Trace: matmul_traced (CUDA C++, 2048³ fp32, cp.async two-stage pipeline)", ""]
    for r in report.results:
        lines.append(f"- `{r.line()}`")
    trace = _rung(report, "trace")
    summary: dict = {"seconds": round(seconds, 1), "status": trace.status if trace else "missing"}
    if trace is not None and trace.metrics.get("kernels"):
        m = trace.metrics
        summary.update(untraced_ms=m["untraced_ms"], traced_ms=m["traced_ms"], overhead_pct=m["overhead_pct"],
                       regions={r["name"]: {"median_ns": r["median_ns"], "share": r["share"], "spread": r["spread"]}
                                for r in m["kernels"][0]["regions"]},
                       overlaps={f"{o['first']}∩{o['second']}": o["fraction"] for o in m["kernels"][0]["overlaps"]})
        lines += ["", "```", trace.details.strip(), "```"]
        if record is not None and m.get("buffers"):
            record.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(m["buffers"], record / "matmul_pipelined_h200.json")
            lines.append(f"\nraw buffers recorded to {record / 'matmul_pipelined_h200.json'}")
    elif trace is not None:
        lines += ["", "```", trace.error or trace.summary, trace.details[-3000:], "```"]
    lines.append(f"\n{seconds:.1f} s for the whole check (compile, correctness, trace)")
    return lines, summary


def softmax_override(scratch: Path) -> tuple[list[str], dict]:
    task_dir = _copy("softmax", scratch)
    # A test case with the benchmark's row width: the edited specialisation (BLOCK = 8192) is then
    # checked by the correctness rung too, not only rechecked while benchmarked.
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("[[benchmarks]]", "[[tests]]\nrows = 5\ncols = 8192\n\n[[benchmarks]]", 1))
    rungs = ["correctness", "dump", "benchmark"]
    lines = ["## Hand-edited PTX: softmax (Triton), ex2.approx.f32 → ex2.approx.ftz.f32", ""]
    t0 = time.perf_counter()
    base = _run(task_dir, rungs)
    summary: dict = {}
    lines += [f"- base: `{r.line()}`" for r in base.results]
    dump = Dump.load(Path(base.version_dir))
    variant = dump.primary()
    ptx = dump.stage_text(variant, "ptx")
    key = override.triton_key(Path(base.version_dir), "PTX", ptx)
    task = load_task(str(task_dir))
    edited = override.write(task, Path(base.version_dir).name, "PTX", ptx, key=key)
    count = ptx.count("ex2.approx.f32")
    edited.file.write_text(ptx.replace("ex2.approx.f32", "ex2.approx.ftz.f32"))
    lines.append(f"\nedited {edited.file.relative_to(task_dir)} (variant {variant.label}, key {key}): "
                 f"{count} × ex2.approx.f32 → ex2.approx.ftz.f32")
    after = _run(task_dir, rungs, override_folder=edited.rel_folder)
    lines += [f"- override: `{r.line()}`" for r in after.results]
    new_dump = Dump.load(Path(after.version_dir))
    new_ptx = new_dump.stage_text(new_dump.variant(variant.kernel, variant.label), "ptx")
    reached = new_ptx.count("ex2.approx.ftz.f32")
    lines.append(f"\nthe override version's dump has {reached} × ex2.approx.ftz.f32 (the edit reached the GPU build: "
                 f"{'yes' if reached == count and count else 'NO'})")
    for label, rep in (("base", base), ("override", after)):
        bench = _rung(rep, "benchmark")
        corr = _rung(rep, "correctness")
        summary[label] = {"ok": rep.ok, "correctness": corr.status if corr else None,
                          "median_ms": bench.metrics.get("median_ms") if bench else None,
                          "version": Path(rep.version_dir).name}
    summary.update(replaced=count, reached=reached, seconds=round(time.perf_counter() - t0, 1))
    b, o = summary["base"], summary["override"]
    lines += ["", "| version | correctness | benchmark median |", "|---|---|---|",
              f"| base {b['version']} | {b['correctness']} | {_ms(b['median_ms'])} |",
              f"| override {o['version']} | {o['correctness']} | {_ms(o['median_ms'])} |"]
    return lines, summary


def _ms(value: float | None) -> str:
    return f"{value * 1000:.1f} µs" if value else "–"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="markdown file to write the results to")
    parser.add_argument("--record", type=Path, help="folder to save the matmul's raw trace buffers in")
    parser.add_argument("--only", choices=("trace", "override"), help="run only the matmul trace or the softmax override")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kerneltui-trace-bench-") as tmp:
        scratch = Path(tmp)
        trace_lines: list[str] = []
        override_lines: list[str] = []
        trace_summary: dict = {"status": "not run (--only override)"}
        override_summary: dict = {"override": "not run (--only trace)"}
        if args.only != "override":
            trace_lines, trace_summary = trace_matmul(scratch, args.record)
        if args.only != "trace":
            override_lines, override_summary = softmax_override(scratch)
    head = [f"# kerneltui trace and PTX override ({datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC)", "",
            "command: `python bench/trace_examples.py --out ...`", ""]
    text = "\n".join(head + trace_lines + [""] + override_lines) + "\n"
    print(text)
    print(json.dumps({"trace": trace_summary, "override": override_summary}, default=str))
    print(f"total {time.perf_counter() - started:.1f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    trace_ok = args.only == "override" or trace_summary.get("status") == "ok"
    override_ok = args.only == "trace" or override_summary.get("override", {}).get("ok")
    return 0 if trace_ok and override_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
