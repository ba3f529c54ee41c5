"""TileLang beside Triton, the DSLs' own tracers, and the CuTe DSL example, on a GPU.

    python bench/dsl_examples.py --out /tmp/dsl.md [--shapes 2048,4096,8192] [--record tests/data/trace]
                                 [--only gemm|trace|cute]

1. ``gemm``: the Triton ``matmul`` example and the TileLang ``tilelang_gemm`` example (the same
   problem: fp16 A·B, fp32 accumulation, fp16 out) on the same square shapes, each checked for
   correctness and then benchmarked by kerneltui's benchmark rung (L2 flushed, fresh inputs,
   adaptive stop): median and IQR per shape, TFLOP/s, and TileLang's time over Triton's.
2. ``trace``: a Triton softmax marked with Proton scopes and a CuTe DSL kernel marked with IKET
   ranges (tests/gpu/trace_tasks), each through the trace rung: which tracer ran, the region table.
   ``--record DIR`` keeps IKET's decoded JSON there (``iket_cute_iket_h200.json``) for CPU tests.
3. ``cute``: the CuTe DSL example's check and dump (its dump's ptxas run, with the PTX header
   lowered when the toolkit's ptxas is older than the DSL's).

Prints a markdown report, writes it to ``--out`` and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kerneltui.config import benchmark_settings  # noqa: E402
from kerneltui.core.loop_factory import check_once  # noqa: E402
from kerneltui.core.rungs.context import RunOptions  # noqa: E402
from kerneltui.core.task_loaders.load import load_task  # noqa: E402

EXAMPLES = ROOT / "kerneltui" / "examples"
TRACE_TASKS = ROOT / "tests" / "gpu" / "trace_tasks"
BENCH = {"torch_compile": False}


def _copy(src: Path, scratch: Path) -> Path:
    dest = scratch / src.name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    return dest


def _with_benchmarks(task_dir: Path, sizes: list[int]) -> None:
    """Replace the task's [[benchmarks]] by square shapes (both examples take m, n, k)."""
    toml = task_dir / "task.toml"
    text = toml.read_text()
    head, _, tail = text.partition("[[benchmarks]]")
    rest = re.sub(r"^(m|n|k) = \d+\n", "", tail, flags=re.MULTILINE).lstrip("\n")
    cases = "".join(f"[[benchmarks]]\nm = {s}\nn = {s}\nk = {s}\n\n" for s in sizes)
    toml.write_text(head + cases + rest)


def _run(task_dir: Path, rungs: list[str], seeds: int = 2) -> Any:
    options = RunOptions(rungs=rungs, record=False, seeds=seeds, benchmark=benchmark_settings(overrides=BENCH))
    return asyncio.run(check_once(load_task(str(task_dir)), options))


def _rung(report: Any, name: str) -> Any:
    return next((r for r in report.results if r.name == name), None)


def _us(ms: float | None) -> str:
    return f"{ms * 1000:.1f} µs" if ms else "–"


