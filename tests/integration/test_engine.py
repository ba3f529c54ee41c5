"""The background engine with real processes: a real engine, real workers, the real command line.

Each test gets an engine of its own (its folder under /tmp: a Unix socket path must stay short) and
stops it at the end; whatever the test started and left running is killed by pid.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kerneltui.core.engine.channel import AuthError, Channel, read_key
from kerneltui.core.engine.client import EngineClient, EngineUnavailable
from kerneltui.core.engine.settings import EngineFiles, EngineSettings
from kerneltui.core.sandbox.reaper import pid_alive
from tests.conftest import DATA, ROOT, copy_tree, run_cli
from tests.engine_helpers import alive, descendants, end_engines_in, wait_until


@dataclass
class EngineUnderTest:
    folder: Path
    env: dict[str, str]
    monkeypatch: pytest.MonkeyPatch

    def set(self, name: str, value: str) -> None:
        """An engine setting for this process (and the engine it starts) and the commands run."""
        self.env[name] = value
        self.monkeypatch.setenv(name, value)

    @property
    def files(self) -> EngineFiles:
        return EngineFiles.in_dir(self.folder)

    def client(self) -> EngineClient:
        settings = EngineSettings(enabled=True, idle_s=float(self.env["KERNELTUI_ENGINE_IDLE_S"]), dir=self.folder,
                                  candidate_spares=2, judge_spares=1, start_timeout_s=60.0)
        return EngineClient(settings, self.files)

    def pid(self) -> int | None:
        try:
            text = self.files.lock.read_text().strip()
        except OSError:
            return None
        return int(text) if text and pid_alive(int(text)) else None

    def cli(self, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, timeout=timeout, env={**self.env, **env})

    def status(self, **env: str) -> dict[str, Any]:
        proc = self.cli("engine", "status", "--json", **env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Any:
    folder = Path(tempfile.mkdtemp(prefix="kte-", dir="/tmp"))
    handle = EngineUnderTest(folder, {}, monkeypatch)
    for name, value in (("KERNELTUI_ENGINE_ENABLED", "1"), ("KERNELTUI_ENGINE_DIR", str(folder)),
                        ("KERNELTUI_ENGINE_IDLE_S", "300")):
        handle.set(name, value)
    yield handle
    end_engines_in(folder, handle.env)


def normalised(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what changes from run to run: times, the names of the workers' cgroups, and the
    last digits of a metric over inputs drawn with the run's own hidden seed."""

    def clean(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: clean(v, k) for k, v in value.items() if not (k.endswith("_s") or k in ("version", "seconds"))}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, str):
            value = re.sub(r"kerneltui-\d+-\d+", "kerneltui-#", value)  # a worker's cgroup, named by the process
            return re.sub(r"\d+\.\d+ ?s\b", "#s", value)
        if isinstance(value, float):
            return round(value, 6)
        return value

    return clean(report)


def test_check_through_engine_gives_the_report_of_a_check_without(engine, example_task):
    task = example_task("vector_add")
    alone = engine.cli("check", str(task), "--json", "--seeds", "1", "--no-engine")
    assert alone.returncode == 0, alone.stderr
    assert engine.pid() is None, "--no-engine must not start an engine"
    first = engine.cli("check", str(task), "--json", "--seeds", "1")
    assert first.returncode == 0, first.stderr
    pid = engine.pid()
    assert pid is not None, "the first check starts the engine"
    assert normalised(json.loads(first.stdout)) == normalised(json.loads(alone.stdout))
    # The text form too, line for line once the times are taken out.
    text_alone = engine.cli("check", str(task), "--seeds", "1", "--rungs", "correctness", "--no-engine")
    text_engine = engine.cli("check", str(task), "--seeds", "1", "--rungs", "correctness")
    assert text_engine.returncode == text_alone.returncode == 0
    assert normalised(text_engine.stdout.splitlines()) == normalised(text_alone.stdout.splitlines())
    assert text_engine.stderr == ""


def test_second_check_finds_warm_workers(engine, example_task):
    task = example_task("vector_add")
    client = engine.client()
    from kerneltui.core.engine.messages import RunRequest
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import LoadOptions

    options = RunOptions(rungs=["correctness"], seeds=1, origin="check")
    events: list[Any] = []

    async def check() -> Any:
        return await client.run(RunRequest.make(task, None, LoadOptions(), options), events.append)

    first = asyncio.run(check())
    assert client.started_engine
    assert first.ok and first.result("correctness").status == "ok"
    # Between checks the engine brings its spares back up; the next check takes ready workers.
    ready = wait_until(lambda: all(
        p["ready"].get(role, 0) >= p["wanted"][role] for p in engine.status()["pools"] for role in p["wanted"]), 240, 0.5)
    assert ready, engine.status()
    second = asyncio.run(check())
    info = second.data["engine"]
    assert info["pid"] == first.data["engine"]["pid"] == engine.pid()
    assert info["run_number"] == 2
    assert info["ready_at_start"]["candidate"] >= 1 and info["ready_at_start"]["judge"] >= 1
    assert [r.name for r in second.results] == [r.name for r in first.results]
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("RunStarted") == kinds.count("RunFinished") == 2


