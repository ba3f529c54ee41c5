"""The side-work check replayed on raw gaps measured on a GPU: false alarms and catches of a rule,
without a GPU.

`bench/sidework_data.py` keeps every run's raw gaps (the timed calls', the interleaved honest
controls', the confirmation's) in OUT/sidework.json. `pack` trims such files to what the check reads
and stores them, gzipped, under bench/data/ with where and when they were measured; `replay` runs
the check exactly as the benchmark's report does (``core.bench.stats.side_work_finding``) on every
stored run, under the current rule and under the ratios given, and prints per kernel how many
honest runs it would fail and how many cheats it would catch. The unit test
tests/unit/test_sidework_h200_data.py holds the current rule to the stored H200 runs.

Usage:
  python bench/sidework_replay.py pack --label LABEL --out bench/data/sidework_h200.json.gz SIDEWORK.json...
  python bench/sidework_replay.py replay [--data bench/data/sidework_h200.json.gz] [--ratios 1,2,3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT / "bench" / "data" / "sidework_h200.json.gz"
KEPT = ("straggle_us", "control_straggle_us", "confirm_straggle_us", "confirm_control_us",
        "idle_straggle_us", "busy_straggle_us")


class StoredRun(TypedDict):
    measured: str  # which measurement (the label given to pack)
    kernel: str  # "vector_add", "honest:<name>" or "cheat:<name>"
    run: int
    status: str  # the benchmark's status when it was measured
    kernel_us: float | None  # the call's median time
    case: dict[str, list[float] | None]  # the raw gaps (KEPT)


def load(path: Path = DATA) -> list[StoredRun]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)["runs"]


def _trimmed(run: dict[str, Any], label: str) -> StoredRun | None:
    case = (run.get("cases") or [{}])[0]
    if not case.get("straggle_us"):
        return None  # the benchmark did not time this run (an error before the series)
    times = case.get("times_ms") or []
    return StoredRun(measured=label, kernel=run["kernel"], run=run["run"], status=run["status"],
                     kernel_us=round(1e3 * statistics.median(times), 2) if times else None,
                     case={k: ([round(v, 2) for v in case[k]] if case.get(k) is not None else None) for k in KEPT})


def pack(sources: list[Path], label: str, out: Path) -> int:
    runs = load(out) if out.exists() else []
    added = [t for src in sources for r in json.loads(src.read_text()) if (t := _trimmed(r, label))]
    runs = [r for r in runs if r["measured"] != label] + added
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump({"about": "raw side-work gaps from bench/sidework_data.py, trimmed by bench/sidework_replay.py pack",
                   "runs": runs}, fh)
    print(f"{out}: {len(added)} runs as {label!r}, {len(runs)} in all")
    return 0


class Replayed(TypedDict):
    kernel: str
    honest: bool
    runs: int
    flagged_first: int  # flagged by the first measurement
    failed: int  # flagged, and again when measured a second time (where it was)


def replay_runs(runs: list[StoredRun], control_ratio: float) -> Iterator[Replayed]:
    from kerneltui.core.bench.stats import side_work_finding
    from kerneltui.settings.bench import BenchSettings

    floor = BenchSettings().straggle_us
    by_kernel: dict[str, Replayed] = {}
    for run in runs:
        finding = side_work_finding(run["case"], floor, run["kernel_us"], control_ratio=control_ratio)
        row = by_kernel.setdefault(run["kernel"], Replayed(kernel=run["kernel"], honest=not run["kernel"].startswith(
            "cheat:"), runs=0, flagged_first=0, failed=0))
        row["runs"] += 1
        row["flagged_first"] += finding.first.flagged
        row["failed"] += finding.failed
    yield from by_kernel.values()


def replay(data: Path, ratios: list[float]) -> int:
    from kerneltui.core.bench.stats import CONTROL_RATIO

    runs = load(data)
    measured = sorted({r["measured"] for r in runs})
    print(f"{data}: {len(runs)} runs from {', '.join(measured)}\n")
    print("| rule | honest runs | failed (false alarms) | flagged once | cheats caught by the side-work check |")
    print("|---|---|---|---|---|")
    for ratio in ratios:
        rows = list(replay_runs(runs, ratio))
        honest = [r for r in rows if r["honest"]]
        cheats = [r for r in rows if not r["honest"]]
        caught = ", ".join(f"{r['kernel'][6:]} {r['failed']}/{r['runs']}" for r in cheats)
        name = f"calls ≤ {ratio:g}× controls" + (" (current)" if ratio == CONTROL_RATIO else "")
        print(f"| {name} | {sum(r['runs'] for r in honest)} | {sum(r['failed'] for r in honest)} | "
              f"{sum(r['flagged_first'] for r in honest)} | {caught} |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("sources", nargs="+", type=Path)
    p.add_argument("--label", required=True, help="where and when, e.g. 'H200 2026-12-03 21:14 UTC'")
    p.add_argument("--out", type=Path, default=DATA)
    r = sub.add_parser("replay")
    r.add_argument("--data", type=Path, default=DATA)
    r.add_argument("--ratios", default="1,2,2.5,3,4")
    args = ap.parse_args()
    if args.command == "pack":
        return pack(args.sources, args.label, args.out)
    return replay(args.data, [float(x) for x in args.ratios.split(",")])


if __name__ == "__main__":
    sys.exit(main())