def gemm(scratch: Path, sizes: list[int]) -> tuple[list[str], dict[str, Any]]:
    lines = ["## TileLang beside Triton: fp16 GEMM, fp32 accumulation (the `matmul` and `tilelang_gemm` examples)", ""]
    per: dict[str, dict[int, dict[str, Any]]] = {}
    for name in ("matmul", "tilelang_gemm"):
        task = _copy(EXAMPLES / name, scratch)
        _with_benchmarks(task, sizes)
        t0 = time.perf_counter()
        report = _run(task, ["correctness", "benchmark"])
        lines.append(f"- {name}: " + " · ".join(f"`{r.line()}`" for r in report.results if r.name in
                                               ("compile", "correctness", "benchmark")) +
                     f" ({time.perf_counter() - t0:.0f} s)")
        bench = _rung(report, "benchmark")
        per[name] = {}
        for case in (bench.metrics.get("cases") or []) if bench else []:
            cand = case.get("candidate") or {}
            size = int(case.get("params", {}).get("m", 0))
            per[name][size] = {"median_ms": cand.get("median_ms"), "q1_ms": cand.get("q1_ms"),
                               "q3_ms": cand.get("q3_ms"), "runs": cand.get("runs")}
    lines += ["", "| M=N=K | Triton median (IQR) | TFLOP/s | TileLang median (IQR) | TFLOP/s | TileLang / Triton |",
              "|---|---|---|---|---|---|"]
    for size in sizes:
        t, tl = per.get("matmul", {}).get(size, {}), per.get("tilelang_gemm", {}).get(size, {})
        cells = [str(size)]
        for row in (t, tl):
            med = row.get("median_ms")
            cells += [f"{_us(med)} ({_us(row.get('q1_ms'))}–{_us(row.get('q3_ms'))}, {row.get('runs')} runs)" if med else "–",
                      f"{2 * size ** 3 / (med * 1e-3) / 1e12:.0f}" if med else "–"]
        ratio = (tl.get("median_ms") / t["median_ms"]) if t.get("median_ms") and tl.get("median_ms") else None
        cells.append(f"{ratio:.3f}" if ratio else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines, per


def trace(scratch: Path, record: Path | None) -> tuple[list[str], dict[str, Any]]:
    lines = ["## The DSLs' own tracers through the trace rung", ""]
    summary: dict[str, Any] = {}
    for name in ("softmax_proton", "cute_iket"):
        task = _copy(TRACE_TASKS / name, scratch)
        report = _run(task, ["trace"], seeds=1)
        rung = _rung(report, "trace")
        lines.append(f"### {name}")
        lines += [f"- `{r.line()}`" for r in report.results]
        if rung is None:
            continue
        m = rung.metrics
        summary[name] = {"status": rung.status, "source": m.get("source"), "fallback": m.get("source_fallback"),
                         "regions": {r["name"]: r["median_ns"] for r in (m.get("kernels") or [{}])[0].get("regions", [])}}
        body = (rung.details.strip() or rung.summary) if rung.status != "fail" else f"{rung.error}\n{rung.details[-2000:]}"
        lines += ["", "```", body, "```", ""]
        if record is not None and m.get("buffers"):
            kept = Path(m["buffers"]).parent / "iket.trace.json"
            if kept.is_file():
                record.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(kept, record / "iket_cute_iket_h200.json")
                lines.append(f"IKET's decoded trace recorded to {record / 'iket_cute_iket_h200.json'}")
    return lines, summary


def cute(scratch: Path) -> tuple[list[str], dict[str, Any]]:
    task = _copy(EXAMPLES / "cute_elementwise", scratch)
    report = _run(task, ["correctness", "dump"])
    lines = ["## The CuTe DSL example: check and dump", ""] + [f"- `{r.line()}`" for r in report.results]
    dump = _rung(report, "dump")
    if dump is not None:
        lines += ["", "```", dump.details.strip()[:3000], "```"]
    return lines, {"ok": report.ok, "dump": dump.status if dump else None}


def _versions() -> str:
    parts = [f"python {platform.python_version()}"]
    for module in ("torch", "triton", "tilelang", "cutlass"):
        try:
            parts.append(f"{module} {__import__(module).__version__}")
        except Exception as exc:  # a missing package is part of the record
            parts.append(f"{module} missing ({type(exc).__name__})")
    return ", ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="markdown file to write the report to")
    parser.add_argument("--shapes", default="2048,4096,8192", help="square GEMM sizes, comma-separated")
    parser.add_argument("--record", type=Path, help="folder to keep IKET's decoded trace in")
    parser.add_argument("--only", choices=("gemm", "trace", "cute"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.shapes.split(",") if s.strip()]
    started = time.perf_counter()
    sections: list[str] = []
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kerneltui-dsl-bench-") as tmp:
        scratch = Path(tmp)
        for part, fn in (("gemm", lambda: gemm(scratch, sizes)), ("trace", lambda: trace(scratch, args.record)),
                         ("cute", lambda: cute(scratch))):
            if args.only not in (None, part):
                continue
            lines, summary[part] = fn()
            sections += lines + [""]
    head = [f"# TileLang, the DSLs' tracers, CuTe DSL on the GPU ({datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC)",
            "", f"machine: {platform.node()} · {_versions()}",
            f"command: `python bench/dsl_examples.py --out {args.out} --shapes {args.shapes}"
            + (f" --only {args.only}" if args.only else "") + "`", ""]
    text = "\n".join(head + sections) + f"\ntotal {time.perf_counter() - started:.0f} s\n"
    print(text)
    print(json.dumps(summary, default=str))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    with (ROOT / "bench" / "RESULTS.md").open("a", encoding="utf-8") as results:
        results.write("\n" + text)
    ok = all(v.get("ok", True) if isinstance(v, dict) else True for v in summary.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
