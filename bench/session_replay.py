"""Opening a large session for replay: 10,000 events, 500 versions (target: under 1 s).

Method
  * The session is synthetic but written by the real writer (``SessionLog``) on a copy of
    vector_add: per version a saved kernel text (its own snapshot in ``sources/``), the save
    (FileChanged), a run of 8 rungs with a benchmark result (RunStarted, 7×RungStarted/RungFinished,
    RunFinished), and a chat exchange (UserMessage, AgentMessage, TokenUsage): 20 events per version.
  * load + timeline: ``load_session`` (read, decode every record into events) and ``Timeline``
    (versions, kernel and chart indexes), in this process; median of N.
  * replay, warm: in this process (kerneltui and Textual already imported), ``create_replay_app`` on
    the session to the first frame with the replay bar at step 0.
  * replay, cold: a fresh interpreter runs what ``kerneltui replay SESSION`` runs (``create_replay_app``)
    in Textual's headless mode; the time runs from just before the process is spawned to the first
    frame with the replay bar shown at step 0. Median of N (imports of Textual included).
  * replay, jump to the end: in the cold process, after the first frame, the timeline jumps to the
    last step (the chat rebuilt from its last 200 events, the last run's rungs, the kernel, the
    chart of 500 points), timed until the next frame is drawn.

Run:  python bench/session_replay.py [--samples 7] [--versions 500]
Prints a table and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import sys, time, asyncio
from pathlib import Path
from kerneltui.config import load_config
from kerneltui.ui.launch import create_replay_app
from kerneltui.ui.options import AppOptions
app = create_replay_app(Path(sys.argv[1]), settings=load_config(env={}), options=AppOptions(watch_themes=False))
async def first_frame(pilot):
    while app.replay is None or app.replay.bar is None:
        await asyncio.sleep(0)
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await done.wait()
    print(f"FRAME {time.time():.6f}", flush=True)
    start = time.perf_counter()
    app.replay.go(len(app.replay.timeline))
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await done.wait()
    print(f"JUMP {time.perf_counter() - start:.6f}", flush=True)
    app.exit()
app.run(headless=True, auto_pilot=first_frame, size=(160, 45))
"""


def write_session(folder: Path, versions: int) -> tuple[Path, int]:
    from kerneltui.core import events as ev
    from kerneltui.core.rungs.result import ok
    from kerneltui.core.session import SessionLog
    from kerneltui.core.task import source_hash
    from kerneltui.core.task_loaders.load import load_task

    task_dir = folder / "vector_add"
    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", task_dir)
    task = load_task(str(task_dir))
    log = SessionLog.create(folder / "sessions", task, "bench", name="large")
    base = task.kernel_source()
    rungs = ["prechecks", "compile", "run", "correctness", "benchmark", "roofline", "dump"]
    count = 0

    def emit(event: ev.Event) -> None:
        nonlocal count
        log.write(event)
        count += 1

    for i in range(versions):
        text = base + f"\n# version {i}: tuning note {'x' * 40}\n"
        digest = log.store_source(text, "saved")
        run_id = f"r{i}"
        emit(ev.FileChanged(path=str(task.kernel_path), source_hash=digest))
        emit(ev.RunStarted(run_id=run_id, task=task.name, kernel_file=task.kernel_file, source_hash=digest,
                           rungs=rungs, origin="save"))
        results = []
        for name in rungs:
            emit(ev.RungStarted(run_id=run_id, rung=name))
            metrics = {}
            if name == "benchmark":
                median = 0.2 * (1 + 0.5 * ((i * 7919) % 100) / 100)
                metrics = {"median_ms": median, "q1_ms": median * 0.99, "q3_ms": median * 1.01, "mean_ms": median,
                           "stderr_ms": median * 0.002, "speedup_vs_reference": 0.3 / median,
                           "cases": [{"index": 0, "label": "n=67108864", "candidate": {"median_ms": median},
                                      "reference": {"median_ms": 0.3}, "floor_ms": 0.16}]}
            result = ok(name, f"{name} fine", metrics=metrics)
            results.append(result)
            emit(ev.RungFinished(run_id=run_id, result=result))
        emit(ev.RunFinished(run_id=run_id, ok=True, results=results, duration_s=2.0))
        emit(ev.UserMessage(text=f"try variant {i}"))
        emit(ev.AgentMessage(turn_id=f"t{i}", text=f"Variant {i}: " + "a reasoned paragraph. " * 12))
        emit(ev.TokenUsage(turn_id=f"t{i}", provider="scripted", model="scripted", input_tokens=1000,
                           output_tokens=100, session_input_tokens=1000 * (i + 1), session_output_tokens=100 * (i + 1)))
    log.close()
    assert source_hash(base)  # the start snapshot was written by create()
    return log.folder, count


