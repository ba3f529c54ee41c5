"""TUI speed: cold start to the first painted frame, and keystroke echo while a run is in flight.

Method
  * Cold start: a fresh interpreter per sample (``python -c``) opens the app on a scratch copy of
    vector_add in Textual's headless mode; the time runs from just before the process is spawned to
    the end of the first paint of the main screen: the first time the app hands the compositor's
    update of that screen to its output (``App._display`` outside a batch), with the update turned
    into the terminal's escape sequences as a real terminal driver would. (Textual's ready callback,
    which this used to time, comes before the panes are laid out and rendered: 0.2–0.3 s early.)
    The app starts as a person would start it: a worker is prestarted and the first run begins, in
    the background (at the priority ``kerneltui`` gives its workers). Median of N samples (10 by
    default); target ≤ 0.8 s on a 2-core CPU machine. With ``--before TREE`` the same starts run
    with another source tree on PYTHONPATH too, one of each in turn, so a change in the machine's
    load falls on both alike; the load average is stated before and after, and the split's last
    column is the app process's CPU time to the first frame, which the load changes far less than
    the wall time (a worker's own CPU is not in it). Python's bytecode caches
    are as the environment has them (``PYTHONDONTWRITEBYTECODE`` set: every start compiles
    kerneltui's modules); ``--pyc`` gives each tree a warm cache of its own (``PYTHONPYCACHEPREFIX``,
    filled by one untimed start), as an installed kerneltui has.
  * Keystroke echo: in one process, the app with a real worker runs the loop on vector_add (the
    correctness rung under the Triton interpreter, several seconds); while it runs, keys are typed
    into the editor one by one and each is timed from the key press until the character is in the
    editor's document and the next frame has been drawn (Textual's after-refresh callback). Keys are
    posted the way the terminal driver posts them (not through the test pilot, whose own waiting
    would dominate). Compared with one frame at 60 Hz (16.7 ms).

Run:  python bench/tui_latency.py [--samples 10] [--keys 40] [--before /work/main] [--starts-only]
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
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import sys, time
t0 = time.time()
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
t1 = time.time()
app = create_app(sys.argv[1])  # the options `kerneltui TASK` takes from the settings
t2 = time.time()
from textual._compositor import CompositorUpdate
display = app._display
def first_paint(screen, update):
    display(screen, update)
    if update is None or app._batch_count or not app.screen_stack or screen is not app.screen_stack[0]:
        return
    if isinstance(update, CompositorUpdate):
        update.render_segments(app.console)  # what the terminal driver writes (headless skips it)
    t3 = time.time()
    cpu = time.process_time()  # this process's CPU seconds so far: the work, whatever the machine's load
    print(f"FRAME {t3:.6f} {t0:.6f} {t1 - t0:.6f} {t2 - t1:.6f} {t3 - t2:.6f} {cpu:.6f}", flush=True)
    del app._display
    app.exit()
app._display = first_paint
app.run(headless=True, size=(160, 45))
"""
PHASES = ("interpreter start", "import the app", "create_app", "run → first frame", "CPU time to the first frame")


def scratch_task() -> Path:
    target = Path(tempfile.mkdtemp(prefix="kerneltui-bench-")) / "vector_add"
    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", target)
    return target


def cold_start(samples: int, trees: tuple[Path, ...] = (ROOT,),
               phases: list[dict[str, list[float]]] | None = None, pyc: bool = False) -> list[list[float]]:
    """Seconds to the first frame, per tree, the trees' starts interleaved; ``phases`` gets each
    tree's split (PHASES) when given. ``pyc``: each tree with a bytecode cache of its own, filled by
    one untimed start first."""
    times: list[list[float]] = [[] for _ in trees]
    split = phases if phases is not None else []
    split.extend({name: [] for name in PHASES} for _ in trees)
    caches = [tempfile.mkdtemp(prefix="kerneltui-pyc-") if pyc else None for _ in trees]
    for tree, cache in zip(trees, caches, strict=True):
        if cache is not None:
            start_once(tree, cache)
    for _ in range(samples):
        for tree, cache, got, parts in zip(trees, caches, times, split, strict=True):
            start = time.time()
            frame, began, imported, created, ran, cpu = start_once(tree, cache)
            got.append(frame - start)
            for name, value in zip(PHASES, (began - start, imported, created, ran, cpu), strict=True):
                parts[name].append(value)
    return times


