"""The dump rung on every bundled example: what the compiler made, and how long the dump took.

For each example (copied to a scratch folder) runs `kerneltui check --rungs correctness,dump`
(on a GPU the kernels come from the JIT's cache; without one they are compiled ahead of time for
--arch), then reads the dump back and prints one row per kernel specialisation: registers, spills,
tensor-core ops, the widest global load, occupancy, and where the kernel came from. With --save DIR
it also copies every dump (stages, cubins, SASS, maps) to DIR for parser tests. The table is
appended to bench/RESULTS.md unless --no-record.

Usage: python bench/dump_examples.py [--examples vector_add,matmul] [--arch sm_90a] [--save DIR] [--no-record]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "kerneltui" / "examples"
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", help="comma-separated example names (default: all)")
    ap.add_argument("--arch", help="dump for this architecture (default: the GPU's, else sm_90a)")
    ap.add_argument("--save", type=Path, help="copy every dump folder here")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    from kerneltui.core.asm.store import Dump
    from kerneltui.core.asm.tools import Toolset
    from kerneltui.core.task import source_hash
    from kerneltui.core.task_loaders.load import load_task

    names = args.examples.split(",") if args.examples else sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").exists())
    work = Path(tempfile.mkdtemp(prefix="kerneltui-dump-bench-"))
    rows: list[list[str]] = []
    failures: list[str] = []
    device = "?"
    for name in names:
        task_dir = work / name
        shutil.copytree(EXAMPLES / name, task_dir, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
        cmd = [sys.executable, "-m", "kerneltui", "check", str(task_dir), "--rungs", "correctness,dump", "--json",
               "--no-history"] + (["--arch", args.arch] if args.arch else [])
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.perf_counter() - t0
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError:
            failures.append(f"{name}: kerneltui check printed no JSON (exit {proc.returncode}): {proc.stderr[-400:]}")
            continue
        dev = report.get("device") or {}
        device = f"{dev.get('name')} ({dev.get('arch')})" if dev.get("gpu") else "no GPU (CPU, ahead of time)"
        rung = next((r for r in report["rungs"] if r["name"] == "dump"), None)
        correctness = next((r for r in report["rungs"] if r["name"] == "correctness"), None)
        if rung is None or rung["status"] not in ("ok", "warn"):
            why = next((f"[{r['name']}] {r['error'] or r['summary']}" for r in report["rungs"] if r["status"] == "fail"), "")
            failures.append(f"{name}: dump {rung['status'] if rung else 'did not run'}: "
                            f"{rung and (rung['error'] or rung['summary'])}{'; ' + why if why else ''}")
            continue
        task = load_task(str(task_dir))
        version = task.version_dir(source_hash(task.kernel_source()))
        dump = Dump.load(version)
        if args.save:
            dest = args.save / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(version / "dump", dest)
            shutil.copy(task_dir / task.kernel_file, dest / ("source" + Path(task.kernel_file).suffix))
        for v in dump.variants():
            res, mix = v.resources, v.mix
            rows.append([
                name, f"{v.kernel} [{v.label}]" + (" *" if v.primary else ""),
                str(v.metadata.get("compiled") or v.metadata.get("backend") or "?"),
                str(res.registers if res else "?"),
                res.spills_text() if res else "?",
                mix.tensor_label() if mix and mix.tensor_ops else "-",
                (mix.widest_global_load() or "-") if mix else "?",
                f"{res.occupancy['occupancy']:.0%}" if res and res.occupancy else "?",
                f"{rung['duration_s']:.1f}",
                correctness["status"] if correctness else "-",
            ])
        print(f"{name}: {rung['summary']} (check {wall:.1f} s)", flush=True)

    header = ["example", "kernel [specialisation] (* = benchmark's)", "from", "regs", "spills", "tensor", "global ld",
              "occ", "dump s", "correct"]
    table = _table(header, rows)
    tools = Toolset.discover()
    print()
    print(table)
    for f in failures:
        print("FAILED:", f)
    if not args.no_record:
        versions = _versions()
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as out:
            out.write(f"\n## dump of every example — {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()}\n\n")
            out.write(f"Device: {device}. {versions}. Disassembler: "
                      f"{tools.disassembler.describe() if tools.disassembler else 'none'}.\n")
            out.write(f"Command: `python bench/dump_examples.py{' --arch ' + args.arch if args.arch else ''}`\n\n")
            out.write(table + "\n")
            for f in failures:
                out.write(f"\nFAILED: {f}\n")
    return 1 if failures else 0


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for pkg in ("torch", "triton"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} missing")
    return ", ".join(parts)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