def load_times(folder: Path, samples: int) -> tuple[list[float], int, int]:
    from kerneltui.core.session import Timeline, load_session

    times = []
    events = versions = 0
    for _ in range(samples):
        start = time.perf_counter()
        loaded = load_session(folder)
        timeline = Timeline(loaded)
        timeline.plan(len(timeline))
        times.append(time.perf_counter() - start)
        events, versions = len(loaded.events), len(timeline.versions)
    return times, events, versions


def warm_replay(folder: Path, samples: int) -> list[float]:
    """In this process (imports done): create_replay_app to the first frame with the bar at step 0."""
    import asyncio

    from kerneltui.config import load_config
    from kerneltui.ui.launch import create_replay_app
    from kerneltui.ui.options import AppOptions

    async def once() -> float:
        start = time.perf_counter()
        app = create_replay_app(folder, settings=load_config(env={}), options=AppOptions(watch_themes=False))
        async with app.run_test(size=(160, 45)) as pilot:
            while app.replay is None or app.replay.bar is None:
                await pilot.pause(0)
            done = asyncio.Event()
            app.call_after_refresh(done.set)
            await done.wait()
            return time.perf_counter() - start

    return [asyncio.run(once()) for _ in range(samples)]


def cold_replay(folder: Path, samples: int) -> tuple[list[float], list[float]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERNELTUI_CONFIG_DIR=tempfile.mkdtemp())
    opens, jumps = [], []
    for _ in range(samples):
        start = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, str(folder)], capture_output=True, text=True, env=env,
                             timeout=300)
        frame = next((ln for ln in out.stdout.splitlines() if ln.startswith("FRAME ")), None)
        jump = next((ln for ln in out.stdout.splitlines() if ln.startswith("JUMP ")), None)
        if frame is None or jump is None:
            raise SystemExit(f"the replay did not open:\n{out.stderr[-3000:]}")
        opens.append(float(frame.split()[1]) - start)
        jumps.append(float(jump.split()[1]))
    return opens, jumps


def row(name: str, values: list[float], target: str, note: str) -> str:
    ms = [v * 1000 for v in values]
    return (f"| {name} | {statistics.median(ms):.0f} ms | {min(ms):.0f} ms | {max(ms):.0f} ms | {target} | {note} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--versions", type=int, default=500)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to bench/RESULTS.md")
    args = parser.parse_args()
    import textual

    with tempfile.TemporaryDirectory(prefix="kerneltui-bench-") as tmp:
        folder, written = write_session(Path(tmp), args.versions)
        size = (folder / "log.jsonl").stat().st_size
        loads, events, versions = load_times(folder, args.samples)
        warm = warm_replay(folder, args.samples)
        small = warm_replay(ROOT / "sessions" / "vector_add_demo", args.samples)
        opens, jumps = cold_replay(folder, args.samples)
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"## Session replay: {events:,} events, {versions} versions · {time.strftime('%Y-%m-%d %H:%M')} · "
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, Textual {textual.__version__}, "
        f"load average {load_avg}",
        "",
        f"`python bench/session_replay.py --samples {args.samples} --versions {args.versions}` · log.jsonl "
        f"{size / 1e6:.1f} MB, {written:,} events written by SessionLog. Median, min and max of {args.samples} samples.",
        "",
        "| measure | median | min | max | target | notes |",
        "|---|---|---|---|---|---|",
        row("load + timeline (in process)", loads, "< 1 s", "load_session, Timeline, plan of the last step"),
        row("replay opened, warm process (first frame)", warm, "< 1 s",
            "load, timeline, app, first frame at step 0 (kerneltui already imported)"),
        row("same, the 2-version example session", small, "reference",
            "sessions/vector_add_demo (216 events): the app's own start, whatever the session"),
        row("replay opened, cold (first frame)", opens, "—",
            "fresh interpreter: imports, load, timeline, app, first frame at step 0"),
        row("jump to the last step", jumps, "—", "chat rebuilt from its last 200 events (of 1,000), last run, kernel, chart of 500 points"),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
