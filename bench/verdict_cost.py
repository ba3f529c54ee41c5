"""Save → correctness verdict, two versions of kerneltui side by side (the cost of a change).

Runs ``bench/watch_latency.py`` of each checkout in turn, ROUNDS times (before, after, before, …),
so both see the same machine load, and reports each round's median and the ratio of the medians
of all saves. Used for the judge's cost: the kernel and the reference in two processes instead of
one.

Usage: python bench/verdict_cost.py --before DIR --after DIR [--example vector_add] [--rounds 3] [--saves 5]
       [--after-env VAR=VALUE ...]

``--after-env`` sets a variable for the after side only: one checkout against itself with a setting
changed (``--before . --after . --after-env KERNELTUI_SANDBOX_ZYGOTE_ON_GPU=true``).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAVE = re.compile(r"^save (\d+): verdict after ([0-9.]+) s")


def one(checkout: Path, example: str, saves: int, gap: float, extra_env: dict[str, str]) -> list[float]:
    # The checkout first; the rest of PYTHONPATH stays (where the machine's packages live).
    env = dict(os.environ, **extra_env, PYTHONPATH=os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, str(checkout / "bench" / "watch_latency.py"), "--example", example,
                           "--saves", str(saves), "--gap", str(gap), "--no-record"],
                          capture_output=True, text=True, env=env, cwd=checkout, timeout=900)
    got = [float(m.group(2)) for m in map(SAVE.match, proc.stdout.splitlines()) if m and int(m.group(1)) > 0]
    if not got:
        raise SystemExit(f"{checkout}: no verdicts\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--example", default="vector_add")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--saves", type=int, default=5)
    ap.add_argument("--gap", type=float, default=2.0)
    ap.add_argument("--label", default="")
    ap.add_argument("--after-env", action="append", default=[], metavar="VAR=VALUE",
                    help="a variable set for the after side only (repeatable)")
    args = ap.parse_args()
    if any("=" not in item or item.startswith("=") for item in args.after_env):
        ap.error("--after-env takes VAR=VALUE")
    after_env = dict(item.partition("=")[::2] for item in args.after_env)
    samples: dict[str, list[float]] = {"before": [], "after": []}
    loads = []
    for r in range(args.rounds):
        for name in ("before", "after"):
            loads.append(os.getloadavg()[0])
            got = one(Path(getattr(args, name)).resolve(), args.example, args.saves, args.gap,
                      after_env if name == "after" else {})
            samples[name] += got
            print(f"round {r} {name}: median {statistics.median(got):.3f} s over {len(got)} saves", flush=True)
    rows = []
    for name, vals in samples.items():
        q = statistics.quantiles(vals, n=4)
        rows.append(f"| {name} | {len(vals)} | {statistics.median(vals):.3f} | {q[0]:.3f}–{q[2]:.3f} |")
    ratio = statistics.median(samples["after"]) / statistics.median(samples["before"])
    text = (f"\n## {time.strftime('%Y-%m-%d %H:%M')} · verdict_cost · {platform.node()} ({os.cpu_count()} CPUs) "
            f"{args.label}\n\nCommand: `python bench/verdict_cost.py --before {args.before} --after {args.after} "
            f"--example {args.example} --rounds {args.rounds} --saves {args.saves} --gap {args.gap:g}`"
            # The settings a run was made with; the test log is where gpu_all.sh collects outcomes, not one.
            + "".join(f" with {k}={os.environ[k]}" for k in sorted(os.environ)
                      if k.startswith("KERNELTUI_") and k != "KERNELTUI_TEST_LOG")
            + "".join(f", after side with {k}={v}" for k, v in sorted(after_env.items()))
            + "; load average during the runs "
            f"{min(loads):.1f}–{max(loads):.1f}.\n\n| version | saves | median save → correctness verdict (s) | IQR (s) |\n"
            f"|---|---|---|---|\n" + "\n".join(rows) + f"\n\nafter / before (medians): {ratio:.2f}\n")
    print(text)
    with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
