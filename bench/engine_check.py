"""How long `kerneltui check` takes from the shell, with the background engine and without it.

Method: every check is the real command line in a subprocess (`python -m kerneltui check TASK`);
the script reads its output as it comes and stamps two moments from the command's start: the
correctness verdict (the `[correctness]` line) and the full verdict (the `PASS`/`FAIL` line, after
the benchmark, roofline and dump). The engine gets a folder of its own, so nothing else shares it.

1. first: no engine running, the task copied into a new folder (no history: the torch.compile
   baseline is measured, not read back). The engine starts with this check.
2. new folder, engine warm: a second copy of the task in another new folder.
3. second (×N): the same folder again, each after the engine's spare workers are ready again
   (`kerneltui engine status`); the time the spares took to come back is reported too.
4. back-to-back (×N): the same folder, the next check started as soon as the previous one ended.
5. without the engine (×N): `--no-engine`, the same folder.

`--slow-inputs` replaces the task's reference with one whose `generate_input` draws its floats with
a CPU generator and then moves them to the device (as KernelBench's `get_inputs` does: about 1 s of
host work per set at vector_add's 2^26 floats), the case in which the benchmark used to stall.

Prints a table and appends it to bench/RESULTS.md with the machine, the load (`uptime` before and
after), the versions and the command.

    PYTHONPATH=$PWD python3 bench/engine_check.py --runs 5 [--task kerneltui/examples/vector_add] [--rungs ...]
    PYTHONPATH=$PWD python3 bench/engine_check.py --runs 3 --slow-inputs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"

def host_generator(reference: str) -> str:
    """vector_add's reference with its inputs drawn by a CPU generator, then moved to the device."""
    text = reference.replace("torch.Generator(device=device)", "torch.Generator()").replace(
        ", device=device, dtype=torch.float32)", ", dtype=torch.float32).to(device)")
    if text.count(".to(device)") != 2:
        raise SystemExit("--slow-inputs knows vector_add's reference.py only")
    return text


@dataclass
class Timing:
    correctness_s: float | None
    verdict_s: float | None
    exit_code: int
    device: str = ""
    notes: list[str] = field(default_factory=list)
    rungs: dict[str, float] = field(default_factory=dict)  # when each rung's verdict line appeared


def run_check(task: Path, env: dict[str, str], extra: list[str]) -> Timing:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "check", str(task), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    correctness = verdict = None
    device = ""
    rungs: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter() - started
        if line.startswith("[") and "]" in line:
            rungs.setdefault(line[1:line.index("]")], now)
        if line.startswith("[correctness]"):
            correctness = now
        elif line.startswith(("PASS", "FAIL")):
            verdict = now
        elif line.startswith("device:"):
            device = line.strip()
    err = proc.stderr.read() if proc.stderr else ""
    code = proc.wait()
    notes = [line for line in err.splitlines() if line.strip()]
    if code not in (0, 1):
        raise SystemExit(f"check failed with exit status {code}: {err[-2000:]}")
    # As each check ends (the table comes at the end): a run cut off by a time limit still says
    # how far it got and how long each check took.
    # Each rung's line with its time says where a slow check spent it (the benchmark, a dump …).
    print(f"check {' '.join(extra) or '(engine)'}: exit {code}, correctness "
          f"{'—' if correctness is None else f'{correctness:.2f} s'}, verdict "
          f"{'—' if verdict is None else f'{verdict:.2f} s'} ("
          + ", ".join(f"{name} {at:.2f}" for name, at in rungs.items()) + ")", file=sys.stderr, flush=True)
    return Timing(correctness, verdict, code, device, notes, rungs)


def engine_status(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "kerneltui", "engine", "status", "--json"], capture_output=True,
                         text=True, env=env, cwd=ROOT, check=True).stdout
    return json.loads(out)


def wait_for_spares(env: dict[str, str], timeout: float = 600.0) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        status = engine_status(env)
        pools = status.get("pools") or []
        if pools and all(p["ready"].get(role, 0) >= n for p in pools for role, n in p["wanted"].items()):
            return time.perf_counter() - started
        time.sleep(0.1)
    raise SystemExit(f"the engine's spares were not ready within {timeout:.0f} s")