def start_once(tree: Path, pyc_cache: str | None) -> tuple[float, ...]:
    """One cold start of the app from ``tree``: the child's FRAME numbers (see CHILD)."""
    from kerneltui.commands.tui import WORKER_NICE, WORKER_NICE_ENV

    env = dict(os.environ, PYTHONPATH=str(tree), KERNELTUI_CONFIG_DIR=tempfile.mkdtemp(),
               **{WORKER_NICE_ENV: str(WORKER_NICE)})
    if pyc_cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc_cache
    task = scratch_task()
    out = subprocess.run([sys.executable, "-c", CHILD, str(task)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tree)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("FRAME ")), None)
    if line is None:
        raise SystemExit(f"the app did not start ({tree}):\n{out.stderr[-3000:]}")
    return tuple(map(float, line.split()[1:]))


def bytecode_note(pyc: bool) -> str:
    if pyc:
        return "bytecode cached (--pyc)"
    return "no bytecode cache (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else \
        "bytecode as the trees have it"


def split_note(split: dict[str, list[float]]) -> str:
    return "medians: " + ", ".join(f"{name} {statistics.median(values):.2f}" for name, values in split.items())


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


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
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--before", help="another source tree whose cold start is measured alongside")
    parser.add_argument("--starts-only", action="store_true", help="only the cold starts (no keystroke echo)")
    parser.add_argument("--pyc", action="store_true", help="cold starts with a warm bytecode cache per tree")
    args = parser.parse_args()
    load_before = load_average()
    trees = (ROOT, Path(args.before).resolve()) if args.before else (ROOT,)
    phases: list[dict[str, list[float]]] = []
    starts, *others = cold_start(args.samples, trees, phases, pyc=args.pyc)
    start_rows = [("cold start → first frame (s)", f"{statistics.median(starts):.3f}", f"{min(starts):.3f}",
                   f"{max(starts):.3f}", "≤ 0.8 median", f"{len(starts)} runs, {bytecode_note(args.pyc)}; {split_note(phases[0])}")]
    for tree, other, split in zip(trees[1:], others, phases[1:], strict=True):
        start_rows.append((f"cold start → first frame, {tree} (s)", f"{statistics.median(other):.3f}",
                           f"{min(other):.3f}", f"{max(other):.3f}", "before",
                           f"{len(other)} runs, interleaved; {split_note(split)}"))
    if args.starts_only:
        record(args, start_rows, load_before)
        return
    from kerneltui.commands.tui import WORKER_NICE, WORKER_NICE_ENV

    os.environ.setdefault(WORKER_NICE_ENV, str(WORKER_NICE))  # as `kerneltui` starts the app
    bare = sorted(x * 1000 for x in asyncio.run(plain_textarea_echo(args.keys)))
    idle, _ = asyncio.run(keystroke_echo(args.keys, during_run=False))
    idle_ms = sorted(x * 1000 for x in idle)
    echoes, state = asyncio.run(keystroke_echo(args.keys))
    echoes_ms = sorted(x * 1000 for x in echoes)
    p95 = echoes_ms[int(0.95 * (len(echoes_ms) - 1))]
    rows = [
        *start_rows,
        ("keystroke echo during a run (ms)", f"{statistics.median(echoes_ms):.1f}", f"{echoes_ms[0]:.1f}",
         f"{echoes_ms[-1]:.1f}", "≤ 16.7 (one frame)", f"{len(echoes_ms)} keys, p95 {p95:.1f}; rung still {state}"),
        ("keystroke echo, nothing running (ms)", f"{statistics.median(idle_ms):.1f}", f"{idle_ms[0]:.1f}",
         f"{idle_ms[-1]:.1f}", "reference", f"{len(idle_ms)} keys"),
        ("keystroke echo, bare Textual TextArea app (ms)", f"{statistics.median(bare):.1f}", f"{bare[0]:.1f}",
         f"{bare[-1]:.1f}", "floor here", f"{len(bare)} keys: the same method without kerneltui"),
    ]
    record(args, rows, load_before)


def record(args: argparse.Namespace, rows: Sequence[tuple[str, ...]], load_before: str) -> None:
    header = "| measure | median | min | max | target | notes |\n|---|---|---|---|---|---|"
    table = "\n".join([header] + [f"| {' | '.join(r)} |" for r in rows])
    machine = (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
               f"load average (1, 5, 15 min) {load_before} before, {load_average()} after")
    print(table)
    print(machine)
    with (ROOT / "bench" / "RESULTS.md").open("a", encoding="utf-8") as fh:
        fh.write(f"\n## TUI latency · {time.strftime('%Y-%m-%d %H:%M')} · {machine}\n\n"
                 f"`python bench/tui_latency.py {' '.join(sys.argv[1:])}`\n\n{table}\n")


if __name__ == "__main__":
    main()
