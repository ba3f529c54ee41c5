"""TUI speed: cold start to the first painted frame, and keystroke echo while a run is in flight.

Method
  * Cold start: a fresh interpreter per sample (``python -c``) opens the app on a scratch copy of
    vector_add in Textual's headless mode; the time runs from just before the process is spawned to
    the app's first ready frame (Textual calls the auto-pilot after the first screen is painted).
    The app starts as a person would start it: a worker is prestarted and the first run begins, in
    the background. Median of N samples; target ≤ 0.8 s on a 2-core CPU machine.
  * Keystroke echo: in one process, the app with a real worker runs the loop on vector_add (the
    correctness rung under the Triton interpreter, several seconds); while it runs, keys are typed
    into the editor one by one and each is timed from the key press until the character is in the
    editor's document and the next frame has been drawn (Textual's after-refresh callback). Keys are
    posted the way the terminal driver posts them (not through the test pilot, whose own waiting
    would dominate). Compared with one frame at 60 Hz (16.7 ms).

Run:  python bench/tui_latency.py [--samples 7] [--keys 40]
Prints a table and appends it to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
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
import sys, time
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
app = create_app(sys.argv[1], options=AppOptions(watch_themes=False))
async def first_frame(pilot):
    print(f"FRAME {time.time():.6f}", flush=True)
    app.exit()
app.run(headless=True, auto_pilot=first_frame, size=(160, 45))
"""


def scratch_task() -> Path:
    target = Path(tempfile.mkdtemp(prefix="kerneltui-bench-")) / "vector_add"
    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", target)
    return target


def cold_start(samples: int) -> list[float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERNELTUI_CONFIG_DIR=tempfile.mkdtemp())
    times = []
    for _ in range(samples):
        task = scratch_task()
        start = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, str(task)], capture_output=True, text=True, env=env,
                             timeout=120)
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("FRAME ")), None)
        if line is None:
            raise SystemExit(f"the app did not start:\n{out.stderr[-3000:]}")
        times.append(float(line.split()[1]) - start)
    return times


async def keystroke_echo(keys: int, during_run: bool = True) -> tuple[list[float], str]:
    from kerneltui.config import load_config
    from kerneltui.ui.launch import create_app
    from kerneltui.ui.options import AppOptions

    task = scratch_task()
    app = create_app(task, settings=load_config(env={}),
                     options=AppOptions(watch=True, run_on_start=False, watch_themes=False, seeds=8))
    latencies: list[float] = []
    during = "?"
    async with app.run_test(size=(160, 45)) as pilot:
        if during_run:
            app.action_run_loop()
        deadline = time.monotonic() + 120
        while during_run and app.rungs.rows["correctness"].state != "running":
            if time.monotonic() > deadline:
                raise SystemExit("the run never reached the correctness rung")
            await pilot.pause(0.05)
        from textual import events

        editor = app.editor
        editor.move_cursor((0, 0))
        for i in range(keys):
            ch = "abcdefghij"[i % 10]
            before = editor.text
            painted = asyncio.Event()
            start = time.perf_counter()
            # What the terminal driver does with a key: post it to the app, which routes it to the focus.
            app.post_message(events.Key(ch, ch))
            while editor.text == before:
                await asyncio.sleep(0)
            app.call_after_refresh(painted.set)  # the next frame, which shows the character
            await painted.wait()
            latencies.append(time.perf_counter() - start)
            await asyncio.sleep(0.05)  # a fast typist: 20 keys a second
        during = app.rungs.rows["correctness"].state
        await app.bench.scheduler.cancel()
    return latencies, during


async def plain_textarea_echo(keys: int) -> list[float]:
    """The same measurement on a bare Textual app with one TextArea: the floor on this machine."""
    from textual import events
    from textual.app import App, ComposeResult
    from textual.widgets import TextArea

    source = (ROOT / "kerneltui" / "examples" / "vector_add" / "kernel.py").read_text()

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield TextArea.code_editor(source, language="python")

    app = Bare()
    latencies: list[float] = []
    async with app.run_test(size=(160, 45)) as pilot:
        editor = app.query_one(TextArea)
        editor.focus()
        await pilot.pause()
        for i in range(keys):
            ch = "abcdefghij"[i % 10]
            before = editor.text
            painted = asyncio.Event()
            start = time.perf_counter()
            app.post_message(events.Key(ch, ch))
            while editor.text == before:
                await asyncio.sleep(0)
            app.call_after_refresh(painted.set)
            await painted.wait()
            latencies.append(time.perf_counter() - start)
            await asyncio.sleep(0.05)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--keys", type=int, default=40)
    args = parser.parse_args()
    starts = cold_start(args.samples)
    bare = sorted(x * 1000 for x in asyncio.run(plain_textarea_echo(args.keys)))
    idle, _ = asyncio.run(keystroke_echo(args.keys, during_run=False))
    idle_ms = sorted(x * 1000 for x in idle)
    echoes, state = asyncio.run(keystroke_echo(args.keys))
    echoes_ms = sorted(x * 1000 for x in echoes)
    p95 = echoes_ms[int(0.95 * (len(echoes_ms) - 1))]
    rows = [
        ("cold start → first frame (s)", f"{statistics.median(starts):.3f}", f"{min(starts):.3f}", f"{max(starts):.3f}",
         "≤ 0.8 median", f"{len(starts)} runs"),
        ("keystroke echo during a run (ms)", f"{statistics.median(echoes_ms):.1f}", f"{echoes_ms[0]:.1f}",
         f"{echoes_ms[-1]:.1f}", "≤ 16.7 (one frame)", f"{len(echoes_ms)} keys, p95 {p95:.1f}; rung still {state}"),
        ("keystroke echo, nothing running (ms)", f"{statistics.median(idle_ms):.1f}", f"{idle_ms[0]:.1f}",
         f"{idle_ms[-1]:.1f}", "reference", f"{len(idle_ms)} keys"),
        ("keystroke echo, bare Textual TextArea app (ms)", f"{statistics.median(bare):.1f}", f"{bare[0]:.1f}",
         f"{bare[-1]:.1f}", "floor here", f"{len(bare)} keys: the same method without kerneltui"),
    ]
    header = "| measure | median | min | max | target | notes |\n|---|---|---|---|---|---|"
    table = "\n".join([header] + [f"| {' | '.join(r)} |" for r in rows])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    machine = (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
               f"load average {load:.1f} at the end")
    print(table)
    print(machine)
    with (ROOT / "bench" / "RESULTS.md").open("a", encoding="utf-8") as fh:
        fh.write(f"\n## TUI latency · {time.strftime('%Y-%m-%d %H:%M')} · {machine}\n\n"
                 f"`python bench/tui_latency.py --samples {args.samples} --keys {args.keys}`\n\n{table}\n")


if __name__ == "__main__":
    main()