def test_a_client_without_the_key_is_refused(engine, example_task):
    started = engine.cli("engine", "start")
    assert started.returncode == 0, started.stderr
    files = engine.files
    good = read_key(files.key)
    assert files.key.stat().st_mode & 0o777 == 0o600
    assert files.socket.stat().st_mode & 0o777 == 0o600

    async def handshake(key: bytes) -> dict[str, Any]:
        reader, writer = await asyncio.open_unix_connection(str(files.socket))
        channel = Channel(reader, writer)
        try:
            return await channel.connect(key, {"client_pid": os.getpid()})
        finally:
            await channel.close()

    with pytest.raises(AuthError, match="refused this client"):
        asyncio.run(handshake(bytes(b ^ 0xFF for b in good)))
    assert asyncio.run(handshake(good))["pid"] == engine.pid()  # still serving the right key
    log = files.log.read_text()
    assert "refused a client: the client could not prove it holds the engine's key" in log

    # A key file others can read is not trusted: the command says so and checks without the engine.
    files.key.chmod(0o644)
    task = example_task("vector_add")
    proc = engine.cli("check", str(task), "--rungs", "run")
    assert proc.returncode == 0, proc.stderr
    assert "readable by you alone (chmod 600)" in proc.stderr
    assert "running without the engine" in proc.stderr
    with pytest.raises(EngineUnavailable, match="chmod 600"):
        asyncio.run(engine.client().status())
    files.key.chmod(0o600)
    assert engine.status()["runs_served"] == 0


def test_engine_stops_when_idle_and_takes_its_workers(engine):
    engine.set("KERNELTUI_ENGINE_IDLE_S", "3")
    started = engine.cli("engine", "start", "--warm", "triton", "--wait", timeout=240)
    assert started.returncode == 0, started.stdout + started.stderr
    pid = engine.pid()
    assert pid is not None
    workers = descendants(pid)
    assert len(workers) >= 3, "two candidate workers and a judge are kept warm"
    assert wait_until(lambda: not pid_alive(pid), 30), "the engine did not stop when idle"
    assert wait_until(lambda: not alive(workers), 10), f"workers left running: {alive(workers)}"
    assert not engine.files.socket.exists()
    assert "idle for 3 s: stopping" in engine.files.log.read_text()
    status = engine.cli("engine", "status")
    assert "no engine is running" in status.stdout


HANGING_KERNEL = '''
import os
import time

import torch
import triton
import triton.language as tl

HOLD = {hold!r}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    while os.path.exists(HOLD):  # the test holds the kernel here while it kills the engine
        time.sleep(0.05)
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
'''


def test_engine_killed_mid_run_leaves_no_worker_and_the_check_says_so(engine, example_task, tmp_path):
    hold = tmp_path / "hold"
    hold.write_text("")
    task = example_task("vector_add", HANGING_KERNEL.format(hold=str(hold)))
    started = engine.cli("engine", "start", "--warm", "triton", "--wait", timeout=240)
    assert started.returncode == 0, started.stderr
    pid = engine.pid()
    assert pid is not None
    check = subprocess.Popen([sys.executable, "-m", "kerneltui", "check", str(task), "--rungs", "run", "--seeds", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, **engine.env})
    try:
        # The run rung's call is held in the candidate's worker: the run is in flight.
        assert wait_until(lambda: any(s["running"] and s["running"][0]["state"] == "running"
                                      for s in [engine.status()]), 120, 0.2)
        assert engine.status()["running"][0]["name"] == "vector_add"
        shown = engine.cli("engine", "status").stdout
        assert f"running: vector_add in {task.resolve()} (compile, run)" in shown, shown
        time.sleep(1.0)
        workers = descendants(pid)
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not alive(workers), 15), f"workers left running: {alive(workers)}"
        hold.unlink()  # the check now runs again without the engine, and passes
        out, err = check.communicate(timeout=240)
    finally:
        if check.poll() is None:
            check.kill()
    assert check.returncode == 0, out + err
    assert f"the engine (pid {pid}) was killed or crashed during the run" in err
    assert "running the check again without the engine" in err
    assert "[run] ok" in out and "PASS" in out


