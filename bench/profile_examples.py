"""Profile the bundled examples and the profile test tasks with ``kerneltui profile``; print a table
and append it to bench/RESULTS.md. Run on a GPU machine with ncu:

    python bench/profile_examples.py [--out DIR]

Each task runs exactly as a person would run it (`kerneltui profile TASK --json --seeds 1`): the
checks, then ncu on the first benchmark case. The table gives the bound kerneltui reports, the
numbers behind it and how long the whole command took (checks included).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "kerneltui" / "examples"
TASKS = ROOT / "tests" / "gpu" / "profile_tasks"
RESULTS = ROOT / "bench" / "RESULTS.md"
# What each task is built to show (the examples are whatever they are).
EXPECTED = {"matmul_fp16": "compute", "fma_chain": "latency", "vector_add": "memory"}


def tasks() -> list[Path]:
    found = [p.parent for p in sorted(EXAMPLES.glob("*/task.toml"))]
    found += [p.parent for p in sorted(TASKS.glob("*/task.toml"))]
    return found


def profile(task: Path, scratch: Path) -> dict:
    copy = scratch / task.name
    shutil.copytree(task, copy, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kerneltui", "profile", str(copy), "--json", "--seeds", "1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    wall = time.perf_counter() - started
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {"task": task.name, "error": (proc.stderr or proc.stdout)[-300:], "wall_s": wall}
    row: dict = {"task": task.name, "wall_s": wall, "device": data.get("run", {}).get("device", {})}
    summary = ((data.get("profile") or {}).get("result") or {}).get("summary")
    if not summary:
        rung = next((r for r in data.get("run", {}).get("rungs", []) if r["name"] == "profile"), {})
        row["error"] = rung.get("error") or rung.get("summary") or "no profile"
        return row
    row.update(summary=summary, duration_s=(data.get("profile") or {}).get("duration_s"))
    return row


def fmt(v: float | None, spec: str = "{:.1f}") -> str:
    return "n/a" if v is None else spec.format(v)


def table(rows: list[dict]) -> list[str]:
    head = ("| task | case | kernel | bound (expected) | time µs | SM % | mem % | DRAM % | occ. ach/theo % "
            "| DRAM ÷ task bytes | top stall | profile s | command s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        s = r.get("summary")
        if not s:
            lines.append(f"| {r['task']} | | | error: {r.get('error', '')[:120]} | | | | | | | | | {r['wall_s']:.0f} |")
            continue
        expected = EXPECTED.get(r["task"], "")
        stall = s["stalls"][0]["reason"] if s.get("stalls") else ""
        ratio = None
        if s.get("dram_bytes") and s.get("task_bytes"):
            ratio = s["dram_bytes"] / s["task_bytes"]
        lines.append(
            f"| {r['task']} | {s.get('case', '')} | {s['kernel']} | {s['bound']}{f' ({expected})' if expected else ''} "
            f"| {fmt((s.get('duration_ns') or 0) / 1e3)} | {fmt(s.get('compute_pct'))} | {fmt(s.get('memory_pct'))} "
            f"| {fmt(s.get('dram_pct'))} | {fmt(s.get('occupancy_achieved_pct'))}/{fmt(s.get('occupancy_theoretical_pct'))} "
            f"| {fmt(ratio, '{:.2f}')} | {stall} | {fmt(r.get('duration_s'))} | {r['wall_s']:.0f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    opts = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kerneltui-bench-profile-"))
    rows = []
    for task in tasks():
        print(f"profiling {task.name} …", flush=True)
        rows.append(profile(task, scratch))
    shutil.rmtree(scratch, ignore_errors=True)
    lines = table(rows)
    print("\n".join(lines))
    device = next((r["device"] for r in rows if r.get("device")), {})
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    try:
        ncu_version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    except (OSError, IndexError):
        ncu_version = "unknown"
    section = [
        "", f"## Profile rung: bounds of the examples and test tasks ({datetime.date.today().isoformat()})", "",
        f"{device.get('name', '?')} ({device.get('arch', '?')}, {device.get('sm_count', '?')} SMs), driver "
        f"{device.get('driver', '?')}, torch {device.get('torch', '?')}, triton {device.get('triton', '?')}, "
        f"ncu {ncu_version}. Command: `python bench/profile_examples.py` (each task: "
        "`kerneltui profile TASK --json --seeds 1`; ncu with `--clock-control none`, 7 sections, first benchmark "
        "case). 'profile s' is ncu plus reading the report back; 'command s' includes the checks.", "",
        *lines, "",
    ]
    with RESULTS.open("a", encoding="utf-8") as f:
        f.write("\n".join(section))
    if opts.out:
        opts.out.write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(r.get("summary") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