def fresh_copy(task: Path, parent: Path, name: str) -> Path:
    dest = parent / name
    shutil.copytree(task, dest, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    return dest


def summary(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "—"
    if len(got) == 1:
        return f"{got[0]:.2f} s"
    med = statistics.median(got)
    return f"{med:.2f} s ({min(got):.2f}–{max(got):.2f}, n={len(got)})"


def publish(text: str, record: bool) -> None:
    """Print a result and, unless told not to, append it to bench/RESULTS.md."""
    print(text)
    if record:
        with RESULTS.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def uptime() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split(" ")[:3])
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default=str(ROOT / "kerneltui" / "examples" / "vector_add"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rungs", help="passed to check (default: the default set)")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to bench/RESULTS.md")
    parser.add_argument("--slow-inputs", action="store_true",
                        help="the task with a generate_input that works on the host (see above)")
    args = parser.parse_args()
    task = Path(args.task).resolve()
    work = Path(tempfile.mkdtemp(prefix="kte-bench-", dir="/tmp"))
    if args.slow_inputs:
        task = fresh_copy(task, work, f"{task.name}_host_inputs")
        (task / "reference.py").write_text(host_generator((task / "reference.py").read_text()))
    env = dict(os.environ, KERNELTUI_ENGINE_DIR=str(work / "e"), KERNELTUI_ENGINE_ENABLED="1",
               KERNELTUI_SESSIONS_DIR=str(work / "sessions"))
    extra = ["--rungs", args.rungs] if args.rungs else []
    load_before = uptime()
    rows: list[tuple[str, list[Timing], str]] = []
    seconds: list[Timing] = []
    try:
        first = run_check(fresh_copy(task, work, "first"), env, extra)
        rows.append(("first: no engine running, new folder", [first], ""))
        came_back = [wait_for_spares(env)]
        other = run_check(fresh_copy(task, work, "other"), env, extra)
        rows.append(("new folder, engine warm", [other], ""))
        folder = work / "first"
        for _ in range(args.runs):
            came_back.append(wait_for_spares(env))
            seconds.append(run_check(folder, env, extra))
        rows.append(("second (same folder, spares ready)", seconds,
                     f"spares back {summary(came_back)} after each check"))
        back = [run_check(folder, env, extra) for _ in range(args.runs)]
        rows.append(("back-to-back (same folder)", back, ""))
        alone = [run_check(folder, env, [*extra, "--no-engine"]) for _ in range(args.runs)]
        rows.append(("--no-engine (same folder)", alone, ""))
    finally:
        subprocess.run([sys.executable, "-m", "kerneltui", "engine", "stop"], env=env, cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    load_after = uptime()
    device = next((t.device for _, ts, _ in rows for t in ts if t.device), "?")
    lines = ["| check | to the correctness verdict | to the full verdict | notes |", "|---|---|---|---|"]
    for label, timings, note in rows:
        failed = [t for t in timings if t.exit_code != 0]
        if failed:
            note = (note + "; " if note else "") + f"{len(failed)} FAILED: {' '.join(failed[0].notes[-1:])}"
        lines.append(f"| {label} | {summary([t.correctness_s for t in timings])} | "
                     f"{summary([t.verdict_s for t in timings])} | {note} |")
    # Where the second checks' time goes: each rung's verdict line, from the command's start.
    order = [name for t in seconds for name in t.rungs]
    names = list(dict.fromkeys(order))
    lines += ["", "| rung (second checks) | its verdict line, from the command's start |", "|---|---|"]
    lines += [f"| {name} | {summary([t.rungs.get(name) for t in seconds])} |" for name in names]
    table = "\n".join(lines)
    head = (f"\n## `kerneltui check` with and without the engine ({time.strftime('%Y-%m-%d %H:%M')})\n\n"
            f"Machine: {platform.node()}, {os.cpu_count()} CPUs, {device}. Python {platform.python_version()}. "
            f"Load average (1, 5, 15 min) before {load_before}, after {load_after}.\n"
            f"Task: {task.name}{' (generate_input on the host)' if args.slow_inputs else ''}. Command: `PYTHONPATH=$PWD {Path(sys.executable).name} bench/engine_check.py "
            f"{' '.join(sys.argv[1:])}` (bench/engine_check.py; times from the command's start; "
            "median (min–max, n)).\n\n")
    publish(head + table, record=not args.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