def test_several_clients_at_once(engine, example_task):
    first, second = example_task("vector_add"), example_task("softmax")
    command = [sys.executable, "-m", "kerneltui", "check", "--rungs", "run", "--seeds", "1"]
    env = {**os.environ, **engine.env}
    # Two checks of one task queue behind each other; a check of another task runs beside them.
    procs = [subprocess.Popen([*command, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=ROOT, env=env) for path in (first, first, second)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out + err
        assert "[run] ok" in out and err == ""
    status = engine.status()
    assert status["runs_served"] == 3
    assert len({engine.pid()}) == 1 and not status["running"]


def test_engine_status_start_stop(engine):
    assert "no engine is running" in engine.cli("engine", "status").stdout
    started = engine.cli("engine", "start")
    assert started.returncode == 0 and "started" in started.stdout, started.stderr
    again = engine.cli("engine", "start")
    assert "already running" in again.stdout
    pid = engine.pid()
    status = engine.cli("engine", "status")
    assert f"engine pid {pid}" in status.stdout
    stopped = engine.cli("engine", "stop")
    assert f"engine (pid {pid}) stopped" in stopped.stdout
    assert not pid_alive(pid)
    assert not engine.files.socket.exists()


def test_an_engine_of_another_environment_is_its_own_and_stop_all_stops_it(engine):
    other = {"KERNELTUI_SANDBOX_ZYGOTE": "false"}  # how the workers start: another engine
    assert engine.cli("engine", "start", **other).returncode == 0
    assert engine.cli("engine", "start").returncode == 0
    mine, theirs = engine.status(), engine.status(**other)
    assert mine["pid"] != theirs["pid"] and mine["socket"] != theirs["socket"]
    assert "other engines in" in engine.cli("engine", "status").stdout
    stopped = engine.cli("engine", "stop", "--all")
    assert f"engine (pid {theirs['pid']}) on {theirs['socket']} stopped" in stopped.stdout
    assert not pid_alive(mine["pid"]) and not pid_alive(theirs["pid"])


def test_checks_with_other_benchmark_settings_share_one_engine(engine, example_task):
    """[benchmark] goes with each run, so a shell with other benchmark settings uses the same warm engine."""
    task = example_task("vector_add")
    for seconds in ("2", "5"):
        proc = engine.cli("check", str(task), "--rungs", "run", "--seeds", "1", "--no-history",
                          KERNELTUI_BENCHMARK_MAX_SECONDS=seconds)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    mine, theirs = engine.status(), engine.status(KERNELTUI_BENCHMARK_MAX_SECONDS="5")
    assert mine["pid"] == theirs["pid"] and mine["runs_served"] == 2


@pytest.mark.slow  # the same run request as a check's; `ask` itself is covered by test_ask_cli
def test_ask_runs_its_trials_in_the_engine(engine, example_task, tmp_path):
    from kerneltui.paths import package_dir

    task = example_task("vector_add")
    demo = package_dir() / "data" / "agent" / "vector_add_demo.toml"
    config = str(tmp_path / "no-config.toml")
    proc = engine.cli("ask", str(task), "make it faster", "--provider", "scripted", "--script", str(demo), "--json",
                      KERNELTUI_CONFIG=config, KERNELTUI_AGENT_TRIAL_SEEDS="1",
                      KERNELTUI_AGENT_CONTEXT_DIR=str(ROOT / "context"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    trial = data["proposals"][0]["trial"]
    assert trial["correct"] is True and any(r["name"] == "correctness" and r["status"] == "ok" for r in trial["rungs"])
    # The agent's settings are the command's own: the engine is the one a check with that config uses.
    assert engine.status(KERNELTUI_CONFIG=config)["runs_served"] >= 1, "the trial ran in the engine"


# A KernelBench problem as published (module constant sizes, Triton by default) with a candidate in
# plain torch: it passes only when loaded with --backend torch, and --set/--scale change what runs.
KB_PROBLEM = '''import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''

KB_TORCH_CANDIDATE = '''import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x + x
'''


def kernelbench_problem(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "double_new.py").write_text(KB_TORCH_CANDIDATE)
    problem = folder / "double.py"
    problem.write_text(KB_PROBLEM)
    return problem


def run_summary(report: dict[str, Any]) -> str:
    return next(r["summary"] for r in report["rungs"] if r["name"] == "run")


@pytest.mark.parametrize(("flags", "shape"), [(("--set", "N=64"), "(64,)"), (("--scale", "0.125"), "(512,)")])
def test_check_through_engine_loads_the_task_as_the_command_line_says(engine, tmp_path, flags, shape):
    problem = kernelbench_problem(tmp_path / "kb")
    command = ("check", str(problem), "--backend", "torch", *flags, "--json", "--rungs", "correctness",
               "--seeds", "1", "--no-session")
    alone = engine.cli(*command, "--no-engine")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert shape in run_summary(json.loads(alone.stdout))
    through = engine.cli(*command)
    assert through.returncode == 0, through.stdout + through.stderr
    assert through.stderr == "", "the engine served the check (no fallback)"
    assert engine.status()["runs_served"] == 1
    assert normalised(json.loads(through.stdout)) == normalised(json.loads(alone.stdout))


def test_the_engine_refuses_a_request_it_cannot_read_in_full(engine, tmp_path):
    problem = kernelbench_problem(tmp_path / "kb")
    client = engine.client()
    from kerneltui.core.engine.messages import RunRequest
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import LoadOptions

    request = RunRequest.make(problem, None, LoadOptions(constants=(("N", "64"),)), RunOptions(rungs=["run"])).to_dict()
    del request["load"]  # as a command of a kerneltui before load options travelled would send it

    async def send(raw: dict[str, Any]) -> dict[str, Any]:
        opened = await client.open(start=True)
        assert opened is not None
        channel, _ = opened
        try:
            channel.send({"op": "run", "run": raw})
            await channel.drain()
            return await channel.receive() or {}
        finally:
            await channel.close()

    reply = asyncio.run(send(request))
    assert reply["error"]["kind"] == "request"
    assert "carries no load options" in reply["error"]["message"]
    assert "kerneltui engine stop" in reply["error"]["message"]
    assert engine.status()["runs_served"] == 0
    assert "refused a run request: the run request carries no load options" in engine.files.log.read_text()


def test_watch_through_engine_loads_the_task_as_the_command_line_says(engine, tmp_path):
    problem = kernelbench_problem(tmp_path / "kb")
    watch = subprocess.Popen([sys.executable, "-m", "kerneltui", "watch", str(problem), "--backend", "torch",
                              "--set", "N=64", "--rungs", "correctness", "--seeds", "1", "--no-session"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, **engine.env})
    lines: list[str] = []
    try:
        assert watch.stdout is not None
        for line in watch.stdout:  # the first run starts at once; the test stops the watcher after it
            lines.append(line)
            if line.startswith(("PASS", "FAIL")):
                break
        # Ended, not interrupted: what this test holds is which task the engine ran. (Ctrl+C once
        # took over 60 s to end a watcher here, seen once under CI's load and not since.)
        watch.terminate()
        _, err = watch.communicate(timeout=60)
    finally:
        if watch.poll() is None:
            watch.kill()
    out = "".join(lines)
    assert "[run] ok" in out and "out (64,)" in out, out + err
    assert lines[-1].startswith("PASS"), out + err
    assert "engine" not in err, err  # served by the engine, no fallback
    assert engine.status()["runs_served"] == 1


KB_ASK_SCRIPT = {"name": "doubling", "turns": [
    {"text": "A product reads its input once.", "tool_calls": [{"name": "propose_edit", "arguments": {
        "rationale": "x * 2 instead of x + x",
        "diff": "--- a/double_new.py\n+++ b/double_new.py\n@@ -9,1 +9,1 @@\n-        return x + x\n+        return x * 2.0\n"}}]},
    {"text": "The trial says whether it holds."},
]}


@pytest.mark.slow  # an agent turn and its trial through the engine
def test_ask_trials_in_the_engine_load_the_task_as_the_command_line_says(engine, tmp_path):
    problem = kernelbench_problem(tmp_path / "kb")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(KB_ASK_SCRIPT))
    config = str(tmp_path / "no-config.toml")
    proc = engine.cli("ask", str(problem), "make it faster", "--backend", "torch", "--set", "N=64", "--provider",
                      "scripted", "--script", str(script), "--json", KERNELTUI_CONFIG=config,
                      KERNELTUI_AGENT_TRIAL_SEEDS="1", KERNELTUI_AGENT_CONTEXT_DIR=str(ROOT / "context"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    trial = json.loads(proc.stdout)["proposals"][0]["trial"]
    assert trial["correct"] is True, trial
    run = next(r for r in trial["rungs"] if r["name"] == "run")
    assert "out (64,)" in run["summary"], trial
    assert "engine" not in proc.stderr, proc.stderr
    assert engine.status(KERNELTUI_CONFIG=config)["runs_served"] >= 1, "the trial ran in the engine"


def test_profile_loads_the_task_with_the_command_lines_options(tmp_path):
    # Its run goes through the engine as a check's does; here: the options reach the loader at all.
    problem = kernelbench_problem(tmp_path / "kb")
    proc = run_cli("profile", str(problem), "--set", "M=8", "--json", "--no-engine")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["kind"] == "task" and "has no module constant M (its constants: N)" in error["message"]


async def test_an_engine_still_exiting_when_its_connection_ends_is_said_to_be_killed(engine):
    """The connection of an engine killed mid-run ends as its files are closed, a moment before the
    process is gone: a full CI run once read it alive then and said "closed the connection". A
    process that ends 0.3 s after the client looks is worded as killed."""
    dying = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    try:
        text = await engine.client()._lost(dying.pid)
    finally:
        dying.wait()
    assert f"the engine (pid {dying.pid}) was killed or crashed during the run" in text


async def test_an_engine_alive_after_its_connection_ends_is_said_to_have_closed_it(engine):
    alive_one = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        text = await engine.client()._lost(alive_one.pid)
    finally:
        alive_one.kill()
        alive_one.wait()
    assert f"the engine (pid {alive_one.pid}) closed the connection during the run" in text


def _suite_verdicts(report: dict[str, Any]) -> dict[str, Any]:
    """Each item's verdict and its rungs' lines, times taken out; correctness by its status alone (its
    errors are measured on inputs drawn with each run's own hidden seed)."""
    return normalised({r["problem"]: [r["status"], [[g["name"], g["status"], g["summary"] if g["name"] != "correctness"
                                                     else ""] for g in r["rungs"]]]
                       for r in report["results"]})


def test_suite_through_engine_gives_the_verdicts_of_a_suite_without(engine, tmp_path):
    level = copy_tree(DATA / "kernelbench", tmp_path / "kb") / "level1"
    command = ("suite", str(level), "--scale", "0.004", "--seeds", "1", "--json")
    alone = engine.cli(*command, "--no-engine", "--results", str(tmp_path / "alone.jsonl"))
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert engine.pid() is None, "--no-engine must not start an engine"
    through = engine.cli(*command, "--results", str(tmp_path / "through.jsonl"))
    assert through.returncode == 0, through.stdout + through.stderr
    assert through.stderr == "", "the engine served every item (no fallback)"
    without, within = json.loads(alone.stdout), json.loads(through.stdout)
    assert (without["engine"], within["engine"]) == (False, True)
    assert len(within["results"]) == 4 and engine.status()["runs_served"] == 4
    assert _suite_verdicts(within) == _suite_verdicts(without)
    assert all(r["status"] == "correct" for r in within["results"])


def test_a_suite_whose_engine_cannot_be_reached_says_so_once_and_verifies_without_it(engine, tmp_path):
    level = copy_tree(DATA / "kernelbench", tmp_path / "kb") / "level1"
    not_a_folder = engine.folder / "f"  # a short path: a socket's must fit 107 bytes
    not_a_folder.write_text("")
    engine.set("KERNELTUI_ENGINE_DIR", str(not_a_folder))
    proc = engine.cli("suite", str(level), "--scale", "0.004", "--seeds", "1", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert [r["status"] for r in report["results"]] == ["correct"] * 4
    assert proc.stderr.count("verifying the rest of the suite without the engine") == 1, proc.stderr
    assert proc.stderr.startswith("kerneltui suite: cannot connect to the engine's socket")


def test_a_suite_problem_the_engine_cannot_load_is_a_task_error(engine, tmp_path):
    """A problem edited between the suite's loading and the engine's (the engine loads it again, by path)
    is a task error row, as a problem that fails to load at the start is, not a failed candidate."""
    from kerneltui.core.batch import local_slots
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.suite import prepare as suite_prepare
    from kerneltui.core.suite import run as suite_run
    from kerneltui.core.suite.discover import discover
    from kerneltui.core.suite.record import ResultsFile
    from kerneltui.core.task import LoadOptions

    level = copy_tree(DATA / "kernelbench", tmp_path / "kb") / "level1"
    prepared = suite_prepare.prepare(discover(level, None), LoadOptions(scale=0.004), {})
    first = prepared[0]
    assert first.done is None and first.task is not None
    first.item.path.write_text("def get_inputs(:\n")  # a syntax error the suite's own load did not see
    said: list[str] = []
    (result,) = suite_run.run_local([first], local_slots(1), RunOptions(rungs=["correctness"], seeds=1),
                                    ResultsFile(tmp_path / "results.jsonl"), engine=engine.client(), say=said.append)
    assert result.status == "task error", result
    assert result.failure is not None and result.failure.startswith("task error:"), result.failure
    assert said == [], "the engine answered: no fallback"
