"""KernelBench level 1 as a suite: reference-as-candidate (every item must pass) and broken candidates
(every item must fail), run here and through Ray; print the tables and append them to bench/RESULTS.md.

Two steps, because the GPU machine has no network:

    # where a KernelBench checkout is (e.g. a clone of ScalingIntelligence/KernelBench):
    python bench/kernelbench_suite.py build --level1 KernelBench/KernelBench/level1 --out scratch/kb_suite
    # where the GPU is (carry scratch/kb_suite there: 25 small problem files and 50 generated candidates):
    python bench/kernelbench_suite.py run --out scratch/kb_suite [--runners local,ray] [--suites reference,broken]
                                          [--scale 0.125]

``build`` copies the chosen level-1 problems into OUT/level1 and writes two candidate folders in
KernelBench's run layout (``level_1_problem_<id>_sample_0_kernel.py``): ``reference/`` (the problem
itself as ``ModelNew``) and ``broken/`` (the reference with its output spoiled: scaled and shifted
for one half of the problems, uninitialised memory returned for the other). Both are plain torch,
so the suites run with ``--backend torch``: what is tested is the harness's verdict, not a DSL.

``run`` checks both suites with ``kerneltui suite`` on each runner (``local``: one slot per GPU,
fresh workers per item (``--no-engine``); ``engine``: the same slots answered by a background engine
of the run's own, twice: first started by the suite, then warm; ``ray``: ``--ray local``, a one-node
cluster the command starts). The published sizes are GB-scale
(GELU: 4096 × 393216 floats a tensor); ``--scale`` shrinks every size constant (default 1/8).
The reference suite is benchmarked on the local runner (torch.compile baseline off, timed phases
capped by ``--max-seconds``); the Ray runs check correctness only unless ``--ray-rungs`` says more.
Exit status 0 only when every reference item passed and every broken item failed on every runner.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"

# 25 problems across the level: matmuls, activations over GB-scale tensors, normalisations,
# pooling, reductions, convolutions, scans, losses and attention.
PROBLEMS = (1, 2, 3, 4, 8, 9, 13, 16, 19, 21, 23, 26, 30, 33, 36, 38, 40, 42, 47, 51, 63, 82, 89, 95, 97)

BROKEN = '''

def _spoil(out, kind):
    if isinstance(out, (tuple, list)):
        return type(out)(_spoil(o, kind) for o in out)
    if not isinstance(out, torch.Tensor):
        return out
    if kind == "uninitialised":
        return torch.empty_like(out)
    if out.dtype == torch.bool:
        return ~out
    if out.is_floating_point():
        return out * 1.1 + 0.1
    return out + 1


class ModelNew(_ReferenceModel):
    """The reference with its output spoiled ({kind})."""

    def forward(self, *args, **kwargs):
        return _spoil(super().forward(*args, **kwargs), "{kind}")
'''


def problem_files(level1: Path, ids: tuple[int, ...]) -> dict[int, Path]:
    found = {}
    for path in level1.glob("*.py"):
        m = re.match(r"^(\d+)_", path.name)
        if m and int(m.group(1)) in ids:
            found[int(m.group(1))] = path
    missing = sorted(set(ids) - set(found))
    if missing:
        raise SystemExit(f"{level1}: no problem file for ids {missing}")
    return found


def build(level1: Path, out: Path, ids: tuple[int, ...]) -> None:
    files = problem_files(level1, ids)
    for sub in ("level1", "reference", "broken"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    for i, (pid, path) in enumerate(sorted(files.items())):
        source = path.read_text(encoding="utf-8")
        if not re.search(r"\bclass Model\b", source):
            raise SystemExit(f"{path}: no class Model")
        shutil.copy(path, out / "level1" / path.name)
        name = f"level_1_problem_{pid}_sample_0_kernel.py"
        (out / "reference" / name).write_text(re.sub(r"\bModel\b", "ModelNew", source), encoding="utf-8")
        kind = "scaled and shifted" if i % 2 == 0 else "uninitialised"
        spoiled = re.sub(r"\bModel\b", "_ReferenceModel", source) + BROKEN.replace("{kind}", kind)
        (out / "broken" / name).write_text(spoiled, encoding="utf-8")
    print(f"{len(files)} problems, reference and broken candidates in {out}")


def suite_env(args: argparse.Namespace) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "KERNELTUI_BENCHMARK_TORCH_COMPILE": "false", "KERNELTUI_BENCHMARK_MAX_SECONDS": str(args.max_seconds)}


def run_suite(out: Path, candidates: str, runner: str, label: str, args: argparse.Namespace, rungs: str,
              engine_env: dict[str, str]) -> dict[str, Any]:
    """One suite on ``runner`` (local, engine or ray), reported as ``label``; ``engine_env`` names the
    engine runner's own engine folder."""
    results_file = out / f"results-{candidates}-{runner}.jsonl"
    cmd = [sys.executable, "-m", "kerneltui", "suite", str(out / "level1"), "--candidates", str(out / candidates),
           "--backend", "torch", "--scale", str(args.scale), "--seeds", str(args.seeds), "--rungs", rungs,
           "--results", str(results_file), "--restart", "--json"]
    if runner == "ray":
        cmd += ["--ray", args.ray_address]
    elif runner == "local":
        cmd += ["--no-engine"]
    env = {**suite_env(args), **(engine_env if runner == "engine" else {})}  # local: --no-engine already
    print("$ " + " ".join(cmd[1:]), flush=True)
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    wall = time.perf_counter() - started
    if not proc.stdout.strip():
        raise SystemExit(f"kerneltui suite printed nothing (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout)
    report.update(candidates=candidates, runner=label, command=" ".join(["kerneltui", *cmd[3:]]),
                  exit_code=proc.returncode, measured_wall_s=wall)
    return report


def verdict(report: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether the suite came out as it must, and the items that did not."""
    want = "correct" if report["candidates"] == "reference" else "failed"
    wrong = [f"{r['problem']}: {r['status']} ({(r.get('failure') or '')[:100]})"
             for r in report["results"] if r["status"] != want]
    return not wrong, wrong


def machine() -> str:
    gpu = "no GPU"
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True)
        gpu = "; ".join(q.stdout.strip().splitlines()) or gpu
    versions = []
    for mod in ("torch", "triton", "ray"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            versions.append(f"{mod} absent")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{gpu} · {platform.machine()}, {os.cpu_count()} CPUs, load average {load} · Python "
            f"{platform.python_version()} · " + ", ".join(versions))


def _us(ms: float | None) -> str:
    return f"{ms * 1e3:.1f}" if ms else "—"


def markdown(reports: list[dict[str, Any]], args: argparse.Namespace) -> str:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"## KernelBench level 1 as a suite · {now}", "", machine(), "",
             f"`python bench/kernelbench_suite.py run --out {args.out} --runners {args.runners} --suites {args.suites} "
             f"--scale {args.scale} --seeds {args.seeds} --rungs {args.rungs}"
             + (f" --ray-rungs {args.ray_rungs}" if "ray" in args.runners else "")
             + f"` (torch.compile baseline off, timed phases ≤ "
             f"{args.max_seconds} s, {args.seeds} seeds + a hidden one"
             + ("" if any(r["summary"].get("timed") for r in reports) else "; no GPU: correctness only") + ")", "",
             "| suite | runner | items | as required | wall s | correct | fast_0 | fast_1 | geomean speedup | exit |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        ok, wrong = verdict(r)
        s = r["summary"]
        fp = s.get("fast_p") or {}
        geo = f"{s['geomean_speedup']:.2f}×" if s.get("geomean_speedup") else "—"
        lines.append(f"| {r['candidates']} | {r['runner']} | {s['items']} | {'yes' if ok else 'NO: ' + '; '.join(wrong[:3])} "
                     f"| {r['measured_wall_s']:.1f} | {s['correct']} | {fp.get('0', '—')} | {fp.get('1', '—')} | {geo} "
                     f"| {r['exit_code']} |")
    timed = next((r for r in reports if r["candidates"] == "reference" and r["summary"].get("timed")), None)
    if timed is not None:
        lines += ["", f"Per problem, reference as candidate ({timed['runner']} runner; medians, µs):", "",
                  "| problem | verdict | candidate µs | reference µs | speedup | where | s |", "|---|---|---|---|---|---|---|"]
        for r in timed["results"]:
            speed = f"{r['speedup']:.2f}×" if r.get("speedup") else "—"
            lines.append(f"| {r['problem']} | {r['status']} | {_us(r.get('candidate_ms'))} | {_us(r.get('reference_ms'))} "
                         f"| {speed} | {r['where']} | {r['duration_s']:.1f} |")
    broken = next((r for r in reports if r["candidates"] == "broken"), None)
    if broken is not None:
        first: dict[str, int] = {}
        for r in broken["results"]:
            failed = next((g for g in r.get("rungs") or [] if g.get("status") == "fail"), None)
            first[failed["name"] if failed else r["status"]] = first.get(failed["name"] if failed else r["status"], 0) + 1
        lines += ["", "Broken candidates, the rung that failed them: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(first.items()))]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    b = sub.add_parser("build", help="copy the problems and write the two candidate folders")
    b.add_argument("--level1", type=Path, required=True, help="KernelBench's level1 folder")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--problems", help=f"comma-separated problem ids (default {','.join(map(str, PROBLEMS))})")
    r = sub.add_parser("run", help="run both suites on each runner and record the results")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--runners", default="local,ray", help="comma-separated: local, engine, ray")
    r.add_argument("--suites", default="reference,broken", help="comma-separated: reference, broken")
    r.add_argument("--ray-address", default="local", help="local (start a one-node cluster), auto or HOST:PORT")
    r.add_argument("--scale", type=float, default=0.125, help="--scale for every problem (default 1/8)")
    r.add_argument("--seeds", type=int, default=2)
    r.add_argument("--max-seconds", type=float, default=1.0, help="cap of each timed benchmark phase")
    r.add_argument("--rungs", default="benchmark", help="rungs of the local reference suite")
    r.add_argument("--ray-rungs", default="correctness", help="rungs of the Ray suites")
    r.add_argument("--timeout", type=float, default=3000, help="seconds each suite may take")
    r.add_argument("--no-append", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args()
    if args.step == "build":
        ids = tuple(int(x) for x in args.problems.split(",")) if args.problems else PROBLEMS
        build(args.level1, args.out, ids)
        return 0
    reports = []
    runners = [x.strip() for x in args.runners.split(",") if x.strip()]
    # The engine runner's engine lives in a folder of its own (a Unix socket path must stay short),
    # started by its first suite and stopped at the end.
    engine_dir = Path(tempfile.mkdtemp(prefix="kbs-", dir="/tmp")) if "engine" in runners else None
    engine_env = {"KERNELTUI_ENGINE_ENABLED": "1", "KERNELTUI_ENGINE_DIR": str(engine_dir)} if engine_dir else {}
    try:
        for runner in runners:
            for candidates in [x.strip() for x in args.suites.split(",") if x.strip()]:
                rungs = args.ray_rungs if runner == "ray" else (args.rungs if candidates == "reference" else "correctness")
                labels = ["engine, first", "engine, warm"] if runner == "engine" else [runner]
                for label in labels:
                    report = run_suite(args.out, candidates, runner, label, args, rungs, engine_env)
                    ok, wrong = verdict(report)
                    print(f"{candidates} on {label}: {report['summary']['correct']}/{report['summary']['items']} "
                          f"correct, {report['measured_wall_s']:.1f} s, "
                          f"{'as required' if ok else 'NOT as required: ' + '; '.join(wrong)}", flush=True)
                    reports.append(report)
    finally:
        if engine_dir is not None:
            subprocess.run([sys.executable, "-m", "kerneltui", "engine", "stop", "--all"], capture_output=True,
                           env={**suite_env(args), **engine_env}, timeout=120)
            shutil.rmtree(engine_dir, ignore_errors=True)
    text = markdown(reports, args)
    print("\n" + text)
    (args.out / "reports.json").write_text(json.dumps(reports, indent=1, default=str))
    if not args.no_append:
        with RESULTS.open("a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
        print(f"\nappended to {RESULTS}")
    return 0 if all(verdict(r)[0] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
