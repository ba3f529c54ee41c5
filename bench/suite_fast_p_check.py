"""Recount a suite's fast_p by hand, per problem, from ``kerneltui suite --json`` output, and compare.

Method
  * KernelBench's fast_p: fast_p = (1 / N) * sum over the N problems of [the problem's counted sample
    is correct and its speedup > p]. A problem without a candidate, or whose task failed to load,
    counts as a failure. The counted sample is the lowest-numbered one (``sample <s>`` in KernelBench's
    run layout; otherwise the first listed) for ``first``, or the correct one with the largest
    speedup for ``best``.
  * This script does not import kerneltui's scoring (``core/suite/score.py``): it reads the JSON's
    per-item rows, prints one line per problem (the sample counted, verdict, speedup) and the recount
    next to the suite's own ``summary.fast_p``, and exits 1 if any threshold differs.

Run:  kerneltui suite LEVEL1 --candidates RUN --json [--sample best] > suite.json
      python bench/suite_fast_p_check.py suite.json
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

SAMPLE = re.compile(r"sample (\d+)")


def counted(rows: list[dict[str, Any]], sample: str) -> dict[str, dict[str, Any]]:
    problems: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        problems.setdefault(row["problem"], []).append(row)
    chosen = {}
    for problem, items in problems.items():
        def number(row: dict[str, Any]) -> int:
            m = SAMPLE.fullmatch(str(row["candidate"]))
            return int(m.group(1)) if m else 0

        ordered = sorted(items, key=number)
        pick = ordered[0]
        if sample == "best":
            correct = [r for r in ordered if r["status"] == "correct"]
            if correct:
                pick = max(correct, key=lambda r: r.get("speedup") or 0.0)
        chosen[problem] = pick
    return chosen


def main(path: str) -> int:
    report = json.loads(open(path, encoding="utf-8").read())
    summary = report["summary"]
    sample = summary.get("sample", "first")
    chosen = counted(report["results"], sample)
    print(f"{len(chosen)} problems, counted by the {sample} sample")
    for problem, row in chosen.items():
        speed = f"{row['speedup']:.2f}x" if row.get("speedup") else "-"
        print(f"  {problem:<40} {row['candidate']:<24} {row['status']:<12} {speed}")
    mismatches = 0
    for p_text, theirs in (summary.get("fast_p") or {}).items():
        p = float(p_text)
        ours = sum(1 for r in chosen.values() if r["status"] == "correct" and (r.get("speedup") or 0) > p) / len(chosen)
        same = theirs is not None and abs(theirs - ours) < 1e-12
        mismatches += not same
        print(f"fast_{p_text}: by hand {ours:.4f}   kerneltui {theirs}   {'same' if same else 'DIFFERENT'}")
    if not summary.get("fast_p"):
        print("no fast_p in the report (no GPU ran the suite)")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
