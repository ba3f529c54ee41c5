"""Run the integrity galleries and record the outcome in bench/RESULTS.md.

    python bench/integrity_gallery.py            # on the GPU machine: the GPU cheats
    python bench/integrity_gallery.py --cpu      # on a machine without a GPU: the CPU gallery

It runs pytest on tests/cheats (the GPU file with ``-m gpu``), prints one row per test with its
outcome, and appends a section to bench/RESULTS.md with the device, the counts and the wall time.
Nothing here times kernels: the numbers are pass/fail counts of the cheat and honest galleries.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"


def device_name() -> str:
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.get_device_name(0) "
                            "if torch.cuda.is_available() else 'no GPU')"], capture_output=True, text=True)
    return probe.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="the CPU gallery instead of the GPU cheats")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to RESULTS.md")
    opts = parser.parse_args()
    cmd = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"]
    cmd += ["tests/cheats"] if opts.cpu else ["-m", "gpu", "tests/cheats/test_cheats_gpu.py"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    rows = re.findall(r"^(PASSED|FAILED|SKIPPED|ERROR) (\S+)", proc.stdout, re.M)
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1].strip("= ")
    print(f"{'outcome':8}  test")
    for outcome, test in rows:
        print(f"{outcome:8}  {test}")
    print(summary)
    if proc.returncode not in (0, 5):
        print(proc.stdout[-6000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
    if not opts.no_record:
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
        lines = [f"\n## Integrity gallery · {stamp} · {device_name()} · {platform.machine()}, Python "
                 f"{platform.python_version()}\n", f"`{' '.join(['python', *cmd[1:]])}`: **{summary}** in {wall:.0f} s\n",
                 "| test | outcome |", "|---|---|"]
        lines += [f"| {test.split('::', 1)[-1]} | {outcome.lower()} |" for outcome, test in rows]
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        print(f"appended to {RESULTS}")
    return 0 if proc.returncode in (0, 5) else 1


if __name__ == "__main__":
    sys.exit(main())
